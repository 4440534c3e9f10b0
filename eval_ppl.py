"""
Perplexity (Eq. 2) of checkpoints of any objective on held-out text, overall and by conditioning length k (Fig. 3).

Every model predicts x_{k+1} from x_1..x_k only (evals/ppl.py says how each objective reads a prefix), so the
numbers of ar, dar, mlm and vm models are comparable; all checkpoints of a run are scored on the same windows.

One CPU:
$ python eval_ppl.py config/eval_ppl_shakespeare.py --ckpt=out-ar-shakespeare/ckpt_best.pt \
    --ckpt=out-vm-shakespeare/ckpt_best.pt
Several GPUs (each process scores a shard of the windows; rank 0 gathers and writes):
$ torchrun --standalone --nproc_per_node=8 eval_ppl.py config/eval_ppl_wikipedia.py --ckpt=...
Writes to out_dir (default out/eval_ppl_<corpus>): ppl_by_k.png + ppl_by_k.csv (one line per checkpoint),
summary.json; prints a table. An out_dir that holds them from an earlier run is refused before any scoring, unless
--overwrite=True (which deletes them first), and so is a training run's out_dir.

--reading=elbo compares likelihoods instead: each masked checkpoint (mlm, vm, mdlm; one- or two-stream) by its any-order
likelihood bound (evals/any_order.py), an upper bound on the NLL of the mixture over orders that the model defines,
beside the exact left-to-right NLL of ar and dar and the unigram / bigram floors, each in nats per token with its
standard error across windows, and as perplexity. Writes summary.json (default out/eval_ppl_<corpus>_elbo, beside
the prefix reading's folder); prints a table.
$ python eval_ppl.py config/eval_ppl_shakespeare_bytes.py --reading=elbo --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt \
      --ckpt=out-vm-2s-shakespeare-bytes/ckpt_best.pt --max_tokens=4000
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

from checkpoint import Pretrained
from output import atomic_write, claim_out_dir, line_plot, progress as progress_bar, refuse_training_run
from configurator import UsageError, check_ranges, configure, one_line_errors
from data import dataset_dir
from data.text import TOKENIZERS, load_tokens
from devices import pick_attn_backend, setup_processes
from evals.any_order import DEFAULT_PASSES, bound_summary, score_bound
from evals.ppl import (BERT_FUTURES, DEFAULT_BUCKETS, NgramBaselines, bucket_table, check_buckets, gather_windows,
                       prefix_style, score_windows, window_starts)

# -----------------------------------------------------------------------------
# default config
ckpt = ()                   # checkpoints to compare: --ckpt=a.pt --ckpt=b.pt
names = ()                  # their labels, same order (default: the checkpoint's folder name)
dataset = 'shakespeare'     # data/<name> (python data/<name>/prepare.py) or a path to a prepared folder
split = 'val'
block_size = 0              # window length, BOS included; 0 = the smallest block_size among the checkpoints
max_tokens = 0              # score about this many targets, windows spread evenly over the split; 0 = all
buckets = DEFAULT_BUCKETS   # conditioning-length buckets [b_i, b_{i+1}) (Fig. 3); the last is open-ended
batch_size = 64             # windows per step
rows_per_pass = 1024        # target rows per forward pass: bounds the logits (rows x vocab) in memory
bert_future = 'invisible'   # 'invisible' (default) or 'mask': for one-stream BERT checkpoints, what the positions
                            # after the target are (left out, or present and all [MASK]; see evals.ppl.prefix_batch)
reading = 'prefix'          # 'prefix': next-token ppl from a prefix only (Eq. 2, Fig. 3); 'elbo': masked checkpoints by
                            # their any-order likelihood bound, the others by their exact left-to-right NLL
elbo_passes = DEFAULT_PASSES  # reading=elbo: forward passes per window, one per stratum of the masked count m
seed = 1337                 # reading=elbo: the masks drawn, the same for every checkpoint
baseline_dataset = 'auto'   # unigram and bigram floors counted on this corpus's train split; 'auto' = the corpus the
                            # checkpoints were trained on (skipped if it is not here), '' = none
out_dir = ''                # '' = out/eval_ppl_<dataset's folder name>, with _elbo appended for --reading=elbo
overwrite = False           # True: replace the results of an earlier run in out_dir; False refuses, so two runs never
                            # mix (one run's summary.json beside another's plot)
device = 'auto'             # 'cpu', 'cuda', 'cuda:1', ... ; auto = cuda if available
dtype = 'auto'              # bf16 autocast on CUDA, fp32 on CPU
attn_backend = 'auto'       # 'flex' on CUDA, 'sdpa' (dense mask) on CPU
progress = True             # a progress bar over each checkpoint's windows (plain lines with an ETA off a terminal)
# -----------------------------------------------------------------------------
one_line_errors('eval_ppl.py')
configure(globals(), sys.argv[1:])
check_ranges(globals(), {'block_size': '[0, inf)', 'max_tokens': '[0, inf)', 'batch_size': '[1, inf)',
                         'rows_per_pass': '[1, inf)', 'elbo_passes': '[1, inf)', 'seed': '[0, inf)'})

# -----------------------------------------------------------------------------
# processes and devices (as in train.py)
ddp, rank, local_rank, world_size, device, dtype, autocast = setup_processes(device, dtype)
master = rank == 0
attn_backend = pick_attn_backend(attn_backend, device)

# -----------------------------------------------------------------------------
# checkpoints: check them all before scoring any, so a bad one fails in seconds
if not ckpt:
    raise UsageError("no checkpoint given: pass --ckpt=out-ar-shakespeare/ckpt_best.pt (repeat --ckpt=... to compare)")
if names and len(names) != len(ckpt):
    raise UsageError(f"{len(names)} names for {len(ckpt)} checkpoints: give one --names=... per --ckpt=..., or none")
buckets = check_buckets(buckets)
if reading not in ('prefix', 'elbo'):
    raise UsageError(f"reading must be 'prefix' (next-token ppl from a prefix) or 'elbo' (likelihoods: the any-order "
                     f"bound of masked checkpoints), got {reading!r}: e.g. --reading=elbo")
if not out_dir:  # each corpus and reading its own folder: the README's commands run one after another
    out_dir = os.path.join('out', f"eval_ppl_{os.path.basename(os.path.normpath(dataset))}" +
                           ('_elbo' if reading == 'elbo' else ''))
if bert_future not in BERT_FUTURES:
    raise UsageError(f"bert_future must be 'invisible' or 'mask', got {bert_future!r}: e.g. --bert_future=mask")
pretrained = [Pretrained(path, 'tokens') for path in ckpt]
runs = []
for i, (path, checkpoint) in enumerate(zip(ckpt, pretrained)):
    model_config, pretraining = checkpoint.model_config, checkpoint.objective
    label = names[i] if names else os.path.basename(os.path.dirname(os.path.abspath(path)))
    style = prefix_style(pretraining)
    # the bound needs only "masked" and the stream layout, never the objective's name (mlm, vm, mdlm, ...)
    bound = reading == 'elbo' and pretraining.kind.masked
    runs.append(dict(path=path, name=label, objective=pretraining.name, label=pretraining.label, style=style,
                     reading='any-order bound' if bound else 'left-to-right' if reading == 'elbo' else 'prefix',
                     two_stream=pretraining.two_stream,
                     bert_future=bert_future if style == 'bert' and not bound else None,  # no such choice elsewhere
                     mask_ratio=pretraining.mask_ratio, t=pretraining.t, tokenizer=model_config.tokenizer,
                     train_dataset=checkpoint.train_config.get('dataset', ''),
                     vocab_size=model_config.vocab_size, block_size=model_config.block_size))
tokenizer = runs[0]['tokenizer']
if any(run['tokenizer'] != tokenizer for run in runs):
    raise UsageError("the checkpoints read different tokens (" + ', '.join(f"{run['name']}: {run['tokenizer']}"
                     for run in runs) + "): score each tokenizer's checkpoints in a run of its own")
if len({run['name'] for run in runs}) < len(runs):  # e.g. ckpt_best.pt and ckpt_last.pt of one out_dir
    for run in runs:
        run['name'] = run['path']
if block_size == 0:
    block_size = min(run['block_size'] for run in runs)
if block_size < 2:
    raise UsageError(f"block_size={block_size}: a window needs the conditioning token and at least one target")
for run in runs:
    if block_size > run['block_size']:
        raise UsageError(f"windows of block_size={block_size} are longer than {run['path']}'s block_size="
                         f"{run['block_size']}: use --block_size={run['block_size']} or less")

# -----------------------------------------------------------------------------
# data: the same windows for every checkpoint
data_dir = dataset_dir(dataset)
tokens = load_tokens(data_dir, split, tokenizer)  # a corpus of another tokenizer stops here, with the fix
bos = TOKENIZERS[tokenizer][1]
starts = window_starts(len(tokens), block_size, max_tokens)
chunks = range(0, len(starts), 4096)  # every window, 4096 at a time: bounded memory for a split of any size
largest_id = max(int(gather_windows(tokens, starts[first:first + 4096], block_size, bos).max()) for first in chunks)
for run in runs:
    if largest_id >= run['vocab_size']:
        raise UsageError(f"{data_dir} holds token id {largest_id} >= {run['path']}'s vocab_size={run['vocab_size']}: "
                         "the data was tokenised with another vocabulary than the model's")
# the unigram / bigram floors, counted on (at most the first 20M tokens of) the training text
baselines, baseline_from = None, baseline_dataset
if baseline_dataset == 'auto':
    trained_on = {run['train_dataset'] for run in runs}
    baseline_from = trained_on.pop() if len(trained_on) == 1 else ''
    if baseline_from and not os.path.exists(os.path.join(dataset_dir(baseline_from), 'train.bin')):
        baseline_from = ''  # trained elsewhere: no floor rather than a wrong one
if baseline_from:
    train_tokens = load_tokens(dataset_dir(baseline_from), 'train', tokenizer)
# every input is good: claim out_dir before the work (the writing rank only), every result file of both readings,
# so an elbo run leaves no prefix run's plot beside its summary
if master:
    refuse_training_run(out_dir)
    claim_out_dir(out_dir, ('summary.json', 'ppl_by_k.png', 'ppl_by_k.csv'), overwrite)
if baseline_from:
    baselines = NgramBaselines(train_tokens[:20_000_000], TOKENIZERS[tokenizer][0])
my_starts = starts[rank::world_size]  # this process's shard of the windows
n_targets = len(starts) * (block_size - 1)
if master:
    all_windows = len(tokens) // (block_size - 1)
    subset = f" (of the split's {all_windows:,} windows, {all_windows * (block_size - 1):,} targets: --max_tokens=0 " \
             "scores all)" if len(starts) < all_windows else ''
    print(f"{data_dir} ({split}): {len(starts)} windows of {block_size} = {n_targets:,} scored targets{subset} | "
          f"{device} {dtype} {attn_backend} | {world_size} process(es)")
    if bert_future != 'invisible' and reading == 'prefix':
        applied = [run['name'] for run in runs if run['bert_future']]
        print(f"bert_future={bert_future!r} applies to the one-stream BERT runs only: "
              f"{', '.join(applied) if applied else 'none of these checkpoints'}")

# -----------------------------------------------------------------------------
# scoring: per-k NLL sums, gathered over processes
def scores(nll_sum_by_k, count_by_k, window_nll):
    """Per-k NLL sums and counts, each window's nats per token -> a report row (reading=elbo: as the bound's rows)."""
    total_nll, total = float(nll_sum_by_k.sum()), int(count_by_k.sum())
    row = dict(nll=total_nll / total, ppl=math.exp(total_nll / total), targets=total,
               buckets=bucket_table(nll_sum_by_k, count_by_k, buckets), nll_sum_by_k=nll_sum_by_k.tolist(),
               count_by_k=count_by_k.tolist())
    return {**row, **bound_summary(window_nll)} if reading == 'elbo' else row

for number, (run, checkpoint) in enumerate(zip(runs, pretrained), 1):
    model = checkpoint.model(device, attn_backend=attn_backend)
    nll_sum_by_k = np.zeros(block_size - 1, dtype=np.float64)
    count_by_k = np.zeros(block_size - 1, dtype=np.int64)
    window_nll = []  # reading=elbo: nats per token of each window
    generator = torch.Generator().manual_seed(seed + rank)  # every checkpoint sees the same masks
    t0 = time.time()
    bar = progress_bar(total=len(my_starts), desc=f"{run['name'][-30:]} ({number}/{len(ckpt)})", unit='windows',
                       enabled=master and progress)
    for first in range(0, len(my_starts), batch_size):
        windows = gather_windows(tokens, my_starts[first:first + batch_size], block_size, bos)
        if run['reading'] == 'any-order bound':
            bound = score_bound(model, windows, run['two_stream'], elbo_passes, generator, rows_per_pass, autocast)
            window_nll.append(bound / (block_size - 1))
        else:
            nll = score_windows(model, windows, run['style'], rows_per_pass, autocast,
                                bert_future=run['bert_future'] or 'invisible')
            nll_sum_by_k += nll.double().sum(dim=0).numpy()
            count_by_k += nll.shape[0]
            window_nll.append(nll.double().mean(dim=1))
        bar.update(len(windows))
    bar.close()
    window_nll = torch.cat(window_nll).numpy()
    if ddp:
        gathered = [None] * world_size
        dist.all_gather_object(gathered, (nll_sum_by_k, count_by_k, window_nll))
        nll_sum_by_k, count_by_k = sum(g[0] for g in gathered), sum(g[1] for g in gathered)
        window_nll = np.concatenate([g[2] for g in gathered])
    seconds = time.time() - t0
    if not (np.isfinite(nll_sum_by_k).all() and np.isfinite(window_nll).all()):
        raise UsageError(f"{run['path']} gives non-finite NLLs: the checkpoint's weights are broken (NaN/inf)")
    if run['reading'] == 'any-order bound':  # per-window nats per token -> mean, standard error across windows, ppl
        run.update(targets=len(window_nll) * (block_size - 1), passes_per_window=min(elbo_passes, block_size - 1),
                   **bound_summary(window_nll))
    else:
        run.update(**scores(nll_sum_by_k, count_by_k, window_nll))
    run.update(seconds=seconds, tokens_per_sec=run['targets'] / max(seconds, 1e-9))
    del model
if baselines is not None:  # scored like a checkpoint, on the same windows, so they sit in the same table and plot
    floor_sums, floor_windows = {}, {}
    for first in chunks:
        for name, nll in baselines.nll(gather_windows(tokens, starts[first:first + 4096], block_size, bos)).items():
            floor_sums[name] = floor_sums.get(name, 0) + nll.sum(axis=0)
            floor_windows.setdefault(name, []).append(nll.mean(axis=1))
    for name, nll_sum_by_k in floor_sums.items():
        runs.append(dict(path=f"{name} counted on {baseline_from}/train.bin", name=f"({name})", objective=name,
                         style='counts', bert_future=None, tokens_per_sec=0,
                         reading='left-to-right' if reading == 'elbo' else 'prefix',
                         **scores(nll_sum_by_k, np.full(block_size - 1, len(starts)),
                                  np.concatenate(floor_windows[name]))))

# -----------------------------------------------------------------------------
# report: table, Fig. 3 plot + CSV, JSON summary (rank 0 only)
if master:
    name_width = max(len('checkpoint'), *(len(run['name']) for run in runs)) + 2
    if reading == 'elbo':  # one number per checkpoint: nats per token, its standard error, ppl
        objective_width = max(len('objective'), *(len(run['objective']) for run in runs)) + 2
        print(f"{'checkpoint':<{name_width}}{'objective':<{objective_width}}{'reading':<17}{'nats/tok':>10}"
              f"{'+- se':>9}{'ppl':>10}{'tok/s':>10}")
        for run in runs:
            print(f"{run['name']:<{name_width}}{run['objective']:<{objective_width}}{run['reading']:<17}"
                  f"{run['nll']:>10.4f}{run['se']:>9.4f}{run['ppl']:>10.3f}{run['tokens_per_sec']:>10.0f}")
        settings = dict(reading=reading, elbo_passes=elbo_passes, seed=seed)
        wrote = (f"any-order bound: {min(elbo_passes, block_size - 1)} forward passes per window, stratified over "
                 f"the masked count m; se across {len(starts)} windows. wrote {os.path.join(out_dir, 'summary.json')}")
    else:
        columns = [f"k={b['k_first']}" + (f"-{b['k_last']}" if b['k_last'] > b['k_first'] else '')
                   for b in runs[0]['buckets']]
        width = max(12, *(len(c) + 2 for c in columns))
        print(f"{'checkpoint':<{name_width}}{'objective':<11}{'style':<19}{'ppl':>{width}}" +
              ''.join(f"{c:>{width}}" for c in columns) + f"{'tok/s':>10}")
        for run in runs:
            style = run['style'] + (f" ({run['bert_future']})" if run['bert_future'] else '')  # e.g. 'bert (mask)'
            print(f"{run['name']:<{name_width}}{run['objective']:<11}{style:<19}{run['ppl']:>{width}.2f}" +
                  ''.join(f"{b['ppl']:>{width}.2f}" for b in run['buckets']) + f"{run['tokens_per_sec']:>10.0f}")
        # x = k + 1 (the prefix tokens seen, BOS included) so the log axis can show k = 0
        line_plot(os.path.join(out_dir, 'ppl_by_k.png'),
                  {run['name']: ([b['k_first'] + 1 for b in run['buckets']], [b['ppl'] for b in run['buckets']])
                   for run in runs},
                  title=f"perplexity by conditioning length on {os.path.basename(data_dir)} ({split})",
                  xlabel='k+1 (bucket start)', ylabel='ppl', logx=True, logy=True)
        settings = dict(bucket_edges=list(buckets), bert_future=bert_future)
        wrote = f"wrote {os.path.join(out_dir, 'ppl_by_k.png')}, ppl_by_k.csv and summary.json"
    summary = dict(data=data_dir, split=split, block_size=block_size, windows=len(starts), targets=n_targets,
                   **settings, tokenizer=tokenizer, baseline_dataset=baseline_from, device=device, dtype=dtype,
                   world_size=world_size, checkpoints=runs)
    atomic_write(os.path.join(out_dir, 'summary.json'), json.dumps(summary, indent=1))
    print(wrote)
if ddp:  # together: a rank that tore gloo down while rank 0 still wrote was seen to abort at exit
    dist.barrier()
    dist.destroy_process_group()

"""
GLUE (or the offline suite) for pretrained checkpoints of any objective: fine-tuning (Tables 1-2) or a linear
probe on frozen features (Sec. 3.3). Dev-set scores with the official metrics, the median over seeds, and one
summary row per checkpoint (markdown + CSV + JSON in out_dir).

$ python eval_glue.py config/glue_sane.py --ckpt=out-ar-pile/ckpt_best.pt --ckpt=out-dar-pile/ckpt_best.pt
$ python eval_glue.py config/glue_offline.py --ckpt=out-ar-shakespeare/ckpt_best.pt --tasks=polarity,hedge
$ python eval_glue.py config/linprobe_glue_offline.py --ckpt=out-ar-shakespeare/ckpt_best.pt
$ torchrun --standalone --nproc_per_node=8 eval_glue.py config/glue_sane.py --ckpt=...   # (task, seed) jobs over GPUs
Beside them, where the input stands (evals/baselines.py): --ckpt=bag_of_words and --ckpt=bag_of_bytes (linprobe only:
the same probe on word counts, or byte 1- to 3-gram counts), --ckpt=rule:capital_after_lowercase
(linprobe only, one text, labels 0 / 1: a surface cue, a threshold fit on train; rule:rare_word,
rule:bigram_pmi) and --ckpt=random:out-ar-shakespeare/ckpt_best.pt (that run's model at
initialisation).
Data: python data/glue/prepare.py (GLUE, needs a network) or python data/glue/prepare_offline.py (offline suite).
"""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from output import atomic_write, claim_out_dir, progress as progress_bar, refuse_training_run, write_csv
from configurator import UsageError, check_ranges, configure, one_line_errors
from data import glue_tasks
from data.text import TOKENIZERS, get_tokenizer
from devices import pick_attn_backend, setup_processes
from evals.baselines import (RANDOM, RULE, bag_of_bytes, bag_of_words, ngram_vocabulary, open_model,
                             open_rule, rule_predictions, word_vocabulary)
from evals.glue import (STYLES, TextClassifier, encode_rows, fit_least_squares, fit_logistic, join_pair,
                        length_batches, pad_batch, pretraining_attention, resolve_pooling)
from schedule import lr_at

# -----------------------------------------------------------------------------
# default config: Cramming's "sane" fine-tuning recipe on the eight GLUE tasks of the average
ckpt = ()                   # one or more checkpoints: --ckpt=a.pt --ckpt=b.pt
tasks = ()                  # () = cola sst2 mrpc stsb qqp mnli qnli rte; --tasks=cola,rte or repeated --tasks=
glue_dir = 'auto'           # folder holding <Task>/train.tsv ...; 'auto' = data/glue, or data/glue/offline per task
out_dir = 'out/eval_glue'
overwrite = False           # True: replace glue_<mode>.md/.csv/.json of an earlier run in out_dir; False refuses
mode = 'finetune'           # 'finetune' (every weight trained) or 'linprobe' (frozen features, linear head)
attention = 'auto'          # 'auto' = the pretraining pattern (causal for ar/dar/gvp, bidirectional for mlm/vm)
pooling = 'auto'            # 'auto' (last token if causal, mean if bidirectional) | 'last' | 'first' | 'mean'
max_len = 128               # ids per example, BOS and separator included (also capped by the block_size)
batch_size = 16
eval_batch_size = 64
epochs = 5
learning_rate = 4e-5
warmup_frac = 0.1           # linear warmup over this fraction of the steps, then cosine to zero
weight_decay = 0.0
beta1 = 0.9
beta2 = 0.999
grad_clip = 1.0             # 0 disables
dropout = 0.1               # in the trunk and before the head, while fine-tuning
seeds = (0, 1, 2)           # fine-tuning runs per task; the table reports the median
probe_l2 = 1e-3             # linear probe: L2 on the weights (logistic: mean CE + l2/2 |W|^2; ridge: l2 |w|^2)
probe_iters = 500           # linear probe: L-BFGS iterations
max_train_rows = 0          # > 0: fine-tune / probe on the first this-many train rows only (quick looks)
save_predictions = False    # keep every run's dev predictions in the JSON
device = 'auto'             # 'cpu', 'cuda', 'cuda:1', ... ; auto = cuda if available
dtype = 'auto'              # bf16 autocast on CUDA, fp32 on CPU
attn_backend = 'auto'       # 'flex' on CUDA, 'sdpa' (dense mask) on CPU
progress = True             # one progress bar over every fine-tuning step (plain lines with an ETA off a terminal)
# -----------------------------------------------------------------------------
one_line_errors('eval_glue.py')
configure(globals(), sys.argv[1:])
config = {k: v for k, v in globals().items() if not k.startswith('_') and isinstance(v, (int, float, bool, str, tuple))}

# -----------------------------------------------------------------------------
# checks before any work, so a bad flag costs seconds, not a fine-tuning run
if not ckpt:
    raise UsageError("no checkpoint: pass --ckpt=out-<name>/ckpt_best.pt (repeat --ckpt for several)")
if not isinstance(glue_dir, str):
    raise UsageError(f"glue_dir must be 'auto' or a folder holding <Task>/train.tsv, got {glue_dir!r}")
if mode not in ('finetune', 'linprobe'):
    raise UsageError(f"mode must be 'finetune' or 'linprobe', got {mode!r}")
task_names = [name for entry in tasks for name in str(entry).split(',') if name]
if tasks and not task_names:  # --tasks= : a typo, not a request for the eight GLUE tasks
    raise UsageError("--tasks names no task: pass e.g. --tasks=rte,sst2, or leave it out for the eight GLUE tasks")
task_names = task_names or [key for key in glue_tasks.TASKS if key != 'wnli']
specs = {task: glue_tasks.get_task(task) for task in task_names}
if len(specs) != len(task_names):
    raise UsageError(f"a task is listed twice in --tasks: {task_names}")
if not seeds:
    raise UsageError("seeds is empty: pass e.g. --seeds=0")
check_ranges(config, {
    'max_len': '[2, inf)', 'batch_size': '[1, inf)', 'eval_batch_size': '[1, inf)', 'epochs': '[1, inf)',
    'learning_rate': '(0, inf)', 'warmup_frac': '[0, 1]', 'weight_decay': '[0, inf)', 'beta1': '[0, 1)',
    'beta2': '[0, 1)', 'grad_clip': '[0, inf)', 'dropout': '[0, 1)', 'seeds': '[0, inf)', 'probe_l2': '[0, inf)',
    'probe_iters': '[1, inf)', 'max_train_rows': '[0, inf)'})
if attention != 'auto' and attention not in STYLES:
    raise UsageError(f"attention must be 'auto', 'causal' or 'bidirectional', got {attention!r}")
resolve_pooling(pooling, 'bidirectional')  # the value alone, before any work; each checkpoint's style below

# -----------------------------------------------------------------------------
# processes and devices (like train.py)
ddp, rank, local_rank, world_size, device, dtype, autocast = setup_processes(device, dtype)
master, device_type = rank == 0, device.split(':')[0]
attn_backend = pick_attn_backend(attn_backend, device, dropout if mode == 'finetune' else 0.0)
static_shapes = device_type == 'cuda'  # pad every batch to max_len: one compiled kernel, no recompiles

# -----------------------------------------------------------------------------
# data: every split read (strictly) up front on every rank; tokenised once per task, when first needed
root = os.path.dirname(os.path.abspath(__file__))

def task_dir(task):  # a relative glue_dir: from the working directory if it is there, else from the repository
    if glue_dir == 'auto':
        return os.path.join(root, glue_tasks.default_dir(task))
    return glue_dir if os.path.isdir(glue_dir) else os.path.join(root, glue_dir)

rows, labels = {}, {}
for task, spec in specs.items():
    for split in ('train',) + spec.dev_splits:
        rows[task, split] = glue_tasks.read_task(task_dir(task), task, split)
        if split == 'train' and max_train_rows > 0:
            rows[task, split] = rows[task, split][:max_train_rows]
        labels[task, split] = torch.tensor([row[2] for row in rows[task, split]],
                                           dtype=torch.float32 if spec.is_regression else torch.long)

encoded = {}

def token_ids(task, split, info):
    """Every row as one id sequence, in the tokens of the checkpoint described by info."""
    key = info['tokenizer'], task, split
    if key not in encoded:
        encoded[key] = encode_rows(get_tokenizer(info['tokenizer']), rows[task, split])
    return [join_pair(a, b, info['length_cap'], TOKENIZERS[info['tokenizer']][1]) for a, b in encoded[key]]

# -----------------------------------------------------------------------------
# checkpoints: how each one attends and pools
BAGS = {'bag_of_words': 'word counts', 'bag_of_bytes': 'byte n-gram counts'}
pretrained, models = [], []
for path in ckpt:
    if path in BAGS:  # the input baselines: no model, the probe reads word or byte n-gram counts
        if mode != 'linprobe':
            raise UsageError(f"--ckpt={path} has no model to fine-tune: it is the linear probe on {BAGS[path]} "
                             "(mode=linprobe); for a model without pretraining use --ckpt=random:<checkpoint>")
        pretrained.append(None)
        models.append(dict(path=path, objective=path.replace('_', ' '), style='none', pooling='none'))
        continue
    if path.startswith(RULE):  # the cue rules: no model, a score per text, a threshold fit on train
        name = open_rule(path)
        if mode != 'linprobe':
            raise UsageError(f"--ckpt={path} has no model to fine-tune: it is an input baseline, "
                             "run with mode=linprobe (config/linprobe_glue_probing.py)")
        for task, spec in specs.items():
            if spec.labels != ('0', '1') or len(spec.text_columns) != 1:
                raise UsageError(f"--ckpt={path} answers 0 or 1 about one text, and {task} is not "
                                 "such a task: leave it out of --tasks")
        pretrained.append(None)
        models.append(dict(path=path, objective=f"rule {name}", style='none', pooling='none'))
        continue
    checkpoint = open_model(path, 'tokens')
    # how the content stream saw text in pretraining, unless --attention says otherwise
    style = pretraining_attention(checkpoint.objective) if attention == 'auto' else attention
    pretrained.append(checkpoint)
    models.append(dict(path=path, objective=checkpoint.objective.name +
                       (' at initialisation' if path.startswith(RANDOM) else ''), style=style,
                       pooling=resolve_pooling(pooling, style),
                       length_cap=min(max_len, checkpoint.model_config.block_size),
                       tokenizer=checkpoint.model_config.tokenizer))
if master:  # every input is good: claim out_dir before any fine-tuning (the writing rank only)
    refuse_training_run(out_dir)
    claim_out_dir(out_dir, [f"glue_{mode}{suffix}" for suffix in ('.md', '.csv', '.json')], overwrite)

# -----------------------------------------------------------------------------
# one job = one checkpoint on one task (one seed): fine-tune or probe -> outputs on every dev split, scored alike
def training_steps(task):
    return epochs * -(-len(rows[task, 'train']) // batch_size)

def batch_on_device(sequences, info):
    batch, lengths = pad_batch(sequences, info['style'], pad_to=info['length_cap'] if static_shapes else None)
    return {k: v.to(device) for k, v in batch.items()}, lengths.to(device)

@torch.no_grad()
def pooled_outputs(network, sequences, info, head=True):
    """Head outputs (or pooled features) for every sequence, in input order."""
    network.eval()
    out = [None] * len(sequences)
    for index in length_batches([len(s) for s in sequences], eval_batch_size):
        batch, lengths = batch_on_device([sequences[i] for i in index], info)
        with autocast:
            values = network(**batch, lengths=lengths) if head else network.features(**batch, lengths=lengths)
        for i, value in zip(index, values.float().cpu()):
            out[i] = value
    return torch.stack(out)

def finetune(info, checkpoint, task, seed, bar):
    spec = specs[task]
    n_outputs = 1 if spec.is_regression else len(spec.labels)
    torch.manual_seed(seed)  # head init and dropout
    model = checkpoint.model(device, attn_backend=attn_backend, dropout=dropout)
    network = TextClassifier(model, n_outputs, info['pooling'], dropout).to(device)
    sequences, targets = token_ids(task, 'train', info), labels[task, 'train']
    optimizer = torch.optim.AdamW(network.parameters(), lr=learning_rate, betas=(beta1, beta2),
                                  weight_decay=weight_decay)
    total_steps = training_steps(task)
    order_generator = torch.Generator().manual_seed(seed)
    step = 0
    for epoch in range(epochs):
        network.train()
        order = torch.randperm(len(sequences), generator=order_generator).tolist()
        for start in range(0, len(order), batch_size):
            index = order[start:start + batch_size]
            for group in optimizer.param_groups:
                group['lr'] = lr_at(step, learning_rate, round(warmup_frac * total_steps), total_steps)
            batch, lengths = batch_on_device([sequences[i] for i in index], info)
            with autocast:
                outputs = network(**batch, lengths=lengths)
            target = targets[index].to(device)  # a score (STS-B, lee_sts) or a class
            loss = F.mse_loss(outputs.squeeze(-1), target) if spec.is_regression else F.cross_entropy(outputs, target)
            if not torch.isfinite(loss):
                raise UsageError(f"{task} seed {seed}: loss is {float(loss)} at step {step}: lower learning_rate")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if grad_clip:
                torch.nn.utils.clip_grad_norm_(network.parameters(), grad_clip)
            optimizer.step()
            step += 1
            bar.update(1)
            bar.set_postfix(task=task, seed=seed, epoch=epoch, loss=f"{loss.item():.4f}")
    return {split: pooled_outputs(network, token_ids(task, split, info), info) for split in spec.dev_splits}

def rule_outputs(info, task):
    """The rule's answers on every dev split as one-hot outputs (counts, threshold: from train)."""
    answers = rule_predictions(info['path'][len(RULE):], rows[task, 'train'],
                               {split: rows[task, split] for split in specs[task].dev_splits})
    return {split: F.one_hot(torch.as_tensor(a), 2).float() for split, a in answers.items()}

def linear_probe(info, checkpoint, task):
    """Features of the frozen trunk (its pretraining attention) or word counts, standardised; logistic or ridge
    regression."""
    spec = specs[task]
    if checkpoint is None:  # --ckpt=bag_of_words / bag_of_bytes: counts of the train split's most frequent ones
        count, vocabulary = ((bag_of_words, word_vocabulary) if info['path'] == 'bag_of_words' else
                             (bag_of_bytes, ngram_vocabulary))
        vocabulary = vocabulary(rows[task, 'train'])
        features = {split: count(rows[task, split], vocabulary).to(device, torch.float64)
                    for split in ('train',) + spec.dev_splits}
    else:
        network = TextClassifier(checkpoint.model(device, attn_backend=attn_backend), 1, info['pooling']).to(device)
        features = {split: pooled_outputs(network, token_ids(task, split, info), info, head=False)
                    .to(device, torch.float64) for split in ('train',) + spec.dev_splits}
    # every feature scaled by the train set's mean and std (BatchNorm without affine, as the MAE probe)
    mean, std = features['train'].mean(dim=0), features['train'].std(dim=0).clamp(min=1e-6)
    features = {split: (x - mean) / std for split, x in features.items()}
    targets = labels[task, 'train'].to(device)
    if spec.is_regression:
        weight, bias = fit_least_squares(features['train'], targets.double(), probe_l2)
        weight = weight[:, None]  # one output column, as the fine-tuned head's
    else:
        weight, bias = fit_logistic(features['train'], targets, len(spec.labels), probe_l2, probe_iters)
    return {split: features[split] @ weight + bias for split in spec.dev_splits}

# -----------------------------------------------------------------------------
# run this rank's share of the jobs (round-robin over ranks), gather everything on rank 0
run_seeds = seeds if mode == 'finetune' else (seeds[0],)  # the probe is a convex fit from zero: no seed matters
jobs = [(c, task, seed) for c in range(len(models)) for task in task_names for seed in run_seeds]
jobs.sort(key=lambda job: -len(rows[job[1], 'train']))  # biggest first: dealt round-robin, ranks finish together
my_jobs = jobs[rank::world_size]
# one bar: fine-tuning steps, which take nearly all the time, so its ETA holds across tasks of any size (a bar per
# job would restart its ETA at every job); the probe counts jobs
if mode == 'finetune':
    my_total, unit = sum(training_steps(task) for _, task, _ in my_jobs), 'steps'
    if master:
        print(f"finetune: {len(jobs)} runs ({len(models)} checkpoint(s) x {len(task_names)} task(s) x "
              f"{len(run_seeds)} seed(s)), {sum(training_steps(task) for _, task, _ in jobs):,} steps of "
              f"{batch_size} in all, over {world_size} process(es)")
else:
    my_total, unit = len(my_jobs), 'jobs'
bar = progress_bar(total=my_total, desc=mode, unit=unit, enabled=master and progress)
records = []
for c, task, seed in my_jobs:
    info = models[c]
    t0 = time.time()
    if mode == 'finetune':
        outputs = finetune(info, pretrained[c], task, seed, bar)
    else:
        outputs = (rule_outputs(info, task) if info['path'].startswith(RULE) else
                   linear_probe(info, pretrained[c], task))
        bar.update(1)
    results, kept = {}, {}
    for split, output in outputs.items():  # a score (float32) or the argmax class
        predictions = (output.squeeze(-1).float() if specs[task].is_regression else output.argmax(dim=-1)).cpu()
        key = glue_tasks.result_key(task, split)
        results[key] = glue_tasks.task_score(task, predictions.numpy(), labels[task, split].numpy())
        kept[key] = predictions.tolist()
    record = dict(ckpt=c, task=task, seed=seed, results=results, seconds=time.time() - t0,
                  n_train=len(rows[task, 'train']))
    if save_predictions:
        record['predictions'] = kept
    records.append(record)
    bar.write(f"{info['path']} {task} seed {seed}: " +
              ", ".join(f"{key} {metric} {value:.2f}" for key, scores in results.items()
                        for metric, value in scores.items()) + f" ({record['seconds']:.1f} s)")
bar.close()
if ddp:
    gathered = [None] * world_size
    dist.all_gather_object(gathered, records)
    records = [record for part in gathered for record in part]

# -----------------------------------------------------------------------------
# summary: median over seeds of every metric, the suite averages, one row per checkpoint
if master:
    spec_of = {glue_tasks.result_key(task, split): spec for task, spec in specs.items() for split in spec.dev_splits}
    keys = list(spec_of)  # mnli -> mnli_m, mnli_mm
    metrics_of = {key: spec.metrics for key, spec in spec_of.items()}
    suites = {'GLUE avg': [k for k in keys if not (spec_of[k].offline or spec_of[k].probing)],
              'offline avg': [k for k in keys if spec_of[k].offline],
              'probing avg': [k for k in keys if spec_of[k].probing]}
    suites = {name: members for name, members in suites.items() if members}
    partial_glue = 'GLUE avg' in suites and set(suites['GLUE avg']) != set(glue_tasks.GLUE_AVERAGE_KEYS)
    summary = []
    for c, info in enumerate(models):
        medians = {key: {metric: float(np.median([r['results'][key][metric] for r in records if r['ckpt'] == c
                                                  and key in r['results']])) for metric in metrics_of[key]}
                   for key in keys}
        averages = {name: glue_tasks.glue_average({k: medians[k] for k in members})
                    for name, members in suites.items()}
        summary.append(dict(ckpt=info['path'], objective=info['objective'], attention=info['style'],
                            pooling=info['pooling'], medians=medians, averages=averages))

    header = ['checkpoint', 'objective'] + [f"{key} ({'/'.join(metrics_of[key])})" for key in keys] + list(suites)
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    for row in summary:
        cells = ['/'.join(f"{row['medians'][key][metric]:.1f}" for metric in metrics_of[key]) for key in keys]
        averages = [f"{row['averages'][name]:.1f}" for name in suites]
        lines.append('| ' + ' | '.join([row['ckpt'], str(row['objective'])] + cells + averages) + ' |')
    lines += ['', f"{mode}, dev sets, median over seeds {list(run_seeds)}; main metric first."]
    if 'GLUE avg' in suites:
        lines.append("GLUE avg: CoLA MCC, STS-B Pearson, MRPC/QQP F1, accuracy elsewhere; MNLI-m and -mm both count; "
                     "no WNLI" + (" (PARTIAL: not all nine scores, not comparable with the paper)." if partial_glue
                                  else "."))
    for name in ('offline avg', 'probing avg'):
        if name in suites:
            lines.append(f"{name}: the mean of the {name.split()[0]} tasks' main metrics.")
    table = '\n'.join(lines) + '\n'
    print(table)
    seconds = {task: sum(r['seconds'] for r in records if r['task'] == task) for task in task_names}
    stem = os.path.join(out_dir, f"glue_{mode}")
    atomic_write(stem + '.md', table)
    write_csv(stem + '.csv', ['checkpoint', 'objective', 'attention', 'pooling', 'mode'] +
              [f"{key}_{metric}" for key in keys for metric in metrics_of[key]] +
              [name.replace(' ', '_') for name in suites],
              [[row['ckpt'], row['objective'], row['attention'], row['pooling'], mode] +
               [f"{row['medians'][key][metric]:.4f}" for key in keys for metric in metrics_of[key]] +
               [f"{row['averages'][name]:.4f}" for name in suites] for row in summary])
    atomic_write(stem + '.json', json.dumps(dict(config=config, summary=summary, runs=records,
                                                      seconds_per_task=seconds, models=models), indent=1))
    print("seconds per task (all checkpoints and seeds): " + ', '.join(f"{t} {s:.1f}" for t, s in seconds.items()))
    print(f"wrote {stem}.md, .csv, .json")
if ddp:  # together: a rank that tore gloo down while rank 0 still wrote was seen to abort at exit
    dist.barrier()
    dist.destroy_process_group()

"""
Generate text from a checkpoint of any text objective: left to right, one token at a time, streamed as it goes,
or, for masked checkpoints, by unmasking a canvas of [MASK]s in any order.

$ python sample.py --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt --prompt='ROMEO:' --max_new_tokens=300
$ python sample.py --ckpt=out-vm-shakespeare-bytes/ckpt_best.pt --num_samples=3 --temperature=0.8 --top_k=40

Left to right, every objective predicts x_{k+1} from x_1..x_k exactly as eval_ppl.py scores it (evals/ppl.py says
how each objective reads a prefix), so a masked model generates from the same prefix-only conditional as its
Table 7 perplexity: the paper's point that autoregressive pretraining generates better can be read off the samples.

A masked model can also generate the way it was trained (--order=random|confident, the default for masked
checkpoints): the prompt, then max_new_tokens [MASK]s; each step samples tokens_per_step of them from the model's
conditional given everything filled so far, chosen uniformly (random; with one token per step and temperature 1 this
samples exactly from the any-order model whose likelihood eval_ppl.py --reading=elbo bounds) or where the model is
surest (confident, MaskGIT). --show_steps=N prints the canvas every N steps, '_' for a position still masked.
--block_length=b unmasks left to right in blocks of b, any order inside (LLaDA's semi-autoregressive blocks);
--remask=p masks a filled token again with probability p a step, to be redrawn later (ReMDM); both off by default.
$ python sample.py --ckpt=out-vm-2s-shakespeare-bytes/ckpt_best.pt --prompt='ROMEO:' --max_new_tokens=100 \
      --order=confident --tokens_per_step=4 --show_steps=5

Every run reports its forward passes per sample. --judge=<ar checkpoint> scores the samples beside held-out text of
the same length, by the judge's NLL and by unigram entropy (evals/sample_quality.py says why both).
$ python sample.py --ckpt=out-mdlm-2s-shakespeare-bytes/ckpt_best.pt --max_new_tokens=127 --num_samples=32 \
      --temperature=1.0 --judge=out-judge-shakespeare-bytes/ckpt_best.pt --judge_out=quality.json
"""
import json
import math
import os
import sys
import tempfile
from functools import partial
from itertools import groupby

import torch

from checkpoint import Pretrained
from configurator import UsageError, check_ranges, configure, one_line_errors
from data import dataset_dir
from data.text import TOKENIZERS, get_tokenizer, load_tokens
from devices import pick_attn_backend, setup_processes, to_device
from evals.any_order import model_log_probs, propose, unmask
from evals.ppl import ROW_STYLES, gather_windows, prefix_batch, prefix_style, score_windows, take_rows, window_starts
from evals.sample_quality import sample_quality
from output import atomic_write

# -----------------------------------------------------------------------------
ckpt = ''                   # a text checkpoint written by train.py
prompt = ''                 # text to continue; '' starts from BOS alone (a new document)
num_samples = 1
max_new_tokens = 200
temperature = 0.8           # < 1 sharper, > 1 flatter
top_k = 0                   # sample among the k likeliest tokens only; 0 = all, 1 = the likeliest (greedy)
order = 'auto'              # 'left_to_right' (any checkpoint), or for masked ones 'random' / 'confident' unmasking;
                            # auto = random for masked checkpoints, left_to_right for the others
tokens_per_step = 1         # unmasking: positions filled per forward pass
block_length = 0            # unmasking: left to right in blocks of this many positions, any order inside (LLaDA);
                            # 0 = the whole canvas is one block
remask = 0.0                # unmasking: each step masks again each token filled in an earlier step with this
                            # probability and fills as many more, so it is redrawn later (ReMDM); 0 = off
show_steps = 0              # unmasking: print the canvas every this many steps; 0 = the finished samples only
seed = 1337
device = 'auto'
dtype = 'auto'
attn_backend = 'auto'       # auto = sdpa on every device: flex would compile again for each window length
stream = True               # print tokens as they come; False prints each finished sample
judge = ''                  # an ar checkpoint of the same recipe trained longer: scores the samples in nats per token
                            # beside its NLL on held-out text, with both unigram entropies; '' = no scores
judge_dataset = 'auto'      # the held-out text: this corpus's val split; auto = the corpus the judge was trained on
judge_tokens = 16000        # held-out targets the judge scores, in windows as long as the samples
judge_out = ''              # write the scores, the sampler's settings and its forward passes here (JSON)
# -----------------------------------------------------------------------------
one_line_errors('sample.py')
configure(globals(), sys.argv[1:])
check_ranges(globals(), {'num_samples': '[1, inf)', 'max_new_tokens': '[1, inf)', 'temperature': '(0, inf)',
                         'top_k': '[0, inf)', 'seed': '[0, inf)', 'tokens_per_step': '[1, inf)',
                         'show_steps': '[0, inf)', 'block_length': '[0, inf)', 'remask': '[0, 1]',
                         'judge_tokens': '[1, inf)'})
if not ckpt:
    raise UsageError("no checkpoint: pass --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt (any text checkpoint)")
_, _, _, _, device, dtype, autocast = setup_processes(device, dtype)
attn_backend = pick_attn_backend('sdpa' if attn_backend == 'auto' else attn_backend, device)
checkpoint = Pretrained(ckpt, 'tokens')
pretraining = checkpoint.objective
if order not in ('auto', 'left_to_right', 'random', 'confident'):
    raise UsageError(f"order must be 'left_to_right', 'random' or 'confident' (or 'auto'), got {order!r}")
if order == 'auto':
    order = 'random' if pretraining.kind.masked else 'left_to_right'
if order != 'left_to_right' and not pretraining.kind.masked:
    raise UsageError(f"--order={order} unmasks a canvas, which needs a masked checkpoint; {ckpt} is "
                     f"{pretraining.label}: use --order=left_to_right")
unmasking_only = [f"--{key}" for key, off in (('tokens_per_step', 1), ('block_length', 0), ('remask', 0.0),
                                               ('show_steps', 0)) if globals()[key] != off]
if order == 'left_to_right' and unmasking_only:
    one = len(unmasking_only) == 1
    raise UsageError(f"{' and '.join(unmasking_only)} shape{'s' * one} unmasking, and {ckpt} samples left to right: "
                     f"drop {'it' if one else 'them'}, or unmask a masked checkpoint (--order=random or confident)")
if judge_out and not judge:
    raise UsageError("--judge_out writes the judge's scores: pass --judge=<an ar checkpoint> too")
model = checkpoint.model(device, attn_backend=attn_backend)
tokenizer_name = model.config.tokenizer
tokenizer = get_tokenizer(tokenizer_name)
n_vocab, bos = TOKENIZERS[tokenizer_name]
style = prefix_style(pretraining)
allowed = torch.arange(model.config.vocab_size, device=device) < n_vocab  # the head's padding rows are no tokens
generator = torch.Generator(device=device).manual_seed(seed)

# -----------------------------------------------------------------------------
@torch.no_grad()
def next_token_logits(ids):
    """Logits of the token after ids (BOS first), read as eval_ppl.py reads the model, from a window of BOS, the last
    tokens that fit and a slot for the next token; no row that predicts it sees that slot (tests/test_sample.py)."""
    window = torch.tensor([[bos] + ids[1:][-(model.config.block_size - 2):] + [bos]], device=device)
    batch = prefix_batch(window, style)  # the slot is last: no position follows it
    if style in ROW_STYLES:  # one row per prefix length: keep the row of the longest prefix
        batch = take_rows(batch, torch.tensor([window.shape[1] - 2], device=device), window.shape[1])
    with autocast:
        logits, _ = model(**to_device(batch, device))
    return logits[0, -1].float()

def sample_next(logits):
    """The next token, by unmasking's proposal at one position ('confident': no random draw but the token's)."""
    draws, _ = propose(logits[None, None] / temperature, 'confident', generator, allowed, top_k)
    return int(draws)

def show_canvas(step, canvas, masked):
    """Every show_steps steps and at the end, each canvas as text: '_' for each position still masked, each run of
    filled ones decoded whole (a character may span several bytes)."""
    if show_steps and (step % show_steps == 0 or not masked.any()):
        for index, row in enumerate(zip(canvas[:, 1:].tolist(), masked[:, 1:].tolist()), 1):
            text = ''.join('_' * len(list(run)) if hidden else tokenizer.decode([token for token, _ in run])
                           for hidden, run in groupby(zip(*row), key=lambda pair: pair[1]))
            print(f"step {step:>4} | sample {index} | {text}", flush=True)

def unmask_samples():
    """num_samples canvases (BOS, the prompt, n_new [MASK]s) filled together; -> the filled (B, S) ids and the
    forward passes each took (B,)."""
    canvas = torch.tensor([start + [0] * n_new] * num_samples)  # 0 under a mask: never read
    masked = (torch.arange(canvas.shape[1]) >= len(start)).expand_as(canvas)
    no_bos = allowed.cpu() & (torch.arange(len(allowed)) != bos)  # one document: no boundary inside the canvas
    return unmask(model_log_probs(model, pretraining.two_stream, autocast), canvas, masked, tokens_per_step, order,
                  torch.Generator().manual_seed(seed), temperature, top_k, no_bos, on_step=show_canvas,
                  remask=remask, block_length=block_length)

# -----------------------------------------------------------------------------
start = [bos] + tokenizer.encode_ordinary(prompt)
n_new = max_new_tokens
if order != 'left_to_right':  # the canvas is the model's window
    n_new = min(max_new_tokens, model.config.block_size - len(start))
    if n_new < 1:
        raise UsageError(f"the prompt is {len(start) - 1} tokens, and a canvas holds {model.config.block_size - 1}: "
                         "shorten --prompt")
    if n_new < max_new_tokens:
        print(f"the canvas holds {model.config.block_size - 1} tokens: {n_new} new ones after the prompt",
              file=sys.stderr)
if judge:  # checked, and its held-out windows read, before any sampling
    judged_by = Pretrained(judge, 'tokens')
    judge_style = prefix_style(judged_by.objective)
    if judge_style not in ('causal', 'groups'):
        raise UsageError(f"the judge needs an exact likelihood, and {judge} is {judged_by.objective.label} (a bound "
                         "at best): pass an ar checkpoint, e.g. --judge=out-judge-shakespeare-bytes/ckpt_best.pt")
    if judged_by.model_config.tokenizer != tokenizer_name:
        raise UsageError(f"the judge {judge} reads {judged_by.model_config.tokenizer} tokens and {ckpt} "
                         f"{tokenizer_name} tokens: pass a judge trained on the same tokens")
    corpora = checkpoint.train_config.get('dataset', ''), judged_by.train_config.get('dataset', '')
    if all(corpora) and len({os.path.realpath(dataset_dir(name)) for name in corpora}) > 1:
        raise UsageError(f"the judge {judge} was trained on {corpora[1]} and {ckpt} on {corpora[0]}: the judge's "
                         f"likelihood stands for the text's own, so pass a judge trained on {corpora[0]}")
    if len(start) + n_new > judged_by.model_config.block_size:
        raise UsageError(f"a sample is {len(start) + n_new} tokens with BOS, longer than the judge's window of "
                         f"{judged_by.model_config.block_size}: lower --max_new_tokens or shorten --prompt")
    judge_dataset = judged_by.train_config.get('dataset', '') if judge_dataset == 'auto' else judge_dataset
    if not judge_dataset:
        raise UsageError(f"{judge} names no training corpus: pass --judge_dataset=<held-out corpus>")
    held_out_tokens = load_tokens(dataset_dir(judge_dataset), 'val', tokenizer_name)
    held_out = gather_windows(held_out_tokens, window_starts(len(held_out_tokens), n_new + 1, judge_tokens),
                              n_new + 1, bos)
    if judge_out:  # where the scores go is checked now, not once the samples are drawn
        folder = os.path.dirname(os.path.abspath(judge_out))
        try:
            os.makedirs(folder, exist_ok=True)
            tempfile.TemporaryFile(dir=folder).close()
        except OSError:
            raise UsageError(f"cannot write --judge_out={judge_out}: {folder} is not a folder you can write to") \
                from None
        if os.path.isdir(judge_out):
            raise UsageError(f"--judge_out={judge_out} is a folder: pass a file in it, e.g. --judge_out="
                             f"{os.path.join(judge_out, 'quality.json')}")
unmasking = f", {order} unmasking, {tokens_per_step} per step" if order != 'left_to_right' else ''
unmasking += f", blocks of {block_length}" if block_length else ''
unmasking += f", remask {remask}" if remask else ''
print(f"{ckpt}: {pretraining.label} ({style}{unmasking}), {tokenizer_name} tokens, temperature {temperature}, "
      f"top_k {top_k or 'off'}, seed {seed}", file=sys.stderr)
# every sample (BOS, prompt, sampled tokens) and the forward passes it took
if order != 'left_to_right':
    sequences, passes = (part.tolist() for part in unmask_samples())
    for index, ids in enumerate(sequences):
        print(f"---------- sample {index + 1}\n{prompt + tokenizer.decode(ids[len(start):])}", flush=True)
else:
    sequences, passes = [], []
    for index in range(num_samples):
        ids, shown = list(start), ''
        print(f"---------- sample {index + 1}", flush=True)
        for step in range(1, max_new_tokens + 1):  # one forward pass a step
            token = sample_next(next_token_logits(ids))
            if token == bos:  # the model ended the document
                break
            ids.append(token)
            text = prompt + tokenizer.decode(ids[len(start):])
            if stream and not text.endswith('\ufffd'):  # a byte model may be inside a multi-byte character
                print(text[len(shown):], end='', flush=True)
                shown = text
        text = prompt + tokenizer.decode(ids[len(start):])
        print(text[len(shown):] if stream else text, flush=True)
        sequences.append(ids)
        passes.append(step)
forward_passes = sum(passes) / len(passes)
print(f"{forward_passes:g} forward passes per sample", file=sys.stderr)
if judge:
    judge_nll = partial(score_windows, judged_by.model(device, attn_backend=attn_backend), style=judge_style,
                        autocast=autocast)
    scores = sample_quality(judge_nll, sequences, len(start), held_out)
    unit = 'byte' if tokenizer_name == 'bytes' else 'token'
    def plus_minus(key):  # one sample (or window) has no standard error
        se = scores[f"{key}_se"]
        return f"{scores[key]:.3f}" + (f" ± {se:.3f}" if math.isfinite(se) else " (n=1, no se)")
    print(f"judge {judge}, nats per {unit} ± se: samples {plus_minus('judge_nll')}, held-out text "
          f"{plus_minus('held_out_nll')} ({scores['held_out_windows']} windows of {n_new}); unigram entropy of a "
          f"sample {plus_minus('entropy')}, of held-out text {scores['held_out_entropy']:.3f}"
          f"{': repetitive' if scores['repetitive'] else ''}; {forward_passes:g} forward passes per sample")
    if judge_out:
        settings = dict(ckpt=ckpt, objective=pretraining.label, order=order, tokens_per_step=tokens_per_step,
                        block_length=block_length, remask=remask, temperature=temperature, top_k=top_k, seed=seed,
                        prompt=prompt, new_tokens=n_new, judge=judge, judge_dataset=judge_dataset)
        atomic_write(judge_out, json.dumps(dict(**settings, forward_passes=forward_passes, **scores), indent=1) + '\n')

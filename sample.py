"""
Generate text from a checkpoint of any text objective: left to right, one token at a time, streamed as it goes,
or, for masked checkpoints, by unmasking a canvas of [MASK]s in any order.

$ python sample.py --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt --prompt='ROMEO:' --max_new_tokens=300
$ python sample.py --ckpt=out-vm-shakespeare-bytes/ckpt_best.pt --num_samples=3 --temperature=0.8 --top_k=40

Every objective predicts x_{k+1} from x_1..x_k exactly as eval_ppl.py scores it (evals.ppl.prefix_batch):
  ar (GPT)          the causal output at the last position
  dar, gvp, 2s ar   the query stream at the next position, seeing the content of every earlier position
  mlm, vm (BERT)    the prefix visible, [MASK] at the next position (later ones: --bert_future)
  two-stream mlm/vm the query stream at the next position, the prefix as visible content
so a masked model generates from the same prefix-only conditional as its Table 7 perplexity: the paper's point
that autoregressive pretraining generates better can be read off the samples.

A masked model can also generate the way it was trained (--order=random|confident, the default for masked
checkpoints): the prompt, then max_new_tokens [MASK]s; each step samples tokens_per_step of them from the model's
conditional given everything filled so far, chosen uniformly (random; with one token per step and temperature 1 this
samples exactly from the any-order model whose likelihood eval_ppl.py --reading=elbo bounds) or where the model is
surest (confident, MaskGIT). --show_steps=N prints the canvas every N steps, '_' for a position still masked.
$ python sample.py --ckpt=out-vm-2s-shakespeare-bytes/ckpt_best.pt --prompt='ROMEO:' --max_new_tokens=100 \
      --order=confident --tokens_per_step=4 --show_steps=5
"""
import sys

import torch

from checkpoint import Pretrained
from configurator import UsageError, check_ranges, configure, one_line_errors
from data.text import TOKENIZERS, get_tokenizer
from devices import pick_attn_backend, setup_processes
from evals.any_order import model_log_probs, unmask
from evals.ppl import BERT_FUTURES, ROW_STYLES, prefix_batch, take_rows
from objectives import to_device

# -----------------------------------------------------------------------------
ckpt = ''                   # a text checkpoint written by train.py
prompt = ''                 # text to continue; '' starts from BOS alone (a new document)
num_samples = 1
max_new_tokens = 200
temperature = 0.8           # < 1 sharper, > 1 flatter
top_k = 0                   # sample among the k likeliest tokens only; 0 = all
bert_future = 'invisible'   # one-stream BERT checkpoints: the positions after the next one left out or [MASK]
order = 'auto'              # 'left_to_right' (any checkpoint), or for masked ones 'random' / 'confident' unmasking;
                            # auto = random for masked checkpoints, left_to_right for the others
tokens_per_step = 1         # unmasking: positions filled per forward pass
show_steps = 0              # unmasking: print the canvas every this many steps; 0 = the finished samples only
seed = 1337
device = 'auto'
dtype = 'auto'
attn_backend = 'auto'
stream = True               # print tokens as they come; False prints each finished sample
# -----------------------------------------------------------------------------
one_line_errors('sample.py')
configure(globals(), sys.argv[1:])
check_ranges(globals(), {'num_samples': '[1, inf)', 'max_new_tokens': '[1, inf)', 'temperature': '(0, inf)',
                         'top_k': '[0, inf)', 'seed': '[0, inf)', 'tokens_per_step': '[1, inf)',
                         'show_steps': '[0, inf)'})
if not ckpt:
    raise UsageError("no checkpoint: pass --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt (any text checkpoint)")
if bert_future not in BERT_FUTURES:
    raise UsageError(f"bert_future must be 'invisible' or 'mask', got {bert_future!r}")
_, _, _, _, device, dtype, autocast = setup_processes(device, dtype)
attn_backend = pick_attn_backend(attn_backend, device)
checkpoint = Pretrained(ckpt, 'tokens')
pretraining = checkpoint.objective
if order not in ('auto', 'left_to_right', 'random', 'confident'):
    raise UsageError(f"order must be 'left_to_right', 'random' or 'confident' (or 'auto'), got {order!r}")
if order == 'auto':
    order = 'random' if pretraining.kind.masked else 'left_to_right'
if order != 'left_to_right' and not pretraining.kind.masked:
    raise UsageError(f"--order={order} unmasks a canvas, which needs a masked checkpoint; {ckpt} is "
                     f"{pretraining.label}: use --order=left_to_right")
model = checkpoint.model(device, attn_backend=attn_backend)
tokenizer_name = model.config.tokenizer
tokenizer = get_tokenizer(tokenizer_name)
n_vocab, bos = TOKENIZERS[tokenizer_name]
style = pretraining.prefix_style
future = bert_future if style == 'bert' else 'invisible'
generator = torch.Generator(device=device).manual_seed(seed)

# -----------------------------------------------------------------------------
@torch.no_grad()
def next_token_logits(ids):
    """Logits of the token after ids (BOS first), read as eval_ppl.py reads the model. The window ends in a
    placeholder slot for the next token; no row that predicts it sees that slot (tests/test_sample.py)."""
    context = ids[-(model.config.block_size - 2):] if len(ids) > model.config.block_size - 1 else ids[1:]
    window = torch.tensor([[bos] + context + [bos]], device=device)  # BOS, the last tokens that fit, the slot
    batch = prefix_batch(window, style, future)
    if style in ROW_STYLES:  # one row per prefix length: keep the row of the longest prefix
        batch = take_rows(batch, torch.tensor([window.shape[1] - 2], device=device), window.shape[1])
    with autocast:
        logits, _ = model(**to_device(batch, device))
    return logits[0, -1].float()

def sample_next(logits):
    logits = logits.clone()
    logits[n_vocab:] = -float('inf')  # the padding rows of the head: never a real token
    logits = logits / temperature
    if top_k:
        kth = torch.topk(logits, min(top_k, n_vocab)).values[-1]
        logits[logits < kth] = -float('inf')
    return int(torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator))

def render(ids, masked_row):
    """The canvas as text, '_' for each position still masked."""
    pieces, filled = [], []
    for token, hidden in zip(ids, masked_row):
        if hidden:
            pieces += [tokenizer.decode(filled), '_']
            filled = []
        else:
            filled.append(token)
    return ''.join(pieces) + tokenizer.decode(filled)

def show_canvas(step, canvas, masked):
    if show_steps and (step % show_steps == 0 or not masked.any()):
        for index in range(len(canvas)):
            print(f"step {step:>4} | sample {index + 1} | {render(canvas[index, 1:].tolist(), masked[index, 1:])}",
                  flush=True)

def unmask_samples():
    """num_samples canvases (BOS, the prompt, max_new_tokens [MASK]s) filled together; -> the filled (B, S) ids."""
    room = model.config.block_size - len(start)
    if room < 1:
        raise UsageError(f"the prompt is {len(start) - 1} tokens, and a canvas holds {model.config.block_size - 1}: "
                         "shorten --prompt")
    n_new = min(max_new_tokens, room)
    if n_new < max_new_tokens:
        print(f"the canvas holds {model.config.block_size - 1} tokens: {n_new} new ones after the prompt",
              file=sys.stderr)
    canvas = torch.tensor([start + [0] * n_new] * num_samples)  # 0 under a mask: never read
    masked = torch.zeros_like(canvas, dtype=torch.bool)
    masked[:, len(start):] = True
    allowed = torch.arange(model.config.vocab_size) < n_vocab
    allowed[bos] = False  # one document: no boundary inside the canvas
    return unmask(model_log_probs(model, pretraining.two_stream, autocast), canvas, masked, tokens_per_step, order,
                  torch.Generator().manual_seed(seed), temperature, top_k, allowed, on_step=show_canvas)

# -----------------------------------------------------------------------------
unmasking = f", {order} unmasking, {tokens_per_step} per step" if order != 'left_to_right' else ''
print(f"{ckpt}: {pretraining.label} ({style}{unmasking}), {tokenizer_name} tokens, temperature {temperature}, "
      f"top_k {top_k or 'off'}, seed {seed}", file=sys.stderr)
start = [bos] + tokenizer.encode_ordinary(prompt)
if order != 'left_to_right':
    for index, ids in enumerate(unmask_samples().tolist()):
        print(f"---------- sample {index + 1}", flush=True)
        print(prompt + tokenizer.decode(ids[len(start):]), flush=True)
for index in range(num_samples if order == 'left_to_right' else 0):
    ids, shown = list(start), ''
    print(f"---------- sample {index + 1}", flush=True)
    for _ in range(max_new_tokens):
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

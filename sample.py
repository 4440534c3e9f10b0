"""
Generate text from a checkpoint of any text objective, one token at a time, streamed as it goes.

$ python sample.py --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt --prompt='ROMEO:' --max_new_tokens=300
$ python sample.py --ckpt=out-vm-shakespeare-bytes/ckpt_best.pt --num_samples=3 --temperature=0.8 --top_k=40

Every objective predicts x_{k+1} from x_1..x_k exactly as eval_ppl.py scores it (objectives.prefix_batch):
  ar (GPT)          the causal output at the last position
  dar, gvp, 2s ar   the query stream at the next position, seeing the content of every earlier position
  mlm, vm (BERT)    the prefix visible, [MASK] at the next position (later ones: --bert_future)
  two-stream mlm/vm the query stream at the next position, the prefix as visible content
so a masked model generates from the same prefix-only conditional as its Table 7 perplexity: the paper's point
that autoregressive pretraining generates better can be read off the samples.
"""
import sys

import torch

from checkpoint import load_checkpoint, read_checkpoint
from devices import pick_attn_backend, setup_processes
from configurator import UsageError, check_ranges, configure, one_line_errors
from data.text import TOKENIZERS, get_tokenizer
from evals.ppl import BERT_FUTURES, ROW_STYLES, take_rows
from objectives import Objective, prefix_batch, to_device

# -----------------------------------------------------------------------------
ckpt = ''                   # a text checkpoint written by train.py
prompt = ''                 # text to continue; '' starts from BOS alone (a new document)
num_samples = 1
max_new_tokens = 200
temperature = 0.8           # < 1 sharper, > 1 flatter
top_k = 0                   # sample among the k likeliest tokens only; 0 = all
bert_future = 'invisible'   # one-stream BERT checkpoints: the positions after the next one left out or [MASK]
seed = 1337
device = 'auto'
dtype = 'auto'
attn_backend = 'auto'
stream = True               # print tokens as they come; False prints each finished sample
# -----------------------------------------------------------------------------
one_line_errors('sample.py')
configure(globals(), sys.argv[1:])
check_ranges(globals(), {'num_samples': '[1, inf)', 'max_new_tokens': '[1, inf)', 'temperature': '(0, inf)',
                         'top_k': '[0, inf)', 'seed': '[0, inf)'})
if not ckpt:
    raise UsageError("no checkpoint: pass --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt (any text checkpoint)")
if bert_future not in BERT_FUTURES:
    raise UsageError(f"bert_future must be 'invisible' or 'mask', got {bert_future!r}")
_, _, _, _, device, dtype, autocast = setup_processes(device, dtype)
checkpoint = read_checkpoint(ckpt)
if checkpoint['model_config'].get('input_kind', 'tokens') != 'tokens':
    raise UsageError(f"{ckpt} is an image model: sample.py generates text (eval_vision.py task=recon fills patches)")
pretraining = Objective.from_checkpoint(checkpoint, ckpt)
del checkpoint
model, _ = load_checkpoint(ckpt, device, attn_backend=pick_attn_backend(attn_backend, device))
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

# -----------------------------------------------------------------------------
print(f"{ckpt}: {pretraining.label} ({style}), {tokenizer_name} tokens, temperature {temperature}, "
      f"top_k {top_k or 'off'}, seed {seed}", file=sys.stderr)
start = [bos] + tokenizer.encode_ordinary(prompt)
for index in range(num_samples):
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

"""
Next-token perplexity from a prefix only (Eq. 2), for a model trained with any objective, and its split by
conditioning length k (Fig. 3). eval_ppl.py runs this over a corpus; the tests call it directly.

Column k of a window's scores is -log p(x_{k+1} | BOS, x_1..x_k), k = 0..S-2. How a model reads the prefix follows
from how it was trained (prefix_style / prefix_batch):
  causal             GPT: all k of a window in one causal pass
  groups             two-stream (dar, gvp, two-stream ar): the query at k+1 sees content 0..k; all k in one pass
  bert               one-stream masked: BOS + prefix + [MASK] at k+1, then nothing (bert_future='invisible') or
                     [MASK] at every later position ('mask'); one row per k
  masked_two_stream  two-stream masked: the query at k+1 sees the prefix content only; one row per k
"""
import math
from contextlib import nullcontext

import numpy as np
import torch
import torch.nn.functional as F

from configurator import UsageError
from data.text import with_bos
from devices import to_device
from objectives import PAD_GROUP, causal_batch, gather_positions, model_batch, two_stream_batch

ROW_STYLES = ('bert', 'masked_two_stream')  # one row per prefix length: these need chunking and trimming
BERT_FUTURES = ('invisible', 'mask')  # prefix_batch: what a one-stream BERT row holds after its target
DEFAULT_BUCKETS = (0, 1, 2, 4, 8, 16, 32, 64, 128)

# -----------------------------------------------------------------------------
# evaluation batches: next-token prediction from a prefix only (Eq. 2, Fig. 3)

def prefix_style(objective):
    """How a model pretrained with objective predicts x_{k+1} from x_1..x_k (also reconstruction, evals/vision.py)."""
    if objective.kind.masked:
        return 'masked_two_stream' if objective.two_stream else 'bert'
    return 'causal' if objective.causal else 'groups'

def prefix_batch(x, style, bert_future='invisible'):
    """A batch whose target rows predict x_{k+1} from BOS, x_1..x_k, for every k in 0..S-2. A masked model saw the
    visible tokens bidirectionally in pretraining, so each prefix gets its own row ((B*(S-1), S) batch). The paper
    does not say what a one-stream BERT row holds after its target, hence bert_future; 'mask' shows the model how
    many positions follow but none of their tokens (style 'bert' only: a content stream has no [MASK])."""
    B, S = x.shape[:2]
    if style == 'causal':
        return causal_batch(x)
    if style == 'groups':
        return two_stream_batch(x, torch.arange(1, S, device=x.device).expand(B, S - 1))
    L = S - 1
    k = torch.arange(L, device=x.device)  # prefix length; the target is position k + 1
    rows = x.repeat_interleave(L, dim=0)
    k_rows = k.repeat(B)
    positions = torch.arange(S, device=x.device).expand(B * L, S)
    target = (k_rows + 1)[:, None]
    after = positions > target
    one_row = torch.ones(B * L, 1, dtype=torch.bool, device=x.device)  # each row predicts its one target
    if style == 'bert':
        if bert_future == 'invisible':  # no real row sees the positions after the target
            groups, masked = torch.zeros_like(positions).masked_fill(after, PAD_GROUP), positions == target
        else:  # present, and every one of them [MASK]
            groups, masked = torch.zeros_like(positions), positions >= target
        return model_batch(rows, positions, groups, gather_positions(rows, target), one_row, content_masked=masked,
                           pred_index=target)
    content_groups = torch.zeros_like(positions).masked_fill(positions >= target, PAD_GROUP)
    return model_batch(rows, positions, content_groups, gather_positions(rows, target), one_row, query_pos=target,
                       query_groups=torch.ones_like(target))

# -----------------------------------------------------------------------------
# evaluation windows

def window_starts(n_tokens, block_size, max_tokens=0):
    """Token offsets of the windows to score: the split's consecutive, non-overlapping windows (BOS + block_size-1
    tokens each; the last partial span left out), all of them, or an evenly spaced subset of about max_tokens scored
    targets, so that a bounded run still samples the whole split and not only its first document."""
    span = block_size - 1
    n_windows = n_tokens // span
    if n_windows == 0:
        raise UsageError(f"the split has {n_tokens} tokens, fewer than one window of {span}: "
                         "use a smaller --block_size or a larger split")
    n = n_windows if not max_tokens else min(n_windows, max(1, max_tokens // span))
    return (np.arange(n) * n_windows // n) * span

def gather_windows(tokens, starts, block_size, bos):
    """(len(starts), block_size) LongTensor: bos, then block_size-1 tokens from each start."""
    return with_bos(np.asarray(tokens[np.asarray(starts)[:, None] + np.arange(block_size - 1)]), bos)

# -----------------------------------------------------------------------------
# scoring

def take_rows(batch, rows, width):
    """Some rows of a one-row-per-prefix batch, keeping only its first `width` input positions."""
    part = {}
    for key, value in batch.items():
        if torch.is_tensor(value):
            value = value[rows]
            if key.startswith('content'):  # content, content_pos, content_groups, content_masked
                value = value[:, :width]
        part[key] = value
    return part

def target_nll(model, batch, autocast=None):
    """A batch built on the CPU -> the NLL of each of its targets, on the CPU (the model's own loss is their mean)."""
    batch = to_device(batch, next(model.parameters()).device)
    with autocast or nullcontext():
        logits, _ = model(**{**batch, 'targets': None})
        nll = F.cross_entropy(logits.float().flatten(0, 1), batch['targets'].flatten(), reduction='none')
    return nll.view(batch['targets'].shape).cpu()

@torch.no_grad()
def score_windows(model, windows, style, rows_per_pass=1024, autocast=None, bert_future='invisible'):
    """windows: (B, S) token ids, conditioning token in column 0. Returns (B, S-1) float32 NLLs on the CPU,
    column k = -log p(x_{k+1} | x_0..x_k). At most rows_per_pass target rows (rows x vocab logits) per pass.
    bert_future: style 'bert' only, see prefix_batch."""
    B, S = windows.shape
    L = S - 1
    if style not in ROW_STYLES:  # every prefix of a window in one sequence
        return torch.cat([target_nll(model, prefix_batch(chunk, style, bert_future), autocast)
                          for chunk in windows.split(max(1, rows_per_pass // L))])
    # One row per (window, k). Passes take rows in order of k, so each pass holds similar prefix lengths, and
    # drop the input columns after the pass's last target: those are PAD_GROUP positions no real row sees, so
    # the scores are unchanged and the work is about halved. Not with bert_future='mask': there every row sees
    # them (as [MASK]). With flex attention, shapes stay fixed (a new shape is a recompile).
    batch = prefix_batch(windows, style, bert_future)  # row b * L + k
    k_of_row = torch.arange(L).repeat(B)
    trim = model.config.attn_backend == 'sdpa' and bert_future == 'invisible'
    nll = torch.empty(B * L)
    for rows in torch.argsort(k_of_row, stable=True).split(rows_per_pass):
        width = int(k_of_row[rows].max()) + 2 if trim else S
        nll[rows] = target_nll(model, take_rows(batch, rows, width), autocast).view(-1)
    return nll.view(B, L)

# -----------------------------------------------------------------------------
# the floor every model must beat: unigram and bigram models of the training text, scored on the same targets

class NgramBaselines:
    """Counted on a training stream: an add-one unigram, and a bigram with absolute discounting (d = 0.75)
    interpolated with that unigram (Ney et al. 1994). At k = 0 the models see only BOS, so both baselines give the
    unigram there; after that the bigram conditions on x_k. A model that does not beat them has learned no context."""

    def __init__(self, train_tokens, vocab_size, discount=0.75):
        tokens = np.asarray(train_tokens, dtype=np.int64)
        self.vocab_size, self.discount = vocab_size, discount
        counts = np.bincount(tokens, minlength=vocab_size).astype(np.float64)
        self.unigram = (counts + 1) / (counts.sum() + vocab_size)
        self.pairs, pair_counts = np.unique(tokens[:-1] * vocab_size + tokens[1:], return_counts=True)
        self.pair_counts = pair_counts.astype(np.float64)
        first = self.pairs // vocab_size
        self.context_counts = np.bincount(first, weights=self.pair_counts, minlength=vocab_size)
        self.followers = np.bincount(first, minlength=vocab_size).astype(np.float64)  # distinct next tokens

    def nll(self, windows):
        """(B, S) windows, conditioning token in column 0 -> {'unigram', 'bigram'}: (B, S-1) NLLs, column k for
        x_{k+1}, as score_windows."""
        windows = np.asarray(windows, dtype=np.int64)
        previous, targets = windows[:, :-1], windows[:, 1:]
        unigram = self.unigram[targets]
        codes = previous * self.vocab_size + targets
        at = np.clip(np.searchsorted(self.pairs, codes), 0, len(self.pairs) - 1)
        pair = np.where(self.pairs[at] == codes, self.pair_counts[at], 0.0)
        seen = self.context_counts[previous]
        with np.errstate(divide='ignore', invalid='ignore'):
            bigram = np.where(seen > 0, (np.maximum(pair - self.discount, 0) + self.discount * self.followers[previous]
                                         * unigram) / seen, unigram)
        bigram[:, 0] = unigram[:, 0]  # k = 0: the window's start is no document start, so no context to use
        return {'unigram': -np.log(unigram), 'bigram': -np.log(bigram)}

# -----------------------------------------------------------------------------
# perplexity overall and by conditioning length

def check_buckets(edges):
    edges = tuple(edges)
    if not edges or not all(isinstance(e, int) for e in edges) or edges[0] != 0 or \
            any(b <= a for a, b in zip(edges, edges[1:])):
        raise UsageError(f"buckets must be increasing integer prefix lengths starting at 0, got {edges!r}: "
                         "e.g. --buckets=(0,1,2,4,8,16,32,64,128)")
    return edges

def mean_se(values):
    """Mean and its standard error over the items (nan for fewer than two)."""
    values = np.asarray(values, dtype=np.float64)
    se = values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else float('nan')
    return float(values.mean()), float(se)

def bucket_table(nll_sum_by_k, count_by_k, edges):
    """Per-k sums -> one dict per bucket [edges[i], edges[i+1]) that holds a k (the last one open-ended), each with its
    target count, NLL sum, mean NLL and perplexity. The buckets partition k, so their sums add up to the total."""
    nll_sum_by_k, count_by_k = np.asarray(nll_sum_by_k, dtype=np.float64), np.asarray(count_by_k, dtype=np.int64)
    n_k = len(count_by_k)
    edges = check_buckets(edges)
    table = []
    for first, end in zip(edges, edges[1:] + (n_k,)):
        if first >= n_k:
            break
        end = min(end, n_k)
        targets, nll_sum = int(count_by_k[first:end].sum()), float(nll_sum_by_k[first:end].sum())
        table.append(dict(k_first=first, k_last=end - 1, targets=targets, nll_sum=nll_sum, nll=nll_sum / targets,
                          ppl=math.exp(nll_sum / targets)))
    return table

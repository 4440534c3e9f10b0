"""
The pieces of eval_glue.py that tests call directly: texts -> padded batches with group ids, pooling, the task
head, and the closed-form / convex linear probes of Sec. 3.3.

A text (or a pair) becomes  BOS a  or  BOS a SEP b  with SEP = BOS again (GPT-2's <|endoftext|>, 50256; byte
level: 256): in pretraining every document ends with that token, so to the model it already means "one text ends,
another begins".
The attention pattern follows the checkpoint's pretraining (Sec. 3.3; GVP keeps the causal mask):
  causal         ar, dar, gvp: content groups 0,1,2,..., so position k sees 0..k; pool the LAST real token
                 (the only one that has seen the whole text; a causal model cannot pool BOS)
  bidirectional  mlm, vm: every real position in group 0; pool the mean over real tokens (BOS never had a
                 training signal of its own: it is never masked and never predicted) or BOS itself
Padding goes on the right with group PAD_GROUP, so no real row ever sees it.
"""


import torch
import torch.nn as nn
import torch.nn.functional as F

from configurator import UsageError
from objectives import PAD_GROUP

SEPARATOR = 50256  # GPT-2 <|endoftext|>, the same id as BOS (the default of join_pair)
STYLES = ('causal', 'bidirectional')
POOLINGS = ('last', 'first', 'mean')


# -----------------------------------------------------------------------------
# texts -> token sequences


def encode_rows(tokenizer, rows):
    """rows: (text_a, text_b or None, label) -> list of (ids_a, ids_b or None). Special-token text is plain text."""
    ids_a = tokenizer.encode_ordinary_batch([row[0] for row in rows])
    pairs = [row[1] is not None for row in rows]
    ids_b = iter(tokenizer.encode_ordinary_batch([row[1] for row in rows if row[1] is not None]))
    return [(a, next(ids_b) if is_pair else None) for a, is_pair in zip(ids_a, pairs)]


def join_pair(ids_a, ids_b, max_len, bos=SEPARATOR):
    """bos a (bos b), at most max_len ids. A pair too long loses tokens from the end of the LONGER text first
    (both texts keep a share, which a pair task needs); a single text is cut at the end."""
    if ids_b is None:  # max_len >= 2: eval_glue.py's check_ranges
        return [bos] + list(ids_a[:max_len - 1])
    budget = max_len - 2
    if budget < 2:
        raise UsageError(f"max_len={max_len} is too short for a pair (BOS + a + SEP + b)")
    len_a, len_b = len(ids_a), len(ids_b)
    if len_a + len_b > budget:
        half = budget // 2
        if len_a <= half:
            len_b = budget - len_a
        elif len_b <= half:
            len_a = budget - len_b
        else:
            len_a, len_b = budget - half, half
    return [bos] + list(ids_a[:len_a]) + [bos] + list(ids_b[:len_b])

# -----------------------------------------------------------------------------
# pooling, given the pretraining attention

def pretraining_attention(objective):
    """How the content stream attended in pretraining: what features are read with (eval_glue.py, theory.py)."""
    return 'bidirectional' if objective.kind.masked else 'causal'


def resolve_pooling(pooling, style):
    """pooling is the user's (checked here); style is one of STYLES (a pretraining attention or a checked flag)."""
    if pooling == 'auto':
        return 'last' if style == 'causal' else 'mean'
    if pooling not in POOLINGS:
        raise UsageError(f"pooling must be 'auto', 'last', 'first' or 'mean', got {pooling!r}")
    if pooling == 'first' and style == 'causal':
        raise UsageError("pooling='first' under causal attention reads BOS, which sees nothing else: "
                         "use --pooling=last or --pooling=mean (or --attention=bidirectional)")
    return pooling


def pad_batch(sequences, style, pad_to=None):
    """Right-pad to the longest sequence (or pad_to: static shapes for compiled kernels).
    -> dict(content, content_pos, content_groups) for Transformer.trunk, and lengths (B,)."""
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    S = int(lengths.max()) if pad_to is None else pad_to  # join_pair kept every sequence within pad_to
    content = torch.zeros(len(sequences), S, dtype=torch.long)
    for row, ids in enumerate(sequences):
        content[row, :len(ids)] = torch.as_tensor(ids, dtype=torch.long)
    positions = torch.arange(S).expand(len(sequences), S)
    real = positions < lengths[:, None]
    groups = positions if style == 'causal' else torch.zeros_like(positions)
    groups = groups.masked_fill(~real, PAD_GROUP)
    return dict(content=content, content_pos=positions, content_groups=groups), lengths


def pool(hidden, lengths, pooling):
    """(B, S, C) hidden states of padded rows -> (B, C)."""
    if pooling == 'first':
        return hidden[:, 0]
    if pooling == 'last':
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), lengths - 1]
    real = (torch.arange(hidden.shape[1], device=hidden.device)[None, :] < lengths[:, None]).to(hidden.dtype)
    return (hidden * real[..., None]).sum(dim=1) / lengths[:, None].to(hidden.dtype)  # 'mean' (resolve_pooling)


def length_batches(lengths, batch_size):
    """Index batches of similar lengths (less padding at evaluation); every index exactly once."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]

# -----------------------------------------------------------------------------
# the fine-tuned network: pretrained trunk + dropout + linear head


class TextClassifier(nn.Module):
    """The pretrained trunk under its pretraining attention, pooled, dropout, then a linear head: one output per
    class, or one score (STS-B)."""

    def __init__(self, model, n_outputs, pooling, dropout=0.0):
        super().__init__()
        self.model, self.pooling = model, pooling
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(model.config.n_embd, n_outputs)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    def features(self, content, content_pos, content_groups, lengths):
        # trunk, not Transformer.features: that one is no_grad, and fine-tuning trains every weight
        return pool(self.model.trunk(content, content_pos, content_groups), lengths, self.pooling)

    def forward(self, content, content_pos, content_groups, lengths):
        return self.head(self.dropout(self.features(content, content_pos, content_groups, lengths))).float()


# -----------------------------------------------------------------------------
# linear probes (Sec. 3.3: frozen features, linear head)


def fit_logistic(features, labels, n_classes, l2, max_iter=500):
    """Multinomial logistic regression: minimise mean CE + l2/2 ||W||^2 (bias free) with full-batch L-BFGS
    from zero. Convex with a unique optimum, so the result does not depend on a seed. -> (W (D, K), b (K,))."""
    D = features.shape[1]
    weight = torch.zeros(D, n_classes, dtype=features.dtype, device=features.device, requires_grad=True)
    bias = torch.zeros(n_classes, dtype=features.dtype, device=features.device, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], lr=1, max_iter=max_iter, tolerance_grad=1e-9,
                                  tolerance_change=1e-12, history_size=20, line_search_fn='strong_wolfe')

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(features @ weight + bias, labels) + 0.5 * l2 * (weight ** 2).sum()
        loss.backward()
        return loss
    optimizer.step(closure)
    return weight.detach(), bias.detach()


def fit_least_squares(features, targets, l2):
    """Ridge regression in closed form (in float64, as eval_glue.py passes), intercept unpenalised:
    min mean (Xw + b - y)^2 + l2 ||w||^2."""
    x_mean, y_mean = features.mean(dim=0), targets.mean()
    centred = features - x_mean
    n, D = features.shape
    gram = centred.T @ centred + l2 * n * torch.eye(D, dtype=features.dtype, device=features.device)
    # D x D solve on CPU: gelsd copes with a singular gram (l2 = 0), which CUDA's lstsq driver does not
    weight = torch.linalg.lstsq(gram.cpu(), (centred.T @ (targets - y_mean))[:, None].cpu(),
                                driver='gelsd').solution[:, 0].to(features.device)
    return weight, y_mean - x_mean @ weight

# -----------------------------------------------------------------------------

"""
The any-order model behind a masked checkpoint: its likelihood bound (eval_ppl.py --reading=elbo) and its
unmasking sampler (sample.py).

A masked model gives q(x_i | x_V) for every masked position i and visible set V. Each order sigma of positions
1..L then defines a proper model q_sigma(x) = prod_k q(x_sigma(k) | x_sigma(<k)), and so does their mixture over
uniform sigma. By Jensen, -log mixture(x) <= the order average of -log q_sigma(x), which therefore bounds the
mixture's NLL from above and is comparable with ar's exact left-to-right NLL. Grouping the order average by how many
positions are still hidden (MDLM, Sahoo et al. 2024, Eq. 10 in discrete time):
    bound(x) = sum_k E_sigma[-log q(x_sigma(k) | x_sigma(<k))]
             = L * E_m E_{M : |M| = m} [mean_{i in M} -log q(x_i | x_{not M})]
with m uniform on 1..L and the masked set M uniform given m. Position 0 (BOS) is always visible and never masked.

The maths takes a callable, so the tests check it on exact conditionals without a Transformer:
  masked_nll(x, masked) -> (B, S) -log q(x_i | x_{not masked}) at masked positions (anything elsewhere)
  log_probs(x, masked)  -> (B, S, V) log q(. | x_{not masked}) at masked positions (anything elsewhere)
model_masked_nll / model_log_probs adapt a checkpoint (masked_batch says how it reads a masked window).
"""
import math
from contextlib import nullcontext

import torch

from evals.ppl import mean_se, target_nll
from devices import to_device
from objectives import bert_batch, two_stream_batch

DEFAULT_PASSES = 16  # forward passes per window for the bound: one per stratum of m
WIDTH_STEP = 32      # batch widths rounded up to a multiple of this: few distinct shapes, so few flex recompiles

# -----------------------------------------------------------------------------
# a masked checkpoint as the any-order model's conditionals

def round_width(n, most):
    return min(most, -(-n // WIDTH_STEP) * WIDTH_STEP)

def masked_batch(x, masked, two_stream):
    """x (B, S) token ids, BOS in column 0; masked (B, S) bool, column 0 False, at least one True per row.
    One-stream (BERT): every position is an input, masked ones the [MASK] vector; one target row per masked position.
    Two-stream: content = BOS + visible tokens (group 0); one query row (group 1) per masked position, which sees
    group 0 only. All masked (m = L) leaves BOS alone as content: every row still sees something."""
    S, counts = x.shape[1], masked.sum(dim=1)
    width = round_width(int(counts.max()), S - 1)  # target rows
    if two_stream:
        return two_stream_batch(x, masked[:, 1:].long(), content_all=False,
                                widths=(round_width(S - int(counts.min()), S), width))
    return bert_batch(x, masked[:, 1:], None, width=width)

def model_masked_nll(model, two_stream, autocast=None):
    """The checkpoint as a masked_nll callable: (B, S) NLLs, 0 at unmasked positions."""
    @torch.no_grad()
    def masked_nll(x, masked):
        batch = masked_batch(x, masked, two_stream)
        positions = batch['query_pos'] if two_stream else batch['pred_index']
        nll = target_nll(model, batch, autocast) * batch['valid']
        return torch.zeros(x.shape).scatter_add_(1, positions, nll)  # padded rows add 0 at position 0
    return masked_nll

def model_log_probs(model, two_stream, autocast=None):
    """The checkpoint as a log_probs callable: (B, S, V) log-probabilities, 0 at unmasked positions."""
    @torch.no_grad()
    def log_probs(x, masked):
        batch = {**masked_batch(x, masked, two_stream), 'targets': None}  # logits only
        with autocast or nullcontext():
            logits, _ = model(**to_device(batch, next(model.parameters()).device))
        rows = torch.log_softmax(logits.float().cpu(), dim=-1) * batch['valid'][..., None]
        positions = batch['query_pos'] if two_stream else batch['pred_index']
        return torch.zeros(*x.shape, rows.shape[-1]).scatter_add_(1, positions[..., None].expand_as(rows), rows)
    return log_probs

def nll_from_log_probs(log_probs):
    """A log_probs callable as a masked_nll callable (the tests' exact conditionals are log_probs)."""
    def masked_nll(x, masked):
        targets = x.masked_fill(~masked, 0)  # unmasked ids (BOS) may lie outside the conditionals' vocabulary
        return -torch.gather(log_probs(x, masked), 2, targets[..., None])[..., 0] * masked
    return masked_nll

# -----------------------------------------------------------------------------
# the bound, stratified over the number of masked positions m

def strata(L, passes=DEFAULT_PASSES):
    """min(passes, L) contiguous, near-equal ranges (first, last) of m that partition 1..L."""
    n = min(passes, L)
    edges = [j * L // n for j in range(n + 1)]
    return [(edges[j] + 1, edges[j + 1]) for j in range(n)]

def uniform_masks(counts, L, generator):
    """(B, 1 + L) bool: per row, a uniform random set of counts[b] positions of 1..L (column 0, BOS, never)."""
    keys = torch.rand(len(counts), L, generator=generator)
    ranks = keys.argsort(dim=1).argsort(dim=1)  # a uniform random permutation's ranks
    masked = ranks < counts[:, None]
    return torch.cat([torch.zeros(len(counts), 1, dtype=torch.bool), masked], dim=1)

def stratified_bound(masked_nll, x, passes=DEFAULT_PASSES, generator=None):
    """Unbiased estimate of bound(x) in nats per window, (B,) float64, from min(passes, L) calls of masked_nll.
    Pass j draws m_j uniformly in stratum j of 1..L (strata), then M_j uniform given m_j; the mean NLL over M_j
    estimates E[mean NLL | m in stratum j] without bias, and stratum j holds n_j of the L values of m, so
        bound(x) = L * E_m[...] = sum_j n_j E[mean NLL | stratum j]  ~  sum_j n_j mean_{i in M_j} NLL_i.
    Each window's own mean over its own masked set: a per-sequence mean, as in MDLM's loss; pooling the tokens of
    all passes (a token-weighted mean) would weight large m more and is biased."""
    B, S = x.shape
    L = S - 1
    bound = torch.zeros(B, dtype=torch.float64)
    for first, last in strata(L, passes):
        counts = torch.randint(first, last + 1, (B,), generator=generator)
        masked = uniform_masks(counts, L, generator)
        nll = masked_nll(x, masked).double() * masked
        bound += (last - first + 1) * nll.sum(dim=1) / counts
    return bound

@torch.no_grad()
def score_bound(model, windows, two_stream, passes=DEFAULT_PASSES, generator=None, rows_per_pass=1024,
                autocast=None):
    """(B,) bound estimates in nats per window for a masked checkpoint; windows per call bounded by rows_per_pass
    target rows (a pass predicts up to L rows per window)."""
    masked_nll = model_masked_nll(model, two_stream, autocast)
    L = windows.shape[1] - 1
    return torch.cat([stratified_bound(masked_nll, chunk, passes, generator)
                      for chunk in windows.split(max(1, rows_per_pass // L))])

def bound_summary(nats_per_token):
    """Per-window estimates in nats per token -> their mean, its standard error across windows, and perplexity."""
    nll, se = mean_se(nats_per_token)
    return dict(nll=nll, se=se, ppl=math.exp(nll), windows=len(nats_per_token))

# -----------------------------------------------------------------------------
# sampling by unmasking

def propose(logits, order, generator=None, allowed=None, top_k=0):
    """One step's proposal at every position of logits (B, S, V), tempered already: a token drawn from the softmax
    over the allowed ids and the top k, and the position's score for being filled now ('confident': its top
    probability, 'random': uniform) -> draws (B, S), score (B, S)."""
    if allowed is not None:
        logits = logits.masked_fill(~allowed, -float('inf'))
    if top_k:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, -float('inf'))
    probs = torch.softmax(logits, dim=-1)
    draws = torch.multinomial(probs.flatten(0, 1), 1, generator=generator).view(probs.shape[:2])
    if order == 'confident':
        return draws, probs.max(dim=-1).values
    return draws, torch.rand(probs.shape[:2], generator=generator)


def unmask(log_probs, canvas, masked, tokens_per_step=1, order='random', generator=None, temperature=1.0,
           top_k=0, allowed=None, on_step=None, remask=0.0, block_length=0):
    """Fill the masked positions of canvas (B, S), k = tokens_per_step at a time, each sampled from the model's
    conditional given the positions filled so far; unmasked positions (BOS, the prompt) never change.
    order 'random': the k positions uniformly among the masked ones; with k = 1 and temperature 1 this draws
    sigma uniformly and x from q_sigma, i.e. exactly from the any-order mixture whose NLL the bound bounds.
    order 'confident': the k masked positions where the model is surest (largest top probability) first, after
    MaskGIT (Chang et al. 2022).
    block_length b > 0: semi-autoregressive, as LLaDA (Nie et al. 2025): each row's masked positions, from its first
    one, in blocks of b; a step fills only the leftmost block that still has a masked position, so block j + 1
    starts once block j is full, after ceil(b / k) steps.
    remask p > 0: each step also masks again, with probability p each, the tokens this call filled in earlier steps
    (in the current block), and fills as many more, after ReMDM (Wang et al. 2025): an early token can be redrawn
    once more of its context is there. At most (masked - k) are masked again: the number of steps is unchanged.
    allowed: (V,) bool, the token ids that may be drawn. on_step(step, canvas, masked) after every step.
    The conditionals read the canvas only (no time input, as MDLM's), so a row with nothing left to fill gets no
    forward pass. Returns the filled canvas and the forward passes each row took, (B,)."""
    B, S = canvas.shape
    generated = masked  # the positions this call fills: the only ones remasking may touch (no step writes in place)
    if block_length:
        first = masked.int().argmax(dim=1)  # each row's first masked position
        block = (torch.arange(S) - first[:, None]).div(block_length, rounding_mode='floor')
    passes = torch.zeros(B, dtype=torch.long)
    step = 0
    while masked.any():
        todo = masked.any(dim=1)
        fresh = log_probs(canvas[todo], masked[todo]).float()
        logits = fresh.new_zeros(B, S, fresh.shape[-1])
        logits[todo] = fresh / temperature
        passes += todo
        draws, score = propose(logits, order, generator, allowed, top_k)
        active = masked.new_ones(B, S)
        if block_length:  # the leftmost block with a masked position
            active = block == block.masked_fill(~masked, S).min(dim=1, keepdim=True).values
        candidates = masked & active
        score = score.masked_fill(~candidates, -float('inf'))  # only masked positions are candidates
        n_left = candidates.sum(dim=1)
        n_fill = torch.clamp(n_left, max=tokens_per_step)
        again = torch.zeros_like(masked)
        if remask:
            coin = torch.rand(B, S, generator=generator)
            wanted = generated & ~masked & active & (coin < remask)
            most = (n_left - tokens_per_step).clamp(min=0)  # so that k fewer stay masked: the block ends on time
            again = wanted & (coin.masked_fill(~wanted, 2.0).argsort(dim=1).argsort(dim=1) < most[:, None])
            n_fill = n_fill + again.sum(dim=1)
        picked_rank = score.argsort(dim=1, descending=True).argsort(dim=1)
        chosen = candidates & (picked_rank < n_fill[:, None])
        canvas = torch.where(chosen, draws, canvas)
        masked = (masked & ~chosen) | again
        step += 1
        if on_step is not None:
            on_step(step, canvas, masked)
    return canvas, passes

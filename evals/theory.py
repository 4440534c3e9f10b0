"""
What theory.py computes, as functions (a script runs on import, so the tests call these).

Toy model (Sec. 4.1.2): r classes, length s, position k of a class-y sample is one of T tokens unique to (k, y)
(vocabulary s*T*r; the paper prints the token set as {kTr + y*j}, which overlaps across classes, while its proof
treats the classes as disconnected, so we take the tokens unique as the proof does). A conditioning "text" is the
set of visible (position, token) pairs of one class, so A is block-diagonal by class and every class block is
the same matrix with relabelled tokens: we build one block exactly, take its SVD, and repeat the spectrum r times.
The empty text is one row per class (the r class-tagged empty prefixes): that is what gives ar the paper's r*s
unit singular values. The paper's printed ar row count r(T^s - T)/(T - 1) leaves these r rows out.
The toy model needs no torch: the functions on checkpoints import it when called.
"""
import itertools
import math

import numpy as np

from configurator import UsageError
from output import progress as progress_bar

# -----------------------------------------------------------------------------
# toy model of Thm 4.2: one class block of A (which positions are visible, which is the target), its spectrum

def toy_size(objective, s, T, visible=()):
    """(rows, cols) of one class block of A, counted without enumerating."""
    if objective in ('ar', 'dar'):
        return sum(T ** i for i in range(s)), s * T  # one prefix of each length i < s
    return sum(math.comb(s, s_m) * T ** s_m for s_m in visible), s * T

def toy_block(objective, r, s, T, visible=(), t=None, max_entries=2 * 10 ** 7):
    """One class block of the co-occurrence matrix A (its entries carry the class probability 1/r).

    Rows: (visible set, tokens on it), token tuples in base-T order; columns: target (position k, token) at k*T + tok.
    A[text, target] = P(class) P(set) T^-|set| P(k | set) / T, since positions are independent and uniform."""
    if min(r, T) < 1 or s < 2:
        raise UsageError(f"toy needs r >= 1, T >= 1, s >= 2; got r={r}, s={s}, T={T}")
    if objective not in ('ar', 'dar', 'mlm', 'vm'):
        raise UsageError(f"unknown objective {objective!r}: choose ar, dar, mlm or vm")
    if objective == 'dar' and (t is None or t < 1):
        raise UsageError(f"dar needs --t >= 1 (the number of next positions a prefix predicts), got {t}")
    if objective in ('mlm', 'vm') and (not visible or any(not 1 <= v <= s - 1 for v in visible)
                                       or len(set(visible)) != len(visible)):
        raise UsageError(f"--visible must be distinct numbers of visible tokens s_m in 1..{s - 1} (s={s}), "
                         f"got {list(visible)}")
    if objective == 'mlm' and len(visible) != 1:
        raise UsageError(f"mlm takes one --visible value, got {list(visible)}: use --objective=vm for a set")
    rows, cols = toy_size(objective, s, T, visible)
    if rows * cols > max_entries:
        raise UsageError(f"toy enumeration too large: one class block of A is {rows} x {cols} = {rows * cols} "
                         f"entries ({rows * cols * 8 / 1e6:.1f} MB float64; all of A is {r * rows} x {r * cols}): "
                         f"lower --s / --T or raise --max_entries (now {max_entries})")
    if objective in ('ar', 'dar'):  # prefix length i ~ U{0..s-1}; target ~ U over the next min(t, s - i)
        t = 1 if objective == 'ar' else t
        patterns = [(i, 1 / s, range(i, min(i + t, s))) for i in range(s)]
    else:  # vm: s_m ~ U(visible); then a uniform visible set, target uniform among the masked
        patterns = [(s_m, 1 / (len(visible) * math.comb(s, s_m)), [k for k in range(s) if k not in seen])
                    for s_m in visible for seen in itertools.combinations(range(s), s_m)]
    block = np.zeros((rows, cols))
    offset = 0
    for n_seen, p_seen, targets in patterns:  # the rows of one visible set, then the next
        n_texts = T ** n_seen
        for k in targets:
            block[offset:offset + n_texts, k * T:(k + 1) * T] = p_seen * (1 / len(targets)) / (r * n_texts * T)
        offset += n_texts
    return block

def normalised(block):
    """A_bar = A / sqrt(P_C P_G^T) (Thm 3.1). Every text has a target and every token is one, so no mass is 0."""
    return block / np.sqrt(np.outer(block.sum(1), block.sum(0)))

def toy_spectrum(objective, r, s, T, visible=(), t=None, max_entries=2 * 10 ** 7):
    """All singular values of A_bar (descending), each repeated for the r identical class blocks."""
    block = toy_block(objective, r, s, T, visible, t, max_entries)
    return np.repeat(np.linalg.svd(normalised(block), compute_uv=False), r)

def closed_form(objective, r, s, T, visible=()):
    """Thm 4.2: ar 1 up to r*s; mlm 1 up to r, then sqrt(s_m / ((s - s_m)(s - 1))) up to r*s; 0 beyond.
    vm is our extension of the proof (not in the paper): each s_m's rows are disjoint, so A_bar^T A_bar is the
    average of the mlm Gram matrices, which share eigenvectors: sigma^2 = mean over s_m. dar has none."""
    if objective == 'dar':
        return None
    sigma = np.zeros(r * min(toy_size(objective, s, T, visible)[0], s * T))
    sigma[:r * s] = 1.0 if objective == 'ar' else math.sqrt(np.mean([s_m / ((s - s_m) * (s - 1)) for s_m in visible]))
    sigma[:r] = 1.0
    return sigma

def tail_sigma4(sigma, r):
    """The Thm 4.1 term: sum of sigma_j^4 over j > r (smaller = better downstream guarantee)."""
    return float(np.sum(np.asarray(sigma)[r:] ** 4))

def toy_report(objective, r, s, T, visible=(), t=None, max_entries=2 * 10 ** 7):
    sigma = toy_spectrum(objective, r, s, T, visible, t, max_entries)
    exact = closed_form(objective, r, s, T, visible)
    rows, cols = toy_size(objective, s, T, visible)
    return {'objective': objective, 'r': r, 's': s, 'T': T, 'visible': list(visible), 't': t,
            'rows': r * rows, 'cols': r * cols, 'singular_values': sigma.tolist(),
            'sum_sigma4_beyond_r': tail_sigma4(sigma, r),
            'closed_form': None if exact is None else exact.tolist(),
            'max_abs_diff': None if exact is None else float(np.max(np.abs(sigma - exact)))}

# -----------------------------------------------------------------------------
# Thm 4.3: the misalignment w_k = (s(1-rho))^3 - (k-1)^3 between the pretraining visible length and a prefix

def misalignment(s, rho_range):
    """Per target index k = 1..s (prefix length k-1): w_k, the bound's length term (k >= 2) and Eq. 4's length part.
    A vm range [a, b] averages each over rho ~ U[a, b] (16-node Gauss-Legendre); a == b is a fixed rho. w_k < 0 once
    the prefix outgrows the visible set (k - 1 > s(1 - rho)), where the proof's premise (prefix inside the visible
    set) fails; it is reported as the formula gives it."""
    low, high = rho_range
    if not 0 <= low <= high < 1:
        raise UsageError(f"mask ratios must satisfy 0 <= a <= b < 1, got {rho_range}")
    if high > low:
        x, weight = np.polynomial.legendre.leggauss(16)
        rhos, weights = low + (high - low) * (x + 1) / 2, weight / 2
    else:
        rhos, weights = np.array([low]), np.array([1.0])
    k = np.arange(1, s + 1, dtype=np.float64)
    w = (s * (1 - rhos[:, None])) ** 3 - (k[None] - 1) ** 3  # (nodes, s)
    with np.errstate(divide='ignore', invalid='ignore'):
        length = np.where(k[None] > 1, w ** 2 / (k[None] - 1) ** 6, np.nan)
    eq4 = np.nansum(length, axis=1) / (2 * s * (1 - rhos))
    return {'k': k.astype(int), 'w': weights @ w, 'length_term': weights @ length, 'eq4_length_part': weights @ eq4}

# -----------------------------------------------------------------------------
# connectivity and effective rank: surrogates measured on trained features

def top_pair_similarities(features, top=10 ** 5, block_rows=1024):
    """Inner products of all pairs i < j, sorted descending, top ones kept (App. B.2), one row block at a time."""
    features = np.asarray(features, dtype=np.float64)
    n, kept = len(features), np.empty(0)
    for start in range(0, n, block_rows):
        grams = features[start:start + block_rows] @ features.T
        rows, cols = np.triu_indices(len(grams), k=1, m=n - start)
        values = np.concatenate([kept, grams[:, start:][rows, cols]])
        kept = values if len(values) <= top else np.partition(values, len(values) - top)[-top:]
    return np.sort(kept)[::-1]

def connectivity_rows(features, cosine=False, centred=False):
    """The rows whose inner products Fig. 2 ranks: raw features (App. B.2), unit length (cosine), and/or with the
    mean feature taken out first (centred), so that features which all point one way do not count as connected."""
    rows = np.asarray(features, np.float64)
    rows = rows - rows.mean(axis=0) if centred else rows
    return rows / np.linalg.norm(rows, axis=1, keepdims=True).clip(1e-12) if cosine else rows

def effective_rank(gram, tau=0.9):
    """rank_tau (MAE-LM Sec. 2.2) of H (n, d), from its Gram H^T H (accumulated batch by batch), whose eigenvalues are
    H's squared singular values: the smallest k whose top k of them hold a fraction tau."""
    power = np.clip(np.linalg.eigvalsh(gram)[::-1], 0, None)
    share = np.cumsum(power) / power.sum()
    return int(np.searchsorted(share, tau - 1e-12) + 1)

def text_windows(data_dir, block_size, num_samples, tokenizer='gpt2'):
    """(N, block_size) ids: BOS then block_size - 1 tokens of <data_dir>/val.bin, evenly spaced windows."""
    from data.text import TOKENIZERS, load_tokens, with_bos
    data = load_tokens(data_dir, 'val', tokenizer)  # one clear line if missing, broken or of another tokenizer
    length = block_size - 1
    if len(data) < length:
        raise UsageError(f"{data_dir}/val.bin has {len(data)} tokens, fewer than one window of {length}: "
                         "use more held-out text")
    starts = np.linspace(0, len(data) - length, num_samples).astype(np.int64)
    return with_bos(data[starts[:, None] + np.arange(length)], TOKENIZERS[tokenizer][1]).numpy()

def encode_windows(model, content, attention, content_masked=None, all_layers=False):
    """Per-position content-stream features of (B, S) windows under the checkpoint's own attention, as eval_glue.py
    reads them: groups 0,1,2,... if causal, else none (all 0). Without them every checkpoint reads bidirectionally."""
    import torch
    groups = torch.arange(content.shape[1], device=content.device).expand(content.shape)
    return model.features(content, content_groups=groups if attention == 'causal' else None,
                          content_masked=content_masked, all_layers=all_layers)

def encoding(attention, pooling='auto'):
    """-> pooling; 'auto' pools as eval_glue.py: the last token if causal, else the mean (BOS left out)."""
    from evals.glue import resolve_pooling
    if pooling == 'first':
        raise UsageError("pooling must be 'auto', 'last' or 'mean' here: 'first' would pool BOS alone")
    return resolve_pooling(pooling, attention)

def pooled_features(model, windows, attention, pooling='auto', batch_size=64, device='cpu', progress=True):
    """One vector per window: the final feature of the last token, or the mean over the tokens after BOS."""
    import torch
    pooling = encoding(attention, pooling)
    pooled = []
    for start in progress_bar(range(0, len(windows), batch_size), desc='encode', unit='batches', enabled=progress):
        content = torch.as_tensor(windows[start:start + batch_size], device=device)
        hidden = encode_windows(model, content, attention).float()
        pooled.append((hidden[:, -1] if pooling == 'last' else hidden[:, 1:].mean(dim=1)).cpu().numpy())
    return np.concatenate(pooled)

def layer_ranks(model, windows, attention, tau=0.9, mask_ratio=0.15, seed=0, batch_size=64, device='cpu',
                progress=True):
    """rank_tau per layer of token representations (MAE-LM Fig. 1a / 5a), from per-layer Gram matrices:
    'without_mask' all real tokens of clean inputs; 'with_mask_all' all tokens when mask_ratio of them are
    [MASK] (MAE-LM's H^l); 'with_mask_real' only the unmasked tokens of those inputs. BOS is never counted."""
    import torch
    generator = np.random.default_rng(seed)
    d, L = model.config.n_embd, model.config.n_layer
    grams = {name: np.zeros((L, d, d)) for name in ('without_mask', 'with_mask_all', 'with_mask_real')}
    for start in progress_bar(range(0, len(windows), batch_size), desc='ranks', unit='batches', enabled=progress):
        content = torch.as_tensor(windows[start:start + batch_size], device=device)
        masked = generator.random(content.shape) < mask_ratio
        masked[:, 0] = False
        clean = encode_windows(model, content, attention, all_layers=True)
        with_mask = encode_windows(model, content, attention, torch.as_tensor(masked, device=device), all_layers=True)
        every = np.ones_like(masked[:, 1:])
        for name, hidden, rows in (('without_mask', clean, every), ('with_mask_all', with_mask, every),
                                   ('with_mask_real', with_mask, ~masked[:, 1:])):
            for layer in range(L):
                h = hidden[layer][:, 1:].double().cpu().numpy()[rows]
                grams[name][layer] += h.T @ h
    return {name: [effective_rank(g, tau) for g in grams[name]] for name in grams}

def masked_loss_by_ratio(model, windows, two_stream, ratios, seed=0, batch_size=64, device='cpu', progress=True):
    """{rho: (mean cross-entropy over the masked tokens, their count)} with round(rho L) tokens of each window masked
    (Thm 4.3's misalignment, measured). One seeded draw per ratio: one- and two-stream checkpoints are scored on the
    same masked positions (their batches draw the groups alike), i.e. on the same targets."""
    import torch
    from devices import to_device
    from objectives import Objective
    losses = {}
    for rho in ratios:
        objective = Objective('mlm', mask_ratio=rho, two_stream=two_stream)
        generator = torch.Generator().manual_seed(seed)
        nll_sum, count = 0.0, 0
        for start in progress_bar(range(0, len(windows), batch_size), desc=f'rho={rho:g}', unit='batches',
                                  enabled=progress):
            batch = to_device(objective.batch(torch.as_tensor(windows[start:start + batch_size]), generator), device)
            with torch.no_grad():
                _, loss = model(**batch)
            n = int(batch['valid'].sum())
            nll_sum, count = nll_sum + float(loss) * n, count + n
        losses[rho] = (nll_sum / count, count)
    return losses

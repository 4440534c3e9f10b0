"""
The paper's theory, computed: exact toy spectra (Thm 4.2), the length-misalignment term (Thm 4.3), and two
surrogates measured on trained checkpoints: connectivity (Fig. 2, App. B.2) and effective rank (MAE-LM Sec. 2.2);
and Thm 4.3's misalignment measured: a masked checkpoint's loss at fixed mask ratios, inside and outside its training
range (maskloss).

  python theory.py toy --r=2 --s=5 --T=2                          # every objective side by side + PNG
  python theory.py toy --objective=mlm --r=2 --s=5 --T=2 --visible=2 --json=True
  python theory.py tails --r=2 --s=6 --T=2                        # sum of sigma^4 past r, every objective
  python theory.py misalign --s=128 --rho='(0.15,0.3)' --vm='(0.15,0.3)'    # vm: a range (a,b), or '()' for none
  python theory.py connectivity --ckpt=out-ar/ckpt_best.pt --ckpt=out-mlm/ckpt_best.pt --dataset=shakespeare
  python theory.py effrank --ckpt=out-mlm/ckpt_best.pt --dataset=shakespeare
  python theory.py maskloss --ckpt=out-mlm/ckpt_best.pt --ckpt=out-vm/ckpt_best.pt --dataset=shakespeare

Toy model (Sec. 4.1.2): r classes, length s, position k of a class-y sample is one of T tokens unique to (k, y)
(vocabulary s*T*r; the paper prints the token set as {kTr + y*j}, which overlaps across classes, while its proof
treats the classes as disconnected, so we take the tokens unique as the proof does). A conditioning "text" is the
set of visible (position, token) pairs of one class, so A is block-diagonal by class and every class block is
the same matrix with relabelled tokens: we build one block exactly, take its SVD, and repeat the spectrum r times.
The empty text is one row per class (the r class-tagged empty prefixes): that is what gives ar the paper's r*s
unit singular values. The paper's printed ar row count r(T^s - T)/(T - 1) leaves these r rows out.
"""
import itertools
import json
import math
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from configurator import UsageError, configure, one_line_errors
from output import line_plot, log_ranks, write_csv

# -----------------------------------------------------------------------------
# toy model of Thm 4.2: which positions are visible, and which position is the target

def check_toy(objective, r, s, T, visible=(), t=None):
    if min(r, T) < 1 or s < 2:
        raise UsageError(f"toy needs r >= 1, T >= 1, s >= 2; got r={r}, s={s}, T={T}")
    if objective in ('mlm', 'vm'):
        if not visible or any(not 1 <= v <= s - 1 for v in visible) or len(set(visible)) != len(visible):
            raise UsageError(f"--visible must be distinct numbers of visible tokens s_m in 1..{s - 1} (s={s}), "
                             f"got {list(visible)}")
        if objective == 'mlm' and len(visible) != 1:
            raise UsageError(f"mlm takes one --visible value, got {list(visible)}: use --objective=vm for a set")
    elif objective in ('ar', 'dar'):
        if objective == 'dar' and (t is None or t < 1):
            raise UsageError(f"dar needs --t >= 1 (the number of next positions a prefix predicts), got {t}")
    else:
        raise UsageError(f"unknown objective {objective!r}: choose ar, dar, mlm or vm")

def toy_patterns(objective, s, visible=(), t=None):
    """{visible positions: (P(that set), {target position: P(target | set)})}, positions 0..s-1."""
    t = 1 if objective == 'ar' else t
    patterns = {}
    if objective in ('ar', 'dar'):  # prefix length i ~ U{0..s-1}; target ~ U over the next min(t, s - i)
        for i in range(s):
            targets = range(i, min(i + t, s))
            patterns[tuple(range(i))] = (1 / s, {k: 1 / len(targets) for k in targets})
        return patterns
    for s_m in visible:  # vm: s_m ~ U(visible); then a uniform visible set, target uniform among the masked
        for seen in itertools.combinations(range(s), s_m):
            masked = [k for k in range(s) if k not in seen]
            patterns[seen] = (1 / (len(visible) * math.comb(s, s_m)), {k: 1 / len(masked) for k in masked})
    return patterns

def toy_size(objective, s, T, visible=()):
    """(rows, cols) of one class block of A, counted without enumerating."""
    if objective in ('ar', 'dar'):
        rows = sum(T ** i for i in range(s))
    else:
        rows = sum(math.comb(s, s_m) * T ** s_m for s_m in visible)
    return rows, s * T

def toy_block(objective, r, s, T, visible=(), t=None, max_entries=2 * 10 ** 7):
    """One class block of the co-occurrence matrix A (its entries carry the class probability 1/r).

    Rows: (visible set, tokens on it), token tuples in base-T order; columns: target (position k, token) at k*T + tok.
    A[text, target] = P(class) P(set) T^-|set| P(k | set) / T, since positions are independent and uniform."""
    check_toy(objective, r, s, T, visible, t)
    rows, cols = toy_size(objective, s, T, visible)
    if rows * cols > max_entries:
        raise UsageError(f"toy enumeration too large: one class block of A is {rows} x {cols} = {rows * cols} "
                         f"entries ({rows * cols * 8 / 1e6:.1f} MB float64; all of A is {r * rows} x {r * cols}): "
                         f"lower --s / --T or raise --max_entries (now {max_entries})")
    block = np.zeros((rows, cols))
    offset = 0
    for seen, (p_seen, targets) in toy_patterns(objective, s, visible, t).items():
        n_texts = T ** len(seen)
        for k, p_target in targets.items():
            block[offset:offset + n_texts, k * T:(k + 1) * T] = p_seen * p_target / (r * n_texts * T)
        offset += n_texts
    return block

def normalised(block):
    """A_bar = A / sqrt(P_C P_G^T) (Thm 3.1); rows / columns of zero mass carry no edge and are dropped."""
    p_c, p_g = block.sum(1), block.sum(0)
    block = block[p_c > 0][:, p_g > 0]
    return block / np.sqrt(np.outer(p_c[p_c > 0], p_g[p_g > 0]))

def toy_spectrum(objective, r, s, T, visible=(), t=None, max_entries=2 * 10 ** 7):
    """All singular values of A_bar (descending), merged over the r identical class blocks."""
    block = toy_block(objective, r, s, T, visible, t, max_entries)
    sigma = np.linalg.svd(normalised(block), compute_uv=False)
    sigma = np.concatenate([sigma, np.zeros(min(block.shape) - len(sigma))])
    return np.sort(np.repeat(sigma, r))[::-1]

def closed_form(objective, r, s, T, visible=()):
    """Thm 4.2: ar 1 up to r*s; mlm 1 up to r, then sqrt(s_m / ((s - s_m)(s - 1))) up to r*s; 0 beyond.
    vm is our extension of the proof (not in the paper): each s_m's rows are disjoint, so A_bar^T A_bar is the
    average of the mlm Gram matrices, which share eigenvectors: sigma^2 = mean over s_m. dar has none."""
    if objective == 'dar':
        return None
    n = r * min(toy_size(objective, s, T, visible)[0], s * T)
    sigma = np.zeros(n)
    if objective == 'ar':
        sigma[:r * s] = 1.0
    else:
        sigma[:r * s] = math.sqrt(np.mean([s_m / ((s - s_m) * (s - 1)) for s_m in visible]))
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

def toy_label(objective, visible=(), t=None):
    return {'ar': 'ar', 'dar': f'dar t={t}', 'mlm': f'mlm s_m={visible[0] if visible else "?"}',
            'vm': 'vm s_m in {' + ','.join(map(str, visible)) + '}'}[objective]

# -----------------------------------------------------------------------------
# Thm 4.3: the misalignment w_k = (s(1-rho))^3 - (k-1)^3 between the pretraining visible length and a prefix

def misalignment(s, rho_range, nodes=16):
    """Per target index k = 1..s (prefix length k-1): w_k and the bound's length term w_k^2 / (k-1)^6 (k >= 2),
    plus Eq. 4's length part sum_{k>=2} w_k^2 / (k-1)^6 / (2 s (1 - rho)). For a vm range [a, b] every quantity is
    averaged over rho ~ U[a, b] (Gauss-Legendre, exact for these polynomials in rho); a == b is fixed rho.
    w_k < 0 once the prefix outgrows the visible set (k - 1 > s(1 - rho)), where the proof's premise (prefix
    inside the visible set) fails; it is reported as the formula gives it."""
    low, high = rho_range
    if not 0 <= low <= high < 1:
        raise UsageError(f"mask ratios must satisfy 0 <= a <= b < 1, got {rho_range}")
    if high > low:
        x, weight = np.polynomial.legendre.leggauss(nodes)
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

def effective_rank(matrix=None, tau=0.9, gram=None):
    """rank_tau (MAE-LM Sec. 2.2): the smallest k whose top-k squared singular values hold a fraction tau.
    Takes H (n, d), or its Gram H^T H, whose eigenvalues are those squared singular values."""
    if not 0 < tau <= 1:
        raise UsageError(f"tau must lie in (0, 1], got {tau}")
    gram = np.asarray(matrix, np.float64).T @ np.asarray(matrix, np.float64) if gram is None else gram
    power = np.clip(np.linalg.eigvalsh(gram)[::-1], 0, None)
    share = np.cumsum(power) / power.sum()
    return int(np.searchsorted(share, tau - 1e-12) + 1)

def text_windows(data_dir, block_size, num_samples, tokenizer='gpt2'):
    """(N, block_size) ids: BOS then block_size - 1 tokens of <data_dir>/val.bin, evenly spaced windows."""
    from data.text import TOKENIZERS, load_tokens
    data = load_tokens(data_dir, 'val', tokenizer)  # one clear line if missing, broken or of another tokenizer
    length = block_size - 1
    if len(data) < length:
        raise UsageError(f"{data_dir}/val.bin has {len(data)} tokens, fewer than one window of {length}: "
                         "use more held-out text")
    starts = np.linspace(0, len(data) - length, num_samples).astype(np.int64)
    windows = np.stack([data[i:i + length] for i in starts]).astype(np.int64)
    return np.concatenate([np.full((num_samples, 1), TOKENIZERS[tokenizer][1], np.int64), windows], axis=1)

def load_text_model(ckpt_path, device):
    """-> (model, pretraining objectives.Objective): its .attention decides how the checkpoint is read."""
    from checkpoint import load_checkpoint
    from objectives import Objective
    model, ckpt = load_checkpoint(ckpt_path, device)
    if model.config.input_kind != 'tokens':
        raise UsageError(f"{ckpt_path} is an image checkpoint: theory.py measures text checkpoints only so far")
    return model, Objective.from_checkpoint(ckpt, ckpt_path)

def content_groups(attention, content):
    """Groups of (B, S) full windows that give a checkpoint its pretraining attention, as eval_glue.py does:
    0,1,2,... (causal) or all 0 (bidirectional). Without them every checkpoint would be read bidirectionally."""
    import torch
    B, S = content.shape[:2]
    if attention == 'bidirectional':
        return torch.zeros(B, S, dtype=torch.long, device=content.device)
    return torch.arange(S, device=content.device).expand(B, S)

def encode_windows(model, content, attention, content_masked=None, all_layers=False):
    """Per-position content-stream features of (B, S) windows under the checkpoint's own attention."""
    return model.features(content, content_groups=content_groups(attention, content),
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
    from output import progress as progress_bar
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
    [MASK] (MAE-LM's H^l); 'with_mask_real' only the unmasked tokens of those inputs. BOS is never counted.
    The checkpoint attends as in pretraining."""
    import torch
    from output import progress as progress_bar
    generator = np.random.default_rng(seed)
    d, L = model.config.n_embd, model.config.n_layer
    grams = {name: np.zeros((L, d, d)) for name in ('without_mask', 'with_mask_all', 'with_mask_real')}
    for start in progress_bar(range(0, len(windows), batch_size), desc='ranks', unit='batches', enabled=progress):
        content = torch.as_tensor(windows[start:start + batch_size], device=device)
        masked = generator.random(content.shape) < mask_ratio
        masked[:, 0] = False
        masked_t = torch.as_tensor(masked, device=device)
        clean = encode_windows(model, content, attention, all_layers=True)
        with_mask = encode_windows(model, content, attention, content_masked=masked_t, all_layers=True)
        for layer in range(L):
            for name, hidden, rows in (('without_mask', clean, None), ('with_mask_all', with_mask, None),
                                       ('with_mask_real', with_mask, ~masked)):
                h = hidden[layer][:, 1:].double().cpu().numpy()
                h = h.reshape(-1, d) if rows is None else h[rows[:, 1:]]
                grams[name][layer] += h.T @ h
    return {name: [effective_rank(gram=g, tau=tau) for g in grams[name]] for name in grams}

def masked_loss_by_ratio(model, windows, two_stream, ratios, seed=0, batch_size=64, device='cpu', progress=True):
    """{rho: (mean cross-entropy over the masked tokens, their count)} with round(rho L) tokens of each window masked.
    Thm 4.3: a model trained on one range of visible fractions is misaligned at the others, so this curve, taken past
    the training range, is the misalignment measured. One seeded draw per ratio: one- and two-stream checkpoints
    are scored on the same masked positions (their batches draw the groups alike), i.e. on the same targets."""
    import torch
    from objectives import Objective, to_device
    from output import progress as progress_bar
    losses = {}
    for rho in ratios:
        objective, generator = Objective('mlm', mask_ratio=rho, two_stream=two_stream), torch.Generator().manual_seed(seed)
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

# -----------------------------------------------------------------------------
# command line

def run_toy(args):
    visible = args.visible or tuple(range(1, args.s))
    if args.objective not in ('', 'ar', 'dar', 'mlm', 'vm'):
        raise UsageError(f"unknown --objective={args.objective}: choose ar, dar, mlm or vm")
    if args.json:
        if not args.objective:
            raise UsageError("--json=True needs --objective=<ar, dar, mlm or vm>")
        visible = visible if args.objective in ('mlm', 'vm') else ()
        t = args.t if args.objective == 'dar' else None
        print(json.dumps(toy_report(args.objective, args.r, args.s, args.T, visible, t, args.max_entries)))
        return
    settings = [('ar', (), None), ('dar', (), args.t)] + [('mlm', (v,), None) for v in visible]
    settings += [('vm', visible, None)] if len(visible) > 1 else []
    reports = [toy_report(o, args.r, args.s, args.T, v, t, args.max_entries) for o, v, t in settings]
    labels = [toy_label(o, v, t) for o, v, t in settings]
    print(f"toy model r={args.r} s={args.s} T={args.T}: singular values of A_bar (every one; zeros after r*s)")
    width = max(16, max(map(len, labels)) + 2)
    print('   j ' + ''.join(f"{label:>{width}}" for label in labels))
    for j in range(len(reports[0]['singular_values'])):
        print(f"{j + 1:4d} " + ''.join(f"{rep['singular_values'][j]:{width}.10f}" for rep in reports))
    print(f"\n{'objective':<22}{'rows x cols':>16}{'closed r<j<=rs':>16}{'max |diff|':>12}{'sum s^4 j>r':>14}")
    for label, rep in zip(labels, reports):
        cf = '-' if rep['closed_form'] is None else f"{rep['closed_form'][args.r * args.s - 1]:.10f}"
        diff = '-' if rep['max_abs_diff'] is None else f"{rep['max_abs_diff']:.1e}"
        print(f"{label:<22}{rep['rows']:>9} x {rep['cols']:<5}{cf:>16}{diff:>12}{rep['sum_sigma4_beyond_r']:14.6f}")
    print("(ar rows include the r class-tagged empty prefixes; the paper prints r(T^s-T)/(T-1), r fewer. "
          "vm closed form is derived here, not the paper's)")
    path = Path(args.out_dir) / f"toy_spectra_r{args.r}_s{args.s}_T{args.T}.png"
    line_plot(str(path), {label: (range(1, len(rep['singular_values']) + 1), rep['singular_values'])  # ar on top
                          for label, rep in reversed(list(zip(labels, reports)))},
              f"Thm 4.2 toy spectra (r={args.r}, s={args.s}, T={args.T})", 'j', 'sigma_j')
    print(f"wrote {path} and {path.with_suffix('.csv')}")

def run_tails(args):
    """Every objective in the theorem's own currency: sum of sigma^4 past r (Thm 4.1)."""
    visible = args.visible or tuple(range(1, args.s))
    settings = [('ar', (), None)] + [('dar', (), t) for t in range(1, 5)] + [('mlm', (v,), None) for v in visible]
    settings += [('vm', visible, None)] if len(visible) > 1 else []
    rows = []
    for objective, vis, t in settings:
        rep = toy_report(objective, args.r, args.s, args.T, vis, t, args.max_entries)
        rows.append((toy_label(objective, vis, t), rep['sum_sigma4_beyond_r'],
                     '' if rep['closed_form'] is None else tail_sigma4(rep['closed_form'], args.r)))
    print(f"sum of sigma_j^4 over j > r, toy r={args.r} s={args.s} T={args.T} (smaller = more connected)")
    for label, value, exact in rows:
        print(f"{label:<24}{value:14.8f}   closed form {exact if exact == '' else f'{exact:.8f}'}")
    path = Path(args.out_dir) / f"toy_tails_r{args.r}_s{args.s}_T{args.T}.csv"
    write_csv(path, ['objective', 'sum_sigma4_beyond_r', 'closed_form'], rows)
    print(f"wrote {path}")

def run_misalign(args):
    if not all(isinstance(v, (int, float)) for v in args.rho + args.vm) or len(args.vm) not in (0, 2) \
            or not args.rho + args.vm:
        raise UsageError(f"give --rho ratios like --rho=(0.15,0.3) and/or --vm a range (a,b) like --vm=(0.15,0.3) "
                         f"(--vm=() for none), got --rho={args.rho} --vm={args.vm}")
    ranges = [(float(v), float(v)) for v in args.rho] + ([tuple(map(float, args.vm))] if args.vm else [])
    labels = [f"rho={a:g}" if a == b else f"vm rho~U[{a:g},{b:g}]" for a, b in ranges]
    results = [misalignment(args.s, rng) for rng in ranges]
    print(f"Thm 4.3 misalignment w_k = (s(1-rho))^3 - (k-1)^3, s={args.s} (vm: averaged over rho ~ U[a, b])")
    print('   k ' + ''.join(f"{label:>24}" for label in labels))
    for i in range(args.s):
        print(f"{i + 1:4d} " + ''.join(f"{res['w'][i]:24.6g}" for res in results))
    print('Eq. 4 length part sum_k w_k^2/(k-1)^6 / (2s(1-rho)): ' +
          ', '.join(f"{label} {res['eq4_length_part']:.6g}" for label, res in zip(labels, results)))
    path = Path(args.out_dir) / f"misalignment_s{args.s}.png"
    line_plot(str(path), {label: (res['k'], res['w']) for label, res in zip(labels, results)},
              f"Thm 4.3 misalignment w_k (s={args.s})", 'k (target index; prefix length k-1)', 'w_k')
    print(f"wrote {path} and {path.with_suffix('.csv')}")

def run_connectivity(args):
    series = {}
    for ckpt_path in args.ckpt:
        model, pretraining = load_text_model(ckpt_path, args.device)
        style, pooling = pretraining.attention, encoding(pretraining.attention, args.pooling)
        windows = text_windows(args.data_dir, model.config.block_size, args.num_samples, model.config.tokenizer)
        features = pooled_features(model, windows, style, pooling, args.batch_size, args.device, args.progress)
        top = top_pair_similarities(connectivity_rows(features, args.cosine, args.centred), args.top)
        label = f"{len(series) + 1}: {pretraining.label} {Path(ckpt_path).parent.name}"
        ranks = log_ranks(len(top))  # the curve at log-spaced ranks: the full one is 1e5 numbers a model
        series[label] = (ranks, top[ranks - 1])
        print(f"{label} ({ckpt_path}; {style} attention, {pooling} pooling): top-1 {top[0]:.6g}, median of top {len(top)} {np.median(top):.6g}, last {top[-1]:.6g}")
    path = Path(args.out_dir) / 'connectivity.png'
    line_plot(str(path), series, f"Fig. 2 connectivity: top {args.top} pairwise inner products of {args.num_samples} "
              "held-out samples", 'pair rank', 'inner product', logx=True)
    print(f"wrote {path} and {path.with_suffix('.csv')}")

def run_effrank(args):
    model, pretraining = load_text_model(args.ckpt, args.device)
    windows = text_windows(args.data_dir, model.config.block_size, args.num_samples, model.config.tokenizer)
    ranks = layer_ranks(model, windows, pretraining.attention, args.tau, args.mask_ratio, args.seed, args.batch_size,
                        args.device, args.progress)
    print(f"rank_{args.tau:g} of token representations per layer, {args.ckpt} "
          f"({pretraining.label}, {pretraining.attention} attention; [MASK] ratio {args.mask_ratio:g}, BOS excluded)")
    print(f"{'layer':>5}" + ''.join(f"{name:>16}" for name in ranks))
    for layer in range(model.config.n_layer):
        print(f"{layer + 1:5d}" + ''.join(f"{ranks[name][layer]:16d}" for name in ranks))
    path = Path(args.out_dir) / f"effective_rank_{Path(args.ckpt).parent.name or 'ckpt'}.png"
    layers = range(1, model.config.n_layer + 1)
    line_plot(str(path), {name: (layers, ranks[name]) for name in ranks},
              f"effective rank (tau={args.tau:g}) per layer: {args.ckpt}", 'layer', 'rank_tau')
    print(f"wrote {path} and {path.with_suffix('.csv')}")

def run_maskloss(args):
    series = {}
    for ckpt_path in args.ckpt:
        model, pretraining = load_text_model(ckpt_path, args.device)
        if not pretraining.kind.masked:
            raise UsageError(f"{ckpt_path} is a {pretraining.label} checkpoint: maskloss scores masked (mlm, vm) "
                             "checkpoints; score ar and dar with eval_ppl.py")
        windows = text_windows(args.data_dir, model.config.block_size, args.num_samples, model.config.tokenizer)
        losses = masked_loss_by_ratio(model, windows, pretraining.two_stream, args.ratios, args.seed,
                                      args.batch_size, args.device, args.progress)
        label = f"{len(series) + 1}: {pretraining.label} {Path(ckpt_path).parent.name}"
        series[label] = (list(losses), [nll for nll, _ in losses.values()])
        print(f"{label} ({ckpt_path}): " + ', '.join(f"rho={rho:g} {nll:.4f} ({n} targets)"
                                                     for rho, (nll, n) in losses.items()))
    path = Path(args.out_dir) / 'maskloss.png'
    line_plot(str(path), series, f"masked loss by mask ratio ({args.num_samples} held-out windows; Thm 4.3)",
              'mask ratio rho', 'nats per masked token')
    print(f"wrote {path} and {path.with_suffix('.csv')}")

TOY = dict(r=2, s=5, T=2, visible=(), t=2, max_entries=2 * 10 ** 7, out_dir='out/theory')
CHECKPOINT = dict(dataset='', batch_size=64, device='cpu', out_dir='out/theory', progress=True)
DEFAULTS = {  # per command; --visible=() means 1..s-1, --vm=() no vm range
    'toy': dict(TOY, objective='', json=False), 'tails': TOY,
    'misalign': dict(s=128, rho=(0.15, 0.3), vm=(0.15, 0.3), out_dir='out/theory'),
    'connectivity': dict(CHECKPOINT, ckpt=(), num_samples=8000, top=10 ** 5, cosine=False, centred=False, pooling='auto'),
    'effrank': dict(CHECKPOINT, ckpt='', num_samples=512, tau=0.9, mask_ratio=0.15, seed=0),
    'maskloss': dict(CHECKPOINT, ckpt=(), num_samples=512, ratios=(0.05, 0.15, 0.3, 0.5, 0.7, 0.9), seed=0)}
RUN = {'toy': run_toy, 'tails': run_tails, 'misalign': run_misalign, 'connectivity': run_connectivity,
       'effrank': run_effrank, 'maskloss': run_maskloss}

def main(argv):
    """argv: a command, then --key=value flags (configurator.configure) over that command's DEFAULTS."""
    if argv[:1] in (['--help'], ['-h']):
        print(__doc__.strip() + f"\ncommands: {', '.join(DEFAULTS)}; `python theory.py <command> --help` lists its keys")
        return
    if not argv or argv[0] not in DEFAULTS:
        raise UsageError(f"usage: python theory.py {{{'|'.join(DEFAULTS)}}} [--key=value ...]"
                         + (f"; unknown command {argv[0]!r}" if argv else ''))
    command, config = argv[0], dict(DEFAULTS[argv[0]])
    for arg in argv[1:]:
        if not arg.startswith('--'):
            raise UsageError(f"unexpected argument {arg!r}: after the command theory.py takes --key=value flags only "
                             "(one --ckpt=<path> per checkpoint)")
    configure(config, argv[1:])
    if command in ('toy', 'tails') and not all(isinstance(v, int) for v in config['visible']):
        raise UsageError(f"--visible takes numbers of visible tokens like --visible=2 or --visible=(1,2,3), "
                         f"got {config['visible']}")
    if command == 'maskloss' and not (config['ratios'] and all(isinstance(v, (int, float)) and 0 < v < 1
                                                               for v in config['ratios'])):
        raise UsageError(f"--ratios takes mask ratios in (0, 1) like --ratios=(0.15,0.5,0.9), got {config['ratios']}")
    if command in ('connectivity', 'effrank', 'maskloss'):
        if not config['ckpt']:
            raise UsageError(f"{command} needs --ckpt=<path to a text checkpoint>"
                             + (", once per checkpoint" if command != 'effrank' else ''))
        if not config['dataset']:
            raise UsageError(f"{command} needs --dataset=<name under data/, or a folder holding val.bin>")
        dataset = config['dataset']
        config['data_dir'] = dataset if os.sep in dataset else \
            os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', dataset)
    RUN[command](SimpleNamespace(**config))

if __name__ == '__main__':
    one_line_errors('theory.py')
    main(sys.argv[1:])

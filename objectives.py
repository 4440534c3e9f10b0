"""
Every pretraining objective of the paper as data: a batch of sequences in, what one training step needs out.

Input x: (B, S) token ids with the conditioning token (BOS) in column 0, or (B, S, D) patches with a zero slot in
row 0 that the model fills with its CLS vector. Position 0 is never a target and is visible to every row, so no
attention row is ever empty (SPEC §1; an empty row gives NaN, or with a finite fill, a silent leak).

Output: a dict that the model takes as `model(**batch)` (see model.py). Every objective is a *visiting order* of
positions 1..S-1 plus a *segmentation* of that order into groups; group k is predicted from groups < k:
  ar      identity order, groups of 1                     -> one-stream causal (GPT), or two-stream
  dar t   identity order, |G_1| ~ U{1..t}, then groups of t (Eq. 3 realised by Eq. 6), two-stream
  mlm     random order, G_0 = visible (L - round(rho L)), G_1 = masked            -> one-stream BERT, or two-stream
  vm      as mlm with rho ~ U[a, b] per sequence (Eq. 5)
  gvp     random order, fixed / random / mixed-length groups (GVP Sec. 3.2)
All samplers draw from an explicit torch.Generator, so a batch is a pure function of (x, generator state).
"""

import torch

PAD_GROUP = 2 ** 30  # the same constant as model.PAD_GROUP (the two files import neither each other)
OBJECTIVES = ('ar', 'dar', 'mlm', 'vm', 'gvp')

# -----------------------------------------------------------------------------
# argument checks: one clear line each

def check_ratio(mask_ratio):
    """One ratio rho, or a range (low, high) with 0 < low <= high < 1 -> (low, high) as floats."""
    pair = (mask_ratio, mask_ratio) if isinstance(mask_ratio, (int, float)) else mask_ratio
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(v, (int, float)) for v in pair)
            and 0 < pair[0] <= pair[1] < 1):
        raise ValueError(f"mask_ratio must be one ratio in (0, 1) or a range (low, high) with 0 < low <= high < 1, "
                         f"got {mask_ratio!r}: e.g. --mask_ratio=0.15 or --mask_ratio=(0.15,0.30)")
    return float(pair[0]), float(pair[1])

def check_length(S, need, objective):
    if S - 1 < need:
        raise ValueError(f"objective {objective!r} needs at least {need} tokens after the conditioning token, "
                         f"got a sequence of length {S}: raise block_size")

# -----------------------------------------------------------------------------
# orders and segmentations

def visiting_order(B, L, random_order, generator, device):
    """(B, L) positions 1..L in the order they are visited: identity, or a uniform random permutation each."""
    if not random_order:
        return torch.arange(1, L + 1, device=device).expand(B, L)
    keys = torch.rand(B, L, generator=generator, device=generator.device).to(device)
    return keys.argsort(dim=1) + 1

def groups_from_sizes(order, sizes):
    """Scatter group ids along an order: sizes (B, K) are the group sizes in visiting order, G_0 first."""
    B, L = order.shape
    ends = sizes.cumsum(dim=1)  # the rank at which each group ends
    ranks = torch.arange(L, device=order.device).expand(B, L).contiguous()
    group_of_rank = torch.searchsorted(ends.contiguous(), ranks, right=True)
    groups = torch.empty_like(group_of_rank)
    groups.scatter_(1, order - 1, group_of_rank)
    return groups  # (B, L): group of position p is groups[:, p - 1]

def dar_sizes(B, L, t, generator):
    """|G_1| ~ U{1..t} per sequence, then groups of t (Sec. 5.1); G_0 (conditioning only) is empty."""
    first = torch.randint(1, t + 1, (B, 1), generator=generator, device=generator.device).cpu()
    rest = torch.full((B, L), t, dtype=torch.long)
    return torch.cat([torch.zeros(B, 1, dtype=torch.long), first, rest], dim=1)

def gvp_sizes(B, L, n_groups, segmentation, generator):
    """GVP Sec. 3.2 / App. B: boundaries n_0 < ... < n_K = L; G_0 = the first n_0 visited positions (never predicted)."""
    K = n_groups
    if segmentation == 'fixed':
        bounds = torch.tensor([(i + 1) * L // (K + 1) for i in range(K)] + [L]).expand(B, K + 1)
    elif segmentation in ('random', 'mixed'):
        rows = []
        for _ in range(B):
            if segmentation == 'random':  # n_0..n_{K-1}: K distinct values of [1, L-1], sorted
                pool, top = L - 1, []
            else:  # mixed: n_{K-1} = round(p L), p ~ N(0.5, 0.1); n_0..n_{K-2} distinct in [1, n_{K-1} - 1]
                p = 0.5 + 0.1 * torch.randn(1, generator=generator, device=generator.device).item()
                last = min(max(round(p * L), K), L - 1)
                pool, top = last - 1, [last]
            picks = torch.randperm(pool, generator=generator, device=generator.device)[:K - len(top)].cpu() + 1
            rows.append(torch.cat([picks.sort().values, torch.tensor(top, dtype=torch.long), torch.tensor([L])]))
        bounds = torch.stack(rows)
    else:
        raise ValueError(f"gvp segmentation must be 'fixed', 'random' or 'mixed', got {segmentation!r}")
    return torch.cat([bounds[:, :1], bounds.diff(dim=1)], dim=1)

def masked_count(rho, L):
    """round(rho L) clamped to 1..L-1: the ONE rounding behind both the per-sequence counts and the static widths.
    float64, ties to even; float32 rounds 0.3 * 95 to 28.5 where float64 has 28.4999..., so two roundings would
    disagree at ties and a count could outgrow its width."""
    return (torch.as_tensor(rho, dtype=torch.float64) * L).round().long().clamp(1, L - 1)

def masked_sizes(B, L, mask_ratio, generator):
    """round(rho L) masked positions per sequence, rho fixed (mlm) or ~ U[a, b] per sequence (vm, Eq. 5)."""
    low, high = check_ratio(mask_ratio)
    uniform = torch.rand(B, generator=generator, device=generator.device).cpu().double()
    rho = (low + (high - low) * uniform).clamp(low, high)  # clamp: masked_count(high) must bound every count
    n_masked = masked_count(rho, L)
    return torch.stack([L - n_masked, n_masked], dim=1), rho

# -----------------------------------------------------------------------------
# batches

def _gather(x, index):
    if x.dim() == 2:
        return torch.gather(x, 1, index)
    return torch.gather(x, 1, index[..., None].expand(-1, -1, x.shape[-1]))

def _pack(positions_in_rows, keep, width=None):
    """Left-pack the positions where keep is True, per row; pad with position 0 (returns positions, valid).
    A fixed width keeps shapes static from batch to batch (no recompiles under torch.compile)."""
    B = keep.shape[0]
    n = width if width is not None else (int(keep.sum(dim=1).max()) if keep.numel() else 0)
    rank = keep.long().cumsum(dim=1) - 1
    packed = torch.zeros(B, n, dtype=torch.long, device=keep.device)
    valid = torch.zeros(B, n, dtype=torch.bool, device=keep.device)
    rows, cols = keep.nonzero(as_tuple=True)
    packed[rows, rank[rows, cols]] = positions_in_rows[rows, cols]
    valid[rows, rank[rows, cols]] = True
    return packed, valid

def two_stream_batch(x, groups, content_all=True, widths=(None, None)):
    """Content = BOS + tokens, query rows at every position of group >= 1 (the targets).
    content_all=False drops content rows of the last group: no query ever reads them (queries see strictly
    earlier groups), which for masked objectives is the whole masked set (MAE's encoder saving)."""
    B, S = x.shape[:2]
    device = x.device
    full_groups = torch.cat([torch.zeros(B, 1, dtype=torch.long, device=device), groups.to(device)], dim=1)
    positions = torch.arange(S, device=device).expand(B, S)
    if content_all:
        content_pos, content_valid = positions, torch.ones(B, S, dtype=torch.bool, device=device)
    else:
        last = full_groups.max(dim=1, keepdim=True).values
        content_pos, content_valid = _pack(positions, full_groups < last, widths[0])
    query_pos, query_valid = _pack(positions, full_groups >= 1, widths[1])
    content_groups = torch.gather(full_groups, 1, content_pos).masked_fill(~content_valid, PAD_GROUP)
    query_groups = torch.gather(full_groups, 1, query_pos).masked_fill(~query_valid, 1)
    return dict(content=_gather(x, content_pos), content_pos=content_pos, content_groups=content_groups,
                query_pos=query_pos, query_groups=query_groups, content_masked=None, pred_index=None,
                targets=_gather(x, query_pos), valid=query_valid, causal=False)

def causal_batch(x):
    """One-stream GPT: output at position i predicts position i+1 from positions 0..i."""
    B, S = x.shape[:2]
    positions = torch.arange(S, device=x.device).expand(B, S)
    return dict(content=x, content_pos=positions, content_groups=positions, query_pos=None, query_groups=None,
                content_masked=None, pred_index=positions[:, :-1], targets=x[:, 1:],
                valid=torch.ones(B, S - 1, dtype=torch.bool, device=x.device), causal=True)

def bert_batch(x, masked, generator, bert_replace=False, ordinary_tokens=None, width=None):
    """One-stream BERT: masked positions get the [MASK] vector in the input and are predicted from everything
    else (bidirectional). bert_replace: BERT's 80/10/10 (mask / random token / unchanged) of the masked set; the
    random tokens are ordinary text tokens, ids 0..ordinary_tokens-1 (BOS and the padding ids sit above them)."""
    B, S = x.shape[:2]
    device = x.device
    masked = torch.cat([torch.zeros(B, 1, dtype=torch.bool, device=device), masked.to(device)], dim=1)
    positions = torch.arange(S, device=device).expand(B, S)
    pred_index, valid = _pack(positions, masked, width)
    content, content_masked = x, masked
    if bert_replace:
        if x.dim() != 2 or not ordinary_tokens:
            raise ValueError("bert_replace (80/10/10) needs token inputs and ordinary_tokens (the text token ids)")
        draw = torch.rand(B, S, generator=generator, device=generator.device).to(device)
        random_tokens = torch.randint(0, ordinary_tokens, (B, S), generator=generator, device=generator.device).to(device)
        content_masked = masked & (draw < 0.8)
        content = torch.where(masked & (draw >= 0.8) & (draw < 0.9), random_tokens, x)
    return dict(content=content, content_pos=positions, content_groups=torch.zeros_like(positions),
                query_pos=None, query_groups=None, content_masked=content_masked, pred_index=pred_index,
                targets=_gather(x, pred_index), valid=valid, causal=False)

def check_objective(objective, S, mask_ratio=None, t=2, two_stream=None, n_groups=20, segmentation='mixed',
                    bert_replace=False, ordinary_tokens=None):
    """Every setting of an objective checked for sequences of length S (conditioning token included), so a
    script can refuse a bad flag before it loads data. Returns the mask ratio to use (the objective's default
    when None)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}: choose one of {', '.join(OBJECTIVES)}")
    check_length(S, 2, objective)
    L = S - 1
    if objective == 'dar':
        if not (isinstance(t, int) and t >= 1):
            raise ValueError(f"dar needs an integer t >= 1 (predict one of the next t tokens), got t={t!r}")
        if two_stream is False:
            raise ValueError("dar needs the two-stream model (a target must not see itself): set two_stream=True")
    if objective == 'gvp':
        if not (isinstance(n_groups, int) and 1 <= n_groups <= L - 2):
            raise ValueError(f"gvp needs 1 <= n_groups <= {L - 2} for a sequence of {L} positions, got {n_groups!r}")
        if segmentation not in ('fixed', 'random', 'mixed'):
            raise ValueError(f"gvp segmentation must be 'fixed', 'random' or 'mixed', got {segmentation!r}")
    if objective not in ('mlm', 'vm'):
        return mask_ratio
    if mask_ratio is None:
        mask_ratio = 0.15 if objective == 'mlm' else (0.15, 0.30)
    if objective == 'mlm' and not isinstance(mask_ratio, (int, float)):
        raise ValueError(f"mlm takes one mask_ratio, got {mask_ratio!r}: use objective='vm' for a range")
    if objective == 'vm' and isinstance(mask_ratio, (int, float)):
        raise ValueError(f"vm takes a mask_ratio range (a, b), got {mask_ratio!r}: use objective='mlm' for one ratio")
    check_ratio(mask_ratio)
    if bert_replace and not two_stream and not ordinary_tokens:
        raise ValueError("bert_replace (80/10/10) needs token inputs and ordinary_tokens (the text token ids)")
    return mask_ratio

def make_batch(objective, x, generator, mask_ratio=None, t=2, two_stream=None, random_order=None,
               bert_replace=False, ordinary_tokens=None, n_groups=20, segmentation='mixed'):
    """The one entry point: see the module docstring for what each objective means."""
    B, S = x.shape[:2]
    L = S - 1
    mask_ratio = check_objective(objective, S, mask_ratio, t, two_stream, n_groups, segmentation, bert_replace,
                                 ordinary_tokens)
    if objective == 'ar':
        if not two_stream and not random_order:
            return causal_batch(x)
        # two-stream ar = dar with t = 1; in a random order it is XLNet's permutation LM
        objective, t = 'dar', 1
    if objective == 'dar':
        order = visiting_order(B, L, random_order, generator, x.device)
        return two_stream_batch(x, groups_from_sizes(order, dar_sizes(B, L, t, generator).to(order.device)))
    if objective == 'gvp':
        order = visiting_order(B, L, True if random_order is None else random_order, generator, x.device)
        sizes = gvp_sizes(B, L, n_groups, segmentation, generator).to(order.device)
        return two_stream_batch(x, groups_from_sizes(order, sizes))
    # mlm / vm
    sizes, _ = masked_sizes(B, L, mask_ratio, generator)
    order = visiting_order(B, L, True, generator, x.device)
    groups = groups_from_sizes(order, sizes.to(order.device))
    fewest, most = (int(masked_count(rho, L)) for rho in check_ratio(mask_ratio))
    if two_stream:
        return two_stream_batch(x, groups, content_all=False, widths=(1 + L - fewest, most))
    return bert_batch(x, groups == 1, generator, bert_replace, ordinary_tokens, width=most)

# -----------------------------------------------------------------------------
# evaluation batches: next-token prediction from a prefix only (Eq. 2, Fig. 3)

def prefix_style(objective, two_stream):
    """How a model trained with `objective` predicts x_{k+1} from x_1..x_k."""
    if objective in ('mlm', 'vm'):
        return 'masked_two_stream' if two_stream else 'bert'
    return 'causal' if objective == 'ar' and not two_stream else 'groups'

def prefix_batch(x, style, bert_future='invisible'):
    """A batch whose target rows predict x_{k+1} from BOS, x_1..x_k, for every k in 0..S-2.
    'causal' / 'groups' do all k in one sequence (group ids 0,1,2,...). A masked model saw the visible tokens
    bidirectionally in pretraining, so each prefix gets its own row ((B*(S-1), S) batch): prefix visible
    (group 0), the target masked. The paper does not say what a one-stream BERT row holds after its target:
    bert_future='invisible' leaves those positions out (PAD_GROUP); 'mask' keeps them, every one [MASK], so the
    model sees how many positions follow but none of their tokens. 'mask' is for style 'bert' only (a two-stream
    content stream has no [MASK]; causal / groups never look ahead): any other style raises."""
    if bert_future not in ('invisible', 'mask'):
        raise ValueError(f"bert_future must be 'invisible' or 'mask', got {bert_future!r}")
    if bert_future == 'mask' and style != 'bert':
        raise ValueError(f"bert_future='mask' applies to one-stream BERT checkpoints only (prefix style 'bert'), "
                         f"got style {style!r}")
    B, S = x.shape[:2]
    if style == 'causal':
        return causal_batch(x)
    if style == 'groups':
        return two_stream_batch(x, torch.arange(1, S, device=x.device).expand(B, S - 1))
    if style not in ('bert', 'masked_two_stream'):
        raise ValueError(f"unknown prefix style {style!r}")
    L = S - 1
    k = torch.arange(L, device=x.device)  # prefix length; the target is position k + 1
    rows = x.repeat_interleave(L, dim=0)
    k_rows = k.repeat(B)
    positions = torch.arange(S, device=x.device).expand(B * L, S)
    target = (k_rows + 1)[:, None]
    after = positions > target
    if style == 'bert':
        if bert_future == 'invisible':  # no real row sees the positions after the target
            groups, masked = torch.zeros_like(positions).masked_fill(after, PAD_GROUP), positions == target
        else:  # present, and every one of them [MASK]
            groups, masked = torch.zeros_like(positions), positions >= target
        return dict(content=rows, content_pos=positions, content_groups=groups,
                    query_pos=None, query_groups=None, content_masked=masked,
                    pred_index=target, targets=_gather(rows, target),
                    valid=torch.ones(B * L, 1, dtype=torch.bool, device=x.device), causal=False)
    content_groups = torch.zeros_like(positions).masked_fill(positions >= target, PAD_GROUP)
    return dict(content=rows, content_pos=positions, content_groups=content_groups, query_pos=target,
                query_groups=torch.ones_like(target), content_masked=None, pred_index=None,
                targets=_gather(rows, target), valid=torch.ones(B * L, 1, dtype=torch.bool, device=x.device),
                causal=False)

# -----------------------------------------------------------------------------

def to_device(batch, device, non_blocking=False):
    return {k: v.to(device, non_blocking=non_blocking) if torch.is_tensor(v) else v for k, v in batch.items()}

def conditioning_sets(batch):
    """For each (sequence, target row): the set of input positions the target may depend on, read off the
    batch's group ids (the model's masks are exactly these). Used by the leakage tests and for inspection."""
    sets = []
    content_pos, groups = batch['content_pos'], batch['content_groups']
    for b in range(content_pos.shape[0]):
        real = groups[b] < PAD_GROUP
        row_sets = []
        for p in range(batch['valid'].shape[1]):
            if not batch['valid'][b, p]:
                row_sets.append(None)
                continue
            if batch['query_pos'] is not None:
                seen = real & (groups[b] < batch['query_groups'][b, p])
            elif batch['causal']:
                seen = content_pos[b] <= batch['pred_index'][b, p]
            else:
                seen = real.clone()
                if batch['content_masked'] is not None:
                    seen &= ~batch['content_masked'][b]
            row_sets.append(set(content_pos[b][seen].tolist()))
        sets.append(row_sets)
    return sets

def target_positions(batch):
    """(B, P) input position of each target row."""
    if batch['query_pos'] is not None:
        return batch['query_pos']
    if batch['causal']:
        return batch['pred_index'] + 1
    return torch.gather(batch['content_pos'], 1, batch['pred_index'])

"""
Every pretraining objective of the paper as data: a batch of sequences in, what one training
step needs out.

Input x: (B, S) token ids with BOS in column 0, or (B, S, D) patches with a zero CLS slot in row
0. Position 0 is never a target and every row sees it, so no attention row is empty (NaN; with a
finite fill, a silent leak). Output: the dict `model(**batch)` takes. Each position 1..L gets a
*group id*; group k is predicted from the groups < k:
  ar     left to right, groups of 1                          -> one-stream GPT, or two-stream
  dar t  left to right, |G_1| ~ U{1..t}, then groups of t (Eq. 3 realised by Eq. 6): two-stream
  mlm    random positions: 0 visible, 1 masked, rho fixed    -> one-stream BERT, or two-stream
  vm     as mlm with rho ~ U[a, b] per sequence (Eq. 5)
  mdlm   as mlm with the masked count m ~ U{1..L}, each sequence's loss its own mean (MDLM)
  gvp    random order, fixed / random / mixed-length groups (GVP Sec. 3.2)
`python mask_picture.py` prints each one's groups and attention masks on 6 tokens. Every sampler
draws from an explicit torch.Generator, so a batch is a pure function of (x, generator state).
"""

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from configurator import UsageError

PAD_GROUP = 2 ** 30  # padding rows: above every real group, so no real row sees them (model.py)

# -----------------------------------------------------------------------------
# the one batch schema: what model(**batch) takes

def model_batch(content, content_pos, content_groups, targets=None, valid=None, query_pos=None,
                query_groups=None, content_masked=None, pred_index=None, causal=False,
                per_sequence=False, all_visible=False):
    """The keywords of Transformer.forward, by name: model.py says what each one holds."""
    return dict(content=content, content_pos=content_pos, content_groups=content_groups,
                targets=targets, valid=valid, query_pos=query_pos, query_groups=query_groups,
                content_masked=content_masked, pred_index=pred_index, causal=causal,
                per_sequence=per_sequence, all_visible=all_visible)

# -----------------------------------------------------------------------------
# what every objective draws with: an order of the positions, group sizes laid along it

def draw(sample, *args, generator):
    """torch.rand / randint / randn / randperm from generator, on its device, brought to the host
    (batches are built there): the same draws whichever device the generator lives on."""
    return sample(*args, generator=generator, device=generator.device).cpu()

def visiting_order(B, L, random_order, generator):
    """(B, L) positions 1..L in the order they are visited: identity, or a random permutation."""
    if not random_order:
        return torch.arange(1, L + 1).expand(B, L)
    return draw(torch.rand, B, L, generator=generator).argsort(dim=1) + 1

def groups_from_sizes(order, sizes):
    """Scatter group ids along an order: sizes (B, K) are the group sizes in visiting order, G_0
    first. Sizes may sum past L (dar draws a row of t's long enough for any |G_1|): no rank lies
    past L, so the groups there are empty and the last real group is whatever is left. Example, dar
    t = 2, L = 5, |G_1| = 1: sizes [0, 1, 2, 2, 2, 2, 2] -> ends [0, 1, 3, 5, 7, ...] -> ranks 0..4
    in groups [1, 2, 2, 3, 3]; groups 4.. empty."""
    B, L = order.shape
    ends = sizes.cumsum(dim=1).contiguous()  # the rank at which each group ends
    rank = torch.arange(L).expand(B, L).contiguous()
    group_of_rank = torch.searchsorted(ends, rank, right=True)
    return torch.empty_like(group_of_rank).scatter_(1, order - 1, group_of_rank)  # [:, p - 1]: p's

def ratio_range(mask_ratio):
    """One ratio rho or a range (a, b) -> (a, b) as floats."""
    low, high = (mask_ratio, mask_ratio) if isinstance(mask_ratio, (int, float)) else mask_ratio
    return float(low), float(high)

def masked_count(rho, L):
    """round(rho L) clamped to 1..L-1: the ONE rounding behind both the per-sequence counts and
    the static widths. float64, ties to even: float32 rounds 0.3 * 95 to 28.5 where float64 has
    28.4999..., so two roundings would disagree at ties and a count could outgrow its width."""
    return (torch.as_tensor(rho, dtype=torch.float64) * L).round().long().clamp(1, L - 1)

# -----------------------------------------------------------------------------
# the objectives, one block each: its groups function (objective, B, L, generator) -> (B, L) group
# ids of positions 1..L, then what KINDS adds. Each draws its group sizes first, then the visiting
# order: a seed names the batches it always named (the recorded runs in experiments/).

# ar and dar (Sec. 5.1): left to right, or along a random order (XLNet)

def dar_sizes(B, L, t, generator):
    """|G_1| ~ U{1..t} per sequence, then groups of t (Sec. 5.1); G_0 (conditioning only) is empty.
    The row of t's is L long, so the sizes sum past L on purpose (groups_from_sizes cuts at L)."""
    first = draw(torch.randint, 1, t + 1, (B, 1), generator=generator)
    return torch.cat([torch.zeros(B, 1, dtype=torch.long), first, torch.full((B, L), t)], dim=1)

def dar_groups(objective, B, L, generator, t=None):
    sizes = dar_sizes(B, L, t or objective.t, generator)
    return groups_from_sizes(visiting_order(B, L, objective.random_order, generator), sizes)

def ar_groups(objective, B, L, generator):  # dar with t = 1: groups of one
    return dar_groups(objective, B, L, generator, t=1)

def ar_probe_groups(objective, N):  # frozen features (evals/vision.py): one group per patch
    return torch.arange(1, N + 1)

def dar_probe_groups(objective, N):  # groups of t, left to right
    return torch.arange(N) // objective.t + 1

# mlm (rho fixed) and vm (rho ~ U[a, b] per sequence, Eq. 5): 0 visible, 1 masked

def masked_sizes(B, L, mask_ratio, generator):
    """(visible, masked) = (L - round(rho L), round(rho L)) per sequence, rho fixed (mlm) or drawn
    from U[a, b] per sequence (vm) -> (sizes (B, 2), rho (B,))."""
    low, high = ratio_range(mask_ratio)
    uniform = draw(torch.rand, B, generator=generator).double()
    rho = (low + (high - low) * uniform).clamp(low, high)  # masked_count(high) bounds every count
    n_masked = masked_count(rho, L)
    return torch.stack([L - n_masked, n_masked], dim=1), rho

def masked_groups(objective, B, L, generator):
    sizes = masked_sizes(B, L, objective.mask_ratio, generator)[0]
    return groups_from_sizes(visiting_order(B, L, objective.random_order, generator), sizes)

# mdlm (masked diffusion, MDLM): m ~ U{1..L} masked, the all-masked sequence included

def diffusion_groups(objective, B, L, generator):
    n_masked = draw(torch.randint, 1, L + 1, (B,), generator=generator)
    sizes = torch.stack([L - n_masked, n_masked], dim=1)
    return groups_from_sizes(visiting_order(B, L, objective.random_order, generator), sizes)

def diffusion_counts(objective, L):  # 1..L targets, whatever mask_ratio says
    return 1, L

# gvp (GVP Sec. 3.2): K groups after G_0 along a random order, fixed / random / mixed lengths

def gvp_sizes(B, L, n_groups, segmentation, generator):
    """GVP Sec. 3.2 / App. B: boundaries n_0 < ... < n_K = L; G_0 = the first n_0 visited positions
    (never predicted)."""
    K = n_groups
    if segmentation == 'fixed':
        bounds = torch.tensor([(i + 1) * L // (K + 1) for i in range(K)] + [L]).expand(B, K + 1)
    else:
        rows = []
        for _ in range(B):
            if segmentation == 'random':  # n_0..n_{K-1}: K distinct values of [1, L-1], sorted
                pool, top = L - 1, []
            else:  # mixed: n_{K-1} = round(p L), p ~ N(0.5, 0.1); n_0..n_{K-2} in [1, n_{K-1} - 1]
                p = 0.5 + 0.1 * draw(torch.randn, 1, generator=generator).item()
                last = min(max(round(p * L), K), L - 1)
                pool, top = last - 1, [last]
            picks = draw(torch.randperm, pool, generator=generator)[:K - len(top)] + 1
            top = torch.tensor(top + [L], dtype=torch.long)
            rows.append(torch.cat([picks.sort().values, top]))
        bounds = torch.stack(rows)
    return torch.cat([bounds[:, :1], bounds.diff(dim=1)], dim=1)

def gvp_groups(objective, B, L, generator):
    sizes = gvp_sizes(B, L, objective.n_groups, objective.segmentation, generator)
    return groups_from_sizes(visiting_order(B, L, objective.random_order, generator), sizes)

def gvp_counts(objective, L):  # targets past G_0: n_0 is fixed, or at least 1 and at most L - K
    if objective.segmentation == 'fixed':
        return (L - L // (objective.n_groups + 1),) * 2
    return objective.n_groups, L - 1

def gvp_probe_groups(objective, N):  # the 'fixed' segmentation, left to right
    sizes = gvp_sizes(1, N, objective.n_groups, 'fixed', None)
    return groups_from_sizes(torch.arange(1, N + 1)[None], sizes)[0]

# -----------------------------------------------------------------------------
# the objectives by name. A new objective is a groups function and one more entry (README,
# "Adding an objective"): a checkpoint stores only the objective's name, so every script finds it
# here.

@dataclass
class Kind:
    """What makes an objective. A masked kind puts its visible positions in group 0 and its
    targets in group 1 (read bidirectionally); a sequential kind numbers the groups it predicts
    1..K, each from the earlier ones (0: context only, never predicted)."""
    groups: Callable                 # (objective, B, L, generator) -> (B, L) group ids of 1..L
    masked: bool = False
    causal: bool = False             # position i in group i (ar): GPT's causal mask can train it
    defaults: dict = field(default_factory=dict)  # the Objective fields left at None
    counts: Callable = None          # (objective, L) -> (fewest, most) targets: target_counts
    probe_groups: Callable = None    # sequential: (objective, N) -> (N,) groups of frozen features
    per_sequence: bool = False       # a sequence's loss: the mean over its own targets (else all's)

KINDS = {
    'ar': Kind(ar_groups, causal=True, probe_groups=ar_probe_groups,
               defaults=dict(random_order=False)),
    'dar': Kind(dar_groups, probe_groups=dar_probe_groups,
                defaults=dict(random_order=False)),
    'mlm': Kind(masked_groups, masked=True,
                defaults=dict(mask_ratio=0.15, random_order=True)),
    'vm': Kind(masked_groups, masked=True,
               defaults=dict(mask_ratio=(0.15, 0.30), random_order=True)),
    'mdlm': Kind(diffusion_groups, masked=True, counts=diffusion_counts, per_sequence=True,
                 defaults=dict(random_order=True)),
    'gvp': Kind(gvp_groups, counts=gvp_counts, probe_groups=gvp_probe_groups,
                defaults=dict(random_order=True)),
}

def target_counts(objective, L):
    """(fewest, most) targets a sequence of L can have: Kind.counts, else round(rho L) at both
    ends of mask_ratio (masked), else 1..L. The most is a batch's static width, so every batch of a
    run has one shape (torch.compile(dynamic=False) never recompiles)."""
    if objective.kind.counts:
        return objective.kind.counts(objective, L)
    if objective.kind.masked:
        return tuple(int(masked_count(rho, L)) for rho in ratio_range(objective.mask_ratio))
    return 1, L

# -----------------------------------------------------------------------------
# an objective with its settings: checked once, then a batch per call

@dataclass
class Objective:
    """One pretraining objective with its settings (train.py's config keys of the same names).
    None means the objective's default (Kind.defaults). Checked once, where it enters:
    Objective.check(S)."""
    name: str = 'ar'
    mask_ratio: Any = None       # masked: rho (mlm) or a range (a, b) (vm, Eq. 5)
    t: int = 2                   # dar: predict one of the next t tokens
    two_stream: bool = None      # ar / masked: one-stream unless True; dar, gvp always two-stream
    random_order: bool = None    # visit positions in a random order (XLNet, GVP; masked: always)
    n_groups: int = 20           # gvp: K
    segmentation: str = 'mixed'  # gvp: fixed | random | mixed
    bert_replace: bool = False   # one-stream masked: BERT's 80/10/10

    def __post_init__(self):
        if self.name not in KINDS:
            raise UsageError(f"unknown objective {self.name!r}: choose one of "
                             f"{', '.join(KINDS)}, or add it to KINDS in objectives.py (a "
                             f"checkpoint stores only the name)")
        for key, value in self.kind.defaults.items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        if isinstance(self.mask_ratio, list):
            self.mask_ratio = tuple(self.mask_ratio)
        # a sequential target must not see itself: one stream holds that only as GPT's causal
        # mask (ar left to right); any other sequential kind, random-order ar (XLNet) included,
        # needs the query stream
        one_stream_ok = self.kind.masked or (self.kind.causal and not self.random_order)
        if not one_stream_ok and self.two_stream is False:
            raise UsageError(f"{self.name} needs the two-stream model (a target must not see "
                             f"itself): set two_stream=True")
        self.two_stream = not one_stream_ok or bool(self.two_stream)

    @classmethod
    def from_config(cls, config):
        """From train.py's config, where the key 'objective' names it."""
        settings = {k: config[k] for k in cls.__dataclass_fields__ if k != 'name' and k in config}
        return cls(config['objective'], **settings)

    def check(self, S):
        """The settings against a sequence of S (conditioning token included), then a fork's
        groups hook on one drawn batch (hook_error, at the end of the file): one line naming the
        fix, else the objective itself."""
        L = S - 1
        error = self.settings_error(L) if S >= 3 else (
            f"needs at least 2 tokens after the conditioning token, got S={S}: raise block_size")
        if not error and not self.causal:
            drawn = self.kind.groups(self, 8, L, torch.Generator().manual_seed(0))
            error = hook_error(self, drawn, L)
        if error:
            raise UsageError(f"objective {self.name!r}: {error}")
        return self

    def settings_error(self, L):
        """What is wrong with t (dar), n_groups or segmentation (gvp), or mask_ratio (a masked kind
        with a default one: mlm one ratio, vm a range), or None."""
        if self.name == 'dar' and not (isinstance(self.t, int) and self.t >= 1):
            return f"needs an integer t >= 1, got {self.t!r}"
        if self.name == 'gvp' and (self.segmentation not in ('fixed', 'random', 'mixed')
                                   or not 1 <= self.n_groups <= L - 2):
            return (f"needs segmentation fixed|random|mixed and 1 <= n_groups <= {L - 2}, got "
                    f"{self.segmentation!r}, {self.n_groups!r}")
        ratio, default = self.mask_ratio, self.kind.defaults.get('mask_ratio')
        if not self.kind.masked or default is None:
            return None
        pair = (ratio, ratio) if isinstance(ratio, (int, float)) else ratio
        if not (isinstance(pair, tuple) and len(pair) == 2
                and all(isinstance(v, (int, float)) for v in pair) and 0 < pair[0] <= pair[1] < 1):
            return (f"mask_ratio must be one ratio in (0, 1) or a range (low, high) with 0 < low "
                    f"<= high < 1, got {ratio!r}: e.g. --mask_ratio=0.15 or "
                    f"--mask_ratio='(0.15,0.30)'")
        one = isinstance(default, (int, float))
        if isinstance(ratio, (int, float)) != one:
            if one:
                return f"{self.name} takes one mask_ratio: use objective='vm' for a range"
            return (f"{self.name} takes a mask_ratio range (a, b): use objective='mlm' for one "
                    f"ratio")
        return None

    @property
    def kind(self):
        return KINDS[self.name]

    @property
    def causal(self):
        """One-stream GPT: the only objective whose groups a causal mask can express."""
        return self.kind.causal and not self.two_stream

    @property
    def label(self):
        """e.g. 'vm [0.15, 0.3] two-stream', 'dar t=2', 'ar random order'."""
        ratio, masked = self.mask_ratio, self.kind.masked
        setting = {'dar': f" t={self.t}", 'gvp': f" K={self.n_groups} {self.segmentation}"}
        setting = setting.get(self.name, '')
        if masked and ratio is not None:
            one = isinstance(ratio, (int, float))
            setting = f" {ratio:g}" if one else f" [{ratio[0]:g}, {ratio[1]:g}]"
        order = ' random order' if self.random_order and not masked and self.name != 'gvp' else ''
        two = self.two_stream and (masked or self.kind.causal) and not order
        return self.name + setting + (' two-stream' if two else '') + order

    def batch(self, x, generator, ordinary_tokens=None):
        """The training batch of x (module docstring); ordinary_tokens: bert_replace's ids."""
        B, L = x.shape[0], x.shape[1] - 1
        if self.causal:
            return causal_batch(x)
        groups = self.kind.groups(self, B, L, generator)  # (B, L): the group of positions 1..L
        fewest, most = target_counts(self, L)  # widths that never change from batch to batch
        if not self.kind.masked:  # gvp's G_0 varies per sequence: a fixed query width
            return two_stream_batch(x, groups, widths=(None, most))
        if self.two_stream:
            return two_stream_batch(x, groups, content_all=False, widths=(1 + L - fewest, most),
                                    per_sequence=self.kind.per_sequence)
        return bert_batch(x, groups == 1, generator, self.bert_replace, ordinary_tokens, width=most,
                          per_sequence=self.kind.per_sequence)

# -----------------------------------------------------------------------------
# batches from group ids: two-stream (XLNet), causal (GPT), one-stream masked (BERT)

def gather_positions(x, index):
    """x (B, S) or (B, S, D), index (B, n) -> (B, n) or (B, n, D)."""
    index = index if x.dim() == 2 else index[..., None].expand(-1, -1, x.shape[-1])
    return torch.gather(x, 1, index)

def _pack(positions_in_rows, keep, width=None):
    """Left-pack the positions where keep is True, per row; pad with position 0 -> (positions,
    valid). A fixed width keeps shapes static from batch to batch (no torch.compile recompiles)."""
    B = keep.shape[0]
    n = width if width is not None else (int(keep.sum(dim=1).max()) if keep.numel() else 0)
    rank = keep.long().cumsum(dim=1) - 1
    packed = torch.zeros(B, n, dtype=torch.long, device=keep.device)
    valid = torch.zeros(B, n, dtype=torch.bool, device=keep.device)
    rows, cols = keep.nonzero(as_tuple=True)
    packed[rows, rank[rows, cols]] = positions_in_rows[rows, cols]
    valid[rows, rank[rows, cols]] = True
    return packed, valid

def two_stream_batch(x, groups, content_all=True, widths=(None, None), per_sequence=False):
    """Content = BOS + tokens, query rows at every position of group >= 1 (the targets).
    content_all=False drops the content rows of the last group: no query ever reads them (queries
    see strictly earlier groups), which for masked objectives is the whole masked set (MAE's
    encoder)."""
    B, S = x.shape[:2]  # groups: (B, S - 1), the group of positions 1..S-1
    zero = torch.zeros(B, 1, dtype=torch.long)
    full_groups = torch.cat([zero, groups.cpu()], dim=1).to(x.device)  # (B, S)
    positions = torch.arange(S, device=x.device).expand(B, S)
    if content_all:
        content_pos, content_valid = positions, torch.ones(B, S, dtype=torch.bool, device=x.device)
    else:
        last = full_groups.max(dim=1, keepdim=True).values
        content_pos, content_valid = _pack(positions, full_groups < last, widths[0])  # (B, C)
    query_pos, query_valid = _pack(positions, full_groups >= 1, widths[1])  # (B, Q): the targets
    content_groups = torch.gather(full_groups, 1, content_pos)
    content_groups = content_groups.masked_fill(~content_valid, PAD_GROUP)
    # a padded query row gets group 1: it sees group 0 (BOS at least), so its attention row is
    # never empty (an empty row is NaN); valid masks its loss out, and no row attends to a query
    query_groups = torch.gather(full_groups, 1, query_pos).masked_fill(~query_valid, 1)
    return model_batch(gather_positions(x, content_pos), content_pos, content_groups,
                       targets=gather_positions(x, query_pos), valid=query_valid,
                       query_pos=query_pos, query_groups=query_groups, per_sequence=per_sequence)

def causal_batch(x):
    """One-stream GPT: output at position i predicts position i+1 from positions 0..i."""
    B, S = x.shape[:2]
    positions = torch.arange(S, device=x.device).expand(B, S)
    every_target = torch.ones(B, S - 1, dtype=torch.bool, device=x.device)
    return model_batch(x, positions, positions, targets=x[:, 1:], valid=every_target,
                       pred_index=positions[:, :-1], causal=True)

def bert_batch(x, masked, generator=None, bert_replace=False, ordinary_tokens=None, width=None,
               per_sequence=False):
    """One-stream BERT: masked positions get the [MASK] vector in the input and are predicted from
    everything else (bidirectional). bert_replace: BERT's 80/10/10 (mask / random token /
    unchanged) of the masked set; the random tokens are ordinary text tokens, ids
    0..ordinary_tokens-1 (BOS and the padding ids sit above them)."""
    B, S = x.shape[:2]  # masked: (B, S - 1), positions 1..S-1
    masked = torch.cat([torch.zeros(B, 1, dtype=torch.bool), masked.cpu()], dim=1).to(x.device)
    positions = torch.arange(S, device=x.device).expand(B, S)
    pred_index, valid = _pack(positions, masked, width)  # (B, P): the masked positions
    content, content_masked = x, masked
    if bert_replace:
        coin = draw(torch.rand, B, S, generator=generator).to(x.device)
        random_tokens = draw(torch.randint, 0, ordinary_tokens, (B, S), generator=generator)
        content_masked = masked & (coin < 0.8)
        replaced = masked & (coin >= 0.8) & (coin < 0.9)
        content = torch.where(replaced, random_tokens.to(x.device), x)
    return model_batch(content, positions, torch.zeros_like(positions),
                       targets=gather_positions(x, pred_index), valid=valid,
                       content_masked=content_masked, pred_index=pred_index,
                       per_sequence=per_sequence, all_visible=True)

# -----------------------------------------------------------------------------
# a fork's groups hook, checked once on one drawn batch (Objective.check), never per batch

def hook_error(objective, groups, L):
    """What is wrong with a groups hook's ids, or None. Masked: 0 (visible) / 1 (masked), a masked
    count inside Kind.counts. Sequential: every sequence has a target (else its loss is 0 / 0),
    the groups numbered 1..K in order with none skipped, a target count inside Kind.counts."""
    fewest, most = target_counts(objective, L)
    if objective.kind.masked:
        n_masked = (groups == 1).sum(dim=1)
        if groups.max() > 1 or n_masked.min() < fewest or n_masked.max() > most:
            return (f"gave groups other than 0 (visible) / 1 (masked), or masked "
                    f"{int(n_masked.min())}..{int(n_masked.max())} of {L} positions outside "
                    f"Kind.counts = {fewest}..{most}: make its groups hook and counts agree")
        return None
    top = groups.max(dim=1).values  # (B,): each sequence's largest id
    present = torch.zeros(len(groups), L + 2, dtype=torch.bool)
    present = present.scatter_(1, groups.clamp(0, L + 1), True)
    skipped = (present[:, 1:].sum(dim=1) != top).any()  # ids 1..top each present: none skipped
    n_targets = (groups >= 1).sum(dim=1)
    if int(groups.min()) < 0 or int(top.min()) < 1 or int(top.max()) > L or skipped:
        return (f"its groups hook gave ids {int(groups.min())}..{int(groups.max())}, a sequence "
                f"whose largest id is {int(top.min())}"
                f"{', and a sequence whose ids skip a number' if skipped else ''}: a sequential "
                "hook numbers the groups it predicts 1..K in order (0: context only), at least "
                "one a sequence")
    if n_targets.min() < fewest or n_targets.max() > most:
        return (f"gave {int(n_targets.min())}..{int(n_targets.max())} targets of {L} positions "
                f"outside Kind.counts = {fewest}..{most}: make its groups hook and counts agree")
    return None

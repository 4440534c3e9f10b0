"""
What each objective's batch lets the model see: every objective drawn on one sequence of 6 tokens (--objectives,
--tokens), its group ids and attention masks printed as the model will read them.
$ python mask_picture.py
$ python mask_picture.py --objectives=dar,vm --tokens=10 --seed=1
"""
import sys

import torch

from configurator import UsageError, check_ranges, configure, one_line_errors
from objectives import KINDS, PAD_GROUP, Objective

# -----------------------------------------------------------------------------
# default config
objectives = ('ar', 'dar', 'mlm', 'vm', 'mdlm', 'gvp')  # which to draw, in order: --objectives=dar,vm or repeated
tokens = 6                  # tokens after BOS
seed = 0                    # of the draw (masked and gvp objectives draw their groups)
# each objective's settings in the picture; one not listed is drawn with its defaults
SETTINGS = dict(ar=dict(), dar=dict(t=2), mlm=dict(mask_ratio=0.34), vm=dict(two_stream=True),
                mdlm=dict(two_stream=True), gvp=dict(n_groups=3))

# -----------------------------------------------------------------------------
# one batch row as text

def mask_picture(batch, b=0):
    """One line per content row, then per query row: 'position group |one mark per position 0..L|'. '#': the
    row's attention reads that position's content row; '.': it may not; ' ': no content row there."""
    real = [i for i, g in enumerate(batch['content_groups'][b].tolist()) if g != PAD_GROUP]
    content_pos = [batch['content_pos'][b, i].item() for i in real]
    content_groups = [batch['content_groups'][b, i].item() for i in real]
    query = [] if batch['query_pos'] is None else [(p, g) for p, g, ok in zip(
        batch['query_pos'][b].tolist(), batch['query_groups'][b].tolist(), batch['valid'][b].tolist()) if ok]
    L = max(content_pos + [p for p, _ in query])
    attend_group = dict(zip(content_pos, content_groups))  # what the mask reads
    group_of = {**attend_group, **dict(query)}  # the objective's groups: one-stream BERT says them with [MASK]
    masked = [False] * len(real) if batch['content_masked'] is None else batch['content_masked'][b, real].tolist()
    group_of.update({p: 1 for p, m in zip(content_pos, masked) if m})
    order = [[p for p in range(1, L + 1) if group_of.get(p) == g] for g in sorted(set(group_of.values()))]
    reads = lambda limit: ''.join('#.'[attend_group[p] > limit] if p in content_pos else ' ' for p in range(L + 1))
    by_position = '  '.join(f"{p or 'B'}:{group_of[p]}" for p in range(L + 1))
    lines = [f"  groups by position  {by_position}",
             f"  visiting order      {' '.join(str(group) for group in order if group)}"]
    name = lambda p: str(p or 'B').ljust(len(str(L)))  # the marks stay in one column past 9 tokens
    lines += [f"  content {name(p)}{' [MASK]' if m else '       '} g={g} |{reads(g)}|"
              for p, g, m in zip(content_pos, content_groups, masked)]
    lines += [f"  query   {name(p)}        g={g} |{reads(g - 1)}|" for p, g in query]  # Eq. 24: strictly earlier groups
    if batch['pred_index'] is not None:
        targets = [batch['content_pos'][b, i].item() + batch['causal'] for i in batch['pred_index'][b].tolist()]
        lines.append(f"  predicts positions {targets} from the content outputs at {batch['pred_index'][b].tolist()}")
    return lines

# -----------------------------------------------------------------------------
# the objectives on BOS + `tokens` tokens

if __name__ == '__main__':
    one_line_errors('mask_picture.py')
    configure(globals(), sys.argv[1:])
    check_ranges(globals(), {'tokens': '[3, inf)', 'seed': '[0, inf)'})  # gvp needs 1 <= K <= tokens - 2
    names = [name for entry in objectives for name in str(entry).split(',') if name]
    if not names:
        raise UsageError(f"no objective to draw: pass e.g. --objectives=dar,vm (any of {', '.join(KINDS)})")
    for name in names:
        if name not in KINDS:
            raise UsageError(f"unknown objective {name!r} in --objectives: choose among {', '.join(KINDS)}")
    x = torch.arange(tokens + 1)[None]  # BOS + tokens; which tokens does not matter, only positions and groups
    for name in names:
        settings = dict(SETTINGS.get(name, {}))
        if name == 'gvp':  # K <= tokens - 2 (Objective.check)
            settings['n_groups'] = min(settings['n_groups'], tokens - 2)
        objective = Objective(name, **settings).check(tokens + 1)
        print(f"{objective.label}   (columns: positions B 1..{tokens}; '#' = may attend)")
        print('\n'.join(mask_picture(objective.batch(x, torch.Generator().manual_seed(seed)))) + '\n')

"""
What each objective's batch lets the model see: every objective drawn on one sequence of 6 tokens, its group ids and
attention masks printed as the model will read them.
$ python mask_picture.py
"""
import torch

from objectives import PAD_GROUP, Objective

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
    lines += [f"  content {p or 'B'}{' [MASK]' if m else '       '} g={g} |{reads(g)}|"
              for p, g, m in zip(content_pos, content_groups, masked)]
    lines += [f"  query   {p}        g={g} |{reads(g - 1)}|" for p, g in query]  # Eq. 24: strictly earlier groups
    if batch['pred_index'] is not None:
        targets = [batch['content_pos'][b, i].item() + batch['causal'] for i in batch['pred_index'][b].tolist()]
        lines.append(f"  predicts positions {targets} from the content outputs at {batch['pred_index'][b].tolist()}")
    return lines

# -----------------------------------------------------------------------------
# every objective on BOS + 6 tokens

if __name__ == '__main__':
    x = torch.arange(7)[None]  # BOS + 6 tokens; which tokens does not matter, only positions and groups
    for settings in [dict(name='ar'), dict(name='dar', t=2), dict(name='mlm', mask_ratio=0.34),
                     dict(name='vm', two_stream=True), dict(name='mdlm', two_stream=True),
                     dict(name='gvp', n_groups=3)]:
        objective = Objective(**settings).check(7)
        print(f"{objective.label}   (columns: positions B 1..6; '#' = may attend)")
        print('\n'.join(mask_picture(objective.batch(x, torch.Generator().manual_seed(0)))) + '\n')

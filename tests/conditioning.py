"""What a batch lets each target see, read off its group ids the way model.py's masks read them: the oracle of
the leakage tests (a prediction may not change when a token outside this set changes)."""
import torch

from objectives import PAD_GROUP


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

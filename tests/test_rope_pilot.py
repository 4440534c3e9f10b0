"""experiments/rope_pilot.py: the registered rule is read from the script and applied as written (synthetic records
with known answers), and the plateau exit follows its definition."""
import json
import math
import os
import shutil

import numpy as np
import pytest

from experiments import rope_pilot as rp

STEPS = np.arange(50, 601, 50)
UNIGRAM, BIGRAM = 3.3, 2.5
SEEDS = (1337, 1338, 1339)


def test_the_registered_rule_is_read_from_the_script():
    rules, constants = rp.registered(rp.SCRIPT)
    assert sorted(rules) == ['R1', 'R2'] and rules['R2'].startswith('every masked arm leaves the plateau earlier')
    assert constants == {'EXIT_MARGIN': 0.1, 'AR_TOLERANCE': 0.02}


def test_plateau_exit_is_the_first_evaluation_far_enough_below_the_unigram_floor():
    loss = np.array([3.4, 3.25, 3.19, 3.3, 3.0] + [2.9] * 7)
    assert rp.plateau_exit(STEPS, loss, UNIGRAM, 0.1) == 150  # 3.25 is below the floor, but not by 0.1
    assert math.isinf(rp.plateau_exit(STEPS, np.full(12, 3.25), UNIGRAM, 0.1))


def curve(exit_step, end):
    """Held-out loss on the plateau (3.29) before exit_step, 3.15 there, then straight down to `end` at step 600."""
    return np.where(STEPS >= exit_step, 3.15 + (end - 3.15) * (STEPS - exit_step) / max(1, 600 - exit_step), 3.29)


def write_record(root, exits, ends):
    """exits / ends: {(arm, pos): value for every seed, or a list by seed}."""
    os.makedirs(root, exist_ok=True)
    json.dump(dict(steps=600, recipe='--max_iters=600 --eval_interval=50', floors=dict(unigram=UNIGRAM, bigram=BIGRAM)),
              open(os.path.join(root, 'settings.json'), 'w'))
    for arm in rp.ARMS:
        for pos in rp.POSITIONS:
            for i, seed in enumerate(SEEDS):
                by_seed = lambda value: value[i] if isinstance(value, list) else value  # noqa: E731
                run = os.path.join(root, 'runs', arm, pos, str(seed))
                os.makedirs(run)
                loss = curve(by_seed(exits.get((arm, pos), 50)), by_seed(ends.get((arm, pos), 2.5)))
                with open(os.path.join(run, 'log.jsonl'), 'w') as f:
                    for step, value in zip(STEPS, loss):
                        f.write(json.dumps(dict(iter=int(step), train_loss=float(value))) + '\n')  # a training line
                        f.write(json.dumps(dict(iter=int(step), val_loss=float(value))) + '\n')


def verdict(lines):
    return next(line for line in lines if line.startswith('**Verdict:**'))


def masked_exits(learned, rope):
    return {**{(arm, 'learned'): learned for arm in rp.MASKED}, **{(arm, 'rope'): rope for arm in rp.MASKED}}


def test_rope_is_adopted_when_both_conditions_hold(tmp_path):
    write_record(tmp_path, masked_exits(learned=400, rope=100), {('ar', 'rope'): 2.51, ('ar', 'learned'): 2.5})
    lines = rp.report(str(tmp_path))
    assert 'switches to rope' in verdict(lines)
    assert '| mlm 0.15 | 1337 | 400 | 100 |' in '\n'.join(lines)
    for arm in rp.ARMS:
        assert (tmp_path / f'loss_{arm}.png').exists() and (tmp_path / f'loss_{arm}.csv').exists()
    assert (tmp_path / 'tables.md').read_text().rstrip('\n') == '\n'.join(lines).rstrip('\n')


@pytest.mark.parametrize('exits,ends,failed', [
    (masked_exits(400, 100), {('dar', 'rope'): 2.53}, 'R1 not met'),  # dar 0.03 worse: more than the tolerance
    ({**masked_exits(400, 100), ('vm', 'rope'): [100, 400, 100]}, {}, 'R2 not met'),  # a tie on one seed
    (masked_exits(50, 50), {}, 'R2 not met'),  # both at the first evaluation: not earlier
    ({**masked_exits(400, 100), ('mlm', 'rope'): 10 ** 6}, {}, 'R2 not met'),  # a rope run that never leaves
])
def test_the_learned_table_stays_when_a_condition_fails(tmp_path, exits, ends, failed):
    write_record(tmp_path, exits, ends)
    assert failed in verdict(rp.report(str(tmp_path)))


def test_a_learned_run_that_never_leaves_counts_as_leaving_at_infinity(tmp_path):
    write_record(tmp_path, {**masked_exits(400, 100), ('mdlm2s', 'learned'): 10 ** 6}, {})
    lines = rp.report(str(tmp_path))
    assert 'switches to rope' in verdict(lines) and '| mdlm two-stream | 1337 | never | 100 |' in '\n'.join(lines)


def test_an_incomplete_record_is_not_judged(tmp_path):
    write_record(tmp_path, masked_exits(400, 100), {})
    for seed in SEEDS:
        os.remove(tmp_path / 'runs' / 'vm2s' / 'rope' / str(seed) / 'log.jsonl')
    assert 'not judged' in verdict(rp.report(str(tmp_path)))


def test_an_evaluation_where_an_interrupted_run_stopped_is_left_out(tmp_path):
    """A run stopped by a signal at step 24 and resumed logged an evaluation there: off the recipe's grid of every
    50 steps, so it can neither be the plateau exit nor break the mean curve over seeds."""
    write_record(tmp_path, {}, {})
    log = tmp_path / 'runs' / 'mlm' / 'rope' / '1338' / 'log.jsonl'
    log.write_text(json.dumps(dict(iter=24, val_loss=1.0)) + '\n' + log.read_text())
    settings, runs = rp.load(str(tmp_path))
    steps, loss = runs['mlm', 'rope'][1338]
    assert steps.tolist() == STEPS.tolist() and 1.0 not in loss.tolist()


def test_the_committed_tables_regenerate_from_the_record(tmp_path):
    """tables.md and every plot and its CSV, redrawn from the committed logs, are the committed files byte for byte, and
    the verdict is the one the README and config/shakespeare_bytes.py act on."""
    record = os.path.join(os.path.dirname(rp.SCRIPT), 'rope-pilot')
    copy = tmp_path / 'rope-pilot'
    shutil.copytree(record, copy, ignore=shutil.ignore_patterns('*.png', '*.csv', 'tables.md'))
    lines = rp.report(str(copy))
    assert verdict(lines) == '**Verdict:** the byte recipe switches to rope.'
    for name in ['tables.md'] + [f"loss_{arm}.{kind}" for arm in rp.ARMS for kind in ('csv', 'png')]:
        assert (copy / name).read_bytes() == open(os.path.join(record, name), 'rb').read(), name

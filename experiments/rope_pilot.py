"""The rotary-positions pilot's table, plots and verdict, drawn from its record (rope_pilot.sh runs this): per arm and
seed the step at which the held-out loss left the unigram plateau and the loss at the last step, learned table vs
RoPE, the paired differences with their tests, one plot per arm (learned dashed, rope solid, the unigram and bigram
floors), and the rule registered at the top of rope_pilot.sh, applied as written.
usage: python -m experiments.rope_pilot [RECORD]   (default: experiments/rope-pilot; writes tables.md and plots
there)"""
import glob
import json
import math
import os
import re
import sys

import numpy as np

from experiments.data_constrained import registered
from experiments.stats import mean_std, paired_t_test, sign_test_p
from output import atomic_write, line_plot

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rope_pilot.sh')
ARMS = {'ar': 'ar', 'dar': 'dar t=2', 'mlm': 'mlm 0.15', 'vm': 'vm [0.15, 0.3]', 'vm2s': 'vm two-stream',
        'mdlm2s': 'mdlm two-stream'}
LEFT_TO_RIGHT, MASKED = ('ar', 'dar'), ('mlm', 'vm', 'vm2s', 'mdlm2s')
POSITIONS = ('learned', 'rope')
SEEDS = (1337, 1338, 1339)  # as registered: the rule is judged on these, and only once every run has finished

# -----------------------------------------------------------------------------
# runs

def load(record):
    """{(arm, pos): {seed: (steps, held-out loss)}} for every finished log (its last evaluation at the budget).
    Every run is read on the recipe's grid of evaluations: a run stopped by a signal and resumed also logged an
    evaluation where it stopped, which is left out (it is off the grid)."""
    settings = json.load(open(os.path.join(record, 'settings.json')))
    interval = int(re.search(r'--eval_interval=(\d+)', settings['recipe']).group(1))
    runs = {}
    for path in sorted(glob.glob(os.path.join(record, 'runs', '*', '*', '*', 'log.jsonl'))):
        arm, pos, seed = path.split(os.sep)[-4:-1]
        rows = [row for row in map(json.loads, open(path)) if 'val_loss' in row and row['iter'] % interval == 0]
        if rows and rows[-1]['iter'] == settings['steps']:
            runs.setdefault((arm, pos), {})[int(seed)] = (np.array([r['iter'] for r in rows]),
                                                          np.array([r['val_loss'] for r in rows]))
    return settings, runs


def plateau_exit(steps, loss, unigram, margin):
    """The first evaluation step at least `margin` below the unigram floor; inf if none."""
    below = np.flatnonzero(loss <= unigram - margin)
    return float(steps[below[0]]) if len(below) else math.inf

# -----------------------------------------------------------------------------
# the report

def status(complete, met):
    return ('met' if met else 'not met') if complete else 'pending (not every registered run has finished)'


def step_text(step):
    return 'never' if math.isinf(step) else f"{step:.0f}"


def report(record):
    settings, runs = load(record)
    rules, constants = registered(SCRIPT)
    unigram, bigram = settings['floors']['unigram'], settings['floors']['bigram']
    margin, tolerance = constants['EXIT_MARGIN'], constants['AR_TOLERANCE']
    arms = [arm for arm in ARMS if all((arm, pos) in runs for pos in POSITIONS)]
    lines = ["# Rotary positions vs the learned table: the byte recipe's pilot", "",
             "Drawn from the record (settings.json, runs/ARM/POS/SEED/log.jsonl) by "
             "`python -m experiments.rope_pilot`."
             f" Held-out loss in nats per byte (ar exact, dar left to right, masked arms the any-order bound) at step "
             f"{settings['steps']}; exit = first evaluation at least {margin} below the unigram floor {unigram:.3f} "
             f"(bigram floor {bigram:.3f}).", "",
             "| arm | seed | exit learned | exit rope | end learned | end rope | rope - learned |",
             "|---|---|---|---|---|---|---|"]
    exits, ends = {}, {}
    for arm in arms:
        seeds = sorted(set(runs[arm, 'learned']) & set(runs[arm, 'rope']))
        for pos in POSITIONS:
            exits[arm, pos] = [plateau_exit(*runs[arm, pos][s], unigram, margin) for s in seeds]
            ends[arm, pos] = np.array([runs[arm, pos][s][1][-1] for s in seeds])
        for i, seed in enumerate(seeds):
            lines.append(f"| {ARMS[arm]} | {seed} | {step_text(exits[arm, 'learned'][i])} | "
                         f"{step_text(exits[arm, 'rope'][i])} | {ends[arm, 'learned'][i]:.3f} | "
                         f"{ends[arm, 'rope'][i]:.3f}"
                         f" | {ends[arm, 'rope'][i] - ends[arm, 'learned'][i]:+.3f} |")
    lines += ["", "Paired over seeds, end (rope) - end (learned): mean ± std, two-sided paired t-test and sign test "
              "(reported beside the rule, not part of it).", "", "| arm | rope - learned | t-test p | sign test p |",
              "|---|---|---|---|"]
    for arm in arms:
        differences = ends[arm, 'rope'] - ends[arm, 'learned']
        if len(differences) > 1:
            lines.append(f"| {ARMS[arm]} | {mean_std(differences, '.3f')} | {paired_t_test(differences)[1]:.2g} | "
                         f"{sign_test_p(differences):.2g} |")
        else:
            lines.append(f"| {ARMS[arm]} | {differences.mean():+.3f} (one seed) | - | - |")
    # the registered rule, as written
    r1 = {arm: float((ends[arm, 'rope'] - ends[arm, 'learned']).mean()) for arm in LEFT_TO_RIGHT if arm in arms}
    r2 = {arm: [rope < learned for rope, learned in zip(exits[arm, 'rope'], exits[arm, 'learned'])]
          for arm in MASKED if arm in arms}
    complete = all(set(runs.get((arm, pos), {})) >= set(SEEDS) for arm in ARMS for pos in POSITIONS)
    r1_met = complete and all(value <= tolerance for value in r1.values())
    r2_met = complete and all(all(earlier) for earlier in r2.values())
    lines += ["", "## The registered rule", "", f"**R1** {rules['R1']}", "",
              "- measured: " + ', '.join(f"{ARMS[arm]} {value:+.3f}" for arm, value in r1.items()) +
              f" (tolerance {tolerance}): {status(complete, r1_met)}", "",
              f"**R2** {rules['R2']}", "",
              "- measured: " + '; '.join(f"{ARMS[arm]} earlier on {sum(earlier)} of {len(earlier)} seeds"
                                         for arm, earlier in r2.items()) + f": {status(complete, r2_met)}", ""]
    if not complete:
        done = sum(len(runs.get((arm, pos), {})) for arm in ARMS for pos in POSITIONS)
        verdict = f"not judged: {done} of {len(ARMS) * len(POSITIONS) * len(SEEDS)} registered runs have finished"
    elif r1_met and r2_met:
        verdict = "the byte recipe switches to rope"
    else:
        failed = [name for name, met in (('R1', r1_met), ('R2', r2_met)) if not met]
        verdict = (f"the byte recipe keeps the learned table ({' and '.join(failed)} not met); "
                   "--rope=True stays an option")
    lines += [f"**Verdict:** {verdict}.", ""]
    # one plot per arm: the mean over seeds of each position encoding, with the floors
    for arm in arms:
        series = {}
        for pos in POSITIONS:
            steps = runs[arm, pos][min(runs[arm, pos])][0]
            series[f"{pos} (mean of {len(runs[arm, pos])})"] = (
                steps.tolist(), np.mean([runs[arm, pos][s][1] for s in runs[arm, pos]], axis=0).round(4).tolist())
        for name, floor in (('unigram floor', unigram), ('bigram floor', bigram)):
            series[name] = ([0, settings['steps']], [floor, floor])
        line_plot(os.path.join(record, f"loss_{arm}.png"), series,
                  dashed=[name for name in series if name.startswith('learned')],
                  title=f"{ARMS[arm]}: held-out loss, learned positions (dashed) vs rope (solid)", xlabel='step',
                  ylabel='held-out loss (nats per byte)')
    atomic_write(os.path.join(record, 'tables.md'), '\n'.join(lines).rstrip() + '\n')
    return lines


if __name__ == '__main__':
    print('\n'.join(report(sys.argv[1] if len(sys.argv) > 1 else 'experiments/rope-pilot')))

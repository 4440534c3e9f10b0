"""The summary of text_claim.sh's record: dev accuracy of every arm and initialisation on the tasks
text-scale's rule entered, fine-tuned (primary) and linear-probed (secondary), and the hypotheses
C1-C4, S1 and D1 judged by the script's header, word for word.
$ python -m experiments.text_claim [RECORD [OUT]]   (default: experiments/text-claim, both)
"""
import glob
import json
import os
import sys

import numpy as np

from experiments.data_constrained import registered, registered_mdes
from experiments.stats import (holm, mean_std, minimum_detectable_effect, paired_t_test,
                               sign_test_p)
from experiments.text_scale import accuracy, clock
from output import atomic_write

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'text_claim.sh')
DEFAULT = 'experiments/text-claim'
# each hypothesis's comparisons: (arm, base, how both are read); an arm 'a - b' is a's gain over b
COMPARISONS = {
    'C1': [('mlm15', 'ar', 'finetune')],
    'C2': [('mlm15_2s', 'ar', 'finetune')],
    'C3': [('dar', 'ar', 'finetune')],
    'C4': [('vm', 'ar', 'finetune'), ('vm_2s', 'ar', 'finetune')],
    'S1 mlm15': [('mlm15', 'ar', 'linprobe')],
    'S1 mlm15_2s': [('mlm15_2s', 'ar', 'linprobe')],
    'S1 dar': [('dar', 'ar', 'linprobe')],
    'S1 vm': [('vm', 'ar', 'linprobe'), ('vm_2s', 'ar', 'linprobe')],
    'D1': [('mlm15 - init-mlm15', 'ar - init-ar', 'finetune')],
}
PRIMARY = ('C1', 'C2', 'C3', 'C4')
MODES = {'finetune': 'fine-tuned', 'linprobe': 'linear probe'}

# -----------------------------------------------------------------------------
# the record


def load(record):
    """(settings, {(model, mode, task): {seed: accuracy}}, {path: clock}, {folder: flags},
    {folder: why a run failed})."""
    settings = json.load(open(os.path.join(record, 'settings.json')))
    scores = {}
    for path in sorted(glob.glob(os.path.join(record, 'runs', '*', '*', '*.json'))):
        model, seed = path.split(os.sep)[-3:-1]
        mode = os.path.basename(path).split('-', 1)[0]
        task, value = accuracy(path)
        scores.setdefault((model, mode, task), {})[int(seed)] = value
    clocks = {os.path.relpath(path, record): clock(path) for path in
              sorted(glob.glob(os.path.join(record, 'runs', '*', '*', '*.time')))}
    flags = {os.path.relpath(os.path.dirname(path), record): '; '.join(open(path).read().split())
             for path in sorted(glob.glob(os.path.join(record, 'runs', '*', '*', 'flags.txt')))}
    failed = {os.path.relpath(os.path.dirname(path), record): open(path).read().strip()
              for path in sorted(glob.glob(os.path.join(record, 'runs', '*', '*', 'failed.txt')))}
    return settings, scores, clocks, flags, failed


def per_seed(scores, model, mode, task):
    """{seed: accuracy} of a model, or of a gain 'a - b' over the seeds that have both."""
    if ' - ' not in model:
        return scores.get((model, mode, task), {})
    a, b = (per_seed(scores, name, mode, task) for name in model.split(' - '))
    return {seed: a[seed] - b[seed] for seed in a if seed in b}

# -----------------------------------------------------------------------------
# the rule


def compare(scores, arm, base, mode, task, seeds, constants):
    """One comparison: arm - base paired by seed, its tests and the rule's verdict."""
    a, b = per_seed(scores, arm, mode, task), per_seed(scores, base, mode, task)
    paired = [seed for seed in seeds if seed in a and seed in b]
    differences = np.array([a[seed] - b[seed] for seed in paired])
    out = dict(arm=arm, base=base, mode=mode, task=task, differences=differences, p=None)
    needed = int(constants['RULE_SEEDS'])
    if len(paired) < needed:
        out['verdict'] = f"not decided ({len(paired)} of {needed} seeds)"
        return out
    _, out['p'] = paired_t_test(differences)
    out['sign_p'] = sign_test_p(differences)
    sd = float(np.std(differences, ddof=1))
    out['mde'] = minimum_detectable_effect(sd, needed, constants['ALPHA'] / 2, constants['POWER'])
    out['verdict'] = ('effect' if differences.mean() > 0 and out['p'] < constants['ALPHA'] else
                      'no effect')
    return out


def judge(found):
    """A hypothesis from its comparisons (on every task): an effect when each is."""
    verdicts = [c['verdict'] for c in found]
    if any(v.startswith('not decided') for v in verdicts):
        return 'not decided'
    return 'effect' if all(v == 'effect' for v in verdicts) else 'no effect'

# -----------------------------------------------------------------------------
# the report


def models_table(settings, scores, task):
    lines = [f"### {task}", "", "| model | fine-tuned | linear probe |", "|---|---|---|"]
    for model in settings['arms'] + settings['inits']:
        cells = []
        for mode in MODES:
            values = list(scores.get((model, mode, task), {}).values())
            cells.append(f"{mean_std(values, '.1f')} ({len(values)})" if values else 'pending')
        lines.append(f"| {model} | " + ' | '.join(cells) + " |")
    return lines + [""]


def comparisons_table(judged, mdes):
    lines = ["| hypothesis | task | comparison | read | difference | p (t) | p (sign) | MDE "
             "registered | MDE of its sd | verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, found in judged.items():
        registered_mde = mdes.get(name.split()[0], {}).get('mde_text', '–')
        for c in found:
            done = c['p'] is not None
            lines.append(
                f"| {name} | {c['task']} | {c['arm']} vs {c['base']} | {MODES[c['mode']]} | "
                + (mean_std(c['differences'], '.2f') if len(c['differences']) else 'pending')
                + (f" | {c['p']:.2g} | {c['sign_p']:.2g}" if done else ' | – | –')
                + f" | {registered_mde} | " + (f"{c['mde']:.2f}" if done else '–')
                + f" | {c['verdict']} |")
    return lines + [""]


def cost_lines(settings, clocks, flags):
    pretraining, evaluations = {}, []
    for path, (cpu, _) in clocks.items():
        model, name = path.split(os.sep)[1], os.path.basename(path)
        if name.startswith('pretrain'):
            pretraining.setdefault(model, []).append(cpu / 60)
        else:
            evaluations.append(cpu / 60)
    lines = ["## Cost (measured: the clocks in the record)", ""]
    if pretraining:
        lines.append("Pretraining, cpu-minutes a run (mean, runs): " + ', '.join(
            f"{arm} {np.mean(pretraining[arm]):.1f} ({len(pretraining[arm])})"
            for arm in settings['arms'] if arm in pretraining) + '.')
    if evaluations:
        lines.append(f"Evaluations: {sum(evaluations):.0f} cpu-minutes over {len(evaluations)} "
                     f"(mean {np.mean(evaluations):.1f}).")
    where = '; '.join(f"{folder}: {text}" for folder, text in flags.items()) or \
        'the CPU, every run (no DEVICE_FLAGS or TRAIN_FLAGS given)'
    return lines + ["", f"Where it ran: {where}"]


def report(record=DEFAULT, res=DEFAULT):
    settings, scores, clocks, flags, failed = load(record)
    texts, constants = registered(SCRIPT)
    mdes = registered_mdes(SCRIPT)
    seeds, tasks = settings['seeds'], settings['tasks']
    judged = {name: [compare(scores, arm, base, mode, task, seeds, constants)
                     for task in tasks for arm, base, mode in comparisons]
              for name, comparisons in COMPARISONS.items()}
    verdicts = {name: judge(found) for name, found in judged.items()}
    decided = all(verdicts[name] != 'not decided' for name in PRIMARY)
    # an intersection's p is its largest; Holm over the four primary hypotheses
    family = [max(c['p'] for c in judged[name]) for name in PRIMARY] if decided else None
    adjusted = dict(zip(PRIMARY, holm(family))) if decided else {}
    lines = ["# Masked, dar and ar pretraining on the tasks a byte model can solve", "",
             "Drawn from the record (settings.json, runs/) by `python -m experiments.text_claim`; "
             "the runs by `experiments/text_claim.sh`, whose header registered the hypotheses "
             f"below before any run. Seeds {', '.join(map(str, seeds))}. Pretraining: "
             f"{settings['recipe']}. The tasks, those text-scale's R2 entered at "
             f"{settings['entered_at']}: {', '.join(tasks)}. Fine-tuned: "
             f"`{settings['evaluations']['finetune']} {settings['pick']}`, the run's seed; linear "
             f"probe: `{settings['evaluations']['linprobe']}`; initialisations: `--ckpt=random:` "
             "a 1-step run of the same config and seed. Dev accuracy (%)."
             + (" A smoke run: a tiny suite and a few steps, no finding." if settings['smoke']
                else ''), "", "## The registration (text_claim.sh's header, word for word)", ""]
    lines += [f"**{name}** {text}" for name, text in texts.items()]
    lines += ["", "Constants: " + ', '.join(f"{name} = {value:g}" for name, value in
                                            constants.items()) + '.', "", "## Accuracy", "",
              "Mean ± sd over the seeds (how many in brackets).", ""]
    for task in tasks:
        lines += models_table(settings, scores, task)
    lines += ["Failed runs (never retuned; their seeds leave the comparisons that need them not "
              "decided): " + ('; '.join(f"{folder}: {why}" for folder, why in failed.items())
                              or 'none') + '.', ""]
    lines += ["## The comparisons", "",
              "Differences paired by seed (points, mean ± sd); p (t): the two-sided paired t-test "
              "the rule reads; p (sign): the exact sign test, beside it (with 5 seeds never below "
              "0.0625); MDEs at one-sided 0.025, power 0.8.", ""]
    lines += comparisons_table(judged, mdes)
    lines += ["## Verdicts", "", "| hypothesis | verdict | Holm-adjusted p (C1-C4, beside) |",
              "|---|---|---|"]
    lines += [f"| {name} | {verdicts[name]} | "
              + (f"{adjusted[name]:.2g}" if name in adjusted else '–') + " |" for name in judged]
    lines += [""] + cost_lines(settings, clocks, flags)
    os.makedirs(res, exist_ok=True)
    atomic_write(os.path.join(res, 'tables.md'), '\n'.join(lines).rstrip() + '\n')
    return lines


if __name__ == '__main__':
    args = sys.argv[1:] + [DEFAULT] * (2 - len(sys.argv[1:]))
    print('\n'.join(report(*args[:2])))

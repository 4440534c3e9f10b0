"""The concat-probe vision record's tables, plot and verdicts (vision_concat.sh runs this): every arm's concat linear
probe and fine-tune beside the raw pixels and its own initialisation, what pretraining added (paired by seed), Table 9
against t, a plot of the probe by arm with the pixel line and each initialisation, every registered comparison as a
paired difference with its one-sided and two-sided paired t-tests and sign test, each test's p (the largest of its
comparisons') and its Holm-adjusted p within its registered family, and V5-V10 judged by the text registered at the
top of vision_concat.sh. A comparison is judged only once every seed has both values; until then it is pending.
usage: python -m experiments.vision_concat [RECORD] [RES]   (default: experiments/vision-concat for both)"""
import glob
import json
import os
import re
import sys

import numpy as np

from experiments import vision
from experiments.stats import holm, mean_std, minimum_detectable_effect, paired_t_test
from output import atomic_write, line_plot

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'vision_concat.sh')
DEFAULT = 'experiments/vision-concat'
LABELS = {'ar': 'ar (two-stream, t=1)', 'mae75': 'mae 0.75', 'dar2': 'dar t=2', 'vm': 'vm [0.5, 0.75]', 'gvp': 'gvp',
          'dar3': 'dar t=3', 'dar4': 'dar t=4', 'ar1s': 'ar one-stream (control)', 'ar_long': 'ar, {long} steps',
          'mae75_long': 'mae 0.75, {long} steps'}
INITS = {'init-ar': 'every patch its own group (ar, ar1s, ar_long; fine-tuning: every arm)',
         'init-mae75': 'no mask (mae75, vm, mae75_long)', 'init-dar2': 'groups of 2 (dar2)',
         'init-dar3': 'groups of 3 (dar3)', 'init-dar4': 'groups of 4 (dar4)',
         'init-gvp': "gvp's fixed segmentation (gvp)"}
TABLE9 = {'ar': 1, 'dar2': 2, 'dar3': 3, 'dar4': 4}  # t = 1: dar with groups of one is ar two-stream
MEASURES = {'probe': 'concat linear probe', 'finetune': 'fine-tuning'}
FAMILY = re.compile(r'   FAMILY (\w+): (.+)$')

# -----------------------------------------------------------------------------
# the registered text (vision_concat.sh's header, read, never restated here)

def registered(script=SCRIPT):
    """({'V5': text, ...}, [comparison dicts], {'primary': [('V5', 'probe'), ...], ...}, {'ALPHA': 0.05, ...}): the
    hypotheses, their comparisons (vision.registered's), the families of tests Holm adjusts within, the constants."""
    hypotheses, comparisons, constants = vision.registered(script)
    families = {}
    for line in open(script):
        found = line.startswith('#') and FAMILY.match(line[1:].rstrip())
        if found:
            families[found.group(1)] = [tuple(test.split()) for test in found.group(2).split(', ')]
    return hypotheses, comparisons, families, constants


def label(arm, settings):
    return LABELS.get(arm, arm).format(long=settings.get('long_steps', '?'))

# -----------------------------------------------------------------------------
# the record

def load(record):
    """settings, {arm: {seed: log rows}} for every run at its budget, {(metric, name): {seed: value}} for every
    evaluation of such a run, of an initialisation and of the pixels (and each one's seconds), and {folder: flags}
    for every result written with DEVICE_FLAGS or TRAIN_FLAGS."""
    settings = json.load(open(os.path.join(record, 'settings.json')))
    runs, values = {}, {}

    def read(name, seed, folder):
        for metric in MEASURES:
            task, column = vision.METRICS[metric][:2]
            path = os.path.join(folder, f'{task}.csv')
            if os.path.exists(path):
                row = vision.read_csv_row(path)
                values.setdefault((metric, name), {})[seed] = float(row[column])
                values.setdefault((f'{task} seconds', name), {})[seed] = float(row['seconds'])
    for arm in settings['arms']:
        steps = settings['long_steps'] if arm.endswith('_long') else settings['steps']
        for seed in settings['seeds']:
            folder = os.path.join(record, 'runs', arm, str(seed))
            log = os.path.join(folder, 'log.jsonl')
            rows = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
            if rows and rows[-1]['iter'] == steps:
                runs.setdefault(arm, {})[seed] = rows
                read(arm, seed, folder)
    for name in ['pixels'] + controls(settings):  # evaluations only: no pretraining run, so no log
        for seed in settings['seeds']:
            read(name, seed, os.path.join(record, 'runs', name, str(seed)))
    flags = {os.path.relpath(os.path.dirname(path), record): '; '.join(open(path).read().split('\n')).strip('; ')
             for path in sorted(glob.glob(os.path.join(record, 'runs', '*', '*', 'flags.txt')))}
    return settings, runs, values, flags


def controls(settings):
    """The initialisations the arms name, in the order of the arms."""
    names = [settings['inits'][arm] for arm in settings['arms']] + [settings['finetune_init']]
    return list(dict.fromkeys(names))

# -----------------------------------------------------------------------------
# comparisons, tests and families

def compare(comparison, values, seeds, alpha, mde_per_sd):
    """vision.compare's paired difference and tests, with the two-sided paired p beside (descriptive)."""
    result = vision.compare(comparison, values, seeds, alpha, mde_per_sd)
    if not result['pending']:
        result['two_sided_p'] = paired_t_test(result['differences'])[1]
    return result


def judge(results, families, alpha):
    """{(hypothesis, measure): test}: its comparisons, its p (the largest of theirs: an intersection-union test;
    None while any is pending), its Holm-adjusted p within its family (the family's pending tests counted as p = 1),
    and the verdict by the registered rule."""
    tests = {}
    for family, members in families.items():
        for hypothesis, metric in members:
            mine = [r for r in results if r['hypothesis'] == hypothesis and r['metric'] == metric]
            p = None if not mine or any(r['pending'] for r in mine) else max(r['p'] for r in mine)
            tests[hypothesis, metric] = dict(hypothesis=hypothesis, metric=metric, family=family, m=len(members),
                                             comparisons=mine, p=p)
        adjusted = holm([1.0 if tests[test]['p'] is None else tests[test]['p'] for test in members])
        waiting = sum(tests[test]['p'] is None for test in members)
        for test, holm_p in zip(members, adjusted):
            test = tests[test]
            if test['p'] is None:
                test.update(holm=None, verdict='pending (not every registered value is in the record)')
            elif holm_p < alpha:
                test.update(holm=holm_p, verdict='effect (met)')
            else:
                test.update(holm=holm_p, verdict='not met' if not waiting else
                            f"not met so far ({waiting} of the {family} family's {len(members)} tests pending)")
    return tests


def paired(values, metric, first, second, seeds):
    """'mean ± std (k of n above, p two-sided)' of first - second paired by seed, over the seeds that have both."""
    a, b = values.get((metric, first), {}), values.get((metric, second), {})
    have = [seed for seed in seeds if seed in a and seed in b]
    if not have:
        return '–'
    differences = np.array([a[seed] - b[seed] for seed in have])
    p = f", p {paired_t_test(differences)[1]:.2g}" if len(have) > 1 else ''
    return f"{mean_std(differences, '.2f')} ({int((differences > 0).sum())} of {len(have)} above{p})"


def gap_change(values, seeds):
    """(mae75_long - ar_long) - (mae75 - ar) for the probe and fine-tune, paired by seed, with its two-sided p."""
    lines = []
    for metric in MEASURES:
        keys = [(metric, arm) for arm in ('mae75_long', 'ar_long', 'mae75', 'ar')]
        have = [seed for seed in seeds if all(seed in values.get(key, {}) for key in keys)]
        if not have:
            lines.append(f"| {MEASURES[metric]} | – |")
            continue
        v = {key: np.array([values[key][seed] for seed in have]) for key in keys}
        change = (v[keys[0]] - v[keys[1]]) - (v[keys[2]] - v[keys[3]])
        p = f", p {paired_t_test(change)[1]:.2g}" if len(have) > 1 else ''
        lines.append(f"| {MEASURES[metric]} | {mean_std(change, '.2f')} ({int((change > 0).sum())} of {len(have)} "
                     f"above{p}) |")
    return lines

# -----------------------------------------------------------------------------
# the report

def probe_plot(res, settings, values, seeds):
    """Concat probe by arm: the mean over seeds of each arm, of its own initialisation, and the pixels' mean as a
    line across, each seed's arms dashed; None where no arm has a probe."""
    arms = [arm for arm in settings['arms'] if values.get(('probe', arm))]
    if not arms:
        return None
    xs = list(range(1, len(arms) + 1))

    def mean(name):
        got = values.get(('probe', name), {})
        return float(np.mean(list(got.values()))) if got else float('nan')
    series = {'pretrained (mean)': (xs, [mean(arm) for arm in arms]),
              'own initialisation (mean)': (xs, [mean(settings['inits'][arm]) for arm in arms])}
    if values.get(('probe', 'pixels')):
        series['raw pixels (mean)'] = (xs, [mean('pixels')] * len(xs))
    full = [seed for seed in seeds if all(seed in values[('probe', arm)] for arm in arms)]
    series.update({f'seed {seed}': (xs, [values[('probe', arm)][seed] for arm in arms]) for seed in full})
    key = ', '.join(f"{x} {arm}" for x, arm in zip(xs, arms))
    line_plot(os.path.join(res, 'probe_by_arm.png'), series, xlabel=f'arm ({key})', ylabel='concat probe top-1 %',
              title='Fashion-MNIST, concat linear probe by arm: pretrained, its own initialisation, the raw pixels',
              dashed=[name for name in series if name.startswith('seed')])
    return key


def report(record=DEFAULT, res=DEFAULT):
    settings, runs, values, flags = load(record)
    hypotheses, comparisons, families, constants = registered()
    alpha, power, seeds = constants['ALPHA'], constants['POWER'], settings['seeds']
    arms, inits = settings['arms'], controls(settings)
    mde_per_sd = minimum_detectable_effect(1.0, len(seeds), alpha, power) if len(seeds) > 1 else float('nan')
    os.makedirs(res, exist_ok=True)
    cell = lambda metric, name: vision.cell(values, metric, name, seeds, '.2f')  # noqa: E731
    evaluations = '; '.join(f"{task} `{command}`" for task, command in settings['evaluations'].items())
    lines = ["# Vision under the concat probe: the paper's central claim on Fashion-MNIST", "",
             "Drawn from the record (settings.json; runs/NAME/SEED/: log.jsonl, linprobe.csv, finetune.csv) by "
             f"`python -m experiments.vision_concat`. Pretraining: the *_fmnist configs, {settings['steps']} steps "
             f"({settings['long_steps']} for the _long arms), {settings['recipe']}; seeds "
             f"{', '.join(map(str, seeds))}. Evaluations: {evaluations}.", "",
             "## Every arm and control", "",
             f"Mean ± std over the seeds ('k of {len(seeds)}' where fewer have it). Each arm's initialisation: the "
             "weights its run starts from, probed with its own probe mask (`--ckpt=random:...`).", "",
             "| arm | runs finished | concat probe (top-1 %) | fine-tune (top-1 %) | own initialisation | its probe |",
             "|---|---|---|---|---|---|"]
    for arm in arms:
        lines.append(f"| {label(arm, settings)} | {len(runs.get(arm, {}))} of {len(seeds)} | {cell('probe', arm)} | "
                     f"{cell('finetune', arm)} | {settings['inits'][arm]} | {cell('probe', settings['inits'][arm])} |")
    lines += ["", "| control | concat probe (top-1 %) | fine-tune (top-1 %) |", "|---|---|---|",
              f"| raw pixels (`--ckpt=pixels`) | {cell('probe', 'pixels')} | – |"]
    lines += [f"| {name}: {INITS.get(name, name)} | {cell('probe', name)} | {cell('finetune', name)} |"
              for name in inits]

    lines += ["", "## What pretraining added (descriptive, registered as such)", "",
              "Each difference paired by seed: mean ± std, the seeds above 0 and the two-sided paired t-test p.", "",
              "| arm | probe - own initialisation | probe - raw pixels | fine-tune - initialisation (init-ar) |",
              "|---|---|---|---|"]
    for arm in arms:
        lines.append(f"| {label(arm, settings)} | {paired(values, 'probe', arm, settings['inits'][arm], seeds)} | "
                     f"{paired(values, 'probe', arm, 'pixels', seeds)} | "
                     f"{paired(values, 'finetune', arm, settings['finetune_init'], seeds)} |")
    lines += ["", "| initialisation | probe - raw pixels |", "|---|---|"]
    lines += [f"| {name} | {paired(values, 'probe', name, 'pixels', seeds)} |" for name in inits
              if name in settings['inits'].values()]

    key = probe_plot(res, settings, values, seeds)
    if key:
        lines += ["", f"`probe_by_arm.png` + CSV: the concat probe by arm (x: {key}), the mean over the seeds of each "
                  "arm and of its own initialisation, the pixels' mean as a line across, and each seed's arms "
                  "(dashed)."]

    lines += ["", "## Table 9 under the concat probe (t = 1 is ar two-stream)", "",
              "| t | concat probe (top-1 %) | fine-tune (top-1 %) | initialisation's probe |", "|---|---|---|---|"]
    lines += [f"| {t} | {cell('probe', arm)} | {cell('finetune', arm)} | {cell('probe', settings['inits'][arm])} |"
              for arm, t in TABLE9.items() if arm in arms]

    rows = [f"| {first} - {second} | {paired(values, 'probe', first, second, seeds)} | "
            f"{paired(values, 'finetune', first, second, seeds)} |"
            for first, second in (('mae75', 'ar1s'), ('ar', 'ar1s'), ('ar_long', 'ar'), ('mae75_long', 'mae75'))
            if first in arms and second in arms]
    if rows:
        lines += ["", "## Descriptive comparisons (registered as such, never a verdict)", "",
                  "Paired by seed, with the two-sided paired t-test p: the one-stream control, and each 3000-step "
                  "arm against its 1000-step run.", "", "| difference | concat probe | fine-tune |", "|---|---|---|"]
        lines += rows
    if all(arm in arms for arm in ('ar', 'mae75', 'ar_long', 'mae75_long')):
        lines += ["", f"mae75 - ar at {settings['long_steps']} steps minus mae75 - ar at {settings['steps']} "
                  "(paired by seed; above 0: mae 0.75 gains on ar with longer pretraining):", "",
                  "| measure | change |", "|---|---|"] + gap_change(values, seeds)

    # every registered comparison, the tests and their families, then the verdicts
    results = [compare(comparison, values, seeds, alpha, mde_per_sd) for comparison in comparisons]
    tests = judge(results, families, alpha)
    lines += ["", "## Registered comparisons: paired differences over the seeds", "",
              "Signed so that the comparison says > 0. p: one-sided paired t-test (deciding, through its test); sign: "
              "one-sided exact sign test; two-sided p: descriptive, for a difference the other way; MDE: the "
              f"smallest true difference {len(seeds)} seeds detect at p < {alpha:g} with power {power:g}, as "
              "registered and from this record's spread.", "",
              "| comparison | difference | mean ± std | p | seeds the stated way | sign p | two-sided p | "
              "MDE registered | MDE, this record |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [vision.comparison_row(result, len(seeds), '.2f', two_sided=True) for result in results]
    lines += ["", "## Tests: each hypothesis on each measure, Holm-adjusted within its family", "",
              "p: the largest of the test's comparisons' one-sided p (an intersection-union test). Holm p: Holm's "
              "step-down adjustment over the family's m tests (a test still pending counted as p = 1). An effect "
              f"needs Holm p < {alpha:g}.", "",
              "| test | family (m) | comparisons | p | Holm p | verdict |", "|---|---|---|---|---|---|"]
    for test in tests.values():
        names = ', '.join(result['name'] for result in test['comparisons'])
        p = '–' if test['p'] is None else f"{test['p']:.2g}"
        adjusted = '–' if test['holm'] is None else f"{test['holm']:.2g}"
        lines.append(f"| {test['hypothesis']} {MEASURES[test['metric']]} | {test['family']} ({test['m']}) | {names} | "
                     f"{p} | {adjusted} | {test['verdict']} |")
    lines += ["", "## Verdicts (registered in vision_concat.sh before any run)", "",
              f"Each comparison holds when the one-sided paired t-test gives p < {alpha:g} (its mean then goes the "
              f"stated way); a test is an effect when its Holm-adjusted p < {alpha:g}, so when each of its comparisons "
              "holds with room for the family's multiplicity.", ""]
    for hypothesis, text in hypotheses.items():
        lines += [f"**{hypothesis}** {text}", ""]
        lines += [vision.describe(result) for result in results if result['hypothesis'] == hypothesis]
        lines += [f"- verdict, {MEASURES[metric]} ({test['family']}): {test['verdict']}"
                  for (name, metric), test in tests.items() if name == hypothesis]
        lines.append("")

    # what it cost, from the record's clocks; where it ran
    lines += ["## Cost (the record's clocks, minutes on one core)", "",
              "| arm or control | pretraining | concat probe | fine-tune |", "|---|---|---|---|"]
    total = 0.0
    for name in arms + ['pixels'] + inits:
        train = [vision.training_minutes(rows) for rows in runs.get(name, {}).values()]
        evals = [[v / 60 for v in values.get((f'{task} seconds', name), {}).values()]
                 for task in ('linprobe', 'finetune')]
        total += sum(train) + sum(sum(e) for e in evals)
        lines.append(f"| {label(name, settings)} | " + ' | '.join(f"{np.mean(m):.1f}" if m else '–'
                                                                   for m in [train] + evals) + ' |')
    lines += ["", f"In all {total:.0f} core-minutes (evaluations: their own timing, without starting Python and "
              "loading data).", "",
              "Where it ran: " + ("every result with the scripts' defaults (the CPU, one thread a job)." if not flags
                                  else "the CPU defaults, but for these results: " + '; '.join(
                                      f"{folder}: {text}" for folder, text in flags.items()) + '.')]
    atomic_write(os.path.join(res, 'tables.md'), '\n'.join(lines).rstrip() + '\n')
    return lines


if __name__ == '__main__':
    args = sys.argv[1:] + [DEFAULT] * (2 - len(sys.argv[1:]))
    print('\n'.join(report(*args[:2])))

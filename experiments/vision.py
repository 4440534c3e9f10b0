"""The vision experiment's tables, plots and verdicts, drawn from its record (vision.sh runs this): every arm's
linear probe, fine-tune and reconstruction (mean ± std over seeds), Table 9's probe accuracy against t, Table 8's
reconstruction error per arm and a grid of reconstructions, every registered comparison as a paired difference with
a one-sided paired t-test, the seeds that go the stated way and the one-sided sign test, the minimum detectable
effect (registered, and from the record's own spread), and V1-V4 judged by the text registered at the top of
vision.sh. A comparison is judged only once every seed has both values; until then it is pending.
usage: python -m experiments.vision [RECORD] [RES]   (default: experiments/vision for both)"""
import csv
import json
import math
import os
import re
import sys

import numpy as np
from PIL import Image, ImageDraw

from experiments.data_constrained import one_sided_p, registered as registered_text
from experiments.stats import mean_std, minimum_detectable_effect, sign_test_one_sided_p
from output import atomic_write, line_plot, write_png

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'vision.sh')
ARMS = {'ar': 'ar (two-stream, t=1)', 'ar1s': 'ar one-stream', 'dar2': 'dar t=2', 'dar3': 'dar t=3',
        'dar4': 'dar t=4', 'gvp': 'gvp', 'mae75': 'mae 0.75', 'mae50': 'mae 0.5', 'vm': 'vm [0.5, 0.75]'}
# beside the arms (added after the registered runs; descriptive): the input, and ar two-stream before any training
BASELINES = {'pixels': 'raw pixels (input baseline)', 'random': 'ar two-stream at initialisation'}
TABLE9 = {'ar': 1, 'dar2': 2, 'dar3': 3, 'dar4': 4}  # t = 1: dar with groups of one is ar two-stream
# metric: (the evaluation's CSV, its column, what it is, printed as)
METRICS = {'probe': ('linprobe', 'val_acc', 'linear probe, top-1 %', '.2f'),
           'finetune': ('finetune', 'val_acc', 'fine-tune, top-1 %', '.2f'),
           'l2': ('recon', 'l2', 'pixel L2', '.4f'),
           'lpips': ('recon', 'lpips', 'LPIPS', '.4f')}
COMPARISON = re.compile(r'   (V\d+)([a-z]) (\w+): (\w+) (above|below) (\w+); '
                        r'paired sd ([0-9.]+) \(([^()]+)\), MDE ([0-9.]+)$')

# -----------------------------------------------------------------------------
# the registered text (vision.sh's header, read, never restated here)

def registered(script=SCRIPT):
    """({'V1': text, ...}, [comparison dicts in the header's order], {'ALPHA': 0.05, 'POWER': 0.8})."""
    hypotheses, constants = registered_text(script)
    comparisons = []
    for line in open(script):
        found = line.startswith('#') and COMPARISON.match(line[1:].rstrip())
        if found:
            hypothesis, letter, metric, arm, relation, other, sd, source, mde = found.groups()
            comparisons.append(dict(name=hypothesis + letter, hypothesis=hypothesis, metric=metric, arm=arm,
                                    relation=relation, other=other, sd=float(sd), sd_text=sd, source=source,
                                    mde=float(mde), mde_text=mde, text=f"{metric}: {arm} {relation} {other}"))
    return hypotheses, comparisons, constants


def signed(comparison):
    """(first, second): the difference first - second is what the comparison says is > 0."""
    arm, other = comparison['arm'], comparison['other']
    return (arm, other) if comparison['relation'] == 'above' else (other, arm)

# -----------------------------------------------------------------------------
# the record

def read_csv_row(path):
    with open(path, newline='') as f:
        return next(csv.DictReader(f))


def load(record):
    """settings, {arm: {seed: log rows}} for every finished run, and {(key, arm): {seed: value}} for every
    evaluation of a finished run (the metrics, plus the mean-fill baselines and each evaluation's seconds)."""
    settings = json.load(open(os.path.join(record, 'settings.json')))
    runs, values = {}, {}
    for arm in settings['arms']:
        for seed in settings['seeds']:
            folder = os.path.join(record, 'runs', arm, str(seed))
            log = os.path.join(folder, 'log.jsonl')
            rows = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
            if not rows or rows[-1]['iter'] != settings['steps']:
                continue
            runs.setdefault(arm, {})[seed] = rows
            for metric, (task, column, _, _) in METRICS.items():
                path = os.path.join(folder, f'{task}.csv')
                if not os.path.exists(path):
                    continue
                row = read_csv_row(path)
                values.setdefault((metric, arm), {})[seed] = float(row[column])
                values.setdefault((f'{task} seconds', arm), {})[seed] = float(row['seconds'])
                if task == 'recon':
                    values.setdefault((f'baseline {metric}', arm), {})[seed] = float(row[f'baseline_{column}'])
    for name in settings.get('baselines', []):  # evaluations only: no pretraining run, so no log
        for seed in settings['seeds']:
            for metric in ('probe', 'finetune'):
                task, column = METRICS[metric][:2]
                path = os.path.join(record, 'runs', name, str(seed), f'{task}.csv')
                if os.path.exists(path):
                    row = read_csv_row(path)
                    values.setdefault((metric, name), {})[seed] = float(row[column])
                    values.setdefault((f'{task} seconds', name), {})[seed] = float(row['seconds'])
    return settings, runs, values


def training_minutes(rows):
    """The run's clock from its log: the span of its logged times, scaled from the first logged step to all."""
    timed = [row for row in rows if 'time' in row]
    first, last = timed[0], timed[-1]
    return (last['time'] - first['time']) * last['iter'] / max(1, last['iter'] - first['iter']) / 60

# -----------------------------------------------------------------------------
# comparisons

def compare(comparison, values, seeds, alpha, mde_per_sd):
    """The paired difference over the seeds (signed so that the comparison says > 0), its tests and whether it
    holds; 'pending' with the number of seeds that have both values until every seed has."""
    first, second = signed(comparison)
    a, b = values.get((comparison['metric'], first), {}), values.get((comparison['metric'], second), {})
    have = [seed for seed in seeds if seed in a and seed in b]
    result = dict(comparison, first=first, second=second, have=len(have), seeds=seeds)
    if len(have) < len(seeds) or len(seeds) < 2:
        return dict(result, pending=True)
    differences = np.array([a[seed] - b[seed] for seed in seeds])
    p = one_sided_p(differences)
    return dict(result, pending=False, differences=differences, p=p, sign_p=sign_test_one_sided_p(differences),
                stated_way=int((differences > 0).sum()), holds=bool(differences.mean() > 0 and p < alpha),
                record_mde=mde_per_sd * differences.std(ddof=1))


def describe(result):
    """One line: the difference, its tests and whether the comparison holds."""
    name, fmt = f"{result['name']} {result['text']}", METRICS[result['metric']][3]
    if result['pending'] and len(result['seeds']) < 2:
        return f"- {name}: pending (one seed: no test)"
    if result['pending']:
        return f"- {name}: pending ({result['have']} of {len(result['seeds'])} seeds have both values)"
    cells = ', '.join(f"{seed}: {d:+{fmt}}" for seed, d in zip(result['seeds'], result['differences']))
    return (f"- {name}: {result['first']} - {result['second']} = {mean_std(result['differences'], fmt)} ({cells}); "
            f"one-sided paired t-test p = {result['p']:.2g}, {result['stated_way']} of {len(result['seeds'])} seeds, "
            f"one-sided sign test p = {result['sign_p']:.3g}: {'holds' if result['holds'] else 'does not hold'}")


def comparison_row(result, n_seeds, fmt, two_sided=False):
    """One registered comparison's row of the comparisons table (two_sided: with its two-sided p)."""
    head = f"| {result['name']} {result['text']} | {result['first']} - {result['second']} | "
    registered_mde = f"{result['mde_text']} (sd {result['sd_text']}, {result['source']})"
    if result['pending']:
        blanks = '| | | | | ' if two_sided else '| | | | '
        return head + f"pending ({result['have']} of {n_seeds} seeds) {blanks}{registered_mde} | |"
    two_sided_p = f"{result['two_sided_p']:.2g} | " if two_sided else ''
    return (head + f"{mean_std(result['differences'], fmt)} | {result['p']:.2g} | "
            f"{result['stated_way']} of {n_seeds} | {result['sign_p']:.3g} | {two_sided_p}"
            f"{registered_mde} | {result['record_mde']:{fmt}} |")


def verdict(results):
    if any(result['pending'] for result in results):
        return 'pending (not every registered value is in the record)'
    return 'effect (met)' if all(result['holds'] for result in results) else 'not met'

def where_the_input_stands(values, arms, seeds):
    """Each arm's probe minus the raw-pixel probe and minus the probe at initialisation, and its fine-tune minus the
    fine-tune from initialisation, paired by seed: what pretraining added, and whether it reached the input."""
    def paired(metric, arm, other):
        a, b = values.get((metric, arm), {}), values.get((metric, other), {})
        have = [seed for seed in seeds if seed in a and seed in b]
        if not have:
            return '–'
        differences = [a[seed] - b[seed] for seed in have]
        return f"{mean_std(differences, '.2f')} ({sum(d > 0 for d in differences)} of {len(have)} above)"
    lines = ["", "## Where the input stands (descriptive, not registered)", "",
             "Paired by seed, mean ± std of the difference, and the seeds where the arm is above. Raw pixels: the "
             "same linear probe on the pixels themselves (`eval_vision.py --ckpt=pixels`); at initialisation: ar "
             "two-stream's weights before its first step, probed and fine-tuned by the same protocols "
             "(`--ckpt=random:...`).", "",
             "| arm | probe - raw pixels | probe - ar at initialisation | fine-tune - ar at initialisation |",
             "|---|---|---|---|"]
    for arm in arms:
        lines.append(f"| {ARMS[arm]} | {paired('probe', arm, 'pixels')} | {paired('probe', arm, 'random')} | "
                     f"{paired('finetune', arm, 'random')} |")
    return lines

# -----------------------------------------------------------------------------
# plots

def combined_grid(record, res, arms, seed):
    """The first seed's reconstruction grids (eval_vision.py: original | masked | filled, one image a row) side by
    side under their arms' names: every model filled the same patches of the same images."""
    paths = [(arm, os.path.join(record, 'runs', arm, str(seed), f'recon_{arm}.png')) for arm in arms]
    grids = [(arm, Image.open(path).convert('RGB')) for arm, path in paths if os.path.exists(path)]
    if not grids:
        return None
    gap, label = 12, 16
    width = sum(grid.width for _, grid in grids) + gap * (len(grids) - 1)
    canvas = Image.new('RGB', (width, label + max(grid.height for _, grid in grids)), 'white')
    draw, left = ImageDraw.Draw(canvas), 0
    for arm, grid in grids:
        canvas.paste(grid, (left, label))
        draw.text((left + 2, 2), ARMS[arm], fill='black')
        left += grid.width + gap
    path = os.path.join(res, 'recon_grid.png')
    write_png(path, canvas)
    return path

# -----------------------------------------------------------------------------
# the report

def cell(values, key, arm, seeds, fmt):
    got = values.get((key, arm), {})
    have = [got[seed] for seed in seeds if seed in got]
    if not have:
        return '–'
    return mean_std(have, fmt) + ('' if len(have) == len(seeds) else f" ({len(have)} of {len(seeds)})")


def report(record, res):
    settings, runs, values = load(record)
    hypotheses, comparisons, constants = registered()
    alpha, power = constants['ALPHA'], constants['POWER']
    seeds = settings['seeds']
    arms = [arm for arm in ARMS if arm in settings['arms']]
    mde_per_sd = minimum_detectable_effect(1.0, len(seeds), alpha, power) if len(seeds) > 1 else math.nan
    os.makedirs(res, exist_ok=True)
    evaluations = '; '.join(f"{task} `{command}`" for task, command in settings['evaluations'].items())
    lines = ["# Vision: Tables 3, 8 and 9 on Fashion-MNIST", "",
             "Drawn from the record (settings.json, runs/ARM/SEED/: log.jsonl, linprobe.csv, finetune.csv, recon.csv) "
             f"by `python -m experiments.vision`. Pretraining: the *_fmnist configs with {settings['recipe']}; "
             f"seeds {', '.join(map(str, seeds))}. Evaluations: {evaluations}.", "",
             "## Every arm", "",
             f"Mean ± std over the seeds ('k of {len(seeds)}' where fewer have it). The validation loss is each "
             "objective's own loss at the last step: not comparable across objectives.", "",
             "| arm | runs finished | val loss at the end | linear probe (top-1 %) | fine-tune (top-1 %) | pixel L2 | "
             "LPIPS |", "|---|---|---|---|---|---|---|"]
    for arm in arms:
        done = runs.get(arm, {})
        losses = [[row['val_loss'] for row in done[seed] if 'val_loss' in row][-1] for seed in seeds if seed in done]
        loss = mean_std(losses, '.4f') if losses else '–'
        lines.append(f"| {ARMS[arm]} | {len(done)} of {len(seeds)} | {loss} | "
                     + ' | '.join(cell(values, metric, arm, seeds, METRICS[metric][3]) for metric in METRICS) + ' |')
    baselines = [name for name in BASELINES if name in settings.get('baselines', [])]
    for name in baselines:
        lines.append(f"| {BASELINES[name]} | | | {cell(values, 'probe', name, seeds, '.2f')} | "
                     f"{cell(values, 'finetune', name, seeds, '.2f')} | | |")
    recon_arms = [arm for arm in arms if ('l2', arm) in values]
    if recon_arms:
        # the same images and patches for every model: one baseline, read beside the first arm's scores
        lines.append(f"| mean-fill baseline | | | | | {cell(values, 'baseline l2', recon_arms[0], seeds, '.4f')} | "
                     f"{cell(values, 'baseline lpips', recon_arms[0], seeds, '.4f')} |")
    if baselines:
        lines += where_the_input_stands(values, arms, seeds)

    # Table 9: probe accuracy against t
    lines += ["", "## Table 9: linear probe against t (t = 1 is ar two-stream)", "",
              "| t | linear probe (top-1 %) | fine-tune (top-1 %) |", "|---|---|---|"]
    lines += [f"| {t} | {cell(values, 'probe', arm, seeds, '.2f')} | {cell(values, 'finetune', arm, seeds, '.2f')} |"
              for arm, t in TABLE9.items() if arm in arms]
    probe_t = {arm: t for arm, t in TABLE9.items() if arm in arms and ('probe', arm) in values}
    full = [seed for seed in seeds if all(seed in values[('probe', arm)] for arm in probe_t)]
    if probe_t and full:
        ts = list(probe_t.values())
        series = {'mean': (ts, [np.mean([values[('probe', arm)][seed] for seed in full]) for arm in probe_t])}
        series.update({f'seed {seed}': (ts, [values[('probe', arm)][seed] for arm in probe_t]) for seed in full})
        line_plot(os.path.join(res, 'probe_by_t.png'), series, xlabel='t', ylabel='linear probe top-1 %',
                  title=f'Table 9 on Fashion-MNIST: linear probe against t, {len(full)} seeds',
                  dashed=[name for name in series if name != 'mean'])
        lines += ["", f"`probe_by_t.png` + CSV: the mean and each seed with every t ({len(full)} of {len(seeds)})."]

    # Table 8: reconstruction error per arm
    if recon_arms:
        lines += ["", "## Table 8: reconstruction of 25% of the patches, per arm", "",
                  "The same masked patches of the same validation images for every model. Registered (V2): vm, "
                  "mae 0.75, mae 0.5; the sequential arms are descriptive (ar one-stream fills in raster order from "
                  "the patches before each; ar two-stream, dar and gvp read the visible patches as one group they "
                  "never saw in pretraining).", ""]
        index = {arm: i + 1 for i, arm in enumerate(recon_arms)}
        key = ', '.join(f"{i} {arm}" for arm, i in index.items())
        for metric in ('l2', 'lpips'):
            full = [seed for seed in seeds if all(seed in values[(metric, arm)] for arm in recon_arms)]
            if not full:
                continue
            xs = list(index.values())
            series = {'mean': (xs, [np.mean([values[(metric, arm)][seed] for seed in full]) for arm in recon_arms]),
                      'mean-fill baseline': (xs, [np.mean([values[(f'baseline {metric}', arm)][seed] for seed in full])
                                                  for arm in recon_arms])}
            series.update({f'seed {seed}': (xs, [values[(metric, arm)][seed] for arm in recon_arms]) for seed in full})
            line_plot(os.path.join(res, f'recon_{metric}.png'), series, xlabel=f'arm ({key})',
                      ylabel=METRICS[metric][2], title=f'Table 8 on Fashion-MNIST: {METRICS[metric][2]} per arm, '
                      f'{len(full)} seeds', dashed=[name for name in series if name.startswith('seed')])
            lines.append(f"`recon_{metric}.png` + CSV: {METRICS[metric][2]} per arm (x: {key}), the mean, each seed "
                         "and the mean-fill baseline.")
        grid = combined_grid(record, res, recon_arms, seeds[0])
        if grid:
            lines.append(f"`recon_grid.png`: seed {seeds[0]}'s reconstructions, one column of three per arm "
                         "(original | masked | filled), the same images and patches for every arm.")

    # every registered comparison, then the verdicts
    results = [compare(comparison, values, seeds, alpha, mde_per_sd) for comparison in comparisons]
    lines += ["", "## Registered comparisons: paired differences over the seeds", "",
              f"Signed so that the comparison says > 0. p: one-sided paired t-test; sign: one-sided exact sign test; "
              f"MDE: the smallest true difference {len(seeds)} seeds detect at p < {alpha:g} with power {power:g} "
              "(one-sided paired t-test), from the archive's spread as registered and from this record's.", "",
              "| comparison | difference | mean ± std | p | seeds the stated way | sign p | MDE registered | "
              "MDE, this record |", "|---|---|---|---|---|---|---|---|"]
    lines += [comparison_row(result, len(seeds), METRICS[result['metric']][3]) for result in results]
    lines += ["", "## Verdicts (registered in vision.sh before any run)", "",
              f"Each comparison holds when the mean goes the stated way and the one-sided paired t-test gives p < "
              f"{alpha:g}; a hypothesis is an effect only when each of its comparisons holds.", ""]
    for hypothesis, text in hypotheses.items():
        mine = [result for result in results if result['hypothesis'] == hypothesis]
        lines += [f"**{hypothesis}** {text}", ""] + [describe(result) for result in mine]
        lines += [f"- verdict: {verdict(mine)}", ""]

    # what it cost, from the record's clocks
    lines += ["## Cost (the record's clocks, minutes on one core)", "",
              "| arm | training | linear probe | fine-tune | reconstruction |", "|---|---|---|---|---|"]
    total = 0.0
    for arm in arms:
        train = [training_minutes(rows) for rows in runs.get(arm, {}).values()]
        evals = [[v / 60 for v in values.get((f'{task} seconds', arm), {}).values()]
                 for task in ('linprobe', 'finetune', 'recon')]
        total += sum(train) + sum(sum(e) for e in evals)
        lines.append(f"| {ARMS[arm]} | " + ' | '.join(f"{np.mean(m):.1f}" if m else '–' for m in [train] + evals)
                     + ' |')
    lines += ["", f"In all {total:.0f} core-minutes (evaluations: their own timing, without starting Python and "
              "loading data)."]
    if baselines:
        spent = {name: [sum(values.get((f'{task} seconds', name), {}).values()) / 60
                        for task in ('linprobe', 'finetune')] for name in baselines}
        lines += ["", "The baselines, over the seeds: " + '; '.join(
            f"{BASELINES[name]} {sum(minutes):.0f} core-minutes (" + ', '.join(
                f"{task} {m:.1f}" for task, m in zip(('linear probe', 'fine-tune'), minutes) if m) + ")"
            for name, minutes in spent.items()) + "."]
    atomic_write(os.path.join(res, 'tables.md'), '\n'.join(lines).rstrip() + '\n')
    return lines


if __name__ == '__main__':
    args = sys.argv[1:] + ['experiments/vision'] * (2 - len(sys.argv[1:]))
    print('\n'.join(report(*args[:2])))

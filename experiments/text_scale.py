"""The text-scale record's tables, plot and rule (text_scale.sh runs this): the probing suite's
input baselines; tier 1's pick of the fine-tune (R1); at every scale and task ar fine-tuned beside
its initialisation, their paired margin, its MDE at 5 seeds and the pilot's rule (R2); where each
task enters; the margin against pretraining FLOPs with the entry line, and its least-squares
extrapolation (R3); the cost from the record's clocks. The rules and constants are read from
text_scale.sh's header, word for word. A scale without every seed of a task is not decided; one
without any is pending.
usage: python -m experiments.text_scale [RECORD] [RES]   (default: experiments/text-scale for both)
       python -m experiments.text_scale pick RECORD   (R1's "POOLING LR EPOCHS", '-': undecided)"""
import glob
import json
import os
import re
import sys

import numpy as np

from experiments.data_constrained import registered as registered_text
from experiments.probing_pilot import suite as read_suite
from experiments.stats import as_printed, mean_std, minimum_detectable_effect
from output import atomic_write, line_plot

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'text_scale.sh')
DEFAULT = 'experiments/text-scale'
CLOCK = re.compile(r'cpu_s ([\d.]+) ([\d.]+) wall_s ([\d.]+)')  # bash's time, as the script sets it
ARCH = {'4x128': '4 x 128', '8x384': '8 x 384'}
KINDS = {'line_bigram_shift': 'plays line', 'line_somo': 'plays line',
         'wiki_line_bigram_shift': 'Wikipedia line', 'wiki_line_somo': 'Wikipedia line'}


def registered(script=SCRIPT):
    """({'R1': text, 'R2': ..., 'R3': ...}, {'MARGIN': 8.0, ...}): text_scale.sh's header."""
    return registered_text(script)


def kind(task):
    return KINDS.get(task, 'plays window')

# -----------------------------------------------------------------------------
# the record

def read_json(path):
    with open(path) as f:
        return json.load(f)


def accuracy(path):
    """(task, dev accuracy %) of an eval_glue.py JSON of one task and one seed."""
    run = read_json(path)['runs'][0]
    return run['task'], run['results'][run['task']]['accuracy']


def clock(path):
    """(cpu seconds, wall seconds) of a run's clock file: the sum of its lines, one a part of a
    run stopped and resumed."""
    parts = CLOCK.findall(open(path).read())
    return (sum(float(user) + float(system) for user, system, _ in parts),
            sum(float(wall) for _, _, wall in parts))


def finished(folder, steps):
    """A pretraining log in the record that reached its steps."""
    path = os.path.join(folder, 'log.jsonl')
    lines = open(path).read().splitlines() if os.path.isfile(path) else []
    return bool(lines) and json.loads(lines[-1]).get('iter') == steps


def load(record):
    """settings; {task: majority %}; {(run, task): {seed: accuracy}} of the fine-tunes at the pick
    (a scale's only once its run finished); {(arm, pooling, lr, epochs, task): accuracy} of the
    pick's grid; {(baseline, task): accuracy}; {path: (cpu s, wall s)}; {folder: flags}."""
    settings = read_json(os.path.join(record, 'settings.json'))
    majority = {task: row[3] for task, row in read_suite(record).items()}
    tasks = settings['tasks']['line'] + settings['tasks']['window']
    tuned = {}
    for scale in settings['scales']:
        for name in (scale['name'], scale['init']):
            for seed in settings['seeds']:
                folder = os.path.join(record, 'runs', name, str(seed))
                if name == scale['name'] and not finished(folder, scale['steps']):
                    continue
                for task in tasks:
                    path = os.path.join(folder, f'finetune-{task}.json')
                    if os.path.isfile(path):
                        tuned.setdefault((name, task), {})[seed] = accuracy(path)[1]
    grid, lrs = {}, {float(lr): lr for lr in settings['grid']['lrs']}
    for path in sorted(glob.glob(os.path.join(record, 'pick', 'runs', '*', '*', '*.json'))):
        config, (task, value) = read_json(path)['config'], accuracy(path)
        arm = 'init' if path.split(os.sep)[-3].startswith('init-') else 'ar'
        grid[arm, config['pooling'], lrs[float(config['learning_rate'])], config['epochs'],
             task] = value
    baselines = {}
    for path in sorted(glob.glob(os.path.join(record, 'runs', '*', '0', 'linprobe-*.json'))):
        task, value = accuracy(path)
        baselines[path.split(os.sep)[-3], task] = value
    clocks = {os.path.relpath(path, record): clock(path) for path in
              sorted(glob.glob(os.path.join(record, '**', '*.time'), recursive=True))}
    flags = {os.path.relpath(os.path.dirname(path), record):
             '; '.join(open(path).read().split('\n')).strip('; ')
             for path in sorted(glob.glob(os.path.join(record, '**', 'flags.txt'), recursive=True))}
    return settings, majority, tuned, grid, baselines, clocks, flags

# -----------------------------------------------------------------------------
# R1: the pick

def rounded(value):  # at the 2 decimals R1 judges
    return float(as_printed(value, '.2f'))


def margins(grid, cell, epochs, tasks):
    """{task: ar - init} of one cell of the grid, for the tasks that have both."""
    keys = {task: [(arm, *cell, epochs, task) for arm in ('ar', 'init')] for task in tasks}
    return {task: grid[ar] - grid[init] for task, (ar, init) in keys.items()
            if ar in grid and init in grid}


def pick(settings, grid, constants):
    """R1: {'cells': [(pooling, lr)], 'stage_a': {cell: {task: ar - init}}, 'cell': stage A's cell
    or None, 'long': {task: ar - init} at the long epochs, 'epochs': the picked epochs or None}."""
    line, spec = settings['tasks']['line'], settings['grid']
    cells = [(pooling, lr) for pooling in spec['poolings'] for lr in spec['lrs']]
    stage_a = {cell: margins(grid, cell, spec['epochs'], line) for cell in cells}
    out = dict(cells=cells, stage_a=stage_a, cell=None, long={}, epochs=None)
    if not line or any(len(found) < len(line) for found in stage_a.values()):
        return out
    mean = lambda found: rounded(np.mean(list(found.values())))  # noqa: E731
    out['cell'] = max(cells, key=lambda cell: (mean(stage_a[cell]), -cells.index(cell)))
    out['long'] = margins(grid, out['cell'], spec['long_epochs'], line)
    if len(out['long']) == len(line):
        gain = rounded(mean(out['long']) - mean(stage_a[out['cell']]))
        out['epochs'] = spec['long_epochs'] if gain >= constants['EPOCHS_GAIN'] else spec['epochs']
    return out

# -----------------------------------------------------------------------------
# R2: the rule at each scale; R3: the curve

def decide(ar, init, majority, constants):
    """R2 on {seed: accuracy} of ar and of its initialisation: the seeds paired, their differences,
    the MDE at MDE_SEEDS seeds, the three conditions and the verdict."""
    seeds = sorted(set(ar) & set(init))
    differences = [ar[seed] - init[seed] for seed in seeds]
    out = dict(seeds=seeds, differences=differences, mde=None, conditions=None)
    if len(seeds) < constants['RULE_SEEDS']:
        out['verdict'] = ('pending' if not seeds else
                          f"not decided ({len(seeds)} of {constants['RULE_SEEDS']:g} seeds)")
        return out
    sd = float(np.std(differences, ddof=1))
    out['mde'] = minimum_detectable_effect(sd, int(constants['MDE_SEEDS']), constants['ALPHA'],
                                           constants['POWER']) if sd > 0 else 0.0  # no spread
    out['conditions'] = (np.mean([ar[seed] for seed in seeds]) >= majority + constants['MARGIN'],
                         np.mean(differences) >= constants['MARGIN'],
                         out['mde'] <= constants['MAX_MDE'])
    out['verdict'] = 'enters' if all(out['conditions']) else 'does not enter'
    return out


def pretraining_flops(scale, settings):
    """6 N D (Kaplan et al. 2020): N = 12 n_layer n_embd^2, the weights of attention and MLP; D the
    bytes read, steps x batch x block."""
    n = 12 * scale['n_layer'] * scale['n_embd'] ** 2
    return 6 * n * scale['steps'] * settings['batch_size'] * settings['block_size']


def entry(names, verdicts):
    """R2's smallest scale that passes, for one task: names in FLOPs order, {name: verdict}."""
    decided = [name for name in names if verdicts[name] in ('enters', 'does not enter')]
    waiting = [name for name in names if name not in decided]
    entered = [name for name in decided if verdicts[name] == 'enters']
    if entered:
        below = [name for name in waiting if names.index(name) < names.index(entered[0])]
        return f"enters at {entered[0]}" + (f" (not decided below it: {', '.join(below)})"
                                            if below else '')
    if decided:
        return f"does not enter by {decided[-1]}" + (f" ({len(waiting)} scales not decided)"
                                                     if waiting else '')
    return 'pending'


def fit(points, margin):
    """R3's least-squares line of the mean margin against log10 FLOPs: (slope a decade, intercept,
    the FLOPs where it reaches margin, or None where it does not rise)."""
    slope, intercept = np.polyfit(np.log10([x for x, _ in points]), [y for _, y in points], 1)
    crossing = 10 ** ((margin - intercept) / slope) if slope > 0 else None
    return float(slope), float(intercept), crossing


def rates(settings, clocks, flags):
    """(cpu seconds a FLOP of the CPU pretraining runs, wall seconds a FLOP of the GPU ones): the
    means over the runs recorded, None where there are none."""
    cpu, gpu = [], []
    for scale in settings['scales']:
        for seed in settings['seeds']:
            folder = os.path.join('runs', scale['name'], str(seed))
            found = clocks.get(os.path.join(folder, 'pretrain.time'))
            if found:
                flops = pretraining_flops(scale, settings)
                if any(line.startswith('pretrain:') and '--device=cuda' in line
                       for line in flags.get(folder, '').split('; ')):
                    gpu.append(found[1] / flops)
                else:
                    cpu.append(found[0] / flops)
    return (float(np.mean(cpu)) if cpu else None), (float(np.mean(gpu)) if gpu else None)

# -----------------------------------------------------------------------------
# the report, a section at a time

def seeds_text(values):
    return f"{mean_std(list(values.values()), '.1f')} ({len(values)})" if values else 'pending'


def baselines_section(settings, majority, baselines, tasks):
    names = ['bag_of_bytes'] + [f'rule-{rule}' for rule in settings['rules']]
    lines = ["## The suite and its input baselines", "",
             "Majority: always the train split's commonest label. Bag of bytes: the linear probe "
             "on byte 1- to 3-gram counts. Rules: a surface cue with a threshold fit on train "
             "(0 / 1 tasks only).", "",
             "| task | kind | majority | " + ' | '.join(name.replace('-', ' ').replace('_', ' ')
                                                    for name in names) + " |",
             "|---|---|---|" + '---|' * len(names)]
    for task in tasks:
        cells = [f"{baselines[name, task]:.1f}" if (name, task) in baselines else
                 '–' if task == 'play' and name.startswith('rule') else 'pending' for name in names]
        lines.append(f"| {task} | {kind(task)} | {majority[task]:.1f} | " + ' | '.join(cells)
                     + " |")
    return lines


def pick_section(settings, grid, clocks, chosen, first):
    line, spec = settings['tasks']['line'], settings['grid']

    def row(cell, epochs):
        texts, found = [], margins(grid, cell, epochs, line)
        for task in line:
            ar, init = (grid.get((arm, *cell, epochs, task)) for arm in ('ar', 'init'))
            texts.append(f"{found[task]:+.2f} ({ar:.2f} / {init:.2f})" if task in found else
                         'pending')
        whole = line and len(found) == len(line)
        return texts + [f"{rounded(np.mean(list(found.values()))):+.2f}" if whole else 'pending']

    def factor(index, value):  # the mean of the complete cells' means, over the other factor
        means = [np.mean(list(found.values())) for cell, found in chosen['stage_a'].items()
                 if cell[index] == value and line and len(found) == len(line)]
        total = sum(cell[index] == value for cell in chosen['cells'])
        if not means:
            return 'pending'
        return f"{rounded(np.mean(means)):+.2f}" + ('' if len(means) == total else
                                                    f" ({len(means)} of {total} cells)")
    lines = ["", f"## Tier 1: the fine-tune (R1; seed {settings['pick_seed']}, {first} and its "
             "initialisation)", "",
             f"Stage A, {spec['epochs']} epochs: ar - init on each line task (ar / init in "
             "brackets) and their mean.", "",
             "| pooling | learning rate | " + ' | '.join(line) + " | mean ar - init |",
             "|---|---|" + '---|' * (len(line) + 1)]
    lines += [f"| {cell[0]} | {cell[1]} | " + ' | '.join(row(cell, spec['epochs'])) + " |"
              for cell in chosen['cells']]
    lines += ["", "Each factor on its own: the mean of the cells' means over the other factor.", "",
              "| pooling | mean ar - init |", "|---|---|"]
    lines += [f"| {pooling} | {factor(0, pooling)} |" for pooling in spec['poolings']]
    lines += ["", "| learning rate | mean ar - init |", "|---|---|"]
    lines += [f"| {lr} | {factor(1, lr)} |" for lr in spec['lrs']]
    if chosen['cell']:
        lines += ["", f"Stage A's cell: pooling {chosen['cell'][0]}, learning rate "
                  f"{chosen['cell'][1]}. Stage B, that cell at {spec['long_epochs']} epochs "
                  f"against {spec['epochs']}:", "",
                  "| epochs | " + ' | '.join(line) + " | mean ar - init |",
                  "|---|" + '---|' * (len(line) + 1)]
        lines += [f"| {epochs} | " + ' | '.join(row(chosen['cell'], epochs)) + " |"
                  for epochs in (spec['epochs'], spec['long_epochs'])]
    if chosen['epochs']:
        picked_text = (f"pooling {chosen['cell'][0]}, learning rate {chosen['cell'][1]}, "
                       f"{chosen['epochs']} epochs.")
    else:
        stage = 'B' if chosen['cell'] else 'A'
        picked_text = f"pending (R1 decides once stage {stage} is complete)."
    lines += ["", f"**The fine-tune:** {picked_text}"]
    cost = [value[0] for path, value in clocks.items() if path.startswith('pick' + os.sep)]
    if cost:
        lines.append(f"What the pick cost (measured): {sum(cost) / 60:.0f} cpu-minutes over "
                     f"{len(cost)} fine-tunes (mean {np.mean(cost) / 60:.1f}), besides the "
                     "pretraining it reads.")
    return lines


def rule_section(tuned, majority, constants, scales, flops, tasks):
    """The rule's tables, a task at a time; {(task, scale): verdict}; {task: [(FLOPs, mean margin,
    seeds)]}."""
    margin = constants['MARGIN']
    lines = ["", "## The rule at each scale (R2)", "",
             "ar and init: mean ± sd over the seeds (how many in brackets); ar - init paired by "
             f"seed; MDE at {constants['MDE_SEEDS']:g} seeds from its sd; (1) ar >= majority + "
             f"{margin:g}, (2) ar - init >= {margin:g}, (3) MDE <= {constants['MAX_MDE']:g}. "
             "Pretraining FLOPs: 6 N D.", ""]
    verdicts, points = {}, {}
    for task in tasks:
        lines += [f"### {task} ({kind(task)}; majority {majority[task]:.1f})", "",
                  "| scale | pretraining FLOPs | ar | init | ar - init | MDE | (1) | (2) | (3) | "
                  "verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
        for scale in scales:
            ar, init = tuned.get((scale['name'], task), {}), tuned.get((scale['init'], task), {})
            found = decide(ar, init, majority[task], constants)
            verdicts[task, scale['name']] = found['verdict']
            if found['differences']:
                points.setdefault(task, []).append((flops[scale['name']],
                                                    float(np.mean(found['differences'])),
                                                    len(found['seeds'])))
            conditions = (['yes' if held else 'no' for held in found['conditions']]
                          if found['conditions'] else ['–'] * 3)
            difference = (mean_std(found['differences'], '.1f') if found['differences'] else
                          'pending')
            mde = '–' if found['mde'] is None else f"{found['mde']:.1f}"
            lines.append(f"| {scale['name']} | {flops[scale['name']]:.2g} | {seeds_text(ar)} | "
                         f"{seeds_text(init)} | {difference} | {mde} | " + ' | '.join(conditions)
                         + f" | {found['verdict']} |")
        lines.append("")
    return lines, verdicts, points


def curve_section(res, settings, constants, scales, flops, points, entries, clocks, flags, tasks):
    margin, line_name = constants['MARGIN'], f"entry line ({constants['MARGIN']:g} points)"
    lines = ["## The curve (R3): the margin against pretraining FLOPs", ""]
    series = {task: ([x for x, _, _ in found], [y for _, y, _ in found])
              for task, found in points.items()}
    if series:
        every = [x for xs, _ in series.values() for x in xs]
        series[line_name] = ([min(every), max(every)], [margin, margin])
        line_plot(os.path.join(res, 'margin_by_flops.png'), series, logx=True, dashed=[line_name],
                  xlabel='pretraining FLOPs (6 N D)', ylabel='ar - init, dev accuracy points',
                  title='ar fine-tuned minus its initialisation fine-tuned, per task, against '
                        'pretraining compute')
        lines += ["`margin_by_flops.png` + CSV: each task's mean ar - init (over the seeds paired "
                  "so far) against the pretraining FLOPs (log scale), and the entry line at "
                  f"{margin:g}.", ""]
    cpu_rate, gpu_rate = rates(settings, clocks, flags)
    cpu_text = (f"{cpu_rate * 1e12:.3g} cpu-seconds per 1e12 FLOPs (the CPU pretraining runs' "
                "clocks)" if cpu_rate else "the CPU pretraining runs' clocks (none recorded yet)")
    gpu_text = (f"{gpu_rate * 1e12:.3g} GPU seconds per 1e12 FLOPs (the GPU runs' wall clocks)"
                if gpu_rate else "no GPU clock (no GPU run recorded)")
    lines += ["An extrapolation, not a measurement and never a verdict: a least-squares line of "
              "the mean margin against log10 FLOPs over the scales where ar and init have "
              f"{constants['RULE_SEEDS']:g} seeds, and the FLOPs where it reaches {margin:g}; the "
              f"time at {cpu_text}, and {gpu_text}.", "",
              "| task | scales fitted | slope (points a decade) | FLOPs at the line | x the "
              "largest scale | steps of 4 x 128 | CPU core-hours | GPU hours |",
              "|---|---|---|---|---|---|---|---|"]
    largest = max(flops.values())
    step_flops = {s['arch']: pretraining_flops(s, settings) / s['steps'] for s in scales}
    for task in tasks:
        full = [(x, y) for x, y, n in points.get(task, []) if n >= constants['RULE_SEEDS']]
        if entries[task].startswith('enters'):
            lines.append(f"| {task} | – | – | not needed: {entries[task]} | | | | |")
            continue
        if len(full) < 2:
            lines.append(f"| {task} | {len(full)} of 2 | pending | | | | | |")
            continue
        slope, _, crossing = fit(full, margin)
        if crossing is None:
            lines.append(f"| {task} | {len(full)} | {slope:+.2f} | none: the line does not rise | "
                         "| | | |")
            continue
        steps = f"{crossing / step_flops['4x128']:.3g}" if '4x128' in step_flops else '–'
        cpu = f"{crossing * cpu_rate / 3600:.3g}" if cpu_rate else 'not measured'
        gpu = f"{crossing * gpu_rate / 3600:.3g}" if gpu_rate else 'not measured'
        lines.append(f"| {task} | {len(full)} | {slope:+.2f} | {crossing:.2g} | "
                     f"{crossing / largest:.3g} | {steps} | {cpu} | {gpu} |")
    return lines


def cost_section(settings, clocks, flags, chosen, scales):
    kinds = {}
    first = scales[0]
    copied = {os.path.join('runs', run, str(settings['pick_seed']), f'finetune-{task}.time')
              for run in (first['name'], first['init']) for task in settings['tasks']['line']}
    for path, value in clocks.items():
        if path in copied and chosen['epochs']:
            continue  # the pick's own runs, kept twice
        parts = path.split(os.sep)
        if parts[0] == 'pick':
            epochs = path.rsplit('-e', 1)[1][:-len('.time')]
            what = f"tier 1 fine-tune, {parts[2].split('-')[0]}, {epochs} epochs"
        elif parts[-1].startswith('pretrain'):
            what = f"pretraining {parts[1]}"
        elif parts[-1].startswith('linprobe'):
            what = parts[1].replace('-', ' ').replace('_', ' ')
        else:  # a fine-tune at the pick: it costs as its architecture, not as its steps
            task, run = parts[-1][len('finetune-'):-len('.time')], parts[1].split('-')
            what = f"fine-tune {run[0]} {ARCH[run[1]]}, {kind(task)} task"
        kinds.setdefault(what, []).append(value)
    lines = ["", "## Cost (the record's clocks)", "",
             "| what | runs | cpu-minutes a run | wall-minutes a run | cpu-minutes in all |",
             "|---|---|---|---|---|"]
    for what, values in sorted(kinds.items()):
        cpu, wall = (np.array([v[i] for v in values]) / 60 for i in (0, 1))
        lines.append(f"| {what} | {len(values)} | {cpu.mean():.1f} | {wall.mean():.1f} | "
                     f"{cpu.sum():.0f} |")
    total = sum(v[0] for values in kinds.values() for v in values) / 60
    where = ("every result with the script's defaults (the CPU, one thread a job)." if not flags
             else "the CPU defaults, but for these results: "
             + '; '.join(f"{folder}: {text}" for folder, text in flags.items()) + '.')
    return lines + ["", f"In all {total:.0f} cpu-minutes (one thread a job; the estimate made "
                    "before the runs is in text_scale.sh's header).", "", f"Where it ran: {where}"]


def report(record=DEFAULT, res=DEFAULT):
    settings, majority, tuned, grid, baselines, clocks, flags = load(record)
    rules, constants = registered()
    tasks = settings['tasks']['line'] + settings['tasks']['window']
    scales = sorted(settings['scales'], key=lambda s: pretraining_flops(s, settings))
    flops = {s['name']: pretraining_flops(s, settings) for s in scales}
    chosen = pick(settings, grid, constants)
    os.makedirs(res, exist_ok=True)
    lines = ["# ar's margin over its initialisation on the probing suite, by pretraining compute",
             "",
             "Drawn from the record (settings.json, suite.txt, runs/, pick/runs/) by `python -m "
             "experiments.text_scale`; the runs by `experiments/text_scale.sh`, whose header "
             "registered the rules below before any run. Seeds "
             f"{', '.join(map(str, settings['seeds']))}; the pick on seed {settings['pick_seed']}. "
             f"Pretraining: {settings['recipe']}, {settings['batch_size']} x "
             f"{settings['block_size']} bytes a step. Fine-tuning: "
             f"`{settings['evaluations']['finetune']}` with the pick's pooling, learning rate and "
             "epochs, the run's seed; each run beside its initialisation (init-ARCH: "
             "`--ckpt=random:` a 1-step run of the same config and seed). Input baselines: "
             f"`{settings['evaluations']['linprobe']}`. Dev accuracy (%)."
             + (" A smoke run: a tiny suite and a few steps, no finding." if settings['smoke']
                else ''), "", "## The registration (text_scale.sh's header, word for word)", ""]
    lines += [f"**{name}** {text}" for name, text in rules.items()]
    lines += ["", "Constants: " + ', '.join(f"{name} = {value:g}" for name, value in
                                            constants.items()) + '.', ""]
    lines += baselines_section(settings, majority, baselines, tasks)
    lines += pick_section(settings, grid, clocks, chosen, scales[0]['name'])
    section, verdicts, points = rule_section(tuned, majority, constants, scales, flops, tasks)
    lines += section
    names = [s['name'] for s in scales]
    entries = {task: entry(names, {name: verdicts[task, name] for name in names}) for task in tasks}
    lines += ["## Where each task enters (R2: the smallest scale that passes)", "",
              "| task | entry |", "|---|---|"] + [f"| {task} | {entries[task]} |" for task in tasks]
    failed = [f"{os.path.relpath(os.path.dirname(path), record)}: {open(path).read().strip()}"
              for path in sorted(glob.glob(os.path.join(record, 'runs', '*', '*', 'failed.txt')))]
    lines += ["", "Failed runs (never retuned; the scales that need them stay not decided): "
              + ('; '.join(failed) or 'none') + '.']
    lines += [""] + curve_section(res, settings, constants, scales, flops, points, entries, clocks,
                                  flags, tasks)
    lines += cost_section(settings, clocks, flags, chosen, scales)
    atomic_write(os.path.join(res, 'tables.md'), '\n'.join(lines).rstrip() + '\n')
    return lines


def picked(record):
    """R1's 'POOLING LR EPOCHS' from the record, '-' for what is not decided yet."""
    settings, _, _, grid, *_ = load(record)
    chosen = pick(settings, grid, registered()[1])
    cell = chosen['cell'] or ('-', '-')
    return f"{cell[0]} {cell[1]} {chosen['epochs'] or '-'}"


def entered(scale, record=DEFAULT):
    """The tasks R2 enters at the scale named (the smallest scale at which each enters), in the
    record's order: what a registration built on this one takes up."""
    settings, majority, tuned, *_ = load(record)
    constants = registered()[1]
    names = [s['name'] for s in sorted(settings['scales'],
                                       key=lambda s: pretraining_flops(s, settings))]
    inits = {s['name']: s['init'] for s in settings['scales']}
    found = []
    for task in settings['tasks']['line'] + settings['tasks']['window']:
        verdicts = {name: decide(tuned.get((name, task), {}), tuned.get((inits[name], task), {}),
                                 majority[task], constants)['verdict'] for name in names}
        if entry(names, verdicts) == f"enters at {scale}":
            found.append(task)
    return found


if __name__ == '__main__':
    if sys.argv[1:2] == ['pick']:
        print(picked(sys.argv[2] if len(sys.argv) > 2 else DEFAULT))
    elif sys.argv[1:2] == ['entered']:
        print(' '.join(entered(*sys.argv[2:4])))
    else:
        args = sys.argv[1:] + [DEFAULT] * (2 - len(sys.argv[1:]))
        print('\n'.join(report(*args[:2])))

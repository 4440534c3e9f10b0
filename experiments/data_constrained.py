"""The data-constrained comparison's curves, tables and verdicts, drawn from its record (data_constrained.sh runs
this): held-out NLL per byte against epochs for every arm and size (mean and each seed, PNG + CSV), the crossover
epoch, and the hypotheses H1-H5 registered at the top of data_constrained.sh, judged by their text: the mean over
seeds goes the stated way and a one-sided paired t-test over the seeds gives p < 0.05. Beside each p: how many seeds
go the stated way and the one-sided exact sign test (3 seeds: never below 1/8, so it does not decide). A run whose
first evaluations repeat a pilot log bit for bit (pilot/*.jsonl) is named, and its seed marked '*'.
The same for the registration made again with rotary positions (data_constrained_rope.sh, record
data-constrained-rope/): H1-H8, and beside each verdict its minimum detectable effect (registered, and from the
record's own spread).
usage: python -m experiments.data_constrained [RECORD] [RES] [SCRIPT]   (default: experiments/data-constrained for
both, data_constrained.sh)
       python -m experiments.data_constrained settings PATH SMALL_BYTES STEPS EVAL_INTERVAL RECIPE [SEEDS]   (the
settings.json the scripts write before their runs)"""
import glob
import json
import os
import re
import sys

import numpy as np

from experiments.stats import mean_std, minimum_detectable_effect, paired_t_test, sign_test_one_sided_p
from output import atomic_write, line_plot

SIGNIFICANCE = 0.05
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data_constrained.sh')
# in table order; dar4 and ar_random are the rope registration's (data_constrained_rope.sh)
NAMES = {'ar': 'ar', 'dar': 'dar t=2', 'dar4': 'dar t=4', 'ar_random': 'ar random order', 'mdlm': 'masked diffusion',
         'vm': 'vm [0.15, 0.3]'}
TITLES = {'data_constrained.sh': 'Data-constrained: look ahead vs look around when data repeats',
          'data_constrained_rope.sh': 'Data-constrained, registered again with rotary positions: look ahead vs look '
                                      'around when data repeats'}

# -----------------------------------------------------------------------------
# the settings the summary reads, written by the scripts before their runs


def write_settings(path, small, steps, interval, recipe, seeds='', data_dir='data/shakespeare_bytes'):
    """settings.json: the training sizes, budget and recipe, the registered seeds when given (no verdict before each
    has every arm), and the unigram / bigram floors of each training size on the held-out windows every run scores."""
    from data.text import load_tokens
    from evals.ppl import NgramBaselines
    train, held_out = load_tokens(data_dir, 'train'), load_tokens(data_dir, 'val')
    windows = np.asarray(held_out[:64 * 3000]).reshape(-1, 64)
    windows = np.concatenate([np.full((len(windows), 1), 256), windows], axis=1)  # BOS, as train.py's windows
    sizes = {'small': int(small), 'full': len(train)}
    floors = {size: {name: round(float(nll.mean()), 4) for name, nll in
                     NgramBaselines(np.asarray(train[:n]), 320).nll(windows).items()} for size, n in sizes.items()}
    settings = dict(train_bytes=sizes, steps=int(steps), eval_interval=int(interval), bytes_per_step=16 * 63,
                    eval_bytes=20 * 16 * 63, recipe=' '.join(recipe.split()), floors=floors)
    if seeds:
        settings['seeds'] = [int(seed) for seed in seeds.split()]
    atomic_write(path, json.dumps(settings, indent=1) + '\n')


# -----------------------------------------------------------------------------
# the registered text and its numbers (data_constrained.sh's header, read, never restated here)

def registered(script=SCRIPT):
    """{'H1': text, ...} and {'TOLERANCE': 0.01, ...}: the '#   Hn' lines (or R1, V10, ...: a capital and a number) and
    the '#   NAME = value' lines of a registered script's header."""
    header = [line[1:].rstrip() for line in open(script) if line.startswith('#')]
    hypotheses, constants, current = {}, {}, None
    for line in header:
        found = re.match(r'   ([A-Z]\d+) (.*)', line)  # '#   H1 text', continued on lines indented further
        if found:
            current = found.group(1)
            hypotheses[current] = found.group(2)
        elif current and line.startswith('    '):
            hypotheses[current] += ' ' + line.strip()
        else:
            current = None
        constant = re.match(r'\s+([A-Z_]+) = ([0-9.]+)$', line)
        if constant:
            constants[constant.group(1)] = float(constant.group(2))
    return hypotheses, constants

# '#   MDE H1: paired sd 0.0071 (source), MDE 0.0096': a hypothesis's minimum detectable effect as registered
MDE_LINE = re.compile(r'   MDE ([A-Z]\d): paired sd ([0-9.]+) \((.+)\), MDE ([0-9.]+)$')

def registered_mdes(script=SCRIPT):
    """{'H1': {'sd': 0.0071, 'sd_text': '0.0071', 'source': ..., 'mde': 0.0096, 'mde_text': '0.0096'}, ...} from the
    '#   MDE Hn: ...' lines of a registered script's header ({} for a script that registers none)."""
    found = {}
    for line in open(script):
        match = line.startswith('#') and MDE_LINE.match(line[1:].rstrip())
        if match:
            name, sd, source, mde = match.groups()
            found[name] = dict(sd=float(sd), sd_text=sd, source=source, mde=float(mde), mde_text=mde)
    return found

# -----------------------------------------------------------------------------
# runs and their summaries

def load(record):
    """{(size, arm): {seed: (steps, held-out NLL per byte, NLL on training windows)}} for every finished log."""
    settings = json.load(open(os.path.join(record, 'settings.json')))
    runs = {}
    for path in sorted(glob.glob(os.path.join(record, 'runs', '*', '*', '*', 'log.jsonl'))):
        size, arm, seed = path.split(os.sep)[-4:-1]
        rows = [row for row in map(json.loads, open(path)) if 'val_loss' in row]  # evaluation lines only
        if rows and rows[-1]['iter'] == settings['steps']:
            runs.setdefault((size, arm), {})[int(seed)] = tuple(np.array([r[key] for r in rows]) for key in
                                                                ('iter', 'val_loss', 'eval_train_loss'))
    return settings, runs

# what a run and a pilot log must share to be the same run: every logged number but the clock
SAME_RUN = ('train_loss', 'eval_train_loss', 'val_loss', 'lr')

def seen_before(record, steps):
    """[(size, arm, seed, pilot log, first step, last step shared)] for each finished run whose evaluations repeat
    a pilot log bit for bit from the first on: those steps of the run were seen before the registration."""
    found = []
    for pilot in sorted(glob.glob(os.path.join(record, 'pilot', '*.jsonl'))):
        before = [row for row in map(json.loads, open(pilot)) if 'val_loss' in row]
        for path in sorted(glob.glob(os.path.join(record, 'runs', '*', '*', '*', 'log.jsonl'))):
            rows = [row for row in map(json.loads, open(path)) if 'val_loss' in row]
            if not rows or rows[-1]['iter'] != steps:
                continue
            shared = 0
            for old, new in zip(before, rows):
                if old['iter'] != new['iter'] or any(old.get(key) != new.get(key) for key in SAME_RUN):
                    break
                shared = new['iter']
            if shared:
                size, arm, seed = path.split(os.sep)[-4:-1]
                found.append((size, arm, int(seed), os.path.relpath(pilot, record), rows[0]['iter'], shared))
    return found

def summary(steps, nll, train_nll, tolerance):
    """best, the step it is reached (the first evaluation within tolerance of it), end (the last), rise = end - best,
    and the NLL on training windows at the end (how much of the training bytes the model has memorised)."""
    best = nll.min()
    return dict(best=best, reached=int(steps[np.argmax(nll <= best + tolerance)]), end=nll[-1], rise=nll[-1] - best,
                train_end=train_nll[-1])

def epochs(settings, size, steps):
    return np.asarray(steps) * settings['bytes_per_step'] / settings['train_bytes'][size]

def crossover(steps, masked, ar):
    """The first evaluation from which the masked curve stays below ar's to the end, or None."""
    below = masked < ar
    if not below[-1]:
        return None
    last_not_below = np.flatnonzero(~below)
    return int(steps[last_not_below[-1] + 1]) if len(last_not_below) else int(steps[0])

def one_sided_p(differences):
    """H0: mean difference <= 0 against > 0 (paired t-test over seeds)."""
    t, p = paired_t_test(differences)
    return p / 2 if t > 0 else 1 - p / 2

# -----------------------------------------------------------------------------
# the report

def judge(name, text, differences, seeds, fmt='.3f', marked=(), mde=None, power=0.8):
    """differences: the registered quantity signed so that the hypothesis says > 0, paired by seed. The t-test
    decides, as registered; beside it the seeds that go the stated way and the one-sided sign test. mde: the
    hypothesis's registered minimum detectable effect (registered_mdes), printed beside the verdict with the one this
    record's own spread gives (the one-sided paired t-test at p < 0.05 with the given power over these seeds)."""
    differences = np.asarray(differences, float)
    p = one_sided_p(differences) if len(differences) > 1 else 1.0
    met = differences.mean() > 0 and p < SIGNIFICANCE
    cells = ', '.join(f"{s}{'*' if s in marked else ''}: {d:+{fmt}}" for s, d in zip(seeds, differences))
    lines = [f"**{name}** {text}", "",
             f"- measured: {mean_std(differences, fmt)} ({cells}); one-sided paired t-test p = {p:.2g} "
             f"({int((differences > 0).sum())} of {len(differences)} seeds, t-test as registered), "
             f"one-sided sign test p = {sign_test_one_sided_p(differences):.3g}",
             f"- verdict: {'effect (met)' if met else 'not met'}", ""]
    if mde is not None:
        sd = differences.std(ddof=1) if len(differences) > 1 else 0.0
        own = (f"{minimum_detectable_effect(sd, len(differences), SIGNIFICANCE, power):{fmt}} (paired sd {sd:{fmt}})"
               if sd > 0 else '– (the differences do not vary)')
        lines.insert(-1, f"- minimum detectable effect (one-sided paired t-test p < {SIGNIFICANCE:g}, power {power:g}, "
                         f"{len(differences)} seeds): registered {mde['mde_text']} (paired sd {mde['sd_text']}, "
                         f"{mde['source']}); from this record's spread {own}")
    return lines

def report(record, res, script=SCRIPT):
    settings, runs = load(record)
    hypotheses, constants = registered(script)
    mdes, name = registered_mdes(script), os.path.basename(script)
    tolerance, learned_below = constants['TOLERANCE'], constants['LEARNED_BELOW']
    sizes = [size for size in settings['train_bytes'] if any(key[0] == size for key in runs)]
    command = 'experiments.data_constrained' + ('' if script == SCRIPT else f' RECORD RES experiments/{name}')
    lines = [f"# {TITLES.get(name, name)}", "",
             "Drawn from the record (settings.json, runs/SIZE/ARM/SEED/log.jsonl) by `python -m "
             f"{command}`. Recipe: {settings['recipe']}. "
             f"{settings['steps']} steps, {settings['bytes_per_step']} bytes a step; held-out NLL per byte every "
             f"{settings['eval_interval']} steps on {settings['eval_bytes']} held-out bytes (the same windows for "
             "every arm of a seed).", ""]
    judged = {}  # size: (per-run summaries, the seeds every arm has)
    seen = seen_before(record, settings['steps'])
    marked = lambda size, *arms: {seed for s, arm, seed, *_ in seen if s == size and arm in arms}
    for size in sizes:
        arms = [arm for arm in NAMES if (size, arm) in runs]
        seeds = sorted(set.intersection(*(set(runs[(size, arm)]) for arm in arms)))
        floors = settings['floors'][size]
        named = ', '.join(f"{seed}{'*' if seed in marked(size, *arms) else ''}" for seed in seeds)
        lines += [f"## {size}: {settings['train_bytes'][size]:,} training bytes, "
                  f"{epochs(settings, size, [settings['steps']])[0]:.3g} epochs, seeds {named}", ""]
        for s, arm, seed, pilot, first, shared in seen:
            if s == size and seed in seeds:
                lines += [f"\\* Seen before the registration: {NAMES[arm]}, seed {seed}, is the pilot log `{pilot}` "
                          f"bit for bit at steps {first}-{shared}, {shared / settings['steps']:.0%} of its "
                          f"{settings['steps']} steps (every logged loss and the learning rate; not the clock).", ""]
        lines += [f"Floors on the held-out bytes (counted on these training bytes): unigram {floors['unigram']:.3f}, "
                  f"bigram {floors['bigram']:.3f} nats/byte. Mean ± std over seeds:", "",
                  "| arm | best | reached (epoch) | end | rise (end - best) | training windows at the end |",
                  "|---|---|---|---|---|---|"]
        stats = {arm: {seed: summary(*runs[(size, arm)][seed], tolerance) for seed in seeds} for arm in arms}
        judged[size] = stats, seeds
        for arm in arms:
            column = lambda key: [stats[arm][seed][key] for seed in seeds]
            lines.append(f"| {NAMES[arm]} | {mean_std(column('best'), '.3f')} | "
                         f"{mean_std(epochs(settings, size, column('reached')), '.1f')} | "
                         f"{mean_std(column('end'), '.3f')} | "
                         f"{mean_std(column('rise'), '.3f')} | {mean_std(column('train_end'), '.3f')} |")
        lowest_last = lambda nll: np.argmin(nll) == len(nll) - 1
        improving = [NAMES[arm] for arm in arms if all(lowest_last(runs[(size, arm)][s][1]) for s in seeds)]
        if improving:
            lines += ["", "Lowest at the last evaluation on every seed, so still improving when the budget ended: "
                      f"{', '.join(improving)}. Their \"reached\" is the first evaluation within {tolerance} of it."]
        steps, x = runs[(size, 'ar')][seeds[0]][0], epochs(settings, size, runs[(size, 'ar')][seeds[0]][0])
        mean = {arm: np.mean([runs[(size, arm)][seed][1] for seed in seeds], axis=0) for arm in arms}
        floor_lines = {f"{name} floor": (x[[0, -1]], [floors[name]] * 2) for name in ('unigram', 'bigram')}
        seed_lines = {f"{NAMES[arm]} {seed}": (x, runs[(size, arm)][seed][1]) for arm in arms for seed in seeds}
        os.makedirs(res, exist_ok=True)
        for suffix, series, over in (('', {NAMES[arm]: (x, mean[arm]) for arm in arms}, f'mean of {len(seeds)} seeds'),
                                     ('_seeds', seed_lines, 'each seed')):
            line_plot(os.path.join(res, f'heldout_nll_{size}{suffix}.png'), {**series, **floor_lines}, xlabel='epochs',
                      ylabel='held-out NLL (nats/byte)',
                      title=f'{size}: {settings["train_bytes"][size]:,} training bytes, {over}')
        if 'mdlm' in arms:
            crossed = crossover(steps, mean['mdlm'], mean['ar'])
            per_seed = [crossover(steps, runs[(size, 'mdlm')][s][1], runs[(size, 'ar')][s][1]) for s in seeds]
            said = lambda step: 'none' if step is None else f"epoch {epochs(settings, size, [step])[0]:.1f}"
            lines += ["", f"Crossover (masked diffusion below ar from there to the end): mean curves {said(crossed)}; "
                      f"by seed {', '.join(f'{s}: {said(c)}' for s, c in zip(seeds, per_seed))}."]
        lines.append("")
    lines += [f"## Verdicts (registered in {name} before the runs)", ""]
    if 'seeds' in settings:  # a registration that names its seeds: no verdict before every one has every arm
        registered_seeds = [int(seed) for seed in settings['seeds']]
        missing = {size: [seed for seed in registered_seeds if seed not in judged[size][1]] if size in judged
                   else registered_seeds for size in settings['train_bytes']}
        if any(missing.values()):
            said = '; '.join(f"{size}: {', '.join(map(str, seeds))}" for size, seeds in missing.items() if seeds)
            lines += [f"Pending: not every registered run has finished (seeds still missing an arm: {said}), so no "
                      "hypothesis is judged yet.", ""]
            atomic_write(os.path.join(res, 'tables.md'), '\n'.join(lines).rstrip() + '\n')
            return lines
    take = lambda size, arm, key: np.array([judged[size][0][arm][s][key] for s in judged[size][1]])
    has = lambda size, *arms: size in judged and all(arm in judged[size][0] for arm in arms)
    verdict = lambda hypothesis, differences, size, arms, fmt='.3f': judge(
        hypothesis, hypotheses[hypothesis], differences, judged[size][1], fmt, marked(size, *arms),
        mdes.get(hypothesis))
    if 'small' in judged:
        seeds = judged['small'][1]
        lines += judge('H1', hypotheses['H1'], take('small', 'ar', 'rise') - constants['RISE'], seeds,
                       marked=marked('small', 'ar'), mde=mdes.get('H1'))
        if (take('small', 'mdlm', 'best') < learned_below).all():
            lines += judge('H2', hypotheses['H2'], epochs(settings, 'small', take('small', 'mdlm', 'reached')
                                                          - take('small', 'ar', 'reached')), seeds, '.1f',
                           marked('small', 'ar', 'mdlm'), mdes.get('H2'))
            lines += judge('H3', hypotheses['H3'], take('small', 'ar', 'end') - take('small', 'mdlm', 'end'), seeds,
                           marked=marked('small', 'ar', 'mdlm'), mde=mdes.get('H3'))
        else:
            lines += [f"**H2, H3** not judged: masked diffusion's best is not below {learned_below} on every seed "
                      "(it did not leave the unigram plateau), as registered.", ""]
    if 'full' in judged:
        lines += judge('H4', hypotheses['H4'], take('full', 'mdlm', 'end') - take('full', 'ar', 'end'),
                       judged['full'][1], marked=marked('full', 'ar', 'mdlm'), mde=mdes.get('H4'))
    if 'small' in judged:
        lines += judge('H5', hypotheses['H5'], take('small', 'ar', 'rise') - take('small', 'dar', 'rise'),
                       judged['small'][1], marked=marked('small', 'ar', 'dar'), mde=mdes.get('H5'))
    # the rope registration's (data_constrained_rope.sh): order-diverse ar overfits less; diffusion's best below ar's
    for hypothesis, other in (('H6', 'dar4'), ('H7', 'ar_random')):
        if hypothesis in hypotheses and has('small', 'ar', other):
            lines += verdict(hypothesis, take('small', 'ar', 'rise') - take('small', other, 'rise'), 'small',
                             ('ar', other))
    if 'H8' in hypotheses and has('small', 'ar', 'mdlm'):
        lines += verdict('H8', take('small', 'ar', 'best') - take('small', 'mdlm', 'best'), 'small', ('ar', 'mdlm'))
    atomic_write(os.path.join(res, 'tables.md'), '\n'.join(lines).rstrip() + '\n')
    return lines


if __name__ == '__main__' and sys.argv[1:2] == ['settings']:
    write_settings(*sys.argv[2:])
elif __name__ == '__main__':
    args = sys.argv[1:] + ['experiments/data-constrained'] * (2 - len(sys.argv[1:]))
    print('\n'.join(report(*args[:2], *[os.path.abspath(script) for script in args[2:3]])))

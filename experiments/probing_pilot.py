"""The probing pilot's table (exploratory, never a verdict; probing_pilot.sh runs this): every task's size, majority
baseline, bag of bytes, random-init and ar fine-tuned and probed (mean ± std over the seeds), the paired ar - random
difference, its minimum detectable effect at 5 seeds, and whether the task enters by the rule of RES/README.md; then
what each kind of run cost in CPU minutes. Writes RES/tables.md and RES/pilot.csv, drawn from RES/runs and
RES/suite.txt only.
usage: python -m experiments.probing_pilot [RES]   (default: experiments/probing-pilot)"""
import csv
import glob
import io
import json
import os
import re
import sys

import numpy as np

from experiments.stats import mean_std, minimum_detectable_effect
from output import atomic_write

MARGIN, MAX_MDE, N_REGISTERED, N_PILOT = 8.0, 2.0, 5, 3  # the rule in README.md
DEFAULT_LR, MIN_GAIN = '1e-3', 2.0  # the protocol rule: the offline suite's lr unless another beats it by 2 points
SUITE_LINE = re.compile(r"(\w+)\s+train\s+(\d+)\s+dev\s+(\d+)\s+labels\s+(\d+)\s+majority\s+([\d.]+)%")


def suite(res):
    """{task: (train, dev, labels, majority %)} in the builder's order, from the builder's printout."""
    with open(os.path.join(res, 'suite.txt')) as f:
        return {m[1]: (int(m[2]), int(m[3]), int(m[4]), float(m[5])) for m in map(SUITE_LINE.match, f) if m}


def cpu_seconds(path):
    """User + system seconds of a run, from its /usr/bin/time line ('cpu_s U S wall_s W'); None when not recorded."""
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        numbers = [float(x) for x in re.findall(r"[\d.]+", f.read())]
    return numbers[0] + numbers[1] if len(numbers) >= 2 else None


def read_json(path):
    with open(path) as f:
        return json.load(f)


def load(res):
    """[(arm, seed, mode, task, accuracy, cpu seconds of the whole eval run or None)], and {kind: [cpu seconds]}."""
    rows, costs = [], {}
    for path in sorted(glob.glob(os.path.join(res, 'runs', '*', '*', '*.json'))):
        run = os.path.dirname(path)
        arm, seed, name = os.path.basename(os.path.dirname(run)), int(os.path.basename(run)), os.path.basename(path)
        record = read_json(path)
        mode = record['config']['mode']
        seconds = cpu_seconds(path[:-len('.json')] + '.time')
        for entry in record['runs']:
            rows.append((arm, seed, mode, entry['task'], entry['results'][entry['task']]['accuracy'], seconds))
        if seconds is not None:
            kind = f"{mode} ({'bag of bytes' if arm == 'bag_of_bytes' else arm.split('-')[0]})"
            costs.setdefault(kind + (', one task' if mode == 'finetune' else ', every task'), []).append(seconds)
    for path in glob.glob(os.path.join(res, 'runs', 'ar-*', '*', 'pretrain.time')):
        costs.setdefault(f"pretraining ({os.path.basename(os.path.dirname(os.path.dirname(path)))})",
                         []).append(cpu_seconds(path))
    return rows, costs


def protocol(res):
    """{lr: (ar, random)} bigram-shift accuracies of the protocol runs (the first seed, 2 epochs at each lr)."""
    out = {}
    for path in glob.glob(os.path.join(res, 'protocol', 'runs', '*', '*', 'finetune-bigram_shift-lr*.json')):
        arm, lr = os.path.basename(os.path.dirname(os.path.dirname(path))).split('-')[0], path[:-5].rsplit('-lr', 1)[1]
        out.setdefault(lr, {})[arm] = read_json(path)['runs'][0]['results']['bigram_shift']['accuracy']
    return {lr: (arms['ar'], arms['random']) for lr, arms in out.items() if len(arms) == 2}


def pick(res):
    """The fine-tune's learning rate by README.md's rule: the largest ar - random on the first seed's bigram shift,
    if it beats DEFAULT_LR's by MIN_GAIN points; else DEFAULT_LR."""
    gains = {lr: ar - random for lr, (ar, random) in protocol(res).items()}
    best = max(gains, key=lambda lr: (gains[lr], lr == DEFAULT_LR)) if gains else DEFAULT_LR
    return best if best != DEFAULT_LR and gains[best] >= gains.get(DEFAULT_LR, -100.0) + MIN_GAIN else DEFAULT_LR


def decide(ar, random, majority):
    """(paired differences, mde or None, 'yes' / 'no' / 'not decided') by the rule of README.md."""
    seeds = sorted(set(ar) & set(random))
    differences = [ar[s] - random[s] for s in seeds]
    if len(seeds) < N_PILOT:
        return differences, None, 'not decided'
    sd = float(np.std(differences, ddof=1))
    mde = minimum_detectable_effect(sd, N_REGISTERED) if sd > 0 else 0.0  # no spread: any effect is detected
    above = np.mean([ar[s] for s in seeds]) >= majority + MARGIN and np.mean(differences) >= MARGIN
    return differences, mde, 'yes' if above and mde <= MAX_MDE else 'no'


def report(res):
    tasks, (rows, costs) = suite(res), load(res)
    acc = {}
    for arm, seed, mode, task, accuracy, _ in rows:
        acc.setdefault((arm.split('-')[0], mode, task), {})[seed] = accuracy
    fmt = lambda values: mean_std(list(values.values()), '.1f') + f" ({len(values)})" if values else '–'
    seeds = sorted({row[1] for row in rows if row[0] != 'bag_of_bytes'})
    probed = any(arm != 'bag_of_bytes' and mode == 'linprobe' for arm, _, mode, *_ in rows)
    lines = ["# Probing pilot: which tasks can the byte models solve? (exploratory, not a verdict)", "",
             "Drawn from runs/ by `python -m experiments.probing_pilot`; the runs by `experiments/probing_pilot.sh`; "
             "the rule (`entered`) is README.md's, committed before any fine-tune or probe had run (seed 2100's "
             "pretraining ran before it; README.md says when). Dev accuracy (%), mean ± std over the seeds "
             f"(how many in brackets), seeds {', '.join(map(str, seeds)) or '–'}. ar: config/ar_shakespeare_bytes.py "
             "(4 x 128, rotary, 1200 steps); random: that run's initialisation; fine-tune config/glue_probing.py "
             "(2 epochs, the protocol's learning rate, below), probe config/linprobe_glue_probing.py"
             f"{'' if probed else ' (not run: the probe columns are empty)'}; bag of bytes: "
             "the same probe on byte 1- to 3-gram counts. ar - random: paired by seed; MDE: its minimum detectable "
             "effect at 5 seeds "
             "(experiments/stats.py, one-sided paired t-test, 0.05, 80% power).", "",
             "| task | train / dev | majority | bag of bytes | random fine-tune | random probe | ar fine-tune | "
             "ar probe | ar - random (fine-tune) | ar's sd | MDE at 5 seeds | entered |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    table = io.StringIO()
    writer = csv.writer(table, lineterminator='\n')
    writer.writerow(['task', 'arm', 'mode', 'seed', 'accuracy'])
    for task, (n_train, n_dev, _, majority) in tasks.items():
        ar, random = acc.get(('ar', 'finetune', task), {}), acc.get(('random', 'finetune', task), {})
        differences, mde, entered = decide(ar, random, majority)
        bag = acc.get(('bag_of_bytes', 'linprobe', task), {})
        lines.append(f"| {task} | {n_train:,} / {n_dev:,} | {majority:.1f} | "
                     f"{f'{list(bag.values())[0]:.1f}' if bag else '–'} | {fmt(random)} | "
                     f"{fmt(acc.get(('random', 'linprobe', task), {}))} | {fmt(ar)} | "
                     f"{fmt(acc.get(('ar', 'linprobe', task), {}))} | "
                     f"{mean_std(differences, '.1f') if differences else '–'} | "
                     f"{f'{np.std(list(ar.values()), ddof=1):.1f}' if len(ar) > 1 else '–'} | "
                     f"{f'{mde:.1f}' if mde is not None else '–'} | {entered} |")
        for (arm, mode, name), values in sorted(acc.items()):
            if name == task:
                writer.writerows([task, arm, mode, seed, f'{value:.2f}'] for seed, value in sorted(values.items()))
    tried = sorted(protocol(res).items(), key=lambda item: float(item[0]))
    lines += ["", f"Protocol (README.md's rule; the first seed's bigram shift, 2 epochs): learning rate {pick(res)}. "
              "ar / random-init fine-tuned at each: " + "; ".join(f"{lr} {a:.1f} / {r:.1f}" for lr, (a, r) in tried),
              "", "CPU minutes a run (user + system, one thread; mean over the runs recorded, how many in brackets):",
              ""]
    lines += [f"- {kind}: {np.mean(values) / 60:.1f} ({len(values)})" for kind, values in sorted(costs.items())]
    atomic_write(os.path.join(res, 'pilot.csv'), table.getvalue())
    atomic_write(os.path.join(res, 'tables.md'), '\n'.join(lines) + '\n')
    return lines


if __name__ == '__main__':
    print('\n'.join(report(sys.argv[1] if len(sys.argv) > 1 else 'experiments/probing-pilot')))

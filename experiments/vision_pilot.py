"""The vision pilot's table (exploratory, never a verdict; vision_pilot.sh runs this): every arm's linear probe under
each protocol variant, mean ± std over the seeds, and its difference from the raw-pixel probe of the same seed.
Writes RES/tables.md and RES/pilot.csv (one row per arm, steps, protocol and seed), drawn from RES/runs only.
usage: python -m experiments.vision_pilot [RES]   (default: experiments/vision-pilot)"""
import csv
import glob
import io
import json
import os
import sys

import numpy as np

from experiments.stats import mean_std
from output import atomic_write

PROTOCOLS = {'mean': 'last block, mean-pooled, pretraining mask kept (the record\'s protocol)',
             'concat': 'last block, every patch row concatenated',
             'mid': 'block 2 of 4, mean-pooled',
             'mid-concat': 'block 2 of 4, every patch row concatenated',
             'nomask': 'last block, mean-pooled, encoded without a mask'}


def read_row(path):
    with open(path, newline='') as f:
        return next(csv.DictReader(f))


def load(res):
    """[(arm, steps, protocol, seed, val_acc, pixels' val_acc or nan, seconds)], and {(arm, steps): [train minutes]}."""
    pixels = {int(os.path.basename(os.path.dirname(path))): float(read_row(path)['val_acc'])
              for path in glob.glob(os.path.join(res, 'runs', 'pixels', '*', 'linprobe.csv'))}
    rows, minutes = [], {}
    for path in sorted(glob.glob(os.path.join(res, 'runs', '*-*', '*', 'linprobe-*.csv'))):
        run = os.path.dirname(path)
        arm, steps = os.path.basename(os.path.dirname(run)).rsplit('-', 1)
        seed, protocol = int(os.path.basename(run)), os.path.basename(path)[len('linprobe-'):-len('.csv')]
        row = read_row(path)
        rows.append((arm, int(steps), protocol, seed, float(row['val_acc']), pixels.get(seed, float('nan')),
                     float(row['seconds'])))
    for log in glob.glob(os.path.join(res, 'runs', '*-*', '*', 'log.jsonl')):
        timed = [entry for entry in map(json.loads, open(log)) if 'time' in entry]
        arm, steps = os.path.basename(os.path.dirname(os.path.dirname(log))).rsplit('-', 1)
        if len(timed) > 1:  # the span of the logged times, scaled from the first logged step to all
            span = (timed[-1]['time'] - timed[0]['time']) * timed[-1]['iter'] / (timed[-1]['iter'] - timed[0]['iter'])
            minutes.setdefault((arm, int(steps)), []).append(span / 60)
    return rows, pixels, minutes


def report(res):
    rows, pixels, minutes = load(res)
    order = {protocol: i for i, protocol in enumerate(PROTOCOLS)}
    groups = {}
    for arm, steps, protocol, seed, acc, base, seconds in rows:
        groups.setdefault((arm, steps, protocol), []).append((seed, acc, base, seconds))
    lines = ["# Vision pilot: a probe above the raw pixels? (exploratory, not a verdict)", "",
             "Drawn from runs/ by `python -m experiments.vision_pilot`; the runs by `experiments/vision_pilot.sh`. "
             "Fashion-MNIST, the vision record's recipe (config/*_fmnist.py) and probe (config/linprobe_fmnist.py: "
             "BatchNorm without affine + linear, SGD, 90 epochs, the seed's), seeds "
             f"{', '.join(map(str, sorted({row[3] for row in rows} | set(pixels))))} (none of the registered "
             "1337-1341). Mean ± std over the seeds; minus pixels: paired by seed.", "",
             f"Raw pixels, the same probe: {mean_std(list(pixels.values()), '.2f') if pixels else '–'} "
             f"({len(pixels)} seeds).", "",
             "| arm | steps | protocol | seeds | linear probe (top-1 %) | minus raw pixels | seeds above pixels | "
             "probe minutes | pretraining minutes |", "|---|---|---|---|---|---|---|---|---|"]
    for (arm, steps, protocol), runs in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1],
                                                                                  order.get(item[0][2], 99))):
        accs = [acc for _, acc, _, _ in runs]
        paired = [acc - base for _, acc, base, _ in runs if not np.isnan(base)]
        train = minutes.get((arm, steps), [])
        lines.append(f"| {arm} | {steps} | {protocol}: {PROTOCOLS.get(protocol, protocol)} | {len(runs)} | "
                     f"{mean_std(accs, '.2f')} | {mean_std(paired, '.2f') if paired else '–'} | "
                     f"{sum(d > 0 for d in paired)} of {len(paired)} | "
                     f"{np.mean([s for *_, s in runs]) / 60:.1f} | {f'{np.mean(train):.1f}' if train else '–'} |")
    table = io.StringIO()
    writer = csv.writer(table, lineterminator='\n')
    writer.writerow(['arm', 'steps', 'protocol', 'seed', 'val_acc', 'pixels_val_acc', 'minus_pixels', 'seconds'])
    for arm, steps, protocol, seed, acc, base, seconds in sorted(rows, key=lambda r: (r[0], r[1], order.get(r[2], 99),
                                                                                       r[3])):
        writer.writerow([arm, steps, protocol, seed, f'{acc:.2f}', f'{base:.2f}', f'{acc - base:.2f}',
                         f'{seconds:.0f}'])
    atomic_write(os.path.join(res, 'pilot.csv'), table.getvalue())
    atomic_write(os.path.join(res, 'tables.md'), '\n'.join(lines) + '\n')
    return lines


if __name__ == '__main__':
    print('\n'.join(report(sys.argv[1] if len(sys.argv) > 1 else 'experiments/vision-pilot')))

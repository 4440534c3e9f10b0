"""Sample quality against forward passes, drawn from the record of sample_quality.sh (which runs this): per model and
sampler setting, the judge's NLL of the samples and their unigram entropy (nats per byte, mean ± std over seeds)
against forward passes per sample; the judge's NLL and entropy on held-out text as the reference; plots with forward
passes on a log axis (PNG + CSV); each model's own held-out loss at the end of training beside the judge's. A
measurement: nothing was registered, so no verdict.
usage: python -m experiments.sample_quality [RECORD]   (default: experiments/sample-quality; writes tables.md and
the plots there)"""
import glob
import json
import os
import sys

import numpy as np

from evals.sample_quality import REPETITIVE_FRACTION
from experiments.stats import mean_std
from output import atomic_write, line_plot

MODELS = {'ar': 'ar', 'mdlm': 'mdlm two-stream', 'vm': 'vm [0.15, 0.3] two-stream'}
REFERENCE = 'judge on held-out text'

# -----------------------------------------------------------------------------
# the record

def sampler(run):
    """A setting's name without its step size: 'T=0.8' left to right; 'random', 'confident', 'confident, blocks 32'
    (and ', remask 0.1') unmasking."""
    if run['order'] == 'left_to_right':
        return f"T={run['temperature']:g}"
    name = run['order'] + (f", blocks {run['block_length']}" if run['block_length'] else '')
    name += f", remask {run['remask']:g}" if run['remask'] else ''
    return name + (f", T={run['temperature']:g}" if run['temperature'] != 1 else '')


def load(record):
    """{(model, sampler, tokens a step): {seed: run}} from samples/MODEL/SETTING/SEED.json, and the final held-out
    loss of every training log {model: {seed: loss}} (train/MODEL/SEED/log.jsonl, judge/log.jsonl as 'judge')."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(record, 'samples', '*', '*', '*.json'))):
        model = path.split(os.sep)[-3]
        run = json.load(open(path))
        runs.setdefault((model, sampler(run), run['tokens_per_step']), {})[run['seed']] = run
    logs = sorted(glob.glob(os.path.join(record, 'train', '*', '*', 'log.jsonl')))
    losses = {}
    for path in logs + [os.path.join(record, 'judge', 'log.jsonl')]:
        rows = [row for row in map(json.loads, open(path)) if 'val_loss' in row] if os.path.exists(path) else []
        if rows:
            model, seed = ('judge', 0) if path.split(os.sep)[-2] == 'judge' else path.split(os.sep)[-3:-1]
            losses.setdefault(model, {})[int(seed)] = (rows[-1]['iter'], rows[-1]['val_loss'])
    return runs, losses


def model_order(model):
    return list(MODELS).index(model) if model in MODELS else len(MODELS), model

# -----------------------------------------------------------------------------
# the report

def report(record):
    runs, losses = load(record)
    keys = sorted(runs, key=lambda key: (model_order(key[0]), key[1:]))
    every = [run for key in keys for run in runs[key].values()]
    references = sorted({(run['held_out_nll'], run['held_out_nll_se'], run['held_out_entropy']) for run in every})
    reference, reference_se, reference_entropy = references[0]
    lines = ["# Sample quality against forward passes", "",
             "Drawn from the record (samples/MODEL/SETTING/SEED.json, written by `sample.py --judge`; the train/ and "
             "judge/ logs) by `python -m experiments.sample_quality`. Nats per byte; mean ± std over seeds; "
             f"{every[0]['samples']} samples of {every[0]['new_tokens']} bytes from BOS per setting and seed. The "
             f"judge `{every[0]['judge']}` scores held-out text at {reference:.3f} ± {reference_se:.3f} (se over "
             f"{every[0]['held_out_windows']} windows of {every[0]['new_tokens']} bytes), whose unigram entropy is "
             f"{reference_entropy:.3f}: a sampler of the text itself scores there (a sharper one goes below). "
             f"Repetitive: the samples' mean entropy below {REPETITIVE_FRACTION:g} of the held-out text's "
             "(evals/sample_quality.py).", ""]
    if len(references) > 1:
        lines += [f"Not one judge reading: the runs hold {len(references)} different held-out scores (another judge or "
                  "other windows); the first is the reference above.", ""]
    lines += ["| model | sampler | tokens a step | forward passes | judge NLL | entropy | repetitive seeds | seeds |",
              "|---|---|---|---|---|---|---|---|"]
    series, entropy_series = {}, {}
    for key in keys:
        model, name, k = key
        seeds = sorted(runs[key])
        column = lambda field: [runs[key][seed][field] for seed in seeds]  # noqa: E731
        passes = float(np.mean(column('forward_passes')))
        flagged = sum(column('repetitive'))
        lines.append(f"| {MODELS.get(model, model)} | {name} | {k if model != 'ar' else '-'} | {passes:g} | "
                     f"{mean_std(column('judge_nll'), '.3f')} | {mean_std(column('entropy'), '.3f')} | "
                     f"{f'{flagged} of {len(seeds)}' if flagged else 'no'} | {', '.join(map(str, seeds))} |")
        label = f"{model} {name}"
        for table, field in ((series, 'judge_nll'), (entropy_series, 'entropy')):
            xs, ys = table.setdefault(label, ([], []))
            xs.append(passes)
            ys.append(round(float(np.mean(column(field))), 4))
    if losses:
        lines += ["", "Each model's own held-out loss at its last evaluation (ar: exact NLL; masked: the any-order "
                  "bound), against the judge's:", "", "| model | step | held-out loss | seeds |", "|---|---|---|---|"]
        for model in sorted(losses, key=lambda m: (m == 'judge', model_order(m))):
            seeds = sorted(losses[model])
            steps = sorted({losses[model][seed][0] for seed in seeds})
            values = [losses[model][seed][1] for seed in seeds]
            lines.append(f"| {MODELS.get(model, model)} | {', '.join(map(str, steps))} | {mean_std(values, '.3f')} | "
                         f"{', '.join(map(str, seeds)) if model != 'judge' else 'one run'} |")
    passes = [x for xs, _ in series.values() for x in xs]
    span = [min(passes), max(passes)]
    for path, table, ylabel, level in (('judge_nll.png', series, 'judge NLL of the samples (nats/byte)', reference),
                                       ('entropy.png', entropy_series, 'unigram entropy of a sample (nats/byte)',
                                        reference_entropy)):
        line_plot(os.path.join(record, path), {**table, REFERENCE: (span, [round(level, 4)] * 2)}, dashed=[REFERENCE],
                  title=f"{ylabel} against forward passes per sample (mean over seeds); dashed: held-out text",
                  xlabel='forward passes per sample', ylabel=ylabel, logx=True)
    atomic_write(os.path.join(record, 'tables.md'), '\n'.join(lines).rstrip() + '\n')
    return lines


if __name__ == '__main__':
    print('\n'.join(report(sys.argv[1] if len(sys.argv) > 1 else 'experiments/sample-quality')))

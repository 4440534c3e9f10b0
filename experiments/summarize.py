"""The reproduction's tables and plots, drawn from its record (reproduce.sh summary runs this; its arguments are
reproduce.sh's settings): mean ± sample std over pretraining seeds, differences paired by seed with a verdict, the
budget check of each comparison and, at byte level, the hypotheses B1-B4 written at the top of reproduce.sh judged
from the numbers. A table is written once every seed of it is in the record.
usage: python summarize.py KEEP RES "SEEDS" DEFAULT_STEPS GPT2_OUT "GPT2_SEEDS" GPT2_STEPS TOKENS"""
import csv
import glob
import json
import os
import shutil
import sys

import numpy as np

from evals.plot import line_plot, log_ranks

if len(sys.argv) != 9:
    sys.exit(__doc__.splitlines()[-1])
out, res, seeds, default_steps = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4]
gpt2_out, gpt2_seeds, gpt2_steps = sys.argv[5], sys.argv[6].split(), sys.argv[7]
byte_level = sys.argv[8] == 'bytes'  # the hypotheses B1-B4 in reproduce.sh are the byte-level runs'
os.makedirs(res, exist_ok=True)
md = [f"Seeds {', '.join(seeds)}; mean ± sample std over seeds. Verdict on a paired difference: 'yes' = the mean "
      "goes the paper's way and every seed agrees, 'weak' = the mean does but some seed does not, 'no' = the mean "
      "goes the other way.", ""]

def ms(values, fmt='.2f'):
    values = np.asarray(values, float)
    return f"{shown(values.mean(), fmt):{fmt}} ± {values.std(ddof=1) if len(values) > 1 else 0:{fmt}}"

def shown(values, fmt):  # at the precision printed ('.1f': 1 decimal), so a verdict judges what the table shows: a
    # difference that prints as 0 is a tie, not the paper's way (nor float noise); + 0.0 prints -0.0 as 0.0
    return np.round(values, int(fmt[1:-1])) + 0.0 if fmt.endswith('f') else values

def verdict(diffs, sign):  # sign = +1 when the paper says the difference should be positive
    diffs = sign * np.asarray(diffs, float)
    # diffs come rounded as printed; their mean can still carry float dust (1e-17), which is a tie, not a gain
    return 'no' if diffs.mean() <= 1e-12 else 'yes' if (diffs > 0).all() else 'weak'

def diff_cell(base, other, sign, fmt='.2f'):  # other - base, paired by seed, with its verdict
    diffs = shown(np.subtract(other, base), fmt)
    return f"{ms(diffs, fmt)} ({verdict(diffs, sign)})"

hypotheses = []  # (name, comparison, paired differences, sign, the verdict it needs, format), tested at the end

def hypothesis(name, comparison, diffs, sign, need='yes', fmt='.3f'):  # need 'weak': the mean alone ('yes': every seed too)
    hypotheses.append((name, comparison, shown(np.asarray(diffs, float), fmt), sign, need, fmt))

def diff_row(label, base, other, sign, fmt='.2f'):
    diffs = shown(np.subtract(other, base), fmt)
    return f"| {label} | {ms(diffs, fmt)} | {verdict(diffs, sign)} |"

gpt2_header = [f"GPT-2 BPE, {gpt2_steps} steps ({len(gpt2_seeds)} seeds)"] if gpt2_out else []

def over(seeds):  # a plot title's last words
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"mean of {len(seeds)} seeds"

def table(title, header, rows):
    md.extend([f"### {title}", "", '| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)] + rows + [""])

def seed_of(name):
    return name.rstrip('/').split('/')[-1].rsplit('-', 1)

# -----------------------------------------------------------------------------
# Thm 4.2 toy: the theorem's own currency, for the side-by-side table at the end
tails = {}
if os.path.exists(f'{out}/toy/toy_tails_r2_s6_T2.csv'):
    tails = {r['objective']: float(r['sum_sigma4_beyond_r']) for r in csv.DictReader(open(f'{out}/toy/toy_tails_r2_s6_T2.csv'))}
    shutil.copy(f'{out}/toy/toy_spectra_r2_s6_T2.png', res); shutil.copy(f'{out}/toy/toy_spectra_r2_s6_T2.csv', res)

# -----------------------------------------------------------------------------
# Budgets (issue 15: train each arm until its validation loss flattens): validation loss by step, mean over seeds
def budget_check(title, run_dirs, plot, steps, floor=None):  # run_dirs: {arm: [its run directory, one per seed]}
    # floor: the unigram model's loss in nats; a run that ends within 0.1 of it has not started to use context (at
    # byte level an arm can stay there for its whole budget on one seed and not on another)
    curves, rows, ended_on_plateau = {}, [], {}  # {arm: per seed, did its run end on the plateau}
    for arm, dirs in run_dirs.items():
        logs = [f'{d}/log.jsonl' for d in dirs]
        if not all(os.path.exists(p) for p in logs):
            continue
        by_iter = [{r['iter']: r['val_loss'] for r in map(json.loads, open(p))} for p in logs]
        if not all(max(run) == int(steps) for run in by_iter):  # every seed's run has finished its budget
            continue
        iters = sorted(set.intersection(*map(set, by_iter)))
        loss = np.array([[run[i] for i in iters] for run in by_iter])
        curves[arm] = (iters, loss.mean(axis=0))
        change = [ms(loss[:, -1] - loss[:, iters.index(iters[-1] - back)], '.3f') if iters[-1] - back in iters else '–'
                  for back in (1000, 500)]
        # the first evaluation below the plateau, per seed: how long each run spent before it used context
        plateau = ''
        if floor is not None:
            below = loss <= floor - 0.1  # (seed, evaluation)
            left = [str(iters[run.argmax()]) if run.any() else 'never' for run in below]
            ended_on_plateau[arm] = ~below[:, -1]
            plateau = f" {ended_on_plateau[arm].sum()} of {len(dirs)} | {' / '.join(left)} |"
        rows.append(f"| {arm} | {ms(loss[:, -1], '.3f')} | {change[0]} | {change[1]} |{plateau}")
    if rows:
        line_plot(plot, curves, title=f'{title} ({over(seeds)})', xlabel='step', ylabel='validation loss')
        table(title, ["model", "validation loss at the end", "change over the last 1000 steps", "over the last 500"]
              + ([f"seeds on the unigram plateau ({floor:.2f} nats) at the end",
                  f"step it left the plateau, seed {' / '.join(seeds)}"] if floor is not None else []), rows)
    return ended_on_plateau

# -----------------------------------------------------------------------------
# Table 7 / Fig. 3, one table per training budget that has been run
def short_ppl(run):  # prefixes k < 8: the first 4 buckets
    return np.exp(sum(b['nll_sum'] for b in run['buckets'][:4]) / sum(b['targets'] for b in run['buckets'][:4]))

def table7_runs(run_dir, seeds, data, reading='ppl'):  # {model: [its summary.json row, one per seed]}, or None
    paths = [f'{run_dir}/{reading}-{data}-{s}/summary.json' for s in seeds]
    if not all(os.path.exists(p) for p in paths):
        return None
    runs = [json.load(open(p))['checkpoints'] for p in paths]
    return {seed_of(os.path.dirname(c['name']) or c['name'])[0]: [run[i] for run in runs] for i, c in enumerate(runs[0])}

plateau7 = {}  # the default budget's Table 7 runs: {arm: per seed, did it end on the unigram plateau}
gpt2_t7 = {d: table7_runs(f'{gpt2_out}/table7', gpt2_seeds, d) if gpt2_out else None for d in ('shakespeare', 'wikipedia')}
for run_dir in sorted(glob.glob(f'{out}/table7*'), key=lambda d: (len(d), d)):
    suffix = run_dir.split('table7')[-1]
    steps = suffix.lstrip('-') or default_steps
    runs7 = {d: table7_runs(run_dir, seeds, d) for d in ('shakespeare', 'wikipedia')}
    if None in runs7.values():
        continue
    # the [MASK]-after-target reading (eval_ppl --bert_future=mask) as extra columns, once every seed has it
    mask7 = {d: table7_runs(run_dir, seeds, d, 'ppl-mask') for d in ('shakespeare', 'wikipedia')}
    masked_reading = None not in mask7.values()
    rows, ppl7, short7, mask_ppl7 = [], {}, {}, {}
    for data, by_model in runs7.items():
        curves = {}
        for name, runs in by_model.items():
            ppl7[data, name] = [run['ppl'] for run in runs]
            short7[data, name] = [short_ppl(run) for run in runs]
            row = f"| {data} | {name} | {ms(ppl7[data, name], '.1f')} | {ms(short7[data, name], '.1f')} |"
            if masked_reading:
                mask_runs = mask7[data][name]
                mask_ppl7[data, name] = [run['ppl'] for run in mask_runs]
                row += (f" {ms(mask_ppl7[data, name], '.1f')} |"
                        f" {ms([short_ppl(run) for run in mask_runs], '.1f')} |")
            rows.append(row)
            ks = [b['k_first'] + 1 for b in runs[0]['buckets']]
            curves[name] = (ks, [float(np.mean([run['buckets'][j]['ppl'] for run in runs])) for j in range(len(ks))])
        line_plot(f'{res}/fig3_ppl_by_k_{data}{suffix}.png', curves, title=f'Fig. 3: ppl by conditioning length, '
                  f'{data}, {steps} steps ({over(seeds)})', xlabel='k+1 (bucket start)', ylabel='ppl',
                  logx=True, logy=True)
    header = ["data", "model", "ppl", "ppl at k < 8"]
    if masked_reading:
        header += ["ppl, [MASK] after target", "at k < 8, [MASK] after target"]
    table(f"Table 7 / Fig. 3: perplexity of masked models, {steps} steps", header, rows)
    # the same, seed by seed: at this scale a seed's run either leaves the unigram plateau or not, and a mean over
    # seeds hides which runs did (the budget check below gives the step)
    models = [m for d, m in ppl7 if d == 'shakespeare' and not m.startswith('(')]
    table(f"Table 7, {steps} steps: perplexity by seed ({' / '.join(seeds)})", ["model", "held-out plays", "Wikipedia"],
          [f"| {m} | " + ' | '.join(' / '.join(f'{p:.1f}' for p in ppl7[d, m]) for d in ('shakespeare', 'wikipedia'))
           + ' |' for m in models])
    unigram = ppl7.get(('shakespeare', '(unigram)'))  # eval_ppl's floor row, in ppl; its loss is the plateau
    on_plateau = budget_check(f"Table 7, {steps} steps: validation loss by step (nats per masked target)",
                 {m: [f'{run_dir}/{m}-{s}' for s in seeds] for m in runs7['shakespeare'] if not m.startswith('(')},
                 f'{res}/table7_val_loss{suffix}.png', steps,
                 floor=None if unigram is None else np.log(np.mean(unigram)))
    pairs = [(m, 'vm') for m in ('mlm15', 'mlm30')] + [(m, 'vm_2s') for m in ('mlm15_2s', 'mlm30_2s')]
    compared = [(d, m, v) for d in ('shakespeare', 'wikipedia') for m, v in pairs if (d, m) in ppl7 and (d, v) in ppl7]
    # B1: every seed in domain, the mean on Wikipedia; B2: a model's k < 8 perplexity above its overall one, and
    # vm's gain (a ratio of perplexities, so the larger scale at k < 8 does not count) larger at k < 8
    for d, m, v in compared if suffix == '' else ():
        hypothesis('B1', f'{d}: {v} below {m}', np.subtract(ppl7[d, v], ppl7[d, m]), -1,
                   'yes' if d == 'shakespeare' else 'weak', '.1f')
        if d == 'shakespeare':
            hypothesis('B2', f'{d}: {v} gains more over {m} at k < 8 (log ppl ratio)',
                       np.log(np.multiply(short7[d, m], ppl7[d, v]) / np.multiply(short7[d, v], ppl7[d, m])), 1)
    for name in models if suffix == '' else ():
        hypothesis('B2', f'shakespeare: {name} highest at k < 8 (log ppl)',
                   np.log(short7['shakespeare', name]) - np.log(ppl7['shakespeare', name]), 1)
    def gpt2_cell(d, m, v):  # the same one-stream difference in the GPT-2 BPE reproduction, '–' where it was not run
        runs = gpt2_t7[d]
        if runs is None or m not in runs or v not in runs:
            return '–'
        return diff_cell([r['ppl'] for r in runs[m]], [r['ppl'] for r in runs[v]], -1, '.1f')
    def learned_cell(d, m, v):  # post hoc: the seeds on which both runs left the plateau, so the difference is one
        # of what two models learned, not of whether one of them started to (the largest source of spread here)
        if m not in on_plateau or v not in on_plateau:
            return '–'
        both = ~on_plateau[m] & ~on_plateau[v]
        cell = diff_cell(np.array(ppl7[d, m])[both], np.array(ppl7[d, v])[both], -1, '.1f') if both.any() else '–'
        return f"{cell}, {both.sum()} of {len(both)} seeds"
    if suffix == '':
        plateau7 = on_plateau  # Fig. 2 reads mlm 0.15's
    table(f"Table 7, {steps} steps: paired differences (paper: vm below both fixed ratios)",
          ["difference", "ppl", "paper's way?", "at k < 8"] + (["[MASK] after target"] if masked_reading else [])
          + gpt2_header
          + (["seeds where both runs left the plateau (post hoc)"] if on_plateau else []),
          [diff_row(f"{d}: {v} - {m}", ppl7[d, m], ppl7[d, v], -1, '.1f')
           + f" {diff_cell(short7[d, m], short7[d, v], -1, '.1f')} |"
           # a one-stream model's reading decides more than its objective does on some seeds (issue 13's two readings)
           + (f" {diff_cell(mask_ppl7[d, m], mask_ppl7[d, v], -1, '.1f')} |" if masked_reading else '')
           + (f" {gpt2_cell(d, m, v)} |" if gpt2_out else '')
           + (f" {learned_cell(d, m, v)} |" if on_plateau else '')
           for d, m, v in compared])
    # Thm 4.3 measured (theory.py maskloss): masked loss at fixed mask ratios, inside and outside the training ranges
    paths = [f'{run_dir}/maskloss-{s}/maskloss.csv' for s in seeds]
    if all(os.path.exists(p) for p in paths):
        loss = {}  # {(arm, ratio): [nats, one per seed]}
        for path in paths:
            for r in csv.DictReader(open(path)):
                loss.setdefault((seed_of(r['series'].split()[-1])[0], float(r['mask ratio rho'])), []).append(
                    float(r['nats per masked token']))
        arms = list(dict.fromkeys(a for a, _ in loss))
        ratios = sorted({rho for _, rho in loss})
        line_plot(f'{res}/maskloss{suffix}.png', {a: (ratios, [np.mean(loss[a, rho]) for rho in ratios]) for a in arms},
                  title=f'Thm 4.3 measured: masked loss by mask ratio, {steps} steps ({over(seeds)})',
                  xlabel='mask ratio', ylabel='nats per masked token')
        rows = [f"| {a} | " + ' | '.join(ms(loss[a, rho], '.3f') for rho in ratios) + ' |' for a in arms]
        rows += [f"| {v} - {m} | " + ' | '.join(diff_cell(loss[m, rho], loss[v, rho], -1, '.3f') for rho in ratios)
                 + ' |' for m, v in pairs if m in arms and v in arms]
        table(f"Thm 4.3 measured: masked loss by mask ratio, {steps} steps (nats per masked token, held-out plays; "
              "lower is better)", ["model"] + [f"ρ = {rho:g}" for rho in ratios], rows)

# -----------------------------------------------------------------------------
# Table 2: ar vs dar on the offline suite
tasks = [('polarity', 'acc'), ('hedge', 'mcc'), ('plagiarism', 'acc'), ('lee_sts', 'pearson')]
cols = [t for t, _ in tasks] + ['avg']

def table2_scores(out, seeds, mode):  # {(arm, task): [score, one per seed]}, or None before every seed has it
    # one file per seed (linprobe-<seed>, finetune-<arm>-<seed>), or per run of all seeds (the GPT-2 runs' linprobe,
    # finetune-<arm>): each row names its checkpoint, hence its arm and seed
    files = glob.glob(f'{out}/text/{mode}*/glue_{mode}.json')
    scores = {}
    for f in files:
        for row in json.load(open(f))['summary']:
            arm, seed = seed_of(os.path.dirname(row['ckpt']))
            for task, _ in tasks:
                scores.setdefault((arm, task), {})[seed] = next(iter(row['medians'][task].values()))
            scores.setdefault((arm, 'avg'), {})[seed] = row['averages']['offline avg']
    if not scores or not all(s in v for v in scores.values() for s in seeds):
        return None
    return {k: [v[s] for s in seeds] for k, v in scores.items()}

budget_check("Table 2: validation loss by step (nats per target)",
             {a: [f'{out}/text/{a}-{s}' for s in seeds] for a in ('ar', 'dar')}, f'{res}/table2_val_loss.png', default_steps)
for mode in ('linprobe', 'finetune'):
    vals = table2_scores(out, seeds, mode)
    if vals is None:
        continue
    rows = [f"| {arm} | " + ' | '.join(ms(vals[arm, t], '.1f') for t in cols) + ' |' for arm in ('ar', 'dar')]
    rows.append("| dar - ar | " + ' | '.join(diff_cell(vals['ar', t], vals['dar', t], 1, '.1f') for t in cols) + ' |')
    hypothesis('B3', f'dar above ar, {mode} average', np.subtract(vals['dar', 'avg'], vals['ar', 'avg']), 1, 'weak', '.1f')
    gpt2 = table2_scores(gpt2_out, gpt2_seeds, mode) if gpt2_out else None
    if gpt2:
        rows.append(f"| dar - ar, {gpt2_header[0]} | " +
                    ' | '.join(diff_cell(gpt2['ar', t], gpt2['dar', t], 1, '.1f') for t in cols) + ' |')
    table(f"Table 2: ar vs dar t = 2 on the offline suite, {mode}",
          ["model"] + [f"{t} ({m})" for t, m in tasks] + ["average"], rows)

# -----------------------------------------------------------------------------
# Fig. 2: connectivity (top pairwise inner products of pooled features), raw and cosine
def connectivity(out, seeds, suffix):  # {model: {seed: {pair rank: inner product}}}, or None before every seed has it
    conn = {}
    for seed in seeds:
        path = f'{out}/fig2{suffix}/{seed}/connectivity.csv'
        if os.path.exists(path):
            for r in csv.DictReader(open(path)):
                model = 'ar' if ' ar ' in r['series'] else 'mlm15'
                conn.setdefault(model, {}).setdefault(seed, {})[int(r['pair rank'])] = float(r['inner product'])
    return conn if conn and all(len(v) == len(seeds) for v in conn.values()) else None

def last_rank_ratio(conn, seeds):  # mlm 0.15 over ar at the last kept rank, per seed
    return np.array([conn['mlm15'][s][max(conn['mlm15'][s])] / conn['ar'][s][max(conn['ar'][s])] for s in seeds])

for scale, suffix in (('raw inner products (App. B.2)', ''), ('cosine similarities', '-cosine')):
    conn = connectivity(out, seeds, suffix)
    if conn is None:
        continue
    curves, rows = {}, []
    for model, by_seed in conn.items():  # theory.py writes log-spaced ranks (an older full curve: the same ranks)
        ranks = [r for r in log_ranks(max(by_seed[seeds[0]])) if all(r in by_seed[s] for s in seeds)]
        top = np.array([[by_seed[s][r] for r in ranks] for s in seeds])
        curves[model] = (ranks, top.mean(axis=0))
        rows.append(f"| {model} | {ms(top[:, 0], '.3g')} | {ms(top[:, ranks.index(min(100, ranks[-1]))], '.3g')} | "
                    f"{ms(top[:, -1], '.3g')} |")
    line_plot(f'{res}/fig2_connectivity{suffix}.png', curves, title=f'Fig. 2: top pairs of pooled features, {scale} '
              f'({over(seeds)})', xlabel='pair rank', ylabel='inner product', logx=True)
    ratio = last_rank_ratio(conn, seeds)
    rows.append(f"| mlm15 / ar at the last kept rank | | | {ms(ratio, '.3g')} ({verdict(ratio - 1, 1)}) |")
    if suffix == '-cosine':
        hypothesis('B4', 'mlm15 / ar - 1, cosine, at the last kept rank', ratio - 1, 1)
    if 'mlm15' in plateau7:  # post hoc: a model on the unigram plateau maps every window to nearly the same
        # feature, so its cosine connectivity is ~1 whatever it learned: keep the seeds whose mlm 0.15 left it
        learned = ~plateau7['mlm15']
        rows.append(f"| the same ratio, seeds whose mlm15 left the plateau (post hoc) | | | "
                    + (f"{ms(ratio[learned], '.3g')} ({verdict(ratio[learned] - 1, 1)}), " if learned.any() else '–, ')
                    + f"{learned.sum()} of {len(learned)} seeds |")
    gpt2 = connectivity(gpt2_out, gpt2_seeds, suffix) if gpt2_out else None
    if gpt2:
        ratio = last_rank_ratio(gpt2, gpt2_seeds)
        rows.append(f"| the same ratio, {gpt2_header[0]} | | | {ms(ratio, '.3g')} ({verdict(ratio - 1, 1)}) |")
    table(f"Fig. 2: connectivity, {scale}, ar vs mlm 0.15 (paper: mlm's curve above ar's)",
          ["model", "top-1 pair", "100th pair", f"{ranks[-1]}th pair"], rows)

# -----------------------------------------------------------------------------
# Tables 3, 9 (linear probe, fine-tune) and 8 (reconstruction) on Fashion-MNIST
def vision_scores(pattern, key):
    found = {}
    for path in glob.glob(pattern):
        for r in csv.DictReader(open(path)):
            arm, seed = seed_of(r['model'])
            found.setdefault(arm, {})[seed] = float(r[key])
    return found
probe = vision_scores(f'{out}/vision/eval-*/linprobe.csv', 'val_acc')
tune = vision_scores(f'{out}/vision/ft-*/finetune.csv', 'val_acc')
arms = ['ar', 'dar2', 'dar3', 'dar4']
p = f = None  # per-arm accuracies over seeds, once every seed has been evaluated
if all(len(probe.get(a, {})) == len(seeds) and len(tune.get(a, {})) == len(seeds) for a in arms):
    p = {a: [probe[a][s] for s in seeds] for a in arms}
    f = {a: [tune[a][s] for s in seeds] for a in arms}
    rows = [f"| {a} | {ms(p[a])} | {ms(f[a])} | " + ('(baseline) | (baseline)' if a == 'ar' else
            f"{diff_cell(p['ar'], p[a], 1)} | {diff_cell(f['ar'], f[a], 1)}") + ' |' for a in arms]
    table("Tables 3 and 9: ar vs dar t = 2..4 on Fashion-MNIST (top-1 %, paper: dar above ar)",
          ["model", "linear probe", "fine-tune", "probe: minus ar", "fine-tune: minus ar"], rows)
    ts = [1, 2, 3, 4]
    line_plot(f'{res}/table9_acc_by_t.png', {'linear probe': (ts, [np.mean(p[a]) for a in arms]),
                                              'fine-tune': (ts, [np.mean(f[a]) for a in arms])},
              title=f'Table 9: Fashion-MNIST top-1 by dar t (t = 1 is ar; {over(seeds)})',
              xlabel='t', ylabel='top-1 %')
l2 = vision_scores(f'{out}/vision/eval-*/recon.csv', 'l2')
lp = vision_scores(f'{out}/vision/eval-*/recon.csv', 'lpips')
base = vision_scores(f'{out}/vision/eval-*/recon.csv', 'baseline_l2')
marms = ['mae75', 'mae50', 'vm']
if all(len(l2.get(a, {})) == len(seeds) for a in marms):
    L = {a: [l2[a][s] for s in seeds] for a in marms}
    P = {a: [lp[a][s] for s in seeds] for a in marms}
    rows = [f"| {a} | {ms(L[a], '.4f')} | {ms(P[a], '.4f')} |" for a in marms]
    rows.append(f"| mean-fill baseline | {ms([base['vm'][s] for s in seeds], '.4f')} | |")
    rows += [f"| vm - {m} | {diff_cell(L[m], L['vm'], -1, '.4f')} | {diff_cell(P[m], P['vm'], -1, '.4f')} |"
             for m in marms[:2]]
    table("Table 8: reconstruction of 25% masked patches (lower is better; paper: vm lowest)",
          ["model", "pixel L2", "ST-LPIPS"], rows)
    for path in glob.glob(f'{out}/vision/eval-{seeds[0]}/recon_*.png'):
        shutil.copy(path, res)

# -----------------------------------------------------------------------------
# the theorem's currency next to the trained models
if tails:
    rows = [f"| {label} | {tails[key]:.3f} | " + (f"{ms(p[arm])} / {ms(f[arm])}" if p else '') + ' |'
            for label, key, arm in [('ar (dar t = 1)', 'ar', 'ar')] +
            [(f'dar t = {t}', f'dar t={t}', f'dar{t}') for t in (2, 3, 4)]]
    table("Toy spectra (Thm 4.2, r = 2, s = 6, T = 2) next to the trained models: smaller tail = better connected",
          ["objective", "Σ_{j>r} σ_j⁴ (exact)", "Fashion-MNIST probe / fine-tune"], rows)
# -----------------------------------------------------------------------------
# what does and does not reproduce, tested against the hypotheses as they were written before any run
if byte_level and hypotheses:
    met = {}
    rows = []
    for name, comparison, diffs, sign, need, fmt in sorted(hypotheses, key=lambda h: h[0]):
        said = verdict(diffs, sign)
        met.setdefault(name, []).append(said in ('yes', need))
        rows.append(f"| {name} | {comparison} | {ms(diffs, fmt)} | {(sign * diffs > 0).sum()} of {len(diffs)} | "
                    f"{said} | {'every seed' if need == 'yes' else 'the mean'} | {'met' if met[name][-1] else 'not met'} |")
    table("Hypotheses B1-B4 (reproduce.sh, written before any run), comparison by comparison",
          ["hypothesis", "comparison", "paired difference", "seeds the paper's way", "verdict", "needs", "met?"], rows)
    table("Hypotheses B1-B4: does it reproduce?", ["hypothesis", "comparisons met", "holds?"],
          [f"| {name} | {sum(ok)} of {len(ok)} | {'yes' if all(ok) else 'no' if not any(ok) else 'in part'} |"
           for name, ok in met.items()])
open(f'{res}/tables.md', 'w').write('\n'.join(md))
print('\n'.join(md))

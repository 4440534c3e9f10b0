"""The reproduction's tables and plots, drawn from its record (reproduce.sh summary runs this; its arguments are
reproduce.sh's settings): mean ± sample std over pretraining seeds, differences paired by seed with a two-sided paired
t-test and an exact sign test, the budget check of each comparison and, at byte level, the hypotheses B1-B4 written at
the top of reproduce.sh judged by their registered text. A table is written once every seed of it is in the record.
REGISTRATION, when given, is a script whose header registers the hypotheses instead (reproduce_rope.sh: B1-B4 word
for word and B5, the any-order bound of two-stream mdlm against two-stream vm): they are read from it, B5's bounds
are tabled, and beside each comparison its minimum detectable effect (from the learned record's spread, and from this
record's).
usage: python -m experiments.summarize RECORD RES "SEEDS" DEFAULT_STEPS GPT2_RECORD "GPT2_SEEDS" GPT2_STEPS TOKENS
       [REGISTRATION]"""
import csv
import glob
import json
import math
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np

from experiments.data_constrained import registered as registered_text
from experiments.stats import as_printed, mean_std, minimum_detectable_effect, paired_t_test, sign_test_p
from output import atomic_write, line_plot, log_ranks

SIGNIFICANCE = 0.05  # a comparison is an effect only where its registered rule holds and the t-test's p is below this
SHORT_BUCKETS = 4    # eval_ppl's first four buckets are the prefixes k < 8, "the shortest prefixes" of B2

def copy(path, folder):
    """A recorded file into the tables' folder whole (atomic_write): an interrupted copy never leaves half of one."""
    with open(path, 'rb') as f:
        atomic_write(os.path.join(folder, os.path.basename(path)), f.read())

# -----------------------------------------------------------------------------
# cells: a number at the precision printed, mean ± std, the direction of a paired difference and its p-values

def direction(differences, sign):
    """'yes': the mean goes the paper's way (sign = +1: positive) and every seed agrees; 'weak': the mean does, a seed
    does not; 'no': the mean does not. differences come rounded as printed; their mean can still carry float dust
    (1e-17), which is a tie, not a gain."""
    toward_paper = sign * np.asarray(differences, float)
    return 'no' if toward_paper.mean() <= 1e-12 else 'yes' if (toward_paper > 0).all() else 'weak'

def p_values(differences):
    """'p = t-test / sign test', both two-sided."""
    if len(differences) < 2:
        return 'p = –'
    return f"p = {paired_t_test(differences)[1]:.2g} / {sign_test_p(differences):.2g}"

def difference_cell(base, other, sign, fmt='.2f'):  # other - base, paired by seed, its direction and p-values
    differences = np.subtract(other, base)
    shown = as_printed(differences, fmt)
    return f"{mean_std(shown, fmt)} ({direction(shown, sign)}, {p_values(differences)})"

# -----------------------------------------------------------------------------
# the report: tables.md's lines and the comparisons the registered hypotheses are judged on

@dataclass
class Comparison:
    hypothesis: str
    part: str          # the clause of the registered text it tests
    label: str
    differences: np.ndarray  # paired by seed, signed so that the paper's way is `sign`
    sign: int
    rule: str          # 'every seed' or 'the mean', as the registered text says
    fmt: str = '.3f'

    def rule_met(self):
        said = direction(as_printed(self.differences, self.fmt), self.sign)
        return said == 'yes' if self.rule == 'every seed' else said in ('yes', 'weak')

    def effect(self):  # one seed is no test
        return len(self.differences) > 1 and self.rule_met() and paired_t_test(self.differences)[1] < SIGNIFICANCE


@dataclass
class Report:
    lines: list
    comparisons: list = field(default_factory=list)

    def table(self, title, header, rows):
        self.lines.extend([f"### {title}", "", '| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)] + rows
                          + [""])

    def compare(self, hypothesis, part, label, differences, sign, rule, fmt='.3f'):
        self.comparisons.append(Comparison(hypothesis, part, label, np.asarray(differences, float), sign, rule, fmt))


@dataclass
class Settings:
    record: str
    res: str
    seeds: list
    default_steps: str
    gpt2_record: str
    gpt2_seeds: list
    gpt2_steps: str
    byte_level: bool
    registration: str = ''  # a script registering the hypotheses (reproduce_rope.sh); '' = reproduce.sh's B1-B4

    def gpt2_header(self):
        return [f"GPT-2 BPE, {self.gpt2_steps} steps ({len(self.gpt2_seeds)} seeds)"] if self.gpt2_record else []


# the hypotheses as registered in reproduce.sh (commit 9409b0e), before any byte-level run; judged by this text
REGISTERED = {
    'B1': "vm [0.15, 0.3] has a lower prefix perplexity than mlm 0.15 and than mlm 0.3, on the held-out plays and on "
          "Wikipedia, one-stream and two-stream, on every seed in domain.",
    'B2': "every masked model's perplexity is highest at the shortest prefixes, and vm's gain is largest there.",
    'B3': "dar t = 2 is above ar on the offline suite's average, linear probe and fine-tune.",
    'B4': "mlm 0.15's cosine connectivity is above ar's at the last kept rank, on every seed."}

# a registration made again (reproduce_rope.sh): its comparisons' minimum detectable effects come from the learned
# record's spread (the same comparisons, the learned position table, 5 seeds, 3000 steps)
LEARNED_RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'repro-bytes', 'runs')
LEARNED_SEEDS, LEARNED_STEPS = ['1337', '1338', '1339', '1340', '1341'], '3000'
POWER = 0.8
# '#   MDE B1: paired sd 1.2-3.4 (source), MDE 2.0-5.7': a hypothesis's registered range over its comparisons
MDE_LINE = re.compile(r'   MDE (B\d): paired sd ([0-9.]+(?:-[0-9.]+)?) \((.+)\), MDE ([0-9.]+(?:-[0-9.]+)?)$')

def registered_hypotheses(script):
    """{'B1': text, ...} from a registration's '#   B1 (Table 7): text' lines, the '(Table 7): ' dropped as
    REGISTERED drops it, and {'B1': (sd, source, mde), ...} from its '#   MDE B1: ...' lines."""
    texts = {name: re.sub(r'^\([^)]*\): ', '', text) for name, text in registered_text(script)[0].items()}
    mdes = {}
    for line in open(script):
        found = line.startswith('#') and MDE_LINE.match(line[1:].rstrip())
        if found:
            mdes[found.group(1)] = found.groups()[1:]
    return texts, mdes

def mde(differences, n, alpha=SIGNIFICANCE / 2):
    """The smallest true mean difference the rule's t-test (two-sided p < alpha x 2 in the stated direction, so
    one-sided alpha) detects with power POWER over n seeds, for differences spread as these are (0 when they do not
    vary; nan for fewer than 2 of either)."""
    if len(differences) < 2 or n < 2:
        return math.nan
    sd = np.std(differences, ddof=1)
    return minimum_detectable_effect(sd, n, alpha, POWER) if sd > 0 else 0.0

def learned_comparisons(record=LEARNED_RECORD, seeds=LEARNED_SEEDS, steps=LEARNED_STEPS):
    """{(hypothesis, label): paired differences} of every registered comparison in the learned record, computed as
    its own summary computes them (its plots go to a scratch folder)."""
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(record, scratch, seeds, steps, '', [], '', True)
        report = Report([])
        on_plateau = table7_section(report, settings, f'{record}/table7', {'shakespeare': None, 'wikipedia': None})
        table2_section(report, settings)
        fig2_section(report, settings, on_plateau.get('mlm15'))
    return {(c.hypothesis, c.label): c.differences for c in report.comparisons}

def over(seeds):  # a plot title's last words
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"mean of {len(seeds)} seeds"

def arm_and_seed(run_name):
    return run_name.rstrip('/').split('/')[-1].rsplit('-', 1)

# -----------------------------------------------------------------------------
# budgets: validation loss by step, mean over seeds

def budget_check(report, settings, title, run_dirs, plot, steps, floor=None):
    """run_dirs: {arm: [its run directory, one per seed]}. floor: the unigram model's loss in nats; a run that ends
    within 0.1 of it has not started to use context (at byte level an arm can stay there for its whole budget on one
    seed and not on another). -> {arm: per seed, did its run end on that plateau}."""
    curves, rows, ended_on_plateau = {}, [], {}
    for arm, dirs in run_dirs.items():
        logs = [f'{run_dir}/log.jsonl' for run_dir in dirs]
        if not all(os.path.exists(log) for log in logs):
            continue
        by_iter = [{entry['iter']: entry['val_loss'] for entry in map(json.loads, open(log)) if 'val_loss' in entry}
                   for log in logs]  # evaluation lines (training lines have no val_loss)
        if not all(max(run) == int(steps) for run in by_iter):  # every seed's run has finished its budget
            continue
        iters = sorted(set.intersection(*map(set, by_iter)))
        loss = np.array([[run[i] for i in iters] for run in by_iter])
        curves[arm] = (iters, loss.mean(axis=0))
        change = [mean_std(loss[:, -1] - loss[:, iters.index(iters[-1] - back)], '.3f') if iters[-1] - back in iters
                  else '–' for back in (1000, 500)]
        plateau = ''  # the first evaluation below the plateau, per seed: how long each run spent before it used context
        if floor is not None:
            below = loss <= floor - 0.1  # (seed, evaluation)
            left = [str(iters[run.argmax()]) if run.any() else 'never' for run in below]
            ended_on_plateau[arm] = ~below[:, -1]
            plateau = f" {ended_on_plateau[arm].sum()} of {len(dirs)} | {' / '.join(left)} |"
        rows.append(f"| {arm} | {mean_std(loss[:, -1], '.3f')} | {change[0]} | {change[1]} |{plateau}")
    if rows:
        line_plot(plot, curves, title=f'{title} ({over(settings.seeds)})', xlabel='step', ylabel='validation loss')
        report.table(title, ["model", "validation loss at the end", "change over the last 1000 steps",
                             "over the last 500"]
                     + ([f"seeds on the unigram plateau ({floor:.2f} nats) at the end",
                         f"step it left the plateau, seed {' / '.join(settings.seeds)}"] if floor is not None else []),
                     rows)
    return ended_on_plateau

# -----------------------------------------------------------------------------
# Table 7 / Fig. 3 and Thm 4.3's masked loss

def pooled_ppl(run, buckets):  # the perplexity of a run's targets in a range of eval_ppl's buckets
    chosen = run['buckets'][buckets]
    return math.exp(sum(b['nll_sum'] for b in chosen) / sum(b['targets'] for b in chosen))

def short_ppl(run):  # prefixes k < 8
    return pooled_ppl(run, slice(0, SHORT_BUCKETS))

def longer_log_ppls(run):  # log perplexity of each bucket past k < 8, one a bucket
    return np.array([b['nll_sum'] / b['targets'] for b in run['buckets'][SHORT_BUCKETS:]])

def table7_runs(run_dir, seeds, data, reading='ppl'):  # {model: [its summary.json row, one per seed]}, or None
    paths = [f'{run_dir}/{reading}-{data}-{seed}/summary.json' for seed in seeds]
    if not all(os.path.exists(path) for path in paths):
        return None
    runs = [json.load(open(path))['checkpoints'] for path in paths]
    return {arm_and_seed(os.path.dirname(checkpoint['name']) or checkpoint['name'])[0]: [run[i] for run in runs]
            for i, checkpoint in enumerate(runs[0])}

def gpt2_cell(gpt2_table7, data, masked, visible):  # the same one-stream difference in the GPT-2 BPE reproduction
    runs = gpt2_table7[data]
    if runs is None or masked not in runs or visible not in runs:
        return '–'
    return difference_cell([run['ppl'] for run in runs[masked]], [run['ppl'] for run in runs[visible]], -1, '.1f')

def learned_cell(ppl, on_plateau, data, mlm, vm):
    """Post hoc: the seeds on which both runs left the plateau, so the difference is one of what two models learned,
    not of whether one of them started to (the largest source of spread here)."""
    if mlm not in on_plateau or vm not in on_plateau:
        return '–'
    both = ~on_plateau[mlm] & ~on_plateau[vm]
    cell = difference_cell(np.array(ppl[data, mlm])[both], np.array(ppl[data, vm])[both], -1, '.1f') if both.any() \
        else '–'
    return f"{cell}, {both.sum()} of {len(both)} seeds"

def judge_b1_b2(report, runs7, ppl, pairs):
    """B1 and B2 as registered. B1: vm below each fixed ratio, every seed in domain; on Wikipedia the text names no
    seed rule, so the mean. B2: the text names no corpus nor seed rule: both corpora Fig. 3 plots, the mean. 'Highest
    at the shortest prefixes': k < 8 above every later bucket, so each seed's margin is k < 8's log perplexity minus
    the highest later bucket's. 'vm's gain largest there': vm's gain over a fixed ratio (a log ratio of perplexities,
    so the larger scale at k < 8 does not count) at k < 8 minus its largest gain in a later bucket."""
    for data, mlm, vm in pairs:
        report.compare('B1', 'in domain, every seed' if data == 'shakespeare' else 'Wikipedia, the mean',
                       f'{data}: {vm} below {mlm}', np.subtract(ppl[data, vm], ppl[data, mlm]), -1,
                       'every seed' if data == 'shakespeare' else 'the mean', '.1f')
    for data in ('shakespeare', 'wikipedia'):
        for name, runs in runs7[data].items():
            if not name.startswith('('):
                report.compare('B2', 'highest at the shortest prefixes', f'{data}: {name}, k < 8 above every later '
                               'bucket (log ppl)',
                               [math.log(short_ppl(run)) - longer_log_ppls(run).max() for run in runs], 1, 'the mean')
    for data, mlm, vm in pairs:
        gains = []
        for mlm_run, vm_run in zip(runs7[data][mlm], runs7[data][vm]):
            short_gain = math.log(short_ppl(mlm_run)) - math.log(short_ppl(vm_run))
            gains.append(short_gain - (longer_log_ppls(mlm_run) - longer_log_ppls(vm_run)).max())
        report.compare('B2', "vm's gain largest there", f"{data}: {vm}'s gain over {mlm}, k < 8 above every later "
                       'bucket (log ppl ratio)', gains, 1, 'the mean')

def table7_section(report, settings, run_dir, gpt2_table7):
    """One budget's Table 7: perplexity (two readings), by seed, the budget check, paired differences, Thm 4.3's
    masked loss. -> {arm: per seed, did it end on the unigram plateau} ({} when the record lacks a seed)."""
    seeds, res = settings.seeds, settings.res
    suffix = run_dir.split('table7')[-1]
    steps = suffix.lstrip('-') or settings.default_steps
    runs7 = {data: table7_runs(run_dir, seeds, data) for data in ('shakespeare', 'wikipedia')}
    if None in runs7.values():
        return {}
    # the [MASK]-after-target reading (eval_ppl --bert_future=mask) as extra columns, once every seed has it
    masked7 = {data: table7_runs(run_dir, seeds, data, 'ppl-mask') for data in ('shakespeare', 'wikipedia')}
    masked_reading = None not in masked7.values()
    rows, ppl, short, masked_ppl = [], {}, {}, {}
    for data, by_model in runs7.items():
        curves = {}
        for name, runs in by_model.items():
            ppl[data, name] = [run['ppl'] for run in runs]
            short[data, name] = [short_ppl(run) for run in runs]
            row = f"| {data} | {name} | {mean_std(ppl[data, name], '.1f')} | {mean_std(short[data, name], '.1f')} |"
            if masked_reading:
                masked_runs = masked7[data][name]
                masked_ppl[data, name] = [run['ppl'] for run in masked_runs]
                row += (f" {mean_std(masked_ppl[data, name], '.1f')} |"
                        f" {mean_std([short_ppl(run) for run in masked_runs], '.1f')} |")
            rows.append(row)
            starts = [bucket['k_first'] + 1 for bucket in runs[0]['buckets']]
            curves[name] = (starts, [float(np.mean([run['buckets'][j]['ppl'] for run in runs]))
                                     for j in range(len(starts))])
        line_plot(f'{res}/fig3_ppl_by_k_{data}{suffix}.png', curves, title=f'Fig. 3: ppl by conditioning length, '
                  f'{data}, {steps} steps ({over(seeds)})', xlabel='k+1 (bucket start)', ylabel='ppl',
                  logx=True, logy=True)
    header = ["data", "model", "ppl", "ppl at k < 8"]
    if masked_reading:
        header += ["ppl, [MASK] after target", "at k < 8, [MASK] after target"]
    report.table(f"Table 7 / Fig. 3: perplexity of masked models, {steps} steps", header, rows)
    # the same, seed by seed: at this scale a seed's run either leaves the unigram plateau or not, and a mean over
    # seeds hides which runs did (the budget check below gives the step)
    models = [name for data, name in ppl if data == 'shakespeare' and not name.startswith('(')]
    report.table(f"Table 7, {steps} steps: perplexity by seed ({' / '.join(seeds)})",
                 ["model", "held-out plays", "Wikipedia"],
                 [f"| {name} | " + ' | '.join(' / '.join(f'{value:.1f}' for value in ppl[data, name])
                                             for data in ('shakespeare', 'wikipedia')) + ' |' for name in models])
    unigram = ppl.get(('shakespeare', '(unigram)'))  # eval_ppl's floor row, in ppl; its loss is the plateau
    on_plateau = budget_check(report, settings, f"Table 7, {steps} steps: validation loss by step (nats per masked "
                              "target)", {name: [f'{run_dir}/{name}-{seed}' for seed in seeds] for name in models},
                              f'{res}/table7_val_loss{suffix}.png', steps,
                              floor=None if unigram is None else np.log(np.mean(unigram)))
    fixed_vs_vm = [(mlm, 'vm') for mlm in ('mlm15', 'mlm30')] + [(mlm, 'vm_2s') for mlm in ('mlm15_2s', 'mlm30_2s')]
    pairs = [(data, mlm, vm) for data in ('shakespeare', 'wikipedia') for mlm, vm in fixed_vs_vm
             if (data, mlm) in ppl and (data, vm) in ppl]
    if suffix == '':
        judge_b1_b2(report, runs7, ppl, pairs)
    rows = []
    for data, mlm, vm in pairs:
        differences = np.subtract(ppl[data, vm], ppl[data, mlm])
        shown = as_printed(differences, '.1f')
        rows.append(f"| {data}: {vm} - {mlm} | {mean_std(shown, '.1f')} | {direction(shown, -1)} | "
                    f"{p_values(differences)} | {difference_cell(short[data, mlm], short[data, vm], -1, '.1f')} |"
                    # a one-stream model's reading decides more than its objective does on some seeds
                    + (f" {difference_cell(masked_ppl[data, mlm], masked_ppl[data, vm], -1, '.1f')} |"
                       if masked_reading else '')
                    + (f" {gpt2_cell(gpt2_table7, data, mlm, vm)} |" if settings.gpt2_record else '')
                    + (f" {learned_cell(ppl, on_plateau, data, mlm, vm)} |" if on_plateau else ''))
    report.table(f"Table 7, {steps} steps: paired differences (paper: vm below both fixed ratios)",
                 ["difference", "ppl", "paper's way?", "p (t-test / sign)", "at k < 8"]
                 + (["[MASK] after target"] if masked_reading else []) + settings.gpt2_header()
                 + (["seeds where both runs left the plateau (post hoc)"] if on_plateau else []), rows)
    maskloss_section(report, settings, run_dir, suffix, steps, fixed_vs_vm)
    return on_plateau

def maskloss_section(report, settings, run_dir, suffix, steps, fixed_vs_vm):
    """Thm 4.3 measured (theory.py maskloss): masked loss at fixed mask ratios, inside and outside the training
    ranges."""
    paths = [f'{run_dir}/maskloss-{seed}/maskloss.csv' for seed in settings.seeds]
    if not all(os.path.exists(path) for path in paths):
        return
    loss = {}  # {(arm, ratio): [nats, one per seed]}
    for path in paths:
        for entry in csv.DictReader(open(path)):
            loss.setdefault((arm_and_seed(entry['series'].split()[-1])[0], float(entry['mask ratio rho'])), []).append(
                float(entry['nats per masked token']))
    arms = list(dict.fromkeys(arm for arm, _ in loss))
    ratios = sorted({ratio for _, ratio in loss})
    line_plot(f'{settings.res}/maskloss{suffix}.png',
              {arm: (ratios, [np.mean(loss[arm, ratio]) for ratio in ratios]) for arm in arms},
              title=f'Thm 4.3 measured: masked loss by mask ratio, {steps} steps ({over(settings.seeds)})',
              xlabel='mask ratio', ylabel='nats per masked token')
    compared = [(mlm, vm) for mlm, vm in fixed_vs_vm if mlm in arms and vm in arms]
    rows = [f"| {arm} | " + ' | '.join(mean_std(loss[arm, ratio], '.3f') for ratio in ratios) + ' |' for arm in arms]
    rows += [f"| {vm} - {mlm} | " + ' | '.join(difference_cell(loss[mlm, ratio], loss[vm, ratio], -1, '.3f')
                                              for ratio in ratios) + ' |' for mlm, vm in compared]
    report.table(f"Thm 4.3 measured: masked loss by mask ratio, {steps} steps (nats per masked token, held-out plays; "
                 "lower is better)", ["model"] + [f"ρ = {ratio:g}" for ratio in ratios], rows)
    # post hoc: does vm's deficit grow with the mask ratio? Each seed's least-squares slope of vm - mlm over ρ
    slopes = [[np.polyfit(ratios, [loss[vm, ratio][i] - loss[mlm, ratio][i] for ratio in ratios], 1)[0]
               for i in range(len(settings.seeds))] for mlm, vm in compared]
    report.table(f"Thm 4.3 measured, {steps} steps: does vm's deficit grow with the mask ratio? (post hoc)",
                 ["difference", "slope over ρ, per seed (nats per unit ρ)", "seeds with a positive slope",
                  "p (t-test / sign)"],
                 [f"| {vm} - {mlm} | {mean_std(seed_slopes, '.3f')} | {sum(s > 0 for s in seed_slopes)} of "
                  f"{len(seed_slopes)} | {p_values(seed_slopes)} |"
                  for (mlm, vm), seed_slopes in zip(compared, slopes)])

# -----------------------------------------------------------------------------
# Table 2: ar vs dar on the offline suite

TASKS = [('polarity', 'acc'), ('hedge', 'mcc'), ('plagiarism', 'acc'), ('lee_sts', 'pearson')]

def table2_scores(record, seeds, mode):  # {(arm, task): [score, one per seed]}, or None before every seed has it
    """One file per seed (linprobe-<seed>, finetune-<arm>-<seed>), or per run of all seeds (the GPT-2 runs' linprobe,
    finetune-<arm>): each row names its checkpoint, hence its arm and seed."""
    scores = {}
    for path in glob.glob(f'{record}/text/{mode}*/glue_{mode}.json'):
        for entry in json.load(open(path))['summary']:
            arm, seed = arm_and_seed(os.path.dirname(entry['ckpt']))
            for task, _ in TASKS:
                scores.setdefault((arm, task), {})[seed] = next(iter(entry['medians'][task].values()))
            scores.setdefault((arm, 'avg'), {})[seed] = entry['averages']['offline avg']
    if not scores or not all(seed in by_seed for by_seed in scores.values() for seed in seeds):
        return None
    return {key: [by_seed[seed] for seed in seeds] for key, by_seed in scores.items()}

def table2_baselines(record, seeds, mode):
    """Rows beside Table 2 where the record has them (reproduce_rope_baselines.sh): ar at initialisation by the same
    protocol, each seed, and the probe on word counts (one run: no model, no seed) beside probe and fine-tune."""
    rows = []
    random = {}
    for path in glob.glob(f'{record}/text/baseline-random-*/glue_{mode}.json'):
        for entry in json.load(open(path))['summary']:
            seed = arm_and_seed(os.path.dirname(entry['ckpt']))[1]
            for task, _ in TASKS:
                random.setdefault(task, {})[seed] = next(iter(entry['medians'][task].values()))
            random.setdefault('avg', {})[seed] = entry['averages']['offline avg']
    if random and all(seed in random['avg'] for seed in seeds):
        rows.append("| ar at initialisation (baseline) | " + ' | '.join(
            mean_std([random[task][seed] for seed in seeds], '.1f') for task, _ in TASKS + [('avg', '')]) + ' |')
    bag = f'{record}/text/baseline-bag_of_words/glue_linprobe.json'
    if os.path.exists(bag):
        (entry,) = json.load(open(bag))['summary']
        scores = [next(iter(entry['medians'][task].values())) for task, _ in TASKS] + [entry['averages']['offline avg']]
        rows.append("| bag of words, linear probe (input baseline) | " + ' | '.join(f"{score:.1f}" for score in scores)
                    + ' |')
    return rows

def table2_section(report, settings):
    budget_check(report, settings, "Table 2: validation loss by step (nats per target)",
                 {arm: [f'{settings.record}/text/{arm}-{seed}' for seed in settings.seeds] for arm in ('ar', 'dar')},
                 f'{settings.res}/table2_val_loss.png', settings.default_steps)
    columns = [task for task, _ in TASKS] + ['avg']
    for mode, part in (('linprobe', 'linear probe'), ('finetune', 'fine-tune')):
        scores = table2_scores(settings.record, settings.seeds, mode)
        if scores is None:
            continue
        rows = [f"| {arm} | " + ' | '.join(mean_std(scores[arm, task], '.1f') for task in columns) + ' |'
                for arm in ('ar', 'dar')]
        rows.append("| dar - ar | " + ' | '.join(difference_cell(scores['ar', task], scores['dar', task], 1, '.1f')
                                                 for task in columns) + ' |')
        # B3 names no seed rule: the mean
        report.compare('B3', part, f'dar above ar, {mode} average', np.subtract(scores['dar', 'avg'],
                       scores['ar', 'avg']), 1, 'the mean', '.1f')
        gpt2 = table2_scores(settings.gpt2_record, settings.gpt2_seeds, mode) if settings.gpt2_record else None
        if gpt2:
            rows.append(f"| dar - ar, {settings.gpt2_header()[0]} | " +
                        ' | '.join(difference_cell(gpt2['ar', task], gpt2['dar', task], 1, '.1f') for task in columns)
                        + ' |')
        rows += table2_baselines(settings.record, settings.seeds, mode)
        report.table(f"Table 2: ar vs dar t = 2 on the offline suite, {mode}",
                     ["model"] + [f"{task} ({metric})" for task, metric in TASKS] + ["average"], rows)

# -----------------------------------------------------------------------------
# Fig. 2: connectivity (top pairwise inner products of pooled features): raw, cosine, cosine of centred features

FIG2_SCALES = (('raw inner products (App. B.2)', ''), ('cosine similarities', '-cosine'),
               ('cosine similarities of centred features', '-centred'))

def connectivity(record, seeds, suffix):  # {model: {seed: {pair rank: similarity}}}, or None before every seed has it
    curves = {}
    for seed in seeds:
        path = f'{record}/fig2{suffix}/{seed}/connectivity.csv'
        if os.path.exists(path):
            for entry in csv.DictReader(open(path)):
                model = 'ar' if ' ar ' in entry['series'] else 'mlm15'
                curves.setdefault(model, {}).setdefault(seed, {})[int(entry['pair rank'])] = \
                    float(entry['inner product'])
    return curves if curves and all(len(by_seed) == len(seeds) for by_seed in curves.values()) else None

def last_rank_ratio(curves, seeds):  # mlm 0.15 over ar at the last kept rank, per seed
    return np.array([curves['mlm15'][seed][max(curves['mlm15'][seed])] / curves['ar'][seed][max(curves['ar'][seed])]
                     for seed in seeds])

def ratio_cell(ratio):  # the ratio minus 1 is the paired difference tested
    return f"{mean_std(ratio, '.3g')} ({direction(ratio - 1, 1)}, {p_values(ratio - 1)})"

def fig2_section(report, settings, mlm15_on_plateau):
    seeds = settings.seeds
    for scale, suffix in FIG2_SCALES:
        curves = connectivity(settings.record, seeds, suffix)
        if curves is None:
            continue
        plotted, rows = {}, []
        for model, by_seed in curves.items():  # log-spaced ranks (an older full curve: the same ranks)
            ranks = [rank for rank in log_ranks(max(by_seed[seeds[0]])) if all(rank in by_seed[s] for s in seeds)]
            top = np.array([[by_seed[seed][rank] for rank in ranks] for seed in seeds])
            plotted[model] = (ranks, top.mean(axis=0))
            rows.append(f"| {model} | {mean_std(top[:, 0], '.3g')} | "
                        f"{mean_std(top[:, ranks.index(min(100, ranks[-1]))], '.3g')} | "
                        f"{mean_std(top[:, -1], '.3g')} |")
        line_plot(f'{settings.res}/fig2_connectivity{suffix}.png', plotted, title=f'Fig. 2: top pairs of pooled '
                  f'features, {scale} ({over(seeds)})', xlabel='pair rank', ylabel='inner product', logx=True)
        ratio = last_rank_ratio(curves, seeds)
        rows.append(f"| mlm15 / ar at the last kept rank | | | {ratio_cell(ratio)} |")
        if suffix == '-cosine':
            report.compare('B4', 'cosine, last kept rank, every seed', 'mlm15 / ar - 1, cosine, at the last kept rank',
                           ratio - 1, 1, 'every seed')
        if mlm15_on_plateau is not None:  # post hoc: a model on the unigram plateau maps every window to nearly the
            # same feature, so its cosine connectivity is ~1 whatever it learned: keep the seeds whose mlm 0.15 left it
            learned = ~mlm15_on_plateau
            rows.append("| the same ratio, seeds whose mlm15 left the plateau (post hoc) | | | "
                        + (f"{ratio_cell(ratio[learned])}, " if learned.any() else '–, ')
                        + f"{learned.sum()} of {len(learned)} seeds |")
        gpt2 = connectivity(settings.gpt2_record, settings.gpt2_seeds, suffix) if settings.gpt2_record else None
        if gpt2:
            rows.append(f"| the same ratio, {settings.gpt2_header()[0]} | | | "
                        f"{ratio_cell(last_rank_ratio(gpt2, settings.gpt2_seeds))} |")
        report.table(f"Fig. 2: connectivity, {scale}, ar vs mlm 0.15 (paper: mlm's curve above ar's)",
                     ["model", "top-1 pair", "100th pair", f"{ranks[-1]}th pair"], rows)

# -----------------------------------------------------------------------------
# Tables 3, 9 (linear probe, fine-tune) and 8 (reconstruction) on Fashion-MNIST, and the toy spectra beside them

def vision_scores(pattern, key):  # {arm: {seed: value}}
    found = {}
    for path in glob.glob(pattern):
        for entry in csv.DictReader(open(path)):
            arm, seed = arm_and_seed(entry['model'])
            found.setdefault(arm, {})[seed] = float(entry[key])
    return found

def vision_section(report, settings):
    """-> ({arm: probe accuracies}, {arm: fine-tune accuracies}) over seeds, or (None, None) before every seed has
    them."""
    record, seeds, res = settings.record, settings.seeds, settings.res
    probe = vision_scores(f'{record}/vision/eval-*/linprobe.csv', 'val_acc')
    tune = vision_scores(f'{record}/vision/ft-*/finetune.csv', 'val_acc')
    arms = ['ar', 'dar2', 'dar3', 'dar4']
    probe_acc = tune_acc = None
    if all(len(probe.get(arm, {})) == len(seeds) and len(tune.get(arm, {})) == len(seeds) for arm in arms):
        probe_acc = {arm: [probe[arm][seed] for seed in seeds] for arm in arms}
        tune_acc = {arm: [tune[arm][seed] for seed in seeds] for arm in arms}
        rows = [f"| {arm} | {mean_std(probe_acc[arm])} | {mean_std(tune_acc[arm])} | "
                + ('(baseline) | (baseline)' if arm == 'ar'
                   else f"{difference_cell(probe_acc['ar'], probe_acc[arm], 1)} | "
                        f"{difference_cell(tune_acc['ar'], tune_acc[arm], 1)}") + ' |' for arm in arms]
        report.table("Tables 3 and 9: ar vs dar t = 2..4 on Fashion-MNIST (top-1 %, paper: dar above ar)",
                     ["model", "linear probe", "fine-tune", "probe: minus ar", "fine-tune: minus ar"], rows)
        orders = [1, 2, 3, 4]
        line_plot(f'{res}/table9_acc_by_t.png', {'linear probe': (orders, [np.mean(probe_acc[a]) for a in arms]),
                                                 'fine-tune': (orders, [np.mean(tune_acc[a]) for a in arms])},
                  title=f'Table 9: Fashion-MNIST top-1 by dar t (t = 1 is ar; {over(seeds)})',
                  xlabel='t', ylabel='top-1 %')
    pixel_l2 = vision_scores(f'{record}/vision/eval-*/recon.csv', 'l2')
    lpips = vision_scores(f'{record}/vision/eval-*/recon.csv', 'lpips')
    mean_fill = vision_scores(f'{record}/vision/eval-*/recon.csv', 'baseline_l2')
    recon_arms = ['mae75', 'mae50', 'vm']
    if all(len(pixel_l2.get(arm, {})) == len(seeds) for arm in recon_arms):
        l2_by_arm = {arm: [pixel_l2[arm][seed] for seed in seeds] for arm in recon_arms}
        lpips_by_arm = {arm: [lpips[arm][seed] for seed in seeds] for arm in recon_arms}
        rows = [f"| {arm} | {mean_std(l2_by_arm[arm], '.4f')} | {mean_std(lpips_by_arm[arm], '.4f')} |"
                for arm in recon_arms]
        rows.append(f"| mean-fill baseline | {mean_std([mean_fill['vm'][seed] for seed in seeds], '.4f')} | |")
        rows += [f"| vm - {mae} | {difference_cell(l2_by_arm[mae], l2_by_arm['vm'], -1, '.4f')} | "
                 f"{difference_cell(lpips_by_arm[mae], lpips_by_arm['vm'], -1, '.4f')} |" for mae in recon_arms[:2]]
        report.table("Table 8: reconstruction of 25% masked patches (lower is better; paper: vm lowest)",
                     ["model", "pixel L2", "ST-LPIPS"], rows)
        for path in glob.glob(f'{record}/vision/eval-{seeds[0]}/recon_*.png'):
            copy(path, res)
    return probe_acc, tune_acc

def toy_section(report, settings, probe_acc, tune_acc):
    """Thm 4.2's toy, the theorem's own currency, next to the trained models."""
    toy = f'{settings.record}/toy/toy_tails_r2_s6_T2.csv'
    if not os.path.exists(toy):
        return
    tails = {entry['objective']: float(entry['sum_sigma4_beyond_r']) for entry in csv.DictReader(open(toy))}
    for name in ('toy_spectra_r2_s6_T2.png', 'toy_spectra_r2_s6_T2.csv'):
        copy(f'{settings.record}/toy/{name}', settings.res)
    rows = [f"| {label} | {tails[key]:.3f} | "
            + (f"{mean_std(probe_acc[arm])} / {mean_std(tune_acc[arm])}" if probe_acc else '') + ' |'
            for label, key, arm in [('ar (dar t = 1)', 'ar', 'ar')] +
            [(f'dar t = {t}', f'dar t={t}', f'dar{t}') for t in (2, 3, 4)]]
    report.table("Toy spectra (Thm 4.2, r = 2, s = 6, T = 2) next to the trained models: smaller tail = better "
                 "connected", ["objective", "Σ_{j>r} σ_j⁴ (exact)", "Fashion-MNIST probe / fine-tune"], rows)

# -----------------------------------------------------------------------------
# B5 (reproduce_rope.sh): the any-order bound of two-stream mdlm and two-stream vm

BOUND_ARMS = ('vm_2s', 'mdlm_2s')

def bound_section(report, settings):
    """eval_ppl.py --reading=elbo of each seed's two-stream vm and mdlm (bound/elbo-<seed>/summary.json), once every
    seed has it: nats per byte, mdlm - vm paired by seed, and mdlm's training curve (its bound) checked as the
    others' are."""
    budget_check(report, settings, "B5: mdlm two-stream's validation loss by step (its any-order bound, nats per "
                 "byte)", {'mdlm_2s': [f'{settings.record}/bound/mdlm_2s-{seed}' for seed in settings.seeds]},
                 f'{settings.res}/b5_mdlm_val_loss.png', settings.default_steps)
    paths = [f'{settings.record}/bound/elbo-{seed}/summary.json' for seed in settings.seeds]
    if not all(os.path.exists(path) for path in paths):
        return
    runs = [{checkpoint['name']: checkpoint for checkpoint in json.load(open(path))['checkpoints']} for path in paths]
    nll = {arm: [run[arm]['nll'] for run in runs] for arm in BOUND_ARMS}
    rows = [f"| {arm} | {mean_std(nll[arm], '.3f')} | "
            + ' / '.join(f"{run[arm]['nll']:.3f} ± {run[arm]['se']:.3f}" for run in runs) + ' |' for arm in BOUND_ARMS]
    rows.append(f"| mdlm_2s - vm_2s | {difference_cell(nll['vm_2s'], nll['mdlm_2s'], -1, '.3f')} | |")
    report.table(f"B5: the any-order bound on the held-out plays, {settings.default_steps} steps (nats per byte, "
                 f"{runs[0]['vm_2s']['targets']:,} bytes, {runs[0]['vm_2s']['passes_per_window']} passes a window; "
                 "lower is better)", ["model", "bound", f"by seed ({' / '.join(settings.seeds)}), ± its standard "
                 "error"], rows)
    report.compare('B5', 'held-out plays, the mean', 'mdlm_2s below vm_2s, any-order bound (nats/byte)',
                   np.subtract(nll['mdlm_2s'], nll['vm_2s']), -1, 'the mean')

# -----------------------------------------------------------------------------
# the registered hypotheses, judged by their text

def verdict(comparisons):
    """A registered hypothesis (or a clause of one) is one 'and' of its comparisons: 'effect' when every comparison
    meets its rule with the t-test's p < 0.05 (an intersection-union test: each at 0.05 keeps the whole at 0.05),
    'met, not beyond chance' when every one meets its rule but some p does not, 'not met' otherwise."""
    if all(comparison.effect() for comparison in comparisons):
        return 'effect'
    return 'met, not beyond chance' if all(comparison.rule_met() for comparison in comparisons) else 'not met'

def hypotheses_section(report, settings=None):
    """settings.registration, when set, names the script the hypotheses were registered in: their text is read from
    it, and each comparison has its minimum detectable effect beside it, from the learned record's spread (B5, which
    the learned record lacks: the registered one) and from this record's."""
    registration = settings.registration if settings else ''
    texts, mdes = registered_hypotheses(registration) if registration else (REGISTERED, {})
    learned = learned_comparisons() if registration else {}
    comparisons = sorted(report.comparisons, key=lambda comparison: comparison.hypothesis)
    rows = []
    for comparison in comparisons:
        t, p = paired_t_test(comparison.differences)
        toward_paper = comparison.sign * comparison.differences
        row = (f"| {comparison.hypothesis} | {comparison.part} | {comparison.label} | "
               f"{mean_std(as_printed(comparison.differences, comparison.fmt), comparison.fmt)} | "
               f"{(toward_paper > 0).sum()} of {len(toward_paper)} | {t:.2f} | {p:.2g} | "
               f"{sign_test_p(comparison.differences):.2g} | {comparison.rule} | "
               f"{'yes' if comparison.rule_met() else 'no'} | {'effect' if comparison.effect() else 'no'} |")
        if registration:
            n, key = len(comparison.differences), (comparison.hypothesis, comparison.label)
            basis = f"{mde(learned[key], n):{comparison.fmt}}" if key in learned else \
                f"{mdes[comparison.hypothesis][2]} (registered)" if comparison.hypothesis in mdes else '–'
            row += f" {basis} | {mde(comparison.differences, n):{comparison.fmt}} |"
        rows.append(row)
    names = list(dict.fromkeys(comparison.hypothesis for comparison in comparisons))
    span = ('-'.join(dict.fromkeys((names[0], names[-1]))) if names else '') if registration else "B1-B4"
    report.table(f"Hypotheses {span}, comparison by comparison (rule: the registered text's; effect: rule met and "
                 f"t-test p < {SIGNIFICANCE})", ["hypothesis", "clause", "comparison", "paired difference",
                 "seeds the paper's way", "t", "p (t-test)", "p (sign test)", "rule", "rule met?", "effect?"]
                 + (["MDE, the learned record's spread", "MDE, this record's spread"] if registration else []), rows)
    rows = []
    for name in names:
        mine = [comparison for comparison in comparisons if comparison.hypothesis == name]
        parts = list(dict.fromkeys(comparison.part for comparison in mine))
        clauses = '; '.join(f"{part}: {verdict([c for c in mine if c.part == part])}" for part in parts)
        rows.append(f"| {name} | {texts[name]} | {verdict(mine)} | {clauses} | "
                    f"{sum(c.rule_met() for c in mine)} of {len(mine)} |"
                    + (f" {mdes[name][2]} (paired sd {mdes[name][0]}, {mdes[name][1]}) |" if registration and
                       name in mdes else ' – |' if registration else ''))
    where = (f"{os.path.basename(registration)}, before any of its runs" if registration else
             "reproduce.sh, commit 9409b0e, before any byte-level run")
    report.table(f"Hypotheses {span} as registered ({where}): verdicts",
                 ["hypothesis", "registered text", "verdict", "by clause", "comparisons whose rule is met (post hoc "
                  "count, not a verdict)"] + (["MDE registered (two-sided p < 0.05 the stated way, power 0.8, "
                                               f"{len(settings.seeds)} seeds)"] if registration else []), rows)

# -----------------------------------------------------------------------------

def main(argv):
    if len(argv) not in (8, 9):
        sys.exit('\n'.join(__doc__.splitlines()[-2:]))
    settings = Settings(argv[0], argv[1], argv[2].split(), argv[3], argv[4], argv[5].split(), argv[6],
                        argv[7] == 'bytes',  # the hypotheses B1-B4 in reproduce.sh are the byte-level runs'
                        argv[8] if len(argv) == 9 else '')
    os.makedirs(settings.res, exist_ok=True)
    report = Report([f"Seeds {', '.join(settings.seeds)}; mean ± sample std over seeds. A paired difference: 'yes' = "
                     "the mean goes the paper's way and every seed agrees, 'weak' = the mean does but some seed does "
                     "not, 'no' = the mean goes the other way; p = two-sided paired t-test / exact sign test (the sign "
                     f"test cannot go below {2 / 2 ** len(settings.seeds):.2g} with {len(settings.seeds)} seeds).", ""])
    gpt2_table7 = {data: table7_runs(f'{settings.gpt2_record}/table7', settings.gpt2_seeds, data)
                   if settings.gpt2_record else None for data in ('shakespeare', 'wikipedia')}
    table7_on_plateau = {}  # the default budget's: Fig. 2 reads mlm 0.15's
    for run_dir in sorted(glob.glob(f'{settings.record}/table7*'), key=lambda path: (len(path), path)):
        on_plateau = table7_section(report, settings, run_dir, gpt2_table7)
        if run_dir.endswith('table7'):
            table7_on_plateau = on_plateau
    table2_section(report, settings)
    fig2_section(report, settings, table7_on_plateau.get('mlm15'))
    probe_acc, tune_acc = vision_section(report, settings)
    toy_section(report, settings, probe_acc, tune_acc)
    if settings.registration:
        bound_section(report, settings)
    if settings.byte_level and report.comparisons:
        hypotheses_section(report, settings)
    atomic_write(f'{settings.res}/tables.md', '\n'.join(report.lines))
    print('\n'.join(report.lines))


if __name__ == '__main__':
    main(sys.argv[1:])

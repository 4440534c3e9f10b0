"""experiments/reproduce_rope.sh, the byte-level claims registered again with rotary positions: its text parses into
the hypotheses summarize.py judges (B1-B4 reproduce.sh's word for word, and B5), the registered minimum detectable
effects are stats' computation, B5 gives the known verdict on a synthetic record, the MDEs printed in tables.md are
stats' computation, and the script trains and evaluates what it registers, each evaluation after the runs it reads."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, file_at_commit

from experiments import summarize
from experiments.stats import minimum_detectable_effect

SCRIPT = os.path.join(ROOT, 'experiments', 'reproduce_rope.sh')
SEEDS = ['1340', '1341', '1342', '1343', '1344']
PILOT = os.path.join(ROOT, 'experiments', 'rope-pilot', 'runs')
FMT = {'B1': '.1f', 'B2': '.3f', 'B3': '.1f', 'B4': '.3f', 'B5': '.3f'}

def header_text():
    """The script's comment lines as one line of words (a phrase may wrap across lines)."""
    return ' '.join(' '.join(line.lstrip('#').split()) for line in open(SCRIPT) if line.startswith('#'))


def test_the_registration_parses_into_the_hypotheses_the_summary_judges():
    texts, mdes = summarize.registered_hypotheses(SCRIPT)
    assert list(texts) == ['B1', 'B2', 'B3', 'B4', 'B5'] and sorted(mdes) == list(texts)
    assert {name: texts[name] for name in summarize.REGISTERED} == summarize.REGISTERED  # word for word
    reproduce = open(os.path.join(ROOT, 'experiments', 'reproduce.sh')).read().split('set -euo')[0]
    script = open(SCRIPT).read()
    for name in summarize.REGISTERED:  # the same lines as reproduce.sh's header
        block = re.search(rf'^#   {name} .*\n(?:#      .*\n)*', reproduce, re.M).group(0)
        assert block in script, name
    assert texts['B5'].startswith("two-stream mdlm's any-order bound on the held-out plays is below two-stream vm")
    assert re.search(r'^REGISTERED_SEEDS="([^"]*)"', script, re.M).group(1) == ' '.join(SEEDS)
    assert f"(seeds {' '.join(SEEDS)}, all five)" in header_text()


def test_the_registered_mdes_are_stats_computation():
    """B1-B4: the range over each hypothesis's comparisons of the paired sd in the learned record and of
    minimum_detectable_effect(sd, 5 seeds, one-sided 0.025, power 0.8); B5: the rope pilot's vm two-stream - mdlm
    two-stream at step 600."""
    _, mdes = summarize.registered_hypotheses(SCRIPT)
    learned = summarize.learned_comparisons()
    for name in ('B1', 'B2', 'B3', 'B4'):
        mine = [differences for (hypothesis, _), differences in learned.items() if hypothesis == name]
        sds = [np.std(d, ddof=1) for d in mine]
        detectable = [minimum_detectable_effect(sd, 5, 0.025, 0.8) for sd in sds]
        span = lambda values: '-'.join(dict.fromkeys(f"{v:{FMT[name]}}" for v in (min(values), max(values))))
        assert (mdes[name][0], mdes[name][2]) == (span(sds), span(detectable)), name
    assert summarize.mde([1.0, 2.0, 3.0], 5) == pytest.approx(minimum_detectable_effect(1.0, 5, 0.025, 0.8))
    assert minimum_detectable_effect(1.0, 5, 0.025, 0.8) == pytest.approx(1.682, abs=5e-4)  # quoted in the header
    assert '1.682 x the paired sd' in header_text()
    ends = {}
    for arm in ('vm2s', 'mdlm2s'):
        for seed in ('1337', '1338', '1339'):
            path = os.path.join(PILOT, arm, 'rope', seed, 'log.jsonl')
            if not os.path.exists(path):
                pytest.skip('the rope pilot record lacks a run')
            ends[arm, seed] = [row for row in map(json.loads, open(path)) if row.get('iter') == 600
                               and 'val_loss' in row][-1]['val_loss']
    differences = [ends['vm2s', seed] - ends['mdlm2s', seed] for seed in ('1337', '1338', '1339')]
    assert mdes['B5'][0] == f"{np.std(differences, ddof=1):.3f}"
    assert mdes['B5'][2] == f"{minimum_detectable_effect(np.std(differences, ddof=1), 5, 0.025, 0.8):.3f}"


def write_bound(record, seed, vm, mdlm):
    path = record / 'bound' / f'elbo-{seed}'
    path.mkdir(parents=True)
    checkpoints = [dict(name=name, nll=nll, se=0.01, targets=31750, passes_per_window=16)
                   for name, nll in (('vm_2s', vm), ('mdlm_2s', mdlm))]
    (path / 'summary.json').write_text(json.dumps(dict(reading='elbo', checkpoints=checkpoints)))


def summarize_record(record, res, seeds=SEEDS, steps='1200', in_process=True):
    """-> tables.md of the record as reproduce_rope.sh summarises it: in this process, or as the
    script runs it, `python -m experiments.summarize` in a bare environment (the record's
    regeneration: once)."""
    args = [str(record), str(res), ' '.join(seeds), steps, '', '', '', 'bytes', SCRIPT]
    if in_process:
        summarize.main(args)
    else:
        bare = dict(PYTHONPATH=ROOT, PATH='/usr/bin:/bin')
        result = subprocess.run([sys.executable, '-m', 'experiments.summarize', *args], env=bare,
                                capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 0, result.stderr
    return (res / 'tables.md').read_text()


def verdict_row(tables, name):
    return [line for line in tables.splitlines() if line.startswith(f'| {name} |')][-1]


@pytest.mark.parametrize('offset, expected', [(-0.1, 'effect'), (+0.1, 'not met')])
def test_b5_gives_its_known_verdict(tmp_path, offset, expected):
    """mdlm's bound 0.1 below vm's on every seed (a little noise): an effect; 0.1 above: not met."""
    rng = np.random.default_rng(0)
    for seed in SEEDS:
        vm = 2.5 + rng.normal(0, 0.02)
        write_bound(tmp_path / 'record', seed, vm, vm + offset + rng.normal(0, 0.01))
    tables = summarize_record(tmp_path / 'record', tmp_path / 'res')
    cells = [cell.strip() for cell in verdict_row(tables, 'B5').strip('|').split('|')]
    _, mdes = summarize.registered_hypotheses(SCRIPT)
    assert cells[1] == summarize.registered_hypotheses(SCRIPT)[0]['B5'] and cells[2] == expected
    assert cells[-1] == f"{mdes['B5'][2]} (paired sd {mdes['B5'][0]}, {mdes['B5'][1]})"
    assert 'B5: the any-order bound on the held-out plays, 1200 steps' in tables
    assert 'Hypotheses B5 as registered (reproduce_rope.sh, before any of its runs): verdicts' in tables


def test_the_mdes_in_tables_md_are_stats_computation(tmp_path):
    """The learned record summarised as if it were this registration's (its seeds): each comparison's two MDE
    columns, the learned record's spread and this record's, are then the same data, and both equal
    minimum_detectable_effect of its paired differences; B5's is the registered value."""
    record = tmp_path / 'record'
    shutil.copytree(summarize.LEARNED_RECORD, record)
    for seed in summarize.LEARNED_SEEDS:
        write_bound(record, seed, 2.5, 2.4 + 0.01 * int(seed[-1]))
    tables = summarize_record(record, tmp_path / 'res', summarize.LEARNED_SEEDS,
                              summarize.LEARNED_STEPS)
    learned = summarize.learned_comparisons()
    rows = [line for line in tables.split('### Hypotheses B1-B5, comparison by comparison')[1].split('###')[0]
            .splitlines() if line.startswith('| B')]
    assert len(rows) == len(learned) + 1
    for row in rows:
        cells = [cell.strip() for cell in row.strip('|').split('|')]
        if cells[0] == 'B5':
            assert cells[-2] == f"{summarize.registered_hypotheses(SCRIPT)[1]['B5'][2]} (registered)"
            continue
        differences = learned[cells[0], cells[2]]
        expected = f"{minimum_detectable_effect(np.std(differences, ddof=1), 5, 0.025, 0.8):{FMT[cells[0]]}}"
        assert cells[-2:] == [expected, expected], row


def fake_python(tmp_path):
    """A stand-in python that logs 'start <out_dir>' / 'end <out_dir>' around each job and leaves what a job of its
    kind leaves (a finished log for train.py)."""
    log, fake = tmp_path / 'events.log', tmp_path / 'python'
    fake.write_text(f"""#!/bin/bash
dir=""; steps=""; for a in "$@"; do case $a in --out_dir=*) dir=${{a#--out_dir=}} ;; --max_iters=*) steps=${{a#*=}} ;;
esac; done
[ -n "$dir" ] || {{ echo "call $*" >> {log}; exit 0; }}
echo "start $dir $*" >> {log}
sleep 0.05
mkdir -p "$dir"
case "$*" in
  *train.py*) touch "$dir/ckpt_best.pt" "$dir/ckpt_last.pt"; echo "{{\\"iter\\": $steps, \\"val_loss\\": 3.0}}" \\
                > "$dir/log.jsonl" ;;
  *eval_ppl.py*) touch "$dir/summary.json" ;;
  *maskloss*) touch "$dir/maskloss.csv" ;;
  *linprobe_glue*) touch "$dir/glue_linprobe.json" ;;
  *glue_offline*) touch "$dir/glue_finetune.json" ;;
  *connectivity*) touch "$dir/connectivity.csv" ;;
esac
echo "end $dir" >> {log}
""")
    fake.chmod(0o755)
    return log, fake


def run_script(tmp_path, **env):
    log, fake = fake_python(tmp_path)
    env = {**os.environ, 'PYTHON': str(fake), 'OUT': str(tmp_path / 'out'), 'RES': str(tmp_path / 'res'),
           'SEEDS': '7 8', **env}
    return subprocess.run(['bash', SCRIPT], env=env, capture_output=True, text=True, timeout=600), log  # a hang guard


def test_the_script_runs_what_it_registers_each_evaluation_after_its_runs(tmp_path):
    result, log = run_script(tmp_path)
    assert result.returncode == 0, result.stderr
    out = str(tmp_path / 'out')
    events = [line.split(' ', 2) for line in log.read_text().splitlines() if not line.startswith('call ')]
    starts = {event[1]: event[2] for event in events if event[0] == 'start'}
    train = {job: args.split() for job, args in starts.items() if args.startswith('train.py')}
    arms = ['mlm15', 'mlm30', 'vm', 'mlm15_2s', 'mlm30_2s', 'vm_2s', 'ar', 'dar', 'mdlm_2s']
    assert sorted(os.path.basename(job) for job in train) == sorted(f'{arm}-{seed}' for arm in arms for seed in '78')
    steps = re.search(r'^STEPS=\$\{STEPS:-(\d+)\}', open(SCRIPT).read(), re.M).group(1)
    for job, args in train.items():
        arm, seed = os.path.basename(job).rsplit('-', 1)
        assert args[1] == f'config/{arm}_shakespeare_bytes.py' and f'--seed={seed}' in args
        assert {'--rope=True', f'--max_iters={steps}', f'--lr_decay_iters={steps}', '--eval_interval=100'} <= set(args)
    evaluations = {job: args for job, args in starts.items() if job not in train}
    assert len(evaluations) == 2 * 12
    elbo = evaluations[f'{out}/bound/elbo-7'].split()
    assert {'--reading=elbo', f'--ckpt={out}/table7/vm_2s-7/ckpt_best.pt', f'--ckpt={out}/bound/mdlm_2s-7/ckpt_best.pt',
            '--max_tokens=32000', '--baseline_dataset='} <= set(elbo)
    ppl = evaluations[f'{out}/table7/ppl-mask-wikipedia-8'].split()
    assert ppl[1] == 'config/eval_ppl_wikipedia_bytes.py' and '--bert_future=mask' in ppl
    assert sum(a.startswith('--ckpt=') for a in ppl) == 6
    ended = set()
    for kind, job, *_ in events:  # no evaluation starts before every run it reads has ended
        if kind == 'end':
            ended.add(job)
        elif job in evaluations:
            read = {os.path.dirname(a[7:]) for a in evaluations[job].split() if a.startswith('--ckpt=')}
            assert read and read <= ended, job
    assert (tmp_path / 'res' / 'runs' / 'bound' / 'mdlm_2s-8' / 'log.jsonl').exists()
    assert not list((tmp_path / 'res').rglob('*.pt'))
    summary = [line for line in log.read_text().splitlines() if 'experiments.summarize' in line]
    assert summary == [f"call -m experiments.summarize {tmp_path / 'res' / 'runs'} {tmp_path / 'res'} 7 8 {steps}"
                       f"    bytes {SCRIPT.replace(ROOT + os.sep, '')}"]
    # a clone: the record, no checkpoints; every evaluation is recorded, so nothing trains or evaluates again
    shutil.rmtree(tmp_path / 'out')
    log.unlink()
    again, log = run_script(tmp_path)
    assert again.returncode == 0, again.stderr
    assert not [line for line in log.read_text().splitlines() if line.startswith('start')]


def test_a_missing_evaluation_trains_again_only_the_runs_it_reads(tmp_path):
    result, log = run_script(tmp_path, SEEDS='7')
    assert result.returncode == 0, result.stderr
    shutil.rmtree(tmp_path / 'out')
    shutil.rmtree(tmp_path / 'res' / 'runs' / 'bound' / 'elbo-7')
    log.unlink()
    again, log = run_script(tmp_path, SEEDS='7')
    assert again.returncode == 0, again.stderr
    started = [line.split()[1] for line in log.read_text().splitlines() if line.startswith('start')]
    out = tmp_path / 'out'
    assert sorted(started) == sorted([str(out / 'table7' / 'vm_2s-7'), str(out / 'bound' / 'mdlm_2s-7'),
                                      str(out / 'bound' / 'elbo-7')])
    assert (tmp_path / 'res' / 'runs' / 'table7' / 'vm_2s-7' / 'log_retrained.jsonl').exists()


def test_a_smoke_run_refuses_the_record(tmp_path):
    result, log = run_script(tmp_path, RES='experiments/repro-bytes-rope', STEPS='20')
    keys = ('STEPS', 'RES=', 'OUT=', 'experiments/repro-bytes-rope')  # changed; fix; record
    assert result.returncode == 2 and all(key in result.stderr for key in keys), result.stderr
    assert not log.exists()


@pytest.mark.record
def test_the_readme_quotes_b5_and_the_registration_commit(tmp_path):
    """experiments/README.md quotes B5 word for word, and the commit it names holds this registration unchanged."""
    from experiments.data_constrained import registered
    readme_text = open(os.path.join(ROOT, 'experiments', 'README.md')).read()
    readme = ' '.join(readme_text.replace('\n> ', ' ').split())
    assert f"B5 {registered(SCRIPT)[0]['B5']}" in readme
    section = readme_text.split('## The byte-level claims registered again with rotary positions')[1].split('\n## ')[0]
    commit = re.search(r'commit `([0-9a-f]{7,40})`', section).group(1)
    committed = file_at_commit(tmp_path, commit, 'experiments/reproduce_rope.sh')
    assert summarize.registered_hypotheses(committed) == summarize.registered_hypotheses(SCRIPT)


RECORD = os.path.join(ROOT, 'experiments', 'repro-bytes-rope')


def test_the_record_regenerates_its_tables_and_curves(tmp_path):
    """tables.md and every CSV and plot beside it come back byte for byte from the committed runs alone."""
    tables = summarize_record(os.path.join(RECORD, 'runs'), tmp_path, in_process=False)
    assert tables == open(os.path.join(RECORD, 'tables.md')).read()
    written = sorted(name for name in os.listdir(tmp_path) if name.endswith(('.csv', '.png')))
    assert written == sorted(name for name in os.listdir(RECORD) if name.endswith(('.csv', '.png')))
    for name in written:
        assert (tmp_path / name).read_bytes() == open(os.path.join(RECORD, name), 'rb').read(), name


@pytest.mark.record
def test_the_readme_verdicts_are_the_records():
    """experiments/README.md's verdict for each of B1-B5 is the one tables.md draws from the record."""
    tables = open(os.path.join(RECORD, 'tables.md')).read().split('as registered (reproduce_rope.sh')[1]
    section = open(os.path.join(ROOT, 'experiments', 'README.md')).read().split(
        '## The byte-level claims registered again with rotary positions')[1].split('\n## ')[0]
    for name in ('B1', 'B2', 'B3', 'B4', 'B5'):
        recorded = [cell.strip() for cell in verdict_row(tables, name).strip('|').split('|')]
        quoted = [cell.strip() for cell in verdict_row(section, name).strip('|').split('|')]
        assert quoted[1].strip('*') == recorded[2] and quoted[2] == recorded[3], name


def test_table2_baseline_rows_come_from_the_baseline_runs(tmp_path):
    """reproduce_rope_baselines.sh's files: ar at initialisation, one row over every seed (none until all have it),
    and the word-count probe's one run, beside both Table 2 tables."""
    def summary(ckpt, scores):
        medians = {'polarity': {'accuracy': scores[0]}, 'hedge': {'mcc': scores[1], 'accuracy': 50.0},
                   'plagiarism': {'accuracy': scores[2]}, 'lee_sts': {'pearson': scores[3]}}
        return dict(summary=[dict(ckpt=ckpt, medians=medians, averages={'offline avg': float(np.mean(scores))})])
    text = tmp_path / 'text'
    for i, seed in enumerate(SEEDS[:-1]):
        os.makedirs(text / f'baseline-random-{seed}')
        json.dump(summary(f'random:out/text/random-{seed}/ckpt_last.pt', [50.0 + i, 20.0, 40.0, 30.0]),
                  open(text / f'baseline-random-{seed}' / 'glue_linprobe.json', 'w'))
    assert summarize.table2_baselines(str(tmp_path), SEEDS, 'linprobe') == []
    os.makedirs(text / f'baseline-random-{SEEDS[-1]}')
    json.dump(summary(f'random:out/text/random-{SEEDS[-1]}/ckpt_last.pt', [54.0, 20.0, 40.0, 30.0]),
              open(text / f'baseline-random-{SEEDS[-1]}' / 'glue_linprobe.json', 'w'))
    os.makedirs(text / 'baseline-bag_of_words')
    json.dump(summary('bag_of_words', [67.0, 42.0, 60.0, 46.7]),
              open(text / 'baseline-bag_of_words' / 'glue_linprobe.json', 'w'))
    random, words = summarize.table2_baselines(str(tmp_path), SEEDS, 'linprobe')
    assert random.startswith('| ar at initialisation (baseline) | 52.0 ± 1.6 | 20.0 ± 0.0 |')
    assert words == '| bag of words, linear probe (input baseline) | 67.0 | 42.0 | 60.0 | 46.7 | 53.9 |'
    assert summarize.table2_baselines(str(tmp_path), SEEDS, 'finetune') == [words]  # no fine-tune runs yet


@pytest.mark.parametrize('rope, seeds, steps, summary', [
    ('True', ['1340', '1341', '1342', '1343', '1344'], '1200', ['', '', '', 'bytes', 'experiments/reproduce_rope.sh']),
    ('False', ['1337', '1338', '1339', '1340', '1341'], '3000', ['experiments/repro/runs', '1337 1338 1339', '1500',
                                                                 'bytes'])])
def test_the_baselines_script_runs_each_records_seeds_and_summary(tmp_path, rope, seeds, steps, summary):
    """reproduce_rope_baselines.sh: ROPE picks the record, its seeds, the random models' position encoding and the
    summary's arguments (the rotary record's by default, as before ROPE existed); the same probe and fine-tune."""
    log, fake = tmp_path / 'calls.log', tmp_path / 'python'
    fake.write_text(f"""#!/bin/bash
printf '%q ' "$@" >> {log}; echo >> {log}
dir=""; mode=linprobe; for a in "$@"; do case $a in --out_dir=*) dir=${{a#--out_dir=}} ;;
config/glue_offline.py) mode=finetune ;; esac; done
[ "$1" = eval_glue.py ] && touch "$dir/glue_$mode".{{md,csv,json}}
exit 0
""")
    fake.chmod(0o755)
    env = {**os.environ, 'PYTHON': str(fake), 'OUT': str(tmp_path / 'out'), 'RES': str(tmp_path / 'res'), 'JOBS': '1'}
    env.pop('SEEDS', None)
    env.pop('STEPS', None)
    if rope == 'False':
        env['ROPE'] = rope
    script = os.path.join(ROOT, 'experiments', 'reproduce_rope_baselines.sh')
    result = subprocess.run(['bash', script], env=env, capture_output=True, text=True, timeout=600)  # a hang guard
    assert result.returncode == 0, result.stderr
    calls = [shlex.split(line) for line in log.read_text().splitlines()]
    out, res = tmp_path / 'out', tmp_path / 'res'
    train = [call for call in calls if call[0] == 'train.py']
    assert [call[call.index(f'--rope={rope}') + 2] for call in train] == [f'--seed={seed}' for seed in seeds]
    evals = [call for call in calls if call[0] == 'eval_glue.py']
    assert len(evals) == 1 + 2 * len(seeds)
    assert evals[0][:3] == ['eval_glue.py', 'config/linprobe_glue_offline.py', '--ckpt=bag_of_words']
    for seed in seeds:
        ckpt = f'--ckpt=random:{out}/text/random-{seed}/ckpt_last.pt'
        assert ['eval_glue.py', 'config/linprobe_glue_offline.py', ckpt] in [call[:3] for call in evals]
        assert ['eval_glue.py', 'config/glue_offline.py', '--epochs=2', '--learning_rate=1e-3', '--seeds=0', ckpt] \
            in [call[:6] for call in evals]
        assert (res / 'runs' / 'text' / f'baseline-random-{seed}' / 'glue_finetune.json').exists()
    assert calls[-1] == ['-m', 'experiments.summarize', str(res / 'runs'), str(res), ' '.join(seeds), steps, *summary]

"""experiments/text_scale.sh and text_scale.py: the registered rules and constants are what the
summary reads (and the pilot's rule, unchanged), R1's pick, R2's verdicts and R3's extrapolation on
synthetic records with known answers, the tables regenerating byte for byte, the refusals of a smoke
run into the record and of tier 5 without a GPU, and the script end to end on a tiny suite, resumed
without training anything."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES_GLUE, ROOT, assert_record_regenerates, write_corpus
from warm_python import warm_python
from experiments import probing_pilot
from experiments import text_scale as ts
from experiments.stats import minimum_detectable_effect

SEEDS = [2100, 2101, 2102]
LINE = ['line_bigram_shift', 'line_somo', 'wiki_line_bigram_shift', 'wiki_line_somo']
WINDOW = ['play', 'speaker_change', 'verse_prose']
CELLS = [(pooling, lr) for pooling in ('last', 'mean') for lr in ('1e-3', '3e-4', '1e-4')]


def script_value(name):
    """NAME="..." of text_scale.sh, as written."""
    return re.search(rf'^{name}="([^"]*)"', open(ts.SCRIPT).read(), re.M).group(1)


def test_the_registration_is_what_the_summary_reads():
    """R1-R3 and the constants parse from the header; R1 names the grid the script runs, and R2's
    constants are the pilot's rule's."""
    rules, constants = ts.registered()
    assert list(rules) == ['R1', 'R2', 'R3']
    assert rules['R1'].startswith('(tier 1, the fine-tune) On seed 2100 only, ar at 1200 steps')
    for words in ('each pooling (last, mean)', 'each learning rate (1e-3, 3e-4, 1e-4) at 3 epochs',
                  'that cell at 10 epochs'):
        assert words in rules['R1'], words
    assert script_value('POOLINGS') == 'last mean' and script_value('LRS') == '1e-3 3e-4 1e-4'
    assert re.search(r'^EPOCHS=3 LONG_EPOCHS=10$', open(ts.SCRIPT).read(), re.M)
    assert script_value('REGISTERED_SEEDS') == ' '.join(map(str, SEEDS))
    assert script_value('LINE_TASKS').split() == LINE
    assert script_value('WINDOW_TASKS').split() == WINDOW
    assert rules['R3'].endswith('a line that does not rise crosses nowhere, and says so.')
    assert constants == {'RULE_SEEDS': 3, 'MARGIN': 8, 'MAX_MDE': 2, 'MDE_SEEDS': 5, 'ALPHA': 0.05,
                         'POWER': 0.8, 'EPOCHS_GAIN': 1}
    assert (constants['MARGIN'], constants['MAX_MDE'], constants['MDE_SEEDS'],
            constants['RULE_SEEDS']) == (probing_pilot.MARGIN, probing_pilot.MAX_MDE,
                                         probing_pilot.N_REGISTERED, probing_pilot.N_PILOT)


@pytest.mark.parametrize("ar,init,verdict", [
    ({1: 70.0, 2: 71.0, 3: 72.0}, {1: 50.0, 2: 51.0, 3: 52.0}, 'enters'),          # 20 above both
    ({1: 56.0, 2: 57.0, 3: 58.0}, {1: 45.0, 2: 46.0, 3: 47.0}, 'does not enter'),  # majority + 7
    ({1: 70.0, 2: 71.0, 3: 72.0}, {1: 63.0, 2: 64.0, 3: 65.0}, 'does not enter'),  # 7 above init
    ({1: 70.0, 2: 80.0, 3: 75.0}, {1: 50.0, 2: 51.0, 3: 52.0}, 'does not enter'),  # MDE 7.4
    ({1: 70.0, 2: 71.0}, {1: 50.0, 2: 51.0}, 'not decided (2 of 3 seeds)'),
    ({}, {1: 50.0}, 'pending'),
])
def test_the_rule_is_the_pilots(ar, init, verdict):
    found = ts.decide(ar, init, 50.0, ts.registered()[1])
    assert found['verdict'] == verdict
    pilot = probing_pilot.decide(ar, init, 50.0)
    assert {'yes': 'enters', 'no': 'does not enter'}.get(pilot[2], pilot[2]) == \
        ('not decided' if verdict.startswith(('not decided', 'pending')) else verdict)
    if found['mde'] is not None:
        sd = np.std(found['differences'], ddof=1)
        assert found['mde'] == pytest.approx(minimum_detectable_effect(sd, 5) if sd else 0.0)

# -----------------------------------------------------------------------------
# R1: the pick


def grid_of(stage_a, long=None, cell=None, line=LINE):
    """A grid whose init scores 50 everywhere and whose ar scores 50 + the margin given: stage_a
    {cell: margin on every task}, long: the margin of `cell` at 10 epochs."""
    grid = {}
    for (pooling, lr), margin in stage_a.items():
        for task in line:
            grid['ar', pooling, lr, 3, task], grid['init', pooling, lr, 3, task] = 50 + margin, 50.0
    if long is not None:
        for task in line:
            grid['ar', *cell, 10, task], grid['init', *cell, 10, task] = 50 + long, 50.0
    return grid


SETTINGS = dict(tasks=dict(line=LINE, window=WINDOW),
                grid=dict(poolings=['last', 'mean'], lrs=['1e-3', '3e-4', '1e-4'], epochs=3,
                          long_epochs=10))


@pytest.mark.parametrize("stage_a,long,cell,epochs", [
    ({cell: 1.0 for cell in CELLS} | {('mean', '3e-4'): 4.0}, 5.0, ('mean', '3e-4'), 10),  # +1 more
    ({cell: 1.0 for cell in CELLS} | {('mean', '3e-4'): 4.0}, 4.99, ('mean', '3e-4'), 3),  # +0.99
    ({cell: 0.0 for cell in CELLS}, -1.0, ('last', '1e-3'), 3),  # all at chance: the first written
    ({cell: 2.0 for cell in CELLS} | {('last', '1e-4'): 2.004}, None, ('last', '1e-3'), None),
])
def test_the_pick(stage_a, long, cell, epochs):
    """Stage A's largest mean margin at 2 decimals (2.004 ties with 2.00, and a tie goes to the
    first cell); stage B's 10 epochs only 1 point or more above 3's; undecided without stage B."""
    chosen = ts.pick(SETTINGS, grid_of(stage_a, long, cell), ts.registered()[1])
    assert chosen['cell'] == cell and chosen['epochs'] == epochs


def test_the_pick_waits_for_every_cell():
    grid = grid_of({cell: 1.0 for cell in CELLS})
    del grid['init', 'mean', '1e-4', 3, 'line_somo']
    chosen = ts.pick(SETTINGS, grid, ts.registered()[1])
    assert chosen['cell'] is None and chosen['epochs'] is None

# -----------------------------------------------------------------------------
# synthetic records laid out as text_scale.sh writes them

SCALES = [(2, '4x128', 1200), (3, '4x128', 4800), (4, '4x128', 12000), (5, '8x384', 1200)]
ARCHES = {'4x128': (4, 128), '8x384': (8, 384)}


def write_eval(folder, name, task, value, cpu=60.0, **config):
    os.makedirs(folder, exist_ok=True)
    json.dump(dict(config=dict(mode='finetune', **config),
                   runs=[dict(task=task, results={task: dict(accuracy=value)})]),
              open(os.path.join(folder, f'{name}.json'), 'w'))
    with open(os.path.join(folder, f'{name}.time'), 'w') as f:
        f.write(f"cpu_s {cpu - 1:.2f} 1.00 wall_s {cpu + 5}\n")


def write_record(root, margins, tasks=('line_bigram_shift', 'line_somo', 'wiki_line_somo', 'play'),
                 ar_base=50.0):
    """margins: {task: {scale name: [ar - init by seed]}} (init scores 50; a seed missing from the
    list is missing from the record); every run's log reaches its steps; 8 x 384 ran on a GPU."""
    root = str(root)
    rows = [dict(name=f'ar-{arch}-{steps}', init=f'init-{arch}', tier=tier, arch=arch,
                 n_layer=ARCHES[arch][0], n_embd=ARCHES[arch][1], steps=steps)
            for tier, arch, steps in SCALES]
    settings = dict(seeds=SEEDS, pick_seed=2100,
                    tasks=dict(line=[t for t in tasks if t in LINE],
                               window=[t for t in tasks if t in WINDOW]),
                    scales=rows, batch_size=32, block_size=128, grid=SETTINGS['grid'],
                    rules=['capital_after_lowercase', 'rare_word', 'bigram_pmi'], smoke=False,
                    recipe='--test', evaluations=dict(finetune='ft', linprobe='probe'))
    os.makedirs(root, exist_ok=True)
    json.dump(settings, open(os.path.join(root, 'settings.json'), 'w'))
    with open(os.path.join(root, 'suite.txt'), 'w') as f:
        for task in LINE + WINDOW:
            f.write(f"{task:<22} train  6000  dev  2900  labels {4 if task == 'play' else 2}  "
                    f"majority {25.0 if task == 'play' else 50.0:.1f}%\n")
    for row in rows:
        for seed in SEEDS:
            run = os.path.join(root, 'runs', row['name'], str(seed))
            os.makedirs(run, exist_ok=True)
            with open(os.path.join(run, 'log.jsonl'), 'w') as f:
                f.write(json.dumps(dict(iter=row['steps'], val_loss=1.6)) + '\n')
            open(os.path.join(run, 'pretrain.time'), 'w').write(
                f"cpu_s {row['steps'] * 0.35:.2f} 0.00 wall_s {row['steps'] * 0.05:.2f}\n")
            if row['arch'] == '8x384':
                open(os.path.join(run, 'flags.txt'), 'w').write(
                    'pretrain: DEVICE_FLAGS=--device=cuda TRAIN_FLAGS=\n')
    for task, by_scale in margins.items():
        for name, values in by_scale.items():
            init = 'init-' + name.split('-')[1]
            for seed, value in zip(SEEDS, values):
                write_eval(os.path.join(root, 'runs', name, str(seed)), f'finetune-{task}', task,
                           ar_base + value)
                write_eval(os.path.join(root, 'runs', init, str(seed)), f'finetune-{task}', task,
                           50.0)
    for task in tasks:
        write_eval(os.path.join(root, 'runs', 'bag_of_bytes', '0'), f'linprobe-{task}', task, 53.0,
                   cpu=20.0)
    return settings


def known_margins():
    """line_somo enters at 4800 steps; line_bigram_shift rises 1.5 points a decade and never
    enters; wiki_line_somo has two seeds at 1200 steps and nothing else; play falls."""
    rising = {'ar-4x128-1200': [0.9, 1.0, 1.1], 'ar-4x128-4800': [1.8, 1.9, 2.0],
              'ar-4x128-12000': [2.5, 2.5, 2.6], 'ar-8x384-1200': [3.9, 4.0, 4.1]}
    return {'line_somo': {'ar-4x128-1200': [2.0, 3.0, 2.5], 'ar-4x128-4800': [10.0, 10.5, 10.2],
                          'ar-4x128-12000': [12.0, 12.2, 12.1],
                          'ar-8x384-1200': [12.0, 12.5, 12.2]},
            'line_bigram_shift': rising,
            'wiki_line_somo': {'ar-4x128-1200': [5.0, 6.0]},
            'play': {name: [-0.5 * i, -0.5 * i - 0.1, -0.5 * i + 0.1]
                     for i, name in enumerate(rising)}}


def test_the_rule_and_the_curve_on_a_record_with_known_answers(tmp_path):
    margins = known_margins()
    settings = write_record(tmp_path / 'record', margins)
    lines = ts.report(str(tmp_path / 'record'), str(tmp_path / 'res'))
    text = '\n'.join(lines)
    entries = dict(line[2:-2].split(' | ') for line in lines[lines.index('| task | entry |') + 2:]
                   if line.startswith('| ') and line.count(' | ') == 1)
    assert entries == {'line_bigram_shift': 'does not enter by ar-8x384-1200',
                       'line_somo': 'enters at ar-4x128-4800',
                       'wiki_line_somo': 'pending', 'play': 'does not enter by ar-8x384-1200'}
    somo = text.split('### line_somo')[1].split('###')[0]
    assert '| ar-4x128-1200 | 2.3e+13 | 52.5 ± 0.5 (3) | 50.0 ± 0.0 (3) | 2.5 ± 0.5 |' in somo
    assert '| no | no | yes | does not enter |' in somo.split('ar-4x128-1200')[1].split('\n')[0]
    row = somo.split('| ar-4x128-4800 |')[1].split('\n')[0]
    assert row.endswith('| yes | yes | yes | enters |')
    wiki = text.split('### wiki_line_somo')[1].split('###')[0]
    assert '| 5.5 ± 0.7 | – | – | – | – | not decided (2 of 3 seeds) |' in wiki
    assert '| ar-4x128-4800 | 9.3e+13 | pending | 50.0 ± 0.0 (2) | pending | – |' in wiki
    # R3 on line_bigram_shift: the least-squares line over the four scales, to 8 points
    flops = {row['name']: ts.pretraining_flops(row, settings) for row in settings['scales']}
    x = np.log10([flops[name] for name in margins['line_bigram_shift']])
    y = [np.mean(values) for values in margins['line_bigram_shift'].values()]
    slope, intercept = np.polyfit(x, y, 1)
    crossing = 10 ** ((8 - intercept) / slope)
    cpu = np.mean([0.35 * row['steps'] / flops[row['name']] for row in settings['scales']
                   if row['arch'] == '4x128'])
    gpu = 0.05 * 1200 / flops['ar-8x384-1200']
    row = next(line for line in lines if line.startswith('| line_bigram_shift | 4 |'))
    steps = crossing / (flops['ar-4x128-1200'] / 1200)  # of the 4 x 128 recipe
    assert row == (f"| line_bigram_shift | 4 | {slope:+.2f} | {crossing:.2g} | "
                   f"{crossing / flops['ar-8x384-1200']:.3g} | {steps:.3g} | "
                   f"{crossing * cpu / 3600:.3g} | {crossing * gpu / 3600:.3g} |")
    row = next(line for line in lines if line.startswith('| play | 4 |'))
    assert row.startswith('| play | 4 | -') and 'none: the line does not rise' in row
    assert '| line_somo | – | – | not needed: enters at ar-4x128-4800 |' in text
    assert '| wiki_line_somo | 0 of 2 | pending |' in text
    assert 'runs/ar-8x384-1200/2100: pretrain: DEVICE_FLAGS=--device=cuda TRAIN_FLAGS=' in text
    plot = (tmp_path / 'res' / 'margin_by_flops.csv').read_text().splitlines()
    assert plot[0] == 'series,pretraining FLOPs (6 N D),"ar - init, dev accuracy points"'
    assert sum(row.startswith('line_somo,') for row in plot) == 4
    assert sum(row.startswith('entry line (8 points),') for row in plot) == 2
    assert (tmp_path / 'res' / 'margin_by_flops.png').exists()
    rules, _ = ts.registered()
    assert all(f"**{name}** {rule}" in lines for name, rule in rules.items())
    assert (tmp_path / 'res' / 'tables.md').read_text() == text.rstrip() + '\n'


def test_a_pretraining_stopped_and_resumed_costs_what_its_parts_cost(tmp_path):
    """A run stopped (a session's end) and resumed keeps a clock line a part: the curve's cost per
    FLOP reads their sum, as of a run that never stopped."""
    for name in ('whole', 'parts'):
        write_record(tmp_path / name, known_margins())
    for path in (tmp_path / 'parts' / 'runs').glob('ar-4x128-12000/*/pretrain.time'):
        cpu, wall = ts.clock(str(path))
        path.write_text(''.join(f"cpu_s {cpu * share:.2f} 0.00 wall_s {wall * share:.2f}\n"
                                for share in (0.25, 0.75)))
    whole = ts.report(str(tmp_path / 'whole'), str(tmp_path / 'whole-tables'))
    assert ts.report(str(tmp_path / 'parts'), str(tmp_path / 'parts-tables')) == whole


def write_pick(root, stage_a, long, cell, tasks=LINE):
    for (pooling, lr), margin in stage_a.items():
        for epochs, value in [(3, margin)] + ([(10, long)] if (pooling, lr) == cell else []):
            for run, score in (('ar-4x128-1200', 50 + value), ('init-4x128', 50.0)):
                for task in tasks:
                    write_eval(os.path.join(root, 'pick', 'runs', run, '2100'),
                               f'finetune-{task}-{pooling}-lr{lr}-e{epochs}', task, score, cpu=90.0,
                               pooling=pooling, learning_rate=float(lr), epochs=epochs)


def test_the_pick_from_a_record_and_its_tables(tmp_path):
    record = tmp_path / 'record'
    write_record(record, {}, tasks=LINE)
    stage_a = {cell: 0.5 * i for i, cell in enumerate(CELLS)}  # mean at 1e-4 the largest
    write_pick(record, stage_a, 4.0, ('mean', '1e-4'))
    assert ts.picked(str(record)) == 'mean 1e-4 10'
    lines = ts.report(str(record), str(tmp_path / 'res'))
    assert '| mean | 1e-4 | ' + ' | '.join(['+2.50 (52.50 / 50.00)'] * 4) + ' | +2.50 |' in lines
    assert '| last | +0.50 |' in lines and '| mean | +2.00 |' in lines  # pooling over the lrs
    assert '| 1e-3 | +0.75 |' in lines and '| 1e-4 | +1.75 |' in lines  # lr over the poolings
    assert '**The fine-tune:** pooling mean, learning rate 1e-4, 10 epochs.' in lines
    assert 'What the pick cost (measured): 84 cpu-minutes over 56 fine-tunes (mean 1.5), besides ' \
           'the pretraining it reads.' in lines
    os.remove(record / 'pick' / 'runs' / 'init-4x128' / '2100' /
              'finetune-line_somo-mean-lr1e-4-e10.json')
    assert ts.picked(str(record)) == 'mean 1e-4 -'
    assert '**The fine-tune:** pending (R1 decides once stage B is complete).' in \
        ts.report(str(record), str(tmp_path / 'res'))


def test_the_tables_regenerate_byte_for_byte(tmp_path):
    write_record(tmp_path / 'record', known_margins())
    write_pick(tmp_path / 'record', {cell: 1.0 for cell in CELLS}, 0.0, ('last', '1e-3'))
    ts.report(str(tmp_path / 'record'), str(tmp_path / 'first'))
    ts.report(str(tmp_path / 'record'), str(tmp_path / 'second'))
    names = sorted(os.listdir(tmp_path / 'first'))
    assert names == sorted(os.listdir(tmp_path / 'second')) == \
        ['margin_by_flops.csv', 'margin_by_flops.png', 'tables.md']
    for name in names:
        assert (tmp_path / 'first' / name).read_bytes() == (tmp_path / 'second' / name).read_bytes()


def test_the_record_regenerates_its_tables(tmp_path):
    """tables.md, the plot and its CSV from the committed record (skipped until it is committed)."""
    assert_record_regenerates(os.path.join(ROOT, 'experiments', 'text-scale'), ts.report, tmp_path,
                              'experiments/text_scale.sh')

# -----------------------------------------------------------------------------
# the script


def run_script(tmp_path, script=ts.SCRIPT, **env):
    env = {**os.environ, 'PYTHON': sys.executable, 'OUT': str(tmp_path / 'out'),
           'RES': str(tmp_path / 'res'), **env}
    return subprocess.run(['bash', script], env=env, capture_output=True, text=True,
                          timeout=900)  # a hang guard


def test_a_smoke_run_refuses_the_record_and_tier_5_needs_a_gpu(tmp_path):
    for change in (dict(SMOKE='1'), dict(SEEDS='7')):
        result = run_script(tmp_path, RES='experiments/text-scale', **change)
        keys = ('RES=', 'OUT=', 'experiments/text-scale')  # the fix, and the record it keeps
        assert result.returncode == 2 and all(key in result.stderr for key in keys), change
    result = run_script(tmp_path, TIERS='2 5')
    keys = ("TIERS='2 5'", 'DEVICE_FLAGS=--device=cuda')  # what was asked; the fix
    assert result.returncode == 2 and all(key in result.stderr for key in keys), result.stderr
    result = run_script(tmp_path, DEVICE_FLAGS='--device=gpu')
    assert result.returncode == 2 and "DEVICE_FLAGS='--device=gpu'" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / 'out').exists() and not (tmp_path / 'res').exists()


def tiny_suite(out, res):
    """The fixture suite (a few rows a task) where a smoke run builds its suite, and its printout
    in the record: the script uses them as they are (no corpus needed)."""
    shutil.copytree(os.path.join(FIXTURES_GLUE, 'probing'), out / 'suite')
    res.mkdir()
    (res / 'suite.txt').write_text(''.join(
        f"{task:<22} train     4  dev     2  labels {4 if task == 'play' else 2}  majority 50.0%\n"
        for task in LINE + WINDOW))


@pytest.fixture
def logged_python(tmp_path):
    """-> (PYTHON, its log): each call's arguments a line of the log, then the call run by a warm
    python (tests/warm_python.py: some thirty calls, each seconds of torch's imports, made once)."""
    calls, python = tmp_path / 'calls.log', tmp_path / 'python'
    with warm_python() as warm:
        python.write_text(f'#!/bin/bash\necho "$*" >> {calls}\nexec {warm} "$@"\n')
        python.chmod(0o755)
        yield python, calls


@pytest.mark.long
def test_the_script_end_to_end_and_again_without_checkpoints(tmp_path, logged_python):
    """One seed, a line task and a window task, tiers 1 and 2 on the fixture suite and a tiny byte
    corpus (TRAIN_FLAGS): the pick's grid, the pick, its runs kept under runs/, the window task at
    the pick, the baselines and the flags beside every result; then, every checkpoint gone (a
    clone), a second call trains and evaluates nothing and the tables come back the same."""
    tiny_suite(tmp_path / 'out', tmp_path / 'res')
    rng = np.random.default_rng(0)
    stream = rng.integers(32, 120, size=6000)
    corpus = write_corpus(tmp_path / 'bytes', stream[:5000], stream[5000:], 'bytes')
    python, calls = logged_python
    smoke = dict(SMOKE='1', SEEDS='2100', TASKS='line_somo play', TIERS='1 2', JOBS='2',
                 PYTHON=str(python), DEVICE_FLAGS='--device=cpu', TRAIN_FLAGS=f'--dataset={corpus}')
    result = run_script(tmp_path, **smoke)
    assert result.returncode == 0, result.stderr[-3000:]
    res = tmp_path / 'res'
    settings = json.loads((res / 'settings.json').read_text())
    assert settings['tasks'] == dict(line=['line_somo'], window=['play']) and settings['smoke']
    names = [row['name'] for row in settings['scales']]
    assert names[:3] == ['ar-4x128-2', 'ar-4x128-3', 'ar-4x128-4']
    pick = sorted(os.listdir(res / 'pick' / 'runs' / 'ar-4x128-2' / '2100'))
    assert len([name for name in pick if name.endswith('-e3.json')]) == 6
    assert len([name for name in pick if name.endswith('-e10.json')]) == 1
    pooling, lr, epochs = ts.picked(str(res)).split()
    assert pooling in ('last', 'mean') and lr in ('1e-3', '3e-4', '1e-4') and epochs in ('3', '10')
    for run in ('ar-4x128-2', 'init-4x128'):
        kept = res / 'runs' / run / '2100'
        assert (kept / 'finetune-line_somo.json').read_bytes() == (
            res / 'pick' / 'runs' / run / '2100' /
            f'finetune-line_somo-{pooling}-lr{lr}-e{epochs}.json').read_bytes()
        config = json.loads((kept / 'finetune-play.json').read_text())['config']
        assert (config['pooling'], config['learning_rate'], config['epochs']) == \
            (pooling, float(lr), int(epochs))
        flags = (kept / 'flags.txt').read_text()
        assert (f'finetune-line_somo: DEVICE_FLAGS=--device=cpu TRAIN_FLAGS=--dataset={corpus}'
                in flags)
    assert json.loads((res / 'runs' / 'ar-4x128-2' / '2100' / 'log.jsonl').read_text()
                      .splitlines()[-1])['iter'] == 2
    assert sorted(os.listdir(res / 'runs')) == [
        'ar-4x128-2', 'bag_of_bytes', 'init-4x128', 'rule-bigram_pmi',
        'rule-capital_after_lowercase', 'rule-rare_word']
    assert sorted(os.listdir(res / 'runs' / 'bag_of_bytes' / '0')) == [
        'flags.txt', 'linprobe-line_somo.json', 'linprobe-line_somo.time', 'linprobe-play.json',
        'linprobe-play.time']
    tables = (res / 'tables.md').read_text()
    assert '| ar-4x128-2 | ' in tables and 'not decided (1 of 3 seeds)' in tables
    assert f'pooling {pooling}, learning rate {lr}, {epochs} epochs' in tables
    for checkpoint in (tmp_path / 'out').rglob('*.pt'):
        checkpoint.unlink()
    calls.unlink()
    again = run_script(tmp_path, **smoke)
    assert again.returncode == 0, again.stderr[-3000:]
    ran = [line for line in calls.read_text().splitlines()  # train.py --help: TRAIN_FLAGS's check
           if line.startswith(('train.py', 'eval_glue.py')) and '--help' not in line]
    assert not ran, ran
    assert (res / 'tables.md').read_text() == tables

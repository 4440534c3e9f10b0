"""experiments/data_constrained.py: the registered text is read from the script, the summaries and the crossover
follow their definitions, and each hypothesis is judged by its rule (synthetic records with known answers)."""
import json
import os
import sys

import numpy as np
import pytest

from conftest import ROOT, write_curves_record

from experiments import data_constrained as dc

STEPS = np.arange(100, 1001, 100)


def test_the_registered_text_is_read_from_the_script():
    hypotheses, constants = dc.registered()
    assert sorted(hypotheses) == ['H1', 'H2', 'H3', 'H4', 'H5']
    assert hypotheses['H3'].startswith('Crossover') and hypotheses['H2'].endswith('in epochs.')
    assert {'TOLERANCE', 'RISE', 'LEARNED_BELOW'} <= set(constants)


def test_summary_follows_its_definitions():
    nll = np.array([3.0, 2.5, 2.2, 2.195, 2.19, 2.3, 2.6, 2.9, 3.0, 3.1])
    got = dc.summary(STEPS, nll, nll - 1, tolerance=0.01)
    assert got['best'] == pytest.approx(2.19) and got['end'] == pytest.approx(3.1)
    assert got['rise'] == pytest.approx(0.91)
    assert got['reached'] == 400  # 2.195 is within 0.01 of the best, and comes first


def test_crossover_is_where_the_masked_curve_stays_below():
    ar = np.array([3.0, 2.5, 2.2, 2.3, 2.6, 2.9, 3.0, 3.1, 3.2, 3.3])
    masked = np.array([3.3, 3.2, 3.1, 3.0, 2.9, 2.95, 2.8, 2.7, 2.6, 2.5])
    assert dc.crossover(STEPS, masked, ar) == 700  # below at 500, not at 600, below from 700 on
    assert dc.crossover(STEPS, masked + 1, ar) is None
    assert dc.crossover(STEPS, masked - 2, ar) == 100


def test_one_sided_p_is_half_the_two_sided_in_the_stated_direction():
    from experiments.stats import paired_t_test
    differences = [0.3, 0.1, 0.25]
    assert dc.one_sided_p(differences) == pytest.approx(paired_t_test(differences)[1] / 2)
    assert dc.one_sided_p([-d for d in differences]) == pytest.approx(1 - paired_t_test(differences)[1] / 2)


@pytest.mark.parametrize('differences, expected', [
    ([0.4, 0.3, 0.5], 1 / 8),              # 3 of 3 the stated way: the smallest p three seeds allow
    ([0.4, -0.3, 0.5], 4 / 8),             # 2 of 3: P(X >= 2) = (C(3,2) + C(3,3)) / 2^3
    ([-0.4, -0.3, -0.5], 1.0),             # 0 of 3: P(X >= 0)
    ([1, 2, 0, -1, 3], 5 / 16),            # ties dropped: 3 of 4, (C(4,3) + C(4,4)) / 2^4
    ([0, 0], 1.0)])
def test_one_sided_sign_test_is_the_exact_binomial_tail(differences, expected):
    from scipy import stats
    from experiments.stats import sign_test_one_sided_p
    assert sign_test_one_sided_p(differences) == pytest.approx(expected)
    untied = [d for d in differences if d != 0]
    if untied:
        above = sum(d > 0 for d in untied)
        assert expected == pytest.approx(stats.binomtest(above, len(untied), 0.5, alternative='greater').pvalue)


def test_judge_prints_the_seeds_and_the_one_sided_sign_test_beside_the_t_test():
    lines = dc.judge('H9', 'text', [0.3, 0.1, 0.25], [1, 2, 3], marked={2})
    measured = next(line for line in lines if line.startswith('- measured'))
    assert '(1: +0.300, 2*: +0.100, 3: +0.250)' in measured
    assert f"t-test p = {dc.one_sided_p([0.3, 0.1, 0.25]):.2g} (3 of 3 seeds, t-test as registered)" in measured
    assert measured.endswith('one-sided sign test p = 0.125')
    measured = next(line for line in dc.judge('H9', 'text', [0.3, -0.1, 0.25], [1, 2, 3]) if line.startswith('- m'))
    assert '(2 of 3 seeds, t-test as registered)' in measured and measured.endswith('sign test p = 0.5')


def write_record(root, curves, steps=1000):
    """curves: {(size, arm): {seed: nll array}}."""
    write_curves_record(root, curves, steps=steps)


def verdict(lines, name):
    """The verdict line of hypothesis `name`, or its 'not judged' line."""
    at = next(i for i, line in enumerate(lines) if line.startswith('**') and name in line.split('**')[1])
    return lines[at] if 'not judged' in lines[at] else next(line for line in lines[at:] if line.startswith('- verdict'))


def test_verdicts_on_a_record_with_known_answers(tmp_path):
    rng = np.random.default_rng(0)
    seeds = [1, 2, 3]
    noise = lambda: rng.normal(0, 0.005, len(STEPS))
    ar = np.array([3.0, 2.5, 2.2, 2.3, 2.6, 2.9, 3.0, 3.1, 3.2, 3.3])      # overfits: best early, ends high
    dar = np.array([3.0, 2.6, 2.3, 2.3, 2.4, 2.5, 2.6, 2.7, 2.75, 2.8])    # rises less
    mdlm = np.array([3.3, 3.2, 3.1, 3.0, 2.9, 2.85, 2.8, 2.75, 2.7, 2.65])  # best at the end, crosses ar
    full_ar = np.linspace(3.0, 1.8, 10)
    full_mdlm = np.linspace(3.3, 2.6, 10)
    curves = {('small', 'ar'): {s: ar + noise() for s in seeds}, ('small', 'dar'): {s: dar + noise() for s in seeds},
              ('small', 'mdlm'): {s: mdlm + noise() for s in seeds},
              ('small', 'vm'): {s: np.full(10, 3.4) + noise() for s in seeds},
              ('full', 'ar'): {s: full_ar + noise() for s in seeds},
              ('full', 'mdlm'): {s: full_mdlm + noise() for s in seeds}}
    write_record(tmp_path / 'record', curves)
    lines = dc.report(str(tmp_path / 'record'), str(tmp_path / 'res'))
    for name in ('H1', 'H2', 'H3', 'H4', 'H5'):
        assert verdict(lines, name) == '- verdict: effect (met)', name
    text = '\n'.join(lines)
    assert 'mean curves epoch 60.0' in text  # mdlm below ar from step 600 on: 600 steps x 100 bytes / 1000 bytes
    # at the small size mdlm ends lowest on every seed: still improving; ar and dar do not
    improving = text.split('## full')[0].split('still improving when the budget ended: ')[1].split('.')[0].split(', ')
    assert 'masked diffusion' in improving and 'ar' not in improving and 'dar t=2' not in improving
    assert 'still improving when the budget ended: ar, masked diffusion.' in text.split('## full')[1]  # both fall
    assert 'Seen before' not in text and '*:' not in text and 'seeds 1, 2, 3' in text  # no pilot logs: none marked
    assert (tmp_path / 'res' / 'heldout_nll_small.png').exists() and \
        (tmp_path / 'res' / 'heldout_nll_small.csv').exists()
    assert (tmp_path / 'res' / 'tables.md').read_text() == text.rstrip() + '\n'

    # a masked arm that never leaves the plateau is not judged on H2 / H3, however ar ends
    curves[('small', 'mdlm')] = {s: np.full(10, 3.25) + noise() for s in seeds}
    write_record(tmp_path / 'plateau', curves)
    lines = dc.report(str(tmp_path / 'plateau'), str(tmp_path / 'res2'))
    assert 'not judged' in verdict(lines, 'H2')
    # the opposite of H5 is not met, and an unfinished run is left out
    curves[('small', 'dar')] = {s: ar + 0.2 * np.linspace(0, 1, 10) + noise() for s in seeds}
    write_record(tmp_path / 'worse', curves)
    with open(tmp_path / 'worse' / 'runs' / 'small' / 'vm' / '3' / 'log.jsonl', 'a') as f:
        # past the budget: not this experiment's run
        f.write(json.dumps(dict(iter=1100, val_loss=3.0, eval_train_loss=2.0)) + '\n')
    lines = dc.report(str(tmp_path / 'worse'), str(tmp_path / 'res3'))
    assert verdict(lines, 'H5') == '- verdict: not met'
    assert '## small: 1,000 training bytes, 100 epochs, seeds 1, 2' in lines  # paired: the seeds every arm has


RECORD = os.path.join(ROOT, 'experiments', 'data-constrained')


def test_a_run_that_repeats_a_pilot_log_is_named_and_its_seed_marked(tmp_path):
    """A pilot log equal to a registered run's first evaluations (every logged loss and the learning rate, not the
    clock) was seen before the registration: the report names the run, the steps and the share, and marks the seed."""
    rng = np.random.default_rng(1)
    curves = {('small', arm): {s: np.linspace(3.3, 2.5, 10) + rng.normal(0, 0.01, 10) for s in (1, 2, 3)}
              for arm in ('ar', 'dar', 'mdlm')}
    write_record(tmp_path / 'record', curves)
    log = tmp_path / 'record' / 'runs' / 'small' / 'mdlm' / '2' / 'log.jsonl'
    rows = [json.loads(line) for line in open(log)][:4]
    os.makedirs(tmp_path / 'record' / 'pilot')
    with open(tmp_path / 'record' / 'pilot' / 'log_same.jsonl', 'w') as f:  # steps 100-400 of mdlm's seed 2
        f.writelines(json.dumps({**row, 'time': 1.0}) + '\n' for row in rows)
    with open(tmp_path / 'record' / 'pilot' / 'log_other.jsonl', 'w') as f:  # one digit off at the first step
        f.writelines(json.dumps({**row, 'val_loss': row['val_loss'] + 1e-9}) + '\n' for row in rows)
    assert dc.seen_before(str(tmp_path / 'record'), 1000) == [('small', 'mdlm', 2, 'pilot/log_same.jsonl', 100, 400)]
    text = '\n'.join(dc.report(str(tmp_path / 'record'), str(tmp_path / 'res')))
    assert 'seeds 1, 2*, 3' in text
    assert 'masked diffusion, seed 2, is the pilot log `pilot/log_same.jsonl` bit for bit at steps 100-400, 40%' in text
    assert '(1: ' in text and '2*: ' in text.split('**H2**')[1]


def test_the_record_regenerates_its_tables_and_curves(tmp_path):
    """tables.md and the curves' CSVs and plots from the logs alone, the registered run the pilot already ran marked
    (seed 1337's mdlm at 32 KiB: seen_before)."""
    dc.report(RECORD, str(tmp_path))
    for name in os.listdir(RECORD):
        if name.endswith(('.md', '.csv', '.png')):
            assert (tmp_path / name).read_bytes() == open(os.path.join(RECORD, name), 'rb').read(), name


@pytest.mark.record
def test_the_readme_quotes_the_record():
    """experiments/README.md's tables are tables.md's rows, and each verdict row its measured value, p and verdict."""
    tables = open(os.path.join(RECORD, 'tables.md')).read()
    readme = open(os.path.join(ROOT, 'experiments', 'README.md')).read()
    for row in (line for line in tables.splitlines() if line.startswith('| ') and not line.startswith('| arm')):
        assert row in readme, row
    for name in ('H1', 'H2', 'H3', 'H4', 'H5'):
        block = tables.split(f'**{name}**')[1]
        measured = block.split('- measured: ')[1].split(' (')[0]
        p, seeds = block.split('one-sided paired t-test p = ')[1].split(' seeds, t-test as registered')[0].split(' (')
        sign = block.split('one-sided sign test p = ')[1].splitlines()[0]
        met = 'met' if 'effect (met)' in block.split('- verdict: ')[1].splitlines()[0] else 'not met'
        row = next(line for line in readme.splitlines() if line.startswith(f'| {name} '))
        cells = [cell.strip() for cell in row.strip('|').split('|')]
        assert cells[1].endswith(measured) and cells[2:] == [p, seeds, sign, met], (name, cells)


@pytest.mark.record
def test_the_front_readme_line_is_the_record():
    """README.md's results rows on repeated data, the learned-positions column: the rises, H5's p and H3's gap."""
    tables = open(os.path.join(RECORD, 'tables.md')).read()
    readme = open(os.path.join(ROOT, 'README.md')).read().splitlines()
    rise = {line.split(' | ')[0][2:]: line.split(' | ')[4].split(' ±')[0]
            for line in tables.split('## full:')[0].splitlines() if line.startswith('| ')}
    h5_p = tables.split('**H5**')[1].split('t-test p = ')[1].split(' (')[0]
    h3 = tables.split('**H3**')[1].split('- measured: -')[1].split(' ±')[0]
    learned = next(line for line in readme if line.startswith('| repeated data')).split(' | ')[1]
    assert f"rise after the best ar {rise['ar']}, dar t=2 {rise['dar t=2']} (p {h5_p})" in learned
    learned = next(line for line in readme if line.startswith('| masked diffusion overtakes ar')).split(' | ')[1]
    assert f"ends {h3} above ar" in learned


def test_the_script_on_a_clone_trains_nothing_and_keeps_the_record(tmp_path):
    """data_constrained.sh with the record but no checkpoints (a fresh clone): every run is found finished and not
    trained again, the tables and plots come back byte for byte, and the samples and the bound check, which need
    checkpoints, are kept as recorded, not emptied."""
    import shutil
    import subprocess
    shutil.copytree(RECORD, tmp_path / 'res')
    env = {**os.environ, 'OUT': str(tmp_path / 'out'), 'RES': str(tmp_path / 'res'), 'PYTHON': sys.executable}
    result = subprocess.run(['bash', os.path.join(ROOT, 'experiments', 'data_constrained.sh')], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and 'kept as recorded' in result.stdout, result.stderr[-2000:]
    assert not (tmp_path / 'out').exists() or not list((tmp_path / 'out').rglob('*.pt'))
    for name in sorted(os.listdir(RECORD)):
        if os.path.isfile(os.path.join(RECORD, name)):
            assert (tmp_path / 'res' / name).read_bytes() == open(os.path.join(RECORD, name), 'rb').read(), name


@pytest.mark.record
def test_the_exploratory_paragraph_is_its_record():
    """The twice-the-budget paragraphs (experiments/README.md, explore-6400/README.md) quote the logs in
    data-constrained/explore-6400/: each run's lowest value and its epoch, the crossovers, and ar's learning rate at
    the crossover here and in the registered run of the same seed."""
    explore = os.path.join(RECORD, 'explore-6400')
    logs, runs = {}, {}
    for arm in ('ar', 'dar', 'mdlm'):
        logs[arm] = [json.loads(line) for line in open(os.path.join(explore, f'log_{arm}.jsonl'))]
        assert logs[arm][-1]['iter'] == 6400
        runs[arm] = tuple(np.array([row[key] for row in logs[arm]]) for key in ('iter', 'val_loss', 'eval_train_loss'))
    epoch = lambda step: step * 16 * 63 / 32768
    stats = {arm: dc.summary(*runs[arm], tolerance=0.01) for arm in runs}
    lowest = {arm: epoch(runs[arm][0][np.argmin(runs[arm][1])]) for arm in runs}  # the minimum, not the tolerance's
    assert lowest['mdlm'] == epoch(6400)  # its last evaluation: still improving
    steps = runs['ar'][0]
    crossed = dc.crossover(steps, runs['mdlm'][1], runs['ar'][1])
    registered = [json.loads(line) for line in open(os.path.join(RECORD, 'runs', 'small', 'ar', '1337', 'log.jsonl'))]
    rate = lambda rows: f"{next(row['lr'] for row in rows if row['iter'] == crossed):.1e}".replace('e-0', 'e-')
    assert crossed < 3200  # inside the registered budget
    for name in ('README.md', os.path.join('data-constrained', 'explore-6400', 'README.md')):
        text = ' '.join(open(os.path.join(ROOT, 'experiments', name)).read().split())
        for arm, label in (('ar', 'ar:'), ('dar', 'dar t = 2:')):
            assert f"{label} lowest {stats[arm]['best']:.3f} at epoch {lowest[arm]:.1f}" in text, (name, arm)
            assert f"ends {stats[arm]['end']:.3f}" in text, (name, arm)
        assert f"rises {stats['dar']['rise']:.3f} after its best" in text and f"ar {stats['ar']['rise']:.3f}" in text
        assert f"lowest {stats['mdlm']['best']:.3f} at epoch {lowest['mdlm']:.1f}" in text, name
        assert f"below ar from epoch {epoch(crossed):.1f}" in text, name
        assert f"below dar from epoch {epoch(dc.crossover(steps, runs['mdlm'][1], runs['dar'][1])):.1f}" in text
        assert f"stays {stats['mdlm']['best'] - stats['ar']['best']:.3f} above ar's" in text, name
        assert f"{rate(logs['ar'])} at step {crossed}, against {rate(registered)}" in text, name


def test_settings_regenerate_from_the_recipe(tmp_path, shakespeare_bytes):
    """write_settings, given each record's sizes, budget, recipe and seeds, writes its settings.json byte for byte:
    the floors are counted again from the plays, prepared as the scripts prepare them (conftest.shakespeare_bytes)."""
    data_dir = shakespeare_bytes
    for record in ('data-constrained', 'data-constrained-rope'):
        recorded = os.path.join(ROOT, 'experiments', record, 'settings.json')
        settings = json.load(open(recorded))
        dc.write_settings(str(tmp_path / 'settings.json'), settings['train_bytes']['small'], settings['steps'],
                          settings['eval_interval'], settings['recipe'], ' '.join(map(str, settings.get('seeds', []))),
                          str(data_dir))
        assert (tmp_path / 'settings.json').read_bytes() == open(recorded, 'rb').read(), record

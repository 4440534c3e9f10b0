"""experiments/vision.sh and vision.py: the registered text is what the summary reads, the registered minimum
detectable effects follow from the registered spreads, each hypothesis is judged by its rule on synthetic records
with known answers, the tables regenerate byte for byte, and the script runs end to end (a smoke run)."""
import csv
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import ROOT
from evals.vision import probe_groups

from experiments import vision
from experiments.data_constrained import one_sided_p
from experiments.stats import minimum_detectable_effect, paired_t_power, t_one_sided_quantile
from objectives import Objective

SEEDS = [1337, 1338, 1339, 1340, 1341]


def header_value(name):
    """NAME="..." of vision.sh, as written."""
    return re.search(rf'^{name}="([^"]*)"', open(vision.SCRIPT).read(), re.M).group(1)


def test_the_registered_text_is_read_from_the_script():
    hypotheses, comparisons, constants = vision.registered()
    assert list(hypotheses) == ['V1', 'V2', 'V3', 'V4']
    assert hypotheses['V1'].startswith('(Table 3) dar t=2 is above ar on the linear probe and on fine-tuning')
    assert hypotheses['V3'].endswith('(the paper\'s ViT-B: 56.2, 59.4, 59.6, 58.8).')
    assert constants == {'ALPHA': 0.05, 'POWER': 0.8}
    assert [(c['name'], c['metric'], vision.signed(c)) for c in comparisons] == [
        ('V1a', 'probe', ('dar2', 'ar')), ('V1b', 'probe', ('dar2', 'ar1s')),
        ('V1c', 'finetune', ('dar2', 'ar')), ('V1d', 'finetune', ('dar2', 'ar1s')),
        ('V2a', 'l2', ('mae75', 'vm')), ('V2b', 'l2', ('mae50', 'vm')),
        ('V2c', 'lpips', ('mae75', 'vm')), ('V2d', 'lpips', ('mae50', 'vm')),
        ('V3a', 'probe', ('dar2', 'ar')), ('V3b', 'probe', ('dar3', 'ar')), ('V3c', 'probe', ('dar3', 'dar4')),
        ('V4a', 'probe', ('gvp', 'ar')), ('V4b', 'probe', ('gvp', 'ar1s'))]


def test_the_script_runs_what_the_registration_names():
    """The registered seeds and arms are the script's defaults; every arm a comparison names is trained, every
    fine-tune comparison's arms are fine-tuned, and the summary has a label for every arm."""
    _, comparisons, _ = vision.registered()
    text = open(vision.SCRIPT).read()
    seeds, arms = header_value('REGISTERED_SEEDS'), header_value('REGISTERED_ARMS').split()
    assert seeds == ' '.join(map(str, SEEDS)) and f"Seeds {seeds}, all five" in ' '.join(text.split())
    assert sorted(arms) == sorted(vision.ARMS) and set(vision.TABLE9) <= set(arms)
    assert {arm for c in comparisons for arm in (c['arm'], c['other'])} <= set(arms)
    finetuned = header_value('FINETUNED').split()
    assert {arm for c in comparisons if c['metric'] == 'finetune' for arm in (c['arm'], c['other'])} <= set(finetuned)
    assert all(c['metric'] in vision.METRICS for c in comparisons)


def test_the_registered_mdes_follow_from_the_registered_spreads():
    _, comparisons, constants = vision.registered()
    per_sd = minimum_detectable_effect(1.0, len(SEEDS), constants['ALPHA'], constants['POWER'])
    assert f"{per_sd:.3f}" in open(vision.SCRIPT).read()  # the factor the header quotes (1.359 sd)
    for c in comparisons:
        decimals = len(c['mde_text'].split('.')[1])
        assert f"{per_sd * c['sd']:.{decimals}f}" == c['mde_text'], c['name']


@pytest.mark.record
def test_the_readme_quotes_the_registration_word_for_word():
    hypotheses, _, _ = vision.registered()
    readme = ' '.join(open(os.path.join(ROOT, 'experiments', 'README.md')).read().replace('\n> ', ' ').split())
    for name, text in hypotheses.items():
        assert f"{name} {text}" in readme, name


@pytest.mark.parametrize('n', [3, 5, 8])
def test_power_and_mde_are_the_noncentral_t(n):
    from scipy import stats
    assert t_one_sided_quantile(0.05, n - 1) == pytest.approx(stats.t.ppf(0.95, n - 1), rel=1e-9)
    for effect in (0.3, 1.0, 2.0):
        expected = stats.nct.sf(stats.t.ppf(0.95, n - 1), n - 1, effect * np.sqrt(n))
        assert paired_t_power(effect, 1.0, n) == pytest.approx(expected, abs=1e-6)
    mde = minimum_detectable_effect(0.5, n)  # linear in the spread
    assert stats.nct.sf(stats.t.ppf(0.95, n - 1), n - 1, mde / 0.5 * np.sqrt(n)) == pytest.approx(0.8, abs=1e-6)
    assert minimum_detectable_effect(1.0, n) == pytest.approx(2 * mde, rel=1e-6)


def test_t_one_of_table_9_is_the_ar_run():
    """dar with groups of one draws ar two-stream's batches and probes with its groups: one run serves both."""
    x = torch.randint(0, 50, (4, 17))
    ar, dar = (objective.batch(x, torch.Generator().manual_seed(3))
               for objective in (Objective('ar', two_stream=True), Objective('dar', t=1)))
    assert ar.keys() == dar.keys()
    for key in ar:
        assert torch.equal(ar[key], dar[key]) if torch.is_tensor(ar[key]) else ar[key] == dar[key], key
    assert torch.equal(probe_groups(Objective('ar', two_stream=True), 16), probe_groups(Objective('dar', t=1), 16))

# -----------------------------------------------------------------------------
# synthetic records

def write_csv(path, row):
    with open(path, 'w', newline='') as f:
        writer = csv.DictWriter(f, list(row))
        writer.writeheader()
        writer.writerow(row)


def write_record(root, scores, seeds=SEEDS, steps=1000, finetuned=('ar', 'ar1s', 'dar2')):
    """scores: {arm: {'probe': [by seed], 'l2': [...], 'lpips': [...], 'finetune': [...]}}, as eval_vision.py
    writes them (one CSV row per evaluation)."""
    settings = dict(steps=steps, seeds=list(seeds), arms=list(scores), finetuned=list(finetuned), recipe='--test',
                    evaluations=dict(linprobe='probe', finetune='ft', recon='recon'))
    os.makedirs(root, exist_ok=True)
    json.dump(settings, open(os.path.join(root, 'settings.json'), 'w'))
    for arm, by_metric in scores.items():
        for i, seed in enumerate(seeds):
            run = os.path.join(root, 'runs', arm, str(seed))
            os.makedirs(run)
            with open(os.path.join(run, 'log.jsonl'), 'w') as f:
                f.write(json.dumps(dict(iter=10, train_loss=0.2, time=1000.0)) + '\n')
                f.write(json.dumps(dict(iter=steps, eval_train_loss=0.1, val_loss=0.1 + i / 100, time=1000.0 + 60 * 7))
                        + '\n')
            model = dict(model=arm, objective=arm, dataset='fmnist')
            if 'probe' in by_metric:
                write_csv(os.path.join(run, 'linprobe.csv'), dict(model, keep_mask=True, train_acc=90.0,
                                                                  val_acc=by_metric['probe'][i], seconds=90.0))
            if 'finetune' in by_metric:
                write_csv(os.path.join(run, 'finetune.csv'), dict(model, epochs=3, val_acc=by_metric['finetune'][i],
                                                                  seconds=300.0))
            if 'l2' in by_metric:
                write_csv(os.path.join(run, 'recon.csv'), dict(model, style='groups', images=2000,
                                                               l2=by_metric['l2'][i], lpips=by_metric['lpips'][i],
                                                               baseline_l2=0.1168, baseline_lpips=0.09, seconds=20.0))


def known_scores():
    """V1 and V3 hold by a wide margin; V2 goes the other way (vm worse); V4's gvp is below ar."""
    rng = np.random.default_rng(0)
    noise = lambda scale=0.1: rng.normal(0, scale, len(SEEDS))
    ar = 81.0 + noise(0.3)
    scores = {'ar': dict(probe=ar, finetune=ar + 1), 'ar1s': dict(probe=ar - 0.5 + noise(), finetune=ar + 0.5),
              'dar2': dict(probe=ar + 1.0 + noise(), finetune=ar + 2 + noise()),
              'dar3': dict(probe=ar + 1.5 + noise()), 'dar4': dict(probe=ar + 0.5 + noise()),
              'gvp': dict(probe=ar - 1.0 + noise())}
    for arm, l2 in (('mae75', 0.039), ('mae50', 0.033), ('vm', 0.045)):
        scores[arm] = dict(probe=70 + noise(), l2=l2 + noise(0.0005), lpips=l2 + noise(0.0005))
    return scores


def verdict(lines, name):
    at = lines.index(next(line for line in lines if line.startswith(f'**{name}**')))
    return next(line for line in lines[at:] if line.startswith('- verdict'))


def test_verdicts_on_a_record_with_known_answers(tmp_path):
    scores = known_scores()
    write_record(tmp_path / 'record', scores)
    lines = vision.report(str(tmp_path / 'record'), str(tmp_path / 'res'))
    assert verdict(lines, 'V1') == '- verdict: effect (met)'
    assert verdict(lines, 'V2') == '- verdict: not met'
    assert verdict(lines, 'V3') == '- verdict: effect (met)'
    assert verdict(lines, 'V4') == '- verdict: not met'
    # V1a's line: dar2 - ar by seed, the one-sided t-test, 5 of 5 seeds, the sign test's 1/32
    differences = scores['dar2']['probe'] - scores['ar']['probe']
    line = next(line for line in lines if line.startswith('- V1a'))
    assert f"one-sided paired t-test p = {one_sided_p(differences):.2g}, 5 of 5 seeds" in line
    assert line.endswith('one-sided sign test p = 0.0312: holds')
    assert f"1337: {differences[0]:+.2f}" in line
    # V2 is the other way: mae75 - vm < 0 on every seed, so p near 1 and 0 of 5
    assert next(line for line in lines if line.startswith('- V2a')).endswith('0 of 5 seeds, one-sided sign test p = 1: '
                                                                              'does not hold')
    text = '\n'.join(lines)
    assert '| V1a probe: dar2 above ar | dar2 - ar |' in text and '| 0.49 (sd 0.36, archive) |' in text
    assert '| 2 | ' in text.split('## Table 9')[1] and '| mean-fill baseline |' in text
    for name in ('probe_by_t', 'recon_l2', 'recon_lpips'):
        assert (tmp_path / 'res' / f'{name}.png').exists() and (tmp_path / 'res' / f'{name}.csv').exists()
    assert (tmp_path / 'res' / 'tables.md').read_text() == text.rstrip() + '\n'
    by_t = (tmp_path / 'res' / 'probe_by_t.csv').read_text().splitlines()
    assert by_t[0] == 'series,t,linear probe top-1 %' and len(by_t) == 1 + 4 * (1 + len(SEEDS))


def test_the_baselines_stand_beside_every_arm_without_changing_a_verdict(tmp_path):
    """The raw-pixel probe and ar at initialisation (probe and fine-tune) from runs/pixels and runs/random: their rows,
    each arm's paired difference from them, and the same verdicts and comparisons as without them."""
    scores = known_scores()
    write_record(tmp_path / 'record', scores)
    before = vision.report(str(tmp_path / 'record'), str(tmp_path / 'res'))
    settings = json.load(open(tmp_path / 'record' / 'settings.json'))
    json.dump(dict(settings, baselines=['pixels', 'random']), open(tmp_path / 'record' / 'settings.json', 'w'))
    pixels, random = 83.0 + np.arange(5) / 10, 74.0 + np.zeros(5)
    for i, seed in enumerate(SEEDS):
        for name, probe in (('pixels', pixels[i]), ('random', random[i])):
            run = tmp_path / 'record' / 'runs' / name / str(seed)
            os.makedirs(run)
            write_csv(run / 'linprobe.csv', dict(model=name, val_acc=probe, seconds=30.0))
        write_csv(run / 'finetune.csv', dict(model='random', val_acc=75.0, seconds=60.0))
    lines = vision.report(str(tmp_path / 'record'), str(tmp_path / 'res'))
    text = '\n'.join(lines)
    assert '| raw pixels (input baseline) | | | 83.20 ± 0.16 | – | | |' in text
    assert '| ar two-stream at initialisation | | | 74.00 ± 0.00 | 75.00 ± 0.00 | | |' in text
    row = next(line for line in lines if line.startswith('| ar (two-stream, t=1) |') and 'above' in line)
    below = scores['ar']['probe'] - pixels
    assert row.startswith(f"| ar (two-stream, t=1) | {below.mean():.2f} ± {below.std(ddof=1):.2f} (0 of 5 above) |")
    assert [line for line in lines if line.startswith(('- V', '**V'))] == \
        [line for line in before if line.startswith(('- V', '**V'))]


def test_a_comparison_missing_a_seed_is_pending_and_the_rest_is_judged(tmp_path):
    write_record(tmp_path / 'record', known_scores())
    os.remove(tmp_path / 'record' / 'runs' / 'dar4' / '1341' / 'linprobe.csv')
    with open(tmp_path / 'record' / 'runs' / 'gvp' / '1339' / 'log.jsonl', 'a') as f:  # not at the budget: unfinished
        f.write(json.dumps(dict(iter=1100, val_loss=0.1)) + '\n')
    lines = vision.report(str(tmp_path / 'record'), str(tmp_path / 'res'))
    assert verdict(lines, 'V3').startswith('- verdict: pending')
    assert '- V3c probe: dar3 above dar4: pending (4 of 5 seeds have both values)' in lines
    assert verdict(lines, 'V4').startswith('- verdict: pending') and verdict(lines, 'V1') == '- verdict: effect (met)'
    assert '| gvp | 4 of 5 |' in '\n'.join(lines)


def test_a_weak_effect_is_not_an_effect(tmp_path):
    """dar2 above ar on the mean but within the noise: the mean goes the stated way, p is not below 0.05."""
    scores = known_scores()
    scores['dar2']['finetune'] = scores['ar']['finetune'] + np.array([0.6, -0.5, 0.4, -0.3, 0.1])
    write_record(tmp_path / 'record', scores)
    lines = vision.report(str(tmp_path / 'record'), str(tmp_path / 'res'))
    line = next(line for line in lines if line.startswith('- V1c'))
    assert line.endswith('does not hold') and '3 of 5 seeds' in line
    assert verdict(lines, 'V1') == '- verdict: not met'


def test_the_tables_regenerate_byte_for_byte(tmp_path):
    write_record(tmp_path / 'record', known_scores())
    for arm in ('mae75', 'vm'):  # a reconstruction grid from eval_vision.py, as the script keeps it
        from PIL import Image
        Image.new('RGB', (40, 60), (10, 20, 30)).save(tmp_path / 'record' / 'runs' / arm / '1337' / f'recon_{arm}.png')
    vision.report(str(tmp_path / 'record'), str(tmp_path / 'first'))
    vision.report(str(tmp_path / 'record'), str(tmp_path / 'second'))
    names = sorted(os.listdir(tmp_path / 'first'))
    assert names == sorted(os.listdir(tmp_path / 'second')) and 'recon_grid.png' in names and 'tables.md' in names
    for name in names:
        assert (tmp_path / 'first' / name).read_bytes() == (tmp_path / 'second' / name).read_bytes(), name

# -----------------------------------------------------------------------------
# the script

def run_script(tmp_path, **env):
    env = {**os.environ, 'PYTHON': sys.executable, 'OUT': str(tmp_path / 'out'), 'RES': str(tmp_path / 'res'), **env}
    return subprocess.run(['bash', vision.SCRIPT], env=env, capture_output=True, text=True, timeout=600)


def test_a_smoke_run_refuses_the_record(tmp_path):
    result = run_script(tmp_path, RES='experiments/vision', STEPS='2')
    assert result.returncode == 2 and 'give this smoke run its own RES=' in result.stderr
    assert not (tmp_path / 'out').exists()


@pytest.mark.long
def test_the_script_end_to_end(tmp_path):
    """Two arms (one-stream ar, dar t=2: both fine-tuned), 2 steps, one seed, evaluations on a few hundred images:
    the record gets each run's log and evaluations; run again without checkpoints (a clone), nothing trains and the
    tables come back the same."""
    if not os.path.exists(os.path.join(ROOT, 'data', 'fmnist', 'val.npz')):
        pytest.skip('Fashion-MNIST is not prepared: apt-get install dataset-fashion-mnist; python '
                    'data/fmnist/prepare.py')
    smoke = dict(STEPS='2', SEEDS='1337', ARMS='ar1s dar2', SMOKE='1')
    result = run_script(tmp_path, **smoke)
    assert result.returncode == 0, result.stderr[-3000:]
    for arm in ('ar1s', 'dar2'):
        run = tmp_path / 'res' / 'runs' / arm / '1337'
        for name in ('log.jsonl', 'linprobe.csv', 'finetune.csv', 'recon.csv', f'recon_{arm}.png'):
            assert (run / name).exists(), (arm, name)
    tables = (tmp_path / 'res' / 'tables.md').read_text()
    assert '- verdict: pending' in tables and '| ar one-stream | 1 of 1 |' in tables
    styles = {arm: next(csv.DictReader(open(tmp_path / 'res' / 'runs' / arm / '1337' / 'recon.csv')))['style']
              for arm in ('ar1s', 'dar2')}
    assert styles == {'ar1s': 'causal', 'dar2': 'groups'}
    import shutil
    shutil.rmtree(tmp_path / 'out')
    again = run_script(tmp_path, **smoke)
    assert again.returncode == 0, again.stderr[-3000:]
    assert not (tmp_path / 'out').exists() or not list((tmp_path / 'out').rglob('*.pt'))
    assert (tmp_path / 'res' / 'tables.md').read_text() == tables


RECORD = os.path.join(ROOT, 'experiments', 'vision')


def test_the_record_regenerates_its_tables(tmp_path):
    """tables.md, the CSVs and the plots (the probe against t, the reconstruction errors, the grid) from the runs."""
    vision.report(RECORD, str(tmp_path))
    for name in sorted(os.listdir(RECORD)):
        if name.endswith(('.md', '.csv', '.png')):
            assert (tmp_path / name).read_bytes() == open(os.path.join(RECORD, name), 'rb').read(), name


@pytest.mark.record
def test_the_readmes_quote_the_record():
    """experiments/README.md holds tables.md's row of every registered comparison and its verdicts; README.md's image
    rows carry tables.md's numbers."""
    tables = open(os.path.join(RECORD, 'tables.md')).read()
    section = open(os.path.join(ROOT, 'experiments', 'README.md')).read().split('## Vision')[1].split('\n## ')[0]
    rows = [line for line in tables.split('## Registered comparisons')[1].splitlines() if line.startswith('| V')]
    assert len(rows) == 13 and all(row in section for row in rows)
    verdicts = {name: tables.split(f'**{name}**')[1].split('- verdict: ')[1].split('\n')[0] for name in
                ('V1', 'V2', 'V3', 'V4')}
    for name, verdict in verdicts.items():
        assert f'**{name} {verdict}**' in ' '.join(section.split()), name

    def comparison(name):
        row = next(row for row in rows if row.startswith(f'| {name} ')).split(' | ')
        return row[2], row[3]
    readme = open(os.path.join(ROOT, 'README.md')).read()
    probe, finetune, l2 = comparison('V1a'), comparison('V1c'), comparison('V2a')
    assert f"probe {probe[0]} (p {probe[1]}), fine-tune {finetune[0]} (p {finetune[1]})" in readme
    assert f"L2 below mae 0.75 (p {l2[1]}, 5 of 5 seeds)" in readme
    by_t = [line.split(' | ')[1].split(' ±')[0] for line in tables.split('## Table 9')[1].split('## Table 8')[0]
            .splitlines() if re.match(r'\| [1-4] \|', line)]
    assert f"probe by t: {', '.join(by_t)}; gvp - ar {comparison('V4a')[0]}" in readme

# -----------------------------------------------------------------------------
# the pilot (exploratory): every arm x protocol against the pixels of the same seeds


def test_the_pilot_table_pairs_each_probe_with_the_pixels_of_its_seed(tmp_path):
    from experiments import vision_pilot
    runs = tmp_path / 'runs'
    for i, seed in enumerate((2001, 2002, 2003)):
        os.makedirs(runs / 'pixels' / str(seed))
        write_csv(runs / 'pixels' / str(seed) / 'linprobe.csv', dict(model='pixels', val_acc=83.0 + i, seconds=30.0))
        os.makedirs(runs / 'ar-1000' / str(seed))
        for protocol, acc in (('mean', 81.0 + i), ('concat', 85.0 + 2 * i)):
            write_csv(runs / 'ar-1000' / str(seed) / f'linprobe-{protocol}.csv', dict(model='ar', val_acc=acc,
                                                                                      seconds=60.0))
    lines = vision_pilot.report(str(tmp_path))
    mean, concat = (line for line in lines if line.startswith('| ar | 1000 |'))
    assert mean.startswith("| ar | 1000 | mean: ") and '| 3 | 82.00 ± 1.00 | -2.00 ± 0.00 | 0 of 3 |' in mean
    assert '| 3 | 87.00 ± 2.00 | 3.00 ± 1.00 | 3 of 3 |' in concat and concat.endswith('| 1.0 | – |')
    pilot = (tmp_path / 'pilot.csv').read_text().splitlines()
    assert pilot[0] == 'arm,steps,protocol,seed,val_acc,pixels_val_acc,minus_pixels,seconds' and len(pilot) == 7
    assert (tmp_path / 'tables.md').read_text() == '\n'.join(lines) + '\n'


def test_the_pilot_record_regenerates_its_table(tmp_path):
    """experiments/vision-pilot: tables.md and pilot.csv from its runs alone."""
    import shutil
    from experiments import vision_pilot
    pilot = os.path.join(ROOT, 'experiments', 'vision-pilot')
    shutil.copytree(os.path.join(pilot, 'runs'), tmp_path / 'runs')
    vision_pilot.report(str(tmp_path))
    for name in ('tables.md', 'pilot.csv'):
        assert (tmp_path / name).read_bytes() == open(os.path.join(pilot, name), 'rb').read(), name

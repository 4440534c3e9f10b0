"""experiments/data_constrained_rope.sh, the data-constrained registration made again with rotary positions: its text
parses into the hypotheses data_constrained.py judges (H1-H5 the first registration's word for word), the registered
minimum detectable effects are stats' computation from the learned record's spread, each new hypothesis gives the
known verdict on a synthetic record, and the script trains what it registers."""
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import ROOT, file_at_commit, write_curves_record

from experiments import data_constrained as dc
from experiments.stats import minimum_detectable_effect

SCRIPT = os.path.join(ROOT, 'experiments', 'data_constrained_rope.sh')
LEARNED = os.path.join(ROOT, 'experiments', 'data-constrained')
SEEDS = [1337, 1338, 1339, 1340, 1341]
STEPS = np.arange(100, 1001, 100)

def header_text():
    """The script's comment lines as one line of words (a phrase may wrap across lines)."""
    return ' '.join(' '.join(line.lstrip('#').split()) for line in open(SCRIPT) if line.startswith('#'))


def header_value(name):
    return re.search(rf'^{name}="?([^"\n]*)"?$', open(SCRIPT).read(), re.M).group(1)


def test_the_registration_parses_into_the_hypotheses_the_summary_judges():
    hypotheses, constants = dc.registered(SCRIPT)
    first, first_constants = dc.registered(dc.SCRIPT)
    assert list(hypotheses) == [f'H{i}' for i in range(1, 9)]
    assert {name: hypotheses[name] for name in first} == first and constants == first_constants  # word for word
    assert hypotheses['H6'].endswith('rise (ar) - rise (dar4) > 0.')
    assert hypotheses['H7'].endswith('rise (ar) - rise (ar_random) > 0.')
    assert hypotheses['H8'].endswith('best (ar) - best (mdlm) > 0.')
    assert sorted(dc.registered_mdes(SCRIPT)) == sorted(hypotheses) and dc.registered_mdes(dc.SCRIPT) == {}
    text = header_text()
    assert f"(5 seeds: {header_value('REGISTERED_SEEDS')};" in text and header_value('REGISTERED_SEEDS') == \
        ' '.join(map(str, SEEDS))


def learned_differences():
    """Each hypothesis's paired differences in the learned record (3 seeds), as data_constrained.py takes them."""
    settings, runs = dc.load(LEARNED)
    stats = {key: {seed: dc.summary(*run, 0.01) for seed, run in by_seed.items()} for key, by_seed in runs.items()}
    take = lambda size, arm, key: np.array([stats[(size, arm)][seed][key] for seed in (1337, 1338, 1339)])
    return {'H1': take('small', 'ar', 'rise') - 0.05,
            'H2': dc.epochs(settings, 'small', take('small', 'mdlm', 'reached') - take('small', 'ar', 'reached')),
            'H3': take('small', 'ar', 'end') - take('small', 'mdlm', 'end'),
            'H4': take('full', 'mdlm', 'end') - take('full', 'ar', 'end'),
            'H5': take('small', 'ar', 'rise') - take('small', 'dar', 'rise'),
            'H8': take('small', 'ar', 'best') - take('small', 'mdlm', 'best')}, \
        np.hypot(take('small', 'ar', 'rise').std(ddof=1), take('small', 'dar', 'rise').std(ddof=1))


def test_the_registered_mdes_are_stats_computation_from_the_learned_spread():
    """sd: the paired differences' std in the learned record (H6, H7: ar's and dar t=2's rise stds combined);
    MDE: minimum_detectable_effect(sd, 5 seeds, one-sided 0.05, power 0.8), printed as registered."""
    differences, arms = learned_differences()
    for name, registered in dc.registered_mdes(SCRIPT).items():
        sd = arms if name in ('H6', 'H7') else differences[name].std(ddof=1)
        fmt = '.2f' if name == 'H2' else '.4f'
        assert registered['sd_text'] == f"{sd:{fmt}}", name
        assert registered['mde_text'] == f"{minimum_detectable_effect(sd, 5, 0.05, 0.8):{fmt}}", name
    assert minimum_detectable_effect(1.0, 5) == pytest.approx(1.359, abs=5e-4)  # the factor the header quotes
    assert '1.359 x the paired sd' in header_text()


def write_record(root, curves, seeds=SEEDS):
    write_curves_record(root, curves, recipe='--rope=True', seeds=seeds,
                        floors={size: {'unigram': 3.3, 'bigram': 2.7} for size in ('small', 'full')})


def verdict(lines, name):
    at = next(i for i, line in enumerate(lines) if line.startswith(f'**{name}**'))
    return next(line for line in lines[at:] if line.startswith('- verdict'))


def curves(rng, **shapes):
    noise = lambda: rng.normal(0, 0.005, len(STEPS))
    small = {arm: {seed: shape + noise() for seed in SEEDS} for arm, shape in shapes.items()}
    full = {'ar': np.linspace(3.0, 1.8, 10), 'dar': np.linspace(3.0, 2.0, 10), 'mdlm': np.linspace(3.3, 2.6, 10)}
    return {**{('small', arm): by_seed for arm, by_seed in small.items()},
            **{('full', arm): {seed: shape + noise() for seed in SEEDS} for arm, shape in full.items()}}


AR = np.array([3.0, 2.5, 2.2, 2.3, 2.6, 2.9, 3.0, 3.1, 3.2, 3.3])       # best 2.2 early, rises 1.1
FLAT = np.array([3.0, 2.6, 2.4, 2.3, 2.3, 2.32, 2.33, 2.35, 2.36, 2.38])  # rises 0.08
MDLM_CROSSES = np.linspace(3.3, 2.0, 10)                                # best 2.0 at the end: below ar's best
MDLM_SHORT = np.linspace(3.3, 2.4, 10)                                  # below ar's end, not its best


def test_the_new_hypotheses_give_their_known_verdicts(tmp_path):
    """H6 holds (dar t=4 rises less than ar), H7 fails (ar_random rises more), H8 holds (masked diffusion's best
    below ar's best); with masked diffusion ending below ar's end but not below its best, H8 fails and H3 holds."""
    rng = np.random.default_rng(0)
    shapes = dict(ar=AR, dar=FLAT, dar4=FLAT, ar_random=AR + np.linspace(0, 0.3, 10), mdlm=MDLM_CROSSES)
    write_record(tmp_path / 'record', curves(rng, **shapes))
    lines = dc.report(str(tmp_path / 'record'), str(tmp_path / 'res'), SCRIPT)
    assert verdict(lines, 'H6') == '- verdict: effect (met)'
    assert verdict(lines, 'H7') == '- verdict: not met'
    assert verdict(lines, 'H8') == '- verdict: effect (met)'
    assert lines[0] == f"# {dc.TITLES['data_constrained_rope.sh']}"
    assert '## Verdicts (registered in data_constrained_rope.sh before the runs)' in lines
    assert '| ar random order |' in '\n'.join(lines) and '| dar t=4 |' in '\n'.join(lines)
    write_record(tmp_path / 'short', curves(rng, **{**shapes, 'mdlm': MDLM_SHORT}))
    lines = dc.report(str(tmp_path / 'short'), str(tmp_path / 'res2'), SCRIPT)
    assert verdict(lines, 'H8') == '- verdict: not met' and verdict(lines, 'H3') == '- verdict: effect (met)'


def test_the_mde_printed_beside_each_verdict_is_stats_computation(tmp_path):
    rng = np.random.default_rng(1)
    write_record(tmp_path / 'record', curves(rng, ar=AR, dar=FLAT, dar4=FLAT, ar_random=FLAT, mdlm=MDLM_CROSSES))
    lines = dc.report(str(tmp_path / 'record'), str(tmp_path / 'res'), SCRIPT)
    registered = dc.registered_mdes(SCRIPT)
    settings, runs = dc.load(str(tmp_path / 'record'))
    rise = {arm: np.array([dc.summary(*runs[('small', arm)][seed], 0.01)['rise'] for seed in SEEDS])
            for arm in ('ar', 'dar4')}
    for name in [f'H{i}' for i in range(1, 9)]:
        at = next(i for i, line in enumerate(lines) if line.startswith(f'**{name}**'))
        line = next(line for line in lines[at:] if line.startswith('- minimum detectable effect'))
        assert (f"registered {registered[name]['mde_text']} (paired sd {registered[name]['sd_text']}, "
                f"{registered[name]['source']})") in line, name
        assert '5 seeds' in line
    h6 = rise['ar'] - rise['dar4']
    own = minimum_detectable_effect(h6.std(ddof=1), 5, 0.05, 0.8)
    at = next(i for i, line in enumerate(lines) if line.startswith('**H6**'))
    assert f"from this record's spread {own:.3f} (paired sd {h6.std(ddof=1):.3f})" in lines[at + 4]
    assert (tmp_path / 'res' / 'tables.md').read_text() == '\n'.join(lines).rstrip() + '\n'


def test_no_verdict_before_every_registered_seed_has_every_arm(tmp_path):
    rng = np.random.default_rng(2)
    record = curves(rng, ar=AR, dar=FLAT, dar4=FLAT, ar_random=FLAT, mdlm=MDLM_CROSSES)
    del record[('small', 'ar_random')][1341]
    write_record(tmp_path / 'record', record)
    text = '\n'.join(dc.report(str(tmp_path / 'record'), str(tmp_path / 'res'), SCRIPT))
    assert 'Pending: not every registered run has finished (seeds still missing an arm: small: 1341)' in text
    assert '- verdict' not in text


def fake_python(tmp_path):
    """A stand-in python that logs each call and leaves a finished log where train.py would."""
    log, fake = tmp_path / 'calls.log', tmp_path / 'python'
    fake.write_text(f"""#!/bin/bash
echo "$@" >> {log}
dir=""; steps=""; for a in "$@"; do case $a in --out_dir=*) dir=${{a#--out_dir=}} ;; --max_iters=*) steps=${{a#*=}} ;;
esac; done
[ "$1" = train.py ] && mkdir -p "$dir" && echo "{{\\"iter\\": $steps, \\"val_loss\\": 3.0}}" > "$dir/log.jsonl"
exit 0
""")
    fake.chmod(0o755)
    return log, fake


def run_script(tmp_path, **env):
    log, fake = fake_python(tmp_path)
    env = {**os.environ, 'PYTHON': str(fake), 'OUT': str(tmp_path / 'out'), 'RES': str(tmp_path / 'res'), **env}
    return subprocess.run(['bash', SCRIPT], env=env, capture_output=True, text=True, timeout=600), log  # a hang guard


def test_the_script_trains_what_it_registers(tmp_path):
    """Five arms at 32 KiB and three on the full split for every registered seed, each with --rope=True, the
    registered budget and the first registration's recipe; ar_random is ar along random orders."""
    result, log = run_script(tmp_path)
    assert result.returncode == 0, result.stderr
    train = [call.split() for call in log.read_text().splitlines() if call.startswith('train.py')]
    assert len(train) == 5 * 8
    steps = re.search(r'^STEPS=\$\{STEPS:-(\d+)\}', open(SCRIPT).read(), re.M).group(1)
    for args in train:
        assert {'--rope=True', f'--max_iters={steps}', f'--lr_decay_iters={steps}', '--batch_size=16',
                '--block_size=64', '--learning_rate=5e-4', '--min_lr=5e-05', '--eval_interval=100'} <= set(args)
        seed = next(a for a in args if a.startswith('--seed='))[7:]
        size, arm = args[-1].split('/')[-3:-1]
        assert args[-1].endswith(f'/{size}/{arm}/{seed}') and int(seed) in SEEDS
        assert ('--train_tokens=32768' if size == 'small' else '--train_tokens=0') in args
        config = {'ar': ['config/ar_shakespeare_bytes.py'], 'dar': ['config/dar_shakespeare_bytes.py',
                  '--eval_objective=ar'], 'dar4': ['config/dar_shakespeare_bytes.py', '--t=4', '--eval_objective=ar'],
                  'ar_random': ['config/ar_shakespeare_bytes.py', '--random_order=True'],
                  'mdlm': ['config/mdlm_2s_shakespeare_bytes.py']}[arm]
        assert args[1:1 + len(config)] == config, args
    runs = {tuple(args[-1].split('/')[-3:-1]) for args in train}
    assert runs == {('small', arm) for arm in ('ar', 'dar', 'dar4', 'ar_random', 'mdlm')} | \
        {('full', arm) for arm in ('ar', 'dar', 'mdlm')}
    summary = [call for call in log.read_text().splitlines()
               if call.startswith('-m experiments.data_constrained') and ' settings ' not in call]
    assert summary == [f"-m experiments.data_constrained {tmp_path / 'res'} {tmp_path / 'res'} "
                       "experiments/data_constrained_rope.sh"]
    again, log = run_script(tmp_path)  # every log in the record is complete: nothing trains again
    assert again.returncode == 0 and sum(c.startswith('train.py') for c in log.read_text().splitlines()) == len(train)


def test_a_smoke_run_refuses_the_record(tmp_path):
    result, log = run_script(tmp_path, RES='experiments/data-constrained-rope', STEPS='20')
    keys = ('STEPS', 'RES=', 'OUT=', 'experiments/data-constrained-rope')  # changed; fix; record
    assert result.returncode == 2 and all(key in result.stderr for key in keys), result.stderr
    assert not log.exists()


@pytest.mark.record
def test_the_readme_quotes_the_registration_and_its_commit(tmp_path):
    """experiments/README.md quotes H6-H8 word for word, and the commit it names holds this registration unchanged
    (the hypotheses, their MDEs and the constants): it was committed before any registered run."""
    readme_text = open(os.path.join(ROOT, 'experiments', 'README.md')).read()
    readme = ' '.join(readme_text.replace('\n> ', ' ').split())
    hypotheses, constants = dc.registered(SCRIPT)
    for name in ('H6', 'H7', 'H8'):
        assert f"{name} {hypotheses[name]}" in readme, name
    section = readme_text.split('## Data-constrained, registered again with rotary positions')[1].split('\n## ')[0]
    commit = re.search(r'commit `([0-9a-f]{7,40})`', section).group(1)
    committed = file_at_commit(tmp_path, commit, 'experiments/data_constrained_rope.sh')
    assert dc.registered(committed) == (hypotheses, constants)
    assert dc.registered_mdes(committed) == dc.registered_mdes(SCRIPT)


RECORD = os.path.join(ROOT, 'experiments', 'data-constrained-rope')


def test_the_record_regenerates_its_tables_and_curves(tmp_path):
    """Every table, CSV and plot from the logs alone; no seed is marked seen before (the pilot ran seed 1336)."""
    dc.report(RECORD, str(tmp_path), SCRIPT)
    for name in os.listdir(RECORD):
        if name.endswith(('.md', '.csv', '.png')) and name != 'README.md':
            assert (tmp_path / name).read_bytes() == open(os.path.join(RECORD, name), 'rb').read(), name


@pytest.mark.record
def test_the_readme_quotes_the_records_verdicts():
    """experiments/README.md's verdict rows are tables.md's: measured value, p, seeds, sign test, verdict and both
    MDEs, for H1-H8."""
    tables = open(os.path.join(RECORD, 'tables.md')).read()
    section = open(os.path.join(ROOT, 'experiments', 'README.md')).read().split(
        '## Data-constrained, registered again with rotary positions')[1].split('\n## ')[0]
    for row in (line for line in tables.split('## small')[1].split('\n\n')[2].splitlines()[2:]):
        assert row in section, row
    for name in ('H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'H7', 'H8'):
        block = tables.split(f'**{name}**')[1]
        measured = block.split('- measured: ')[1].split(' (')[0]
        p, seeds = block.split('one-sided paired t-test p = ')[1].split(' seeds, t-test as registered')[0].split(' (')
        sign = block.split('one-sided sign test p = ')[1].splitlines()[0]
        met = 'met' if 'effect (met)' in block.split('- verdict: ')[1].splitlines()[0] else 'not met'
        mde = block.split('5 seeds): registered ')[1]
        mdes = f"{mde.split(' ')[0]} / {mde.split('from this record' + chr(39) + 's spread ')[1].split(' ')[0]}"
        row = next(line for line in section.splitlines() if line.startswith(f'| {name} '))
        cells = [cell.strip() for cell in row.strip('|').split('|')]
        assert cells[1].endswith(measured) and cells[2:] == [p, seeds, sign, met, mdes], (name, cells)


@pytest.mark.record
def test_the_front_readme_rows_are_the_record():
    """README.md's results rows on repeated data, the rotary column: each arm's rise and the p of H5-H7, H3's gap and
    p, and H8's gap, from tables.md."""
    tables = open(os.path.join(RECORD, 'tables.md')).read()
    readme = open(os.path.join(ROOT, 'README.md')).read().splitlines()
    rows = [line.split(' | ') for line in tables.split('## full:')[0].splitlines() if line.startswith('| ')]
    rise = {row[0][2:]: float(row[4].split(' ±')[0]) for row in rows[1:]}  # below the header

    def p(name):
        return float(tables.split(f'**{name}**')[1].split('t-test p = ')[1].split(' (')[0])

    def measured(name):
        return tables.split(f'**{name}**')[1].split('- measured: ')[1].split(' ±')[0]

    rope = next(line for line in readme if line.startswith('| repeated data')).split(' | ')[2]
    assert rope == (f"197 epochs: ar {rise['ar']:.2f}, dar t=2 {rise['dar t=2']:.2f} (p {p('H5'):.2g}), dar t=4 "
                    f"{rise['dar t=4']:.2f} (p {p('H6'):.1g}), random-order ar {rise['ar random order']:.3f} "
                    f"(p {p('H7'):.0e}), masked diffusion {rise['masked diffusion']:.3f}")
    rope = next(line for line in readme if line.startswith('| masked diffusion overtakes ar')).split(' | ')[2]
    _, runs = dc.load(RECORD)
    end = lambda arm: np.array([dc.summary(*runs[('small', arm)][seed], 0.01)['end'] for seed in SEEDS])
    h3 = (end('ar') - end('mdlm')).mean()  # from the logs: rounding tables.md's +2.415 again would give 2.42, not 2.41
    assert f"ends {h3:.2f} below ar (p {p('H3'):.0e})" in rope
    assert f"its best {measured('H8').lstrip('-')} above ar's best" in rope

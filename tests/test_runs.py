"""experiments/runs.sh, sourced by every experiment script: what a script reads from its environment is checked, and
what only other scripts read is refused, before anything runs (one line naming the variable); a failed run shows its
own last line; a record file is replaced only once the command that writes it has succeeded."""
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from warm_python import warm_python

SCRIPTS = sorted(name for name in os.listdir(os.path.join(ROOT, 'experiments'))
                 if name.endswith('.sh') and name != 'runs.sh')
NOT_CHECKED = {'TOKENS': 'reproduce.sh refuses it itself', 'GPT2_OUT': 'a record that may be absent'}
BAD = {'STEPS': 'abc', 'BYTE_STEPS': '3k', 'JOBS': '0', 'NUM_SAMPLES': '-1', 'OMP_NUM_THREADS': 'two',
       'SEEDS': '7 7', 'GPT2_SEEDS': 'x', 'KS': '0 1', 'SMOKE': 'yes', 'ROPE': 'true', 'ARMS': 'ar nope',
       'PYTHON': 'no-such-python'}


def read_from_environment(script):
    """The variables a script takes from its environment: NAME=${NAME:-default}."""
    text = open(os.path.join(ROOT, 'experiments', script)).read()
    return sorted(set(re.findall(r'\b([A-Z][A-Z_0-9]*)=\$\{\1:-', text)) - set(NOT_CHECKED))


def fake_python(tmp_path, python=sys.executable):
    """Logs every call and does nothing, but for the two dry checks, which run in a real python: the device keys
    (-c) and train.py --help."""
    log, fake = tmp_path / 'calls.log', tmp_path / 'python'
    fake.write_text(f'#!/bin/bash\ncase "$*" in -c*|*--help*) exec {python} "$@" ;; esac\n'
                    f'echo "$@" >> {log}\n')
    fake.chmod(0o755)
    return log, fake


def run(script, tmp_path, *args, python=sys.executable, **env):
    log, fake = fake_python(tmp_path, python)
    env = {**os.environ, 'PYTHON': str(fake), 'OUT': str(tmp_path / 'out'), 'RES': str(tmp_path / 'res'),
           'SEEDS': '7', 'STEPS': '20', **env}
    result = subprocess.run(['bash', os.path.join(ROOT, 'experiments', script), *args], env=env, capture_output=True,
                            text=True, timeout=600)  # a hang guard
    return result, log


def stops_with_one_line(result, log, script, name):
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f'{script}: error: {name}='), result.stderr
    assert not log.exists(), log.read_text()  # nothing ran, not even a prepare


@pytest.mark.parametrize('script', SCRIPTS)
def test_every_variable_a_script_reads_is_checked_before_anything_runs(script, tmp_path):
    (tmp_path / 'a_file').write_text('')
    args, env = (['summary'], {'TOKENS': 'bytes'}) if script == 'reproduce.sh' else ([], {})  # every variable read
    for name in read_from_environment(script):
        if name in ('DEVICE_FLAGS', 'TRAIN_FLAGS'):
            continue  # a python start each: test_device_and_train_flags_are_checked_dry
        bad = BAD.get(name, str(tmp_path / 'a_file'))  # OUT, RES, KEEP: a file where a folder goes
        result, log = run(script, tmp_path, *args, **{**env, name: bad})
        stops_with_one_line(result, log, script, name)


def test_device_and_train_flags_are_checked_dry(tmp_path):
    """A bad DEVICE_FLAGS used to fail every run alike, its cause in each run's log: now the keys and values are
    checked as the scripts check them (a machine without a GPU refuses --device=cuda), and TRAIN_FLAGS by train.py."""
    with warm_python() as python:  # three starts of a python with torch: its imports made once
        for name, bad, cause in [('DEVICE_FLAGS', '--device=gpu', "'gpu'"),  # the value or key
                                 ('DEVICE_FLAGS', '--compile=False', "'compile'"),  # refused
                                 ('TRAIN_FLAGS', '--compil=False', "'compil'")]:
            result, log = run('data_constrained_rope.sh', tmp_path, python=python, **{name: bad})
            stops_with_one_line(result, log, 'data_constrained_rope.sh', name)
            assert cause in result.stderr


OPTIONAL = {'JOBS': '2', 'DEVICE_FLAGS': '--device=cpu', 'TRAIN_FLAGS': '--compile=False'}  # read by some scripts only


@pytest.mark.parametrize('script, name', [(script, name) for script in SCRIPTS for name in OPTIONAL
                                          if name not in read_from_environment(script)])
def test_a_variable_the_script_does_not_read_is_refused_before_anything_runs(script, tmp_path, name):
    """JOBS=4 to a script that runs its jobs two at a time used to be ignored without a word: it stops, naming the
    variable and the scripts that read it."""
    result, log = run(script, tmp_path, **{name: OPTIONAL[name]})
    stops_with_one_line(result, log, script, name)
    readers = [other for other in SCRIPTS if name in read_from_environment(other)]
    assert readers and all(other in result.stderr for other in readers), result.stderr


def test_reproduce_table7_steps_are_checked(tmp_path):
    result, log = run('reproduce.sh', tmp_path, 'table7', 'abc')
    assert result.returncode == 2 and result.stderr.startswith('reproduce.sh: error: table7 abc')
    assert not log.exists()


def test_a_failed_run_shows_its_own_last_line(tmp_path):
    """One arm's train.py stops on bad input: the script names the run and prints the last line of its log."""
    log, fake = tmp_path / 'calls.log', tmp_path / 'python'
    fake.write_text(f"""#!/bin/bash
echo "$@" >> {log}
case "$*" in *config/mdlm_2s*small*) echo "tokenizing 10/10 docs" >&2; echo "train.py: error: the cause" >&2; exit 1 ;;
esac
dir=""; for a in "$@"; do case $a in --out_dir=*) dir=${{a#--out_dir=}} ;; esac; done
[ "$1" = train.py ] && mkdir -p "$dir" && echo '{{"iter": 20, "val_loss": 3.0}}' > "$dir/log.jsonl"
exit 0
""")
    fake.chmod(0o755)
    env = {**os.environ, 'PYTHON': str(fake), 'OUT': str(tmp_path / 'out'), 'RES': str(tmp_path / 'res'),
           'SEEDS': '7', 'STEPS': '20'}
    result = subprocess.run(['bash', os.path.join(ROOT, 'experiments', 'data_constrained_rope.sh')], env=env,
                            capture_output=True, text=True, timeout=600)
    keys = (f"{tmp_path / 'out'}/small/mdlm/7", 'train.py: error: the cause')  # run; last line
    assert result.returncode != 0 and all(key in result.stderr for key in keys), result.stderr
    assert sum(line.startswith('train.py') for line in log.read_text().splitlines()) == 8  # the others all ran


def test_a_record_file_is_replaced_only_once_its_command_has_succeeded(tmp_path):
    """into_record FILE CMD: a command that fails part way (a sample.py of the samples block) leaves the recorded
    FILE as it was and no temporary beside it; one that succeeds replaces it."""
    record = tmp_path / 'samples.txt'
    record.write_text('recorded\n')
    script = f"""set -euo pipefail
source experiments/runs.sh
fails() {{ echo drawn; false || return; echo more; }}
into_record {record} fails || echo "status $?"
ls {tmp_path}; cat {record}
into_record {record} echo redrawn
"""
    result = subprocess.run(['bash', '-c', script], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and result.stdout == 'status 1\nsamples.txt\nrecorded\n', result.stderr
    assert record.read_text() == 'redrawn\n'


def test_a_pretraining_that_fails_is_recorded_once_and_a_stopped_one_resumes_with_its_clock(tmp_path):
    """pretrain_once (text_scale.sh, text_claim.sh): a run that fails (status 1: a diverging loss) leaves KEEP/failed.txt
    with its log's last line and is never trained again; a run stopped by a signal (status 143) leaves no failed.txt,
    and the clock of its part joins the resumed run's, a line a part."""
    calls, fake = tmp_path / 'calls.log', tmp_path / 'python'
    fake.write_text(f"""#!/bin/bash
echo "$@" >> {calls}
dir=""; for a in "$@"; do case $a in --out_dir=*) dir=${{a#--out_dir=}} ;; esac; done
mkdir -p "$dir"
case "$*" in
    *--seed=1*) echo "train.py: error: training loss is nan at iter 40" >&2; exit 1 ;;
    *--seed=2*--init_from=scratch*) touch "$dir/ckpt_last.pt"; exit 143 ;;
esac
echo '{{"iter": 20, "val_loss": 3.0}}' > "$dir/log.jsonl"; touch "$dir/ckpt_best.pt"
""")
    fake.chmod(0o755)
    script = f"""set -uo pipefail
source experiments/runs.sh
PYTHON={fake} DEVICE_FLAGS= TRAIN_FLAGS=
for seed in 1 1 2 2; do
    pretrain_once {tmp_path}/out/$seed {tmp_path}/res/$seed 20 "arm $seed" config/x.py --seed=$seed 2> /dev/null
    echo "status $?"
done
"""
    result = subprocess.run(['bash', '-c', script], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.stdout.splitlines() == ['status 1', 'status 1', 'status 1', 'done: pretraining arm 2', 'status 0']
    assert (tmp_path / 'res' / '1' / 'failed.txt').read_text() == \
        'pretraining: train.py: error: training loss is nan at iter 40\n'
    ran = calls.read_text().splitlines()
    assert [line.split('--seed=')[1].split()[0] for line in ran] == ['1', '2', '2']  # seed 1 not again
    assert '--init_from=resume' in ran[2] and '--max_iters=20 --lr_decay_iters=20' in ran[2]
    kept = sorted(os.listdir(tmp_path / 'res' / '2'))
    assert kept == ['log.jsonl', 'pretrain.time']  # no failed.txt, no part left over
    clock = (tmp_path / 'res' / '2' / 'pretrain.time').read_text().splitlines()
    assert len(clock) == 2 and all(re.fullmatch(r'cpu_s [\d.]+ [\d.]+ wall_s [\d.]+', line) for line in clock)

"""The probing pilot (exploratory): its rule on known answers, the table from runs laid out as probing_pilot.sh keeps
them, the committed record regenerating byte for byte, and the script refusing a smoke run into the record."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from experiments import probing_pilot as pp
from experiments.stats import minimum_detectable_effect

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, 'experiments', 'probing-pilot')
SUITE = ("bigram_shift       train  4000  dev  2000  labels 2  majority 50.0%\n"
         "play               train  4000  dev  2000  labels 4  majority 25.0%\n")


@pytest.mark.parametrize("ar,random,entered", [
    ({1: 70.0, 2: 71.0, 3: 72.0}, {1: 50.0, 2: 51.0, 3: 52.0}, 'yes'),    # 20 above both, the same each seed
    ({1: 56.0, 2: 57.0, 3: 58.0}, {1: 45.0, 2: 46.0, 3: 47.0}, 'no'),     # 11 above random, 7 above majority
    ({1: 70.0, 2: 71.0, 3: 72.0}, {1: 63.0, 2: 64.0, 3: 65.0}, 'no'),     # 7 above random
    ({1: 70.0, 2: 80.0, 3: 75.0}, {1: 50.0, 2: 51.0, 3: 52.0}, 'no'),     # 23 above, but a spread of 5.5
    ({1: 70.0, 2: 71.0}, {1: 50.0, 2: 51.0}, 'not decided'),              # two seeds
])
def test_rule(ar, random, entered):
    differences, mde, verdict = pp.decide(ar, random, 50.0)
    assert verdict == entered and differences == [ar[s] - random[s] for s in sorted(set(ar) & set(random))]
    if len(ar) == 3:
        sd = float(np.std(differences, ddof=1))
        assert mde == (pytest.approx(minimum_detectable_effect(sd, 5)) if sd > 0 else 0.0)


def write_run(folder, name, mode, results, cpu=None):
    """An eval_glue.py JSON as probing_pilot.sh keeps it (the fields the table reads), and its /usr/bin/time line."""
    os.makedirs(folder, exist_ok=True)
    runs = [dict(task=task, results={task: dict(accuracy=value)}) for task, value in results.items()]
    json.dump(dict(config=dict(mode=mode), runs=runs), open(os.path.join(folder, f'{name}.json'), 'w'))
    if cpu is not None:
        open(os.path.join(folder, f'{name}.time'), 'w').write(f"cpu_s {cpu - 1} 1.00 wall_s {cpu + 5}\n")


def test_table_from_runs(tmp_path):
    (tmp_path / 'suite.txt').write_text(SUITE)
    for i, seed in enumerate((2100, 2101, 2102)):
        ar, random = tmp_path / 'runs' / 'ar-1200' / str(seed), tmp_path / 'runs' / 'random-0' / str(seed)
        write_run(ar, 'finetune-bigram_shift', 'finetune', {'bigram_shift': 70.0 + i}, cpu=120)
        write_run(random, 'finetune-bigram_shift', 'finetune', {'bigram_shift': 50.0 + i}, cpu=60)
        write_run(ar, 'linprobe', 'linprobe', {'bigram_shift': 52.0, 'play': 30.0 + i})
        open(ar / 'pretrain.time', 'w').write("cpu_s 419 1 wall_s 900\n")
    write_run(tmp_path / 'runs' / 'bag_of_bytes' / '0', 'linprobe', 'linprobe', {'bigram_shift': 55.5, 'play': 61.7})
    lines = pp.report(str(tmp_path))
    bigram, play = (line for line in lines if line.startswith('| bigram_shift') or line.startswith('| play'))
    assert bigram == ("| bigram_shift | 4,000 / 2,000 | 50.0 | 55.5 | 51.0 ± 1.0 (3) | – | 71.0 ± 1.0 (3) | "
                      "52.0 ± 0.0 (3) | 20.0 ± 0.0 | 1.0 | 0.0 | yes |")
    assert play.endswith("| 61.7 | – | – | – | 31.0 ± 1.0 (3) | – | – | – | not decided |")
    assert "- finetune (ar), one task: 2.0 (3)" in lines and "- pretraining (ar-1200): 7.0 (3)" in lines
    assert (tmp_path / 'tables.md').read_text() == '\n'.join(lines) + '\n'
    csv_lines = (tmp_path / 'pilot.csv').read_text().splitlines()
    assert csv_lines[0] == 'task,arm,mode,seed,accuracy' and 'bigram_shift,ar,finetune,2102,72.00' in csv_lines


def test_the_committed_record_regenerates_byte_for_byte(tmp_path):
    """experiments/probing-pilot: tables.md and pilot.csv from its runs, protocol runs and suite.txt alone."""
    shutil.copytree(os.path.join(RECORD, 'runs'), tmp_path / 'runs')
    shutil.copytree(os.path.join(RECORD, 'protocol'), tmp_path / 'protocol')
    shutil.copy(os.path.join(RECORD, 'suite.txt'), tmp_path / 'suite.txt')
    pp.report(str(tmp_path))
    for name in ('tables.md', 'pilot.csv'):
        assert (tmp_path / name).read_bytes() == open(os.path.join(RECORD, name), 'rb').read(), name


def test_script_refuses_a_smoke_run_into_the_record():
    result = subprocess.run(['bash', 'experiments/probing_pilot.sh'], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, 'SMOKE': '1'}, timeout=600)  # a hang guard
    keys = ('SMOKE=1', 'RES=', 'OUT=')  # what was asked, and the fix
    assert result.returncode == 2 and all(key in result.stderr for key in keys), result.stderr
    result = subprocess.run(['bash', 'experiments/probing_pilot.sh'], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, 'SEEDS': '2100 2100'}, timeout=600)  # a hang guard
    assert result.returncode == 2 and "SEEDS='2100 2100'" in result.stderr, result.stderr


@pytest.mark.parametrize("accuracies,picked", [
    ({'1e-3': (50.0, 50.0), '3e-4': (58.0, 51.0), '1e-4': (55.0, 50.0)}, '3e-4'),  # +7 against 1e-3's 0
    ({'1e-3': (56.0, 50.0), '3e-4': (57.0, 49.5), '1e-4': (52.0, 50.0)}, '1e-3'),  # +7.5 is not 2 above +6
    ({}, '1e-3'),                                                                    # nothing run: the default
])
def test_protocol_pick(tmp_path, accuracies, picked):
    for lr, (ar, random) in accuracies.items():
        write_run(tmp_path / 'protocol' / 'runs' / 'ar-1200' / '2100', f'finetune-bigram_shift-lr{lr}', 'finetune',
                  {'bigram_shift': ar})
        write_run(tmp_path / 'protocol' / 'runs' / 'random-0' / '2100', f'finetune-bigram_shift-lr{lr}', 'finetune',
                  {'bigram_shift': random})
    assert pp.protocol(str(tmp_path)) == accuracies and pp.pick(str(tmp_path)) == picked


def clone_without_data(folder):
    """The working tree's files as a clone has them, without the records but the pilot's and without any prepared
    corpus (those are ignored by git)."""
    listed = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard'], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    for name in listed:
        parts = name.split('/')
        if (parts[0] == 'experiments' and len(parts) > 2 and parts[1] != 'probing-pilot') or \
                not os.path.isfile(os.path.join(ROOT, name)):
            continue
        os.makedirs(os.path.join(folder, os.path.dirname(name)), exist_ok=True)
        shutil.copy(os.path.join(ROOT, name), os.path.join(folder, name))


def test_a_failed_prepare_leaves_the_recorded_suite_as_it_was(tmp_path):
    """A clone without the byte corpora: the suite cannot be prepared, and the script stops with the corpus named,
    leaving the committed suite.txt byte for byte (it used to be emptied before the prepare failed)."""
    clone_without_data(tmp_path)
    result = subprocess.run(['bash', 'experiments/probing_pilot.sh'], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, 'PYTHON': sys.executable}, timeout=600)  # a hang guard
    assert result.returncode != 0 and 'shakespeare_bytes' in result.stderr, result.stderr[-2000:]
    suite = tmp_path / 'experiments' / 'probing-pilot' / 'suite.txt'
    assert suite.read_bytes() == open(os.path.join(RECORD, 'suite.txt'), 'rb').read()
    assert not (tmp_path / 'experiments' / 'probing-pilot' / 'suite.txt.tmp').exists()

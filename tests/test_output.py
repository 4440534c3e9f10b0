"""output.py: progress that reads well on a terminal and in a log file."""
import subprocess
import sys

import output
from conftest import ROOT

# -----------------------------------------------------------------------------
# progress


def test_progress_into_a_pipe_is_plain_lines_with_an_eta():
    """stderr a pipe (a log file, make, two runs side by side): one plain line per report, never tqdm's carriage
    returns or cursor codes, each with the count, the elapsed time and, until the end, an ETA."""
    code = ("import output\n"
            "items = list(output.progress(range(4), desc='score', unit='windows', every=0))\n"
            "print(items)\n")
    result = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True, timeout=600)  # a hang guard only
    assert result.returncode == 0, result.stderr
    assert result.stdout == '[0, 1, 2, 3]\n'  # every item, in order
    assert '\r' not in result.stderr and '\x1b' not in result.stderr
    lines = result.stderr.splitlines()
    assert [line.split(',')[0] for line in lines] == [f'score: {n}/4 windows' for n in (1, 2, 3, 4)]  # close: no repeat
    assert all('ETA' in line for line in lines[:3]) and lines[-1] == 'score: 4/4 windows, 0:00'  # done: no ETA


def test_eta_is_the_rate_so_far_over_what_is_left(monkeypatch, capsys):
    now = [100.0]
    monkeypatch.setattr(output.time, 'time', lambda: now[0])
    bar = output.progress(total=10, desc='finetune', unit='steps', initial=2, every=30)
    now[0] += 20
    bar.update(2)  # 2 steps in 20 s, 6 to go: under `every` seconds since the start, so nothing printed yet
    assert capsys.readouterr().err == ''
    now[0] += 20
    bar.set_postfix(task='hedge', loss='0.6931')
    bar.update(2)  # 4 steps in 40 s (the 2 it resumed from do not count), 4 to go
    assert capsys.readouterr().err == 'finetune: 6/10 steps, 0:40, ETA 0:40 (task=hedge, loss=0.6931)\n'
    bar.write('hedge seed 0: mcc 12.00')  # a result line goes to stdout, between the progress lines
    bar.close()
    bar.close()  # once only
    printed = capsys.readouterr()
    assert printed.out == 'hedge seed 0: mcc 12.00\n'
    assert printed.err == ''  # the last line already said 6/10: closing does not say it again
    bar = output.progress(total=10, desc='finetune', unit='steps', every=30)
    bar.update(3)
    bar.close()
    assert capsys.readouterr().err.startswith('finetune: 3/10 steps, 0:')  # the count since the last line


def test_disabled_progress_prints_nothing(capsys):
    assert list(output.progress(range(3), desc='encode', enabled=False)) == [0, 1, 2]
    with output.progress(total=5, desc='score', every=0) as bar:  # nothing done: no line either
        pass
    assert bar.n == 0 and capsys.readouterr().err == ''

"""output.py: progress that reads well on a terminal and in a log file; plots whose numbers go to the CSV
unchanged and whose text stays readable (a long title wraps inside the image instead of running over the y label
or off the edge)."""
import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import output
from conftest import ROOT
from output import _label, axis_ticks, line_plot, log_ranks, plot_log

# -----------------------------------------------------------------------------
# out_dir, as every script that writes one checks it


def test_an_empty_out_dir_is_one_line_in_every_script(tmp_path, monkeypatch):
    """--out_dir= would write into the working folder: the checks every script's out_dir passes (train.py's through
    claim_run, the evaluations', theory's, the prepare scripts') refuse it, naming out_dir, and write nothing."""
    monkeypatch.chdir(tmp_path)
    for check in (output.writable_folder, output.refuse_training_run, lambda d: output.claim_out_dir(d, ['x.json'])):
        with pytest.raises(ValueError, match='--out_dir='):  # the flag to pass
            check('')
    output.writable_folder(tmp_path / 'new' / 'run', create=False)  # tried, not made: train.py makes it when it writes
    assert os.listdir(tmp_path) == []


# -----------------------------------------------------------------------------
# progress


def test_progress_into_a_pipe_is_plain_lines_with_an_eta():
    """stderr a pipe (a log file, make, two runs side by side): one plain line per report, never tqdm's carriage
    returns or cursor codes, each with the count, the elapsed time and, until the end, an ETA."""
    code = ("import output\n"
            "items = list(output.progress(range(4), desc='score', unit='windows', every=0))\n"
            "print(items)\n")
    result = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)  # a hang guard only
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


# -----------------------------------------------------------------------------
# plots


def test_csv_holds_every_point(tmp_path):
    series = {'ar': ([500, 1000], [2.0, 1.75]), 'vm': ([500, 1000], [3.0, 2.5])}
    line_plot(str(tmp_path / 'loss.png'), series, xlabel='step', ylabel='validation loss')
    rows = list(csv.reader(open(tmp_path / 'loss.csv')))
    assert rows[0] == ['series', 'step', 'validation loss']
    assert [(r[0], float(r[1]), float(r[2])) for r in rows[1:]] == [
        (name, x, y) for name, (xs, ys) in series.items() for x, y in zip(xs, ys)]


def test_integer_ticks_print_without_exponent():
    assert [_label(v) for v in (1000.0, 3000, 0.5, 3.1623)] == ['1000', '3000', '0.5', '3.16']


def test_a_long_title_wraps_above_the_y_label(tmp_path):
    title = 'Table 7, 3000 steps: validation loss by step (nats per masked target), mean of 5 seeds. ' * 2
    line_plot(str(tmp_path / 'p.png'), {'a': ([0, 1], [0, 1])}, title=title, ylabel='validation loss')
    image = Image.open(tmp_path / 'p.png')
    width = image.size[0]
    pixels = np.asarray(image.convert('L')) < 128
    box_top = next(y for y in range(pixels.shape[0]) if pixels[y, 100:width - 40].all())  # the axes' top edge
    assert not pixels[:box_top, width - 3:].any()  # no title text runs off the right edge
    rows = np.flatnonzero(pixels[:box_top].any(axis=1))
    groups = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1)  # bands of text with blank rows between
    label = groups[-1]  # the y label: its own band under the title, ink only at the left
    assert len(groups) >= 2 and not pixels[label[0]:label[-1] + 1, 120:].any()
    assert sum(len(g) for g in groups[:-1]) > 16  # the title: more than one line of ~10 px


def test_a_redraw_that_changes_nothing_leaves_the_png_byte_for_byte(tmp_path):
    """A committed plot drawn again from the same numbers stays as it is, even where another Pillow or zlib encodes
    the same pixels to other bytes; other numbers replace it."""
    path, series = tmp_path / 'p.png', {'a': ([0, 1], [0, 1])}
    line_plot(str(path), series)
    Image.open(path).save(path, format='PNG', compress_level=1)  # the same pixels, other bytes
    recorded = path.read_bytes()
    line_plot(str(path), series)
    assert path.read_bytes() == recorded
    pixels = Image.open(path).tobytes()
    line_plot(str(path), {'a': ([0, 1], [1, 0])})
    assert Image.open(path).tobytes() != pixels


def test_log_ranks_keep_the_head_the_last_rank_and_few_points():
    ranks = log_ranks(100_000)
    assert ranks[:100].tolist() == list(range(1, 101)) and ranks[-1] == 100_000
    assert np.all(np.diff(ranks) > 0) and len(ranks) <= 500
    assert log_ranks(7).tolist() == list(range(1, 8)) and len(log_ranks(0)) == 0


def test_ticks_are_distinct_and_a_log_axis_is_marked_at_round_values():
    """A one-point log pads its axis by 0.5: ticks 0.2 apart must not all read 150. A log axis from 3 to 30 reads
    5 10 20, not the round logarithms 3.16 15.8 25.1."""
    for low, high in ((149.5, 150.5), (0, 3000), (1.7, 4.2), (0.001, 0.002)):
        labels = [label for _, label in axis_ticks(low, high)]
        assert len(set(labels)) == len(labels) >= 2, labels
        assert all(abs(float(label) - tick) < 1e-9 + 0.01 * (high - low) for (tick, _), label in
                   zip(axis_ticks(low, high), labels))
    assert [label for _, label in axis_ticks(np.log10(3), np.log10(30), log=True)] == ['5', '10', '20']
    for low, high in ((0, 5), (np.log10(2.5), np.log10(3.5)), (0.2, 1.4)):
        ticks = axis_ticks(low, high, log=True)
        assert len(ticks) >= 2 and all(abs(np.log10(float(label)) - tick) < 1e-9 for tick, label in ticks), ticks


def test_a_training_log_plots_training_lines_and_evaluation_lines(tmp_path):
    """log.jsonl: a training line every log_interval steps, an evaluation line every eval_interval (train.py)."""
    lines = [dict(iter=k, train_loss=5.0 - k / 10, lr=1e-3) for k in range(1, 11)] + \
        [dict(iter=10, eval_train_loss=4.0, val_loss=4.2, lr=1e-3)]
    (tmp_path / 'log.jsonl').write_text(''.join(json.dumps(line) + '\n' for line in lines))
    plot_log(str(tmp_path / 'log.jsonl'), str(tmp_path / 'loss.png'), title='ar')
    rows = list(csv.reader(open(tmp_path / 'loss.csv')))[1:]
    assert [r[0] for r in rows] == ['train'] * 10 + ['val'] and float(rows[-1][2]) == 4.2

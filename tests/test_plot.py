"""evals/plot.py: the numbers go to the CSV unchanged, and the text of a plot stays readable (a long title wraps
inside the image instead of running over the y label or off the edge)."""
import csv
import json

import numpy as np
from PIL import Image

from evals.plot import _label, axis_ticks, line_plot, log_ranks, plot_log


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

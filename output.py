"""
What scripts write, the same way everywhere and without torch (data/ prepare scripts use it too): files written
atomically with the user's permissions, out_dirs that never silently replace an earlier result, progress that
reads well on a terminal and in a log file, and line plots as PNG (pillow only: matplotlib is not a dependency),
each written next to a CSV of its numbers.
"""
import csv
import io
import json
import math
import os
import sys
import tempfile
import time

import numpy as np
from PIL import Image, ImageDraw
from tqdm import tqdm

from configurator import UsageError

# -----------------------------------------------------------------------------
# files

def atomic_write(path, content):
    """Write str or bytes, or call content(file) on a binary file, under a temporary name beside path, then rename:
    a crash never leaves a half-written file at path (an old one stays whole). mkstemp creates its file as 0600
    whatever the umask, so the file gets the mode open() would give (0666 less the umask) before the rename."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=os.path.basename(path) + '.', suffix='.tmp')
    try:
        with os.fdopen(handle, 'wb') as f:
            if callable(content):
                content(f)
            else:
                f.write(content.encode() if isinstance(content, str) else content)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, 0o666 & ~current_umask())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def write_png(path, image):
    """A PIL image as PNG, atomically; a file at path that already shows these pixels is left as it is, so a redraw
    that changes nothing leaves a committed plot byte for byte (another Pillow or zlib encodes the same pixels to
    other bytes)."""
    try:
        with Image.open(path) as old:
            if old.mode == image.mode and old.size == image.size and old.tobytes() == image.tobytes():
                return
    except (OSError, ValueError):  # none there, or not an image PIL reads: write it
        pass
    atomic_write(path, lambda f: image.save(f, format='PNG'))


def current_umask():
    umask = os.umask(0o022)  # the only way to read it is to set it, so put it straight back
    os.umask(umask)
    return umask


def named_folder(out_dir, key='out_dir'):
    """--out_dir= (empty) would write into the working folder: refused where out_dir enters. -> out_dir"""
    if not out_dir:
        raise UsageError(f"{key} is empty: pass --{key}=<folder> for the results")
    return out_dir


def writable_folder(out_dir, create=True, key='out_dir'):
    """Before any work: out_dir (the script's key `key`) must be a folder this process can write to, not a file, nor
    under one. Created if missing, or with create=False only tried (made and removed again), so a script that stops
    before it writes leaves no empty folder behind."""
    if os.path.exists(named_folder(out_dir, key)) and not os.path.isdir(out_dir):
        raise UsageError(f"{key} {out_dir} is a file, not a folder: pass another --{key}")
    missing, folder = [], os.path.abspath(out_dir)
    while not create and not os.path.lexists(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    try:
        os.makedirs(out_dir, exist_ok=True)
        tempfile.TemporaryFile(dir=out_dir).close()
    except OSError as error:
        raise UsageError(f"cannot write to {key} {out_dir} ({error.strerror}): pass a --{key} you can write to") \
            from None
    finally:
        for folder in filter(os.path.isdir, missing):  # the deepest first
            os.rmdir(folder)


def claim_out_dir(out_dir, results, overwrite=False, fix='pass --overwrite=True to replace them, or a new --out_dir',
                  create=True):
    """Before any work: out_dir must be a writable folder (created if missing, unless create=False: the caller makes
    it when it writes), and must not hold any of `results` (file names) unless overwrite. With overwrite, the old
    results are deleted now, so none of an earlier run's files (a plot of other checkpoints, say) is left beside the
    new ones."""
    writable_folder(out_dir, create)
    found = [name for name in results if os.path.exists(os.path.join(out_dir, name))]
    if found and not overwrite:
        raise UsageError(f"{out_dir} already holds {', '.join(found)} from an earlier run: {fix}")
    for name in found:
        os.remove(os.path.join(out_dir, name))


TRAINING_RUN = ('ckpt_last.pt', 'ckpt_best.pt', 'log.jsonl')  # what train.py leaves in its out_dir


def refuse_training_run(out_dir):
    """An evaluation's out_dir must not be a training run's, overwrite or not: its results would mix with the run's."""
    run = [name for name in TRAINING_RUN if os.path.exists(os.path.join(named_folder(out_dir), name))]
    if run:
        raise UsageError(f"{out_dir} holds a training run ({', '.join(run)}): pass an --out_dir of its own for the "
                         "evaluation")

# -----------------------------------------------------------------------------
# progress

def progress(iterable=None, total=None, desc='', enabled=True, unit='it', initial=0, every=30.0):
    """A tqdm bar on a terminal. Into a file or a pipe (a log, `make`, two runs side by side) tqdm's carriage
    returns and cursor codes turn into noise, so there it prints a plain line every `every` seconds instead."""
    if not enabled:
        return tqdm(iterable, total=total, disable=True)
    if sys.stderr.isatty():
        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, dynamic_ncols=True, leave=False)
    return Lines(iterable, total, desc, unit, initial, every)


class Lines:
    """The part of tqdm's interface the scripts use, as plain lines on stderr: `desc: n/total unit, elapsed,
    ETA (postfix)`, at most one every `every` seconds, and one when closed."""

    def __init__(self, iterable, total, desc, unit, initial, every):
        self.iterable, self.desc, self.unit, self.every = iterable, desc, unit, every
        self.total = len(iterable) if total is None and hasattr(iterable, '__len__') else total
        self.n, self.initial, self.postfix, self.start = initial, initial, '', time.time()
        self.last, self.printed, self.closed = self.start, initial, False

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n=1):
        self.n += n
        if time.time() - self.last >= self.every:
            self.print_line()

    def set_postfix(self, ordered_dict=None, **values):
        values = {**(ordered_dict or {}), **values}
        self.postfix = ', '.join(f"{k}={v}" for k, v in values.items())

    def write(self, line):  # messages to stdout, as tqdm.write; progress lines to stderr
        print(line, flush=True)

    def close(self):
        if not self.closed and self.n > self.printed:  # the last count, unless the last line already said it
            self.print_line()
        self.closed = True

    def print_line(self):
        elapsed = time.time() - self.start
        self.last, self.printed = time.time(), self.n
        done = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        rate = (self.n - self.initial) / max(elapsed, 1e-9)
        eta = f", ETA {clock((self.total - self.n) / rate)}" if self.total and rate and self.n < self.total else ''
        print(f"{self.desc + ': ' if self.desc else ''}{done} {self.unit}, {clock(elapsed)}{eta}"
              f"{' (' + self.postfix + ')' if self.postfix else ''}", file=sys.stderr, flush=True)


def clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"

# -----------------------------------------------------------------------------
# plots: PNG beside a CSV of the same numbers

COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
          (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]


def _ticks(low, high, n=5):
    if high <= low:
        high = low + 1.0
    raw = (high - low) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if step * m >= raw)
    start = math.ceil(low / step) * step
    return [start + i * step for i in range(int((high - start) / step + 1e-9) + 1)], step


def axis_ticks(low, high, log=False):
    """[(position, label)] for an axis spanning low..high (log10 of the values on a log axis). A log axis is marked
    at round values, 1 2 5 x 10^k (or powers of ten only when those are many), not at round logarithms (which
    read 3.16, 15.8, 25.1); a narrow one falls back to round values evenly spaced. Labels carry the digits the
    spacing needs, so ticks 0.2 apart around 150 read 149.8 150 150.2, not 150 150 150."""
    if log:
        decades = range(math.floor(low), math.ceil(high) + 1)
        for mantissas in ((1, 2, 5), (1,)):
            values = [m * 10.0 ** k for k in decades for m in mantissas if low <= math.log10(m * 10.0 ** k) <= high]
            if 2 <= len(values) <= 8:
                return [(math.log10(v), _label(v)) for v in values]
        values, step = _ticks(10 ** low, 10 ** high)
        return [(math.log10(v), _label(v, step)) for v in values if v > 0]
    values, step = _ticks(low, high)
    return [(v, _label(v, step)) for v in values]


def _label(value, step=None):  # steps print as 3000, not 3e+03
    if step is not None and step < 1 and abs(value) < 1e4:
        return f"{value:.{-math.floor(math.log10(step) + 1e-9)}f}"
    if abs(value - round(value)) < 1e-9 and abs(value) < 1e7:
        return str(int(round(value)))
    return f"{value:.3g}" if abs(value) < 1e4 else f"{value:.2e}"


def log_ranks(n, every=100, points=400):
    """Ranks 1..n to draw a long sorted curve on a log x axis: each of the first `every`, then `points` log-spaced
    ones, always n itself. Fig. 2's 1e5 pairs a model fit in a ~20 KB CSV instead of 4 MB."""
    spaced = np.geomspace(1, n, points).round().astype(int) if n > 0 else np.zeros(0, int)
    return np.unique(np.concatenate([np.arange(1, min(every, n) + 1), spaced]))


def write_csv(path, header, rows):
    """One header row, then rows, written atomically."""
    table = io.StringIO()
    csv.writer(table, lineterminator='\n').writerows([header, *rows])
    atomic_write(path, table.getvalue())


def line_plot(path, series, title='', xlabel='', ylabel='', logx=False, logy=False, size=(720, 480), dashed=()):
    """series: {name: (xs, ys)}; the series named in `dashed` are drawn dashed. Writes `path` (PNG) and the same
    numbers as `path` with .csv."""
    write_csv(os.path.splitext(path)[0] + '.csv', ['series', xlabel or 'x', ylabel or 'y'],
              [[name, x, y] for name, (xs, ys) in series.items() for x, y in zip(xs, ys)])
    fx = (lambda v: math.log10(v)) if logx else (lambda v: v)
    fy = (lambda v: math.log10(v)) if logy else (lambda v: v)
    points = {name: [(fx(x), fy(y)) for x, y in zip(xs, ys)
                     if math.isfinite(x) and math.isfinite(y) and (not logx or x > 0) and (not logy or y > 0)]
              for name, (xs, ys) in series.items()}
    every = [p for pts in points.values() for p in pts] or [(0.0, 0.0), (1.0, 1.0)]
    x0, x1 = min(p[0] for p in every), max(p[0] for p in every)
    y0, y1 = min(p[1] for p in every), max(p[1] for p in every)
    if x1 == x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    pad = 0.05 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad
    W, H = size
    image = Image.new('RGB', size, 'white')
    draw = ImageDraw.Draw(image)
    # a long title wraps to the image's width, and the y label sits on its own line between it and the axes
    title_lines = []
    for word in title.split():
        if title_lines and draw.textlength(f"{title_lines[-1]} {word}") <= W - 8:
            title_lines[-1] += f" {word}"
        else:
            title_lines.append(word)
    left, right, top, bottom = 80, 20, 30 + 12 * max(1, len(title_lines)), 56

    def to_px(x, y):
        return (left + (x - x0) / (x1 - x0) * (W - left - right),
                H - bottom - (y - y0) / (y1 - y0) * (H - top - bottom))
    draw.rectangle([left, top, W - right, H - bottom], outline='black')
    for tick, label in axis_ticks(x0, x1, logx):
        px, _ = to_px(tick, y0)
        draw.line([px, H - bottom, px, H - bottom + 5], fill='black')
        draw.text((px - 12, H - bottom + 8), label, fill='black')
    for tick, label in axis_ticks(y0, y1, logy):
        _, py = to_px(x0, tick)
        draw.line([left - 5, py, left, py], fill='black')
        draw.line([left, py, W - right, py], fill=(235, 235, 235))
        draw.text((4, py - 6), label, fill='black')
    for i, line in enumerate(title_lines):
        draw.text((4, 4 + 12 * i), line, fill='black')
    draw.text(((W - len(xlabel) * 6) // 2, H - 20), xlabel, fill='black')
    draw.text((4, top - 16), ylabel, fill='black')
    for i, (name, pts) in enumerate(points.items()):
        color = COLORS[i % len(COLORS)]
        pixels = [to_px(x, y) for x, y in pts]
        if len(pixels) > 1 and name in dashed:
            for start, end in zip(pixels, pixels[1:]):
                draw_dashed(draw, start, end, color)
        elif len(pixels) > 1:
            draw.line(pixels, fill=color, width=2)
        for px, py in pixels if len(pixels) <= 40 else []:
            draw.ellipse([px - 2, py - 2, px + 2, py + 2], fill=color)
        ly = top + 8 + 14 * i
        (draw_dashed if name in dashed else lambda d, a, b, c: d.line([a, b], fill=c, width=3))(
            draw, (W - right - 170, ly + 6), (W - right - 150, ly + 6), color)
        draw.text((W - right - 145, ly), str(name)[:26], fill='black')
    write_png(path, image)


def draw_dashed(draw, start, end, color, on=7, off=5):
    (x0, y0), (x1, y1) = start, end
    length = math.hypot(x1 - x0, y1 - y0)
    for a in np.arange(0, length, on + off):
        b = min(a + on, length)
        draw.line([x0 + (x1 - x0) * a / length, y0 + (y1 - y0) * a / length,
                   x0 + (x1 - x0) * b / length, y0 + (y1 - y0) * b / length], fill=color, width=2)


def plot_log(log_path, path, title):
    """A training run's log.jsonl as its loss curve: train and validation loss against the step."""
    with open(log_path) as f:
        records = [json.loads(line) for line in f]
    train = [(r['iter'], r['train_loss']) for r in records if 'train_loss' in r]
    val = [(r['iter'], r['val_loss']) for r in records if 'val_loss' in r]
    line_plot(path, {'train': tuple(zip(*train)) or ((), ()), 'val': tuple(zip(*val)) or ((), ())},
              title=title, xlabel='iter', ylabel='loss')

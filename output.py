"""
What scripts write, the same way everywhere and without torch (data/ prepare scripts use it too): files written
atomically with the user's permissions, out_dirs that never silently replace an earlier result, and progress that
reads well on a terminal and in a log file.
"""
import os
import sys
import tempfile
import time

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


def current_umask():
    umask = os.umask(0o022)  # the only way to read it is to set it, so put it straight back
    os.umask(umask)
    return umask


def claim_out_dir(out_dir, results, overwrite=False, fix='pass --overwrite=True to replace them, or a new --out_dir'):
    """Before any work: out_dir must be a writable folder (created if missing), and must not hold any of `results`
    (file names) unless overwrite. With overwrite, the old results are deleted now, so none of an earlier run's
    files (a plot of other checkpoints, say) is left beside the new ones."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"out_dir {out_dir} is a file, not a folder: pass another --out_dir")
    try:
        os.makedirs(out_dir, exist_ok=True)
        tempfile.TemporaryFile(dir=out_dir).close()
    except OSError as error:
        raise UsageError(f"cannot write to out_dir {out_dir} ({error.strerror}): pass a --out_dir you can write to") \
            from None
    found = [name for name in results if os.path.exists(os.path.join(out_dir, name))]
    if found and not overwrite:
        raise UsageError(f"{out_dir} already holds {', '.join(found)} from an earlier run: {fix}")
    for name in found:
        os.remove(os.path.join(out_dir, name))

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

"""
Config the nanoGPT way, but strict: a script's module globals are its defaults; `config/x.py` files and
`--key=value` overrides replace them in order. Unknown keys and wrong types stop with one line.
    python train.py config/vm_shakespeare.py --batch_size=32 --mask_ratio='(0.15,0.3)'
    python train.py --help    # every key, its value and the comment beside its default
"""
import ast
import inspect
import os
import re
import sys
import traceback
from ast import literal_eval


class UsageError(ValueError):
    """Bad input (a flag, a config, a file, a data set): one_line_errors prints it as one line that names the fix.
    Every other exception keeps its traceback, so a bug in forked code shows where it is."""


def _coerce(key, value, default):
    """Same type as the default (an int may stand for a float, a list for a tuple). None and 'auto' defaults take
    anything (--compile=False, --device=cuda:1): the script checks such a value and names the accepted ones."""
    if isinstance(value, list):
        value = tuple(value)
    if default is None or value is None or default == 'auto':
        return value
    if isinstance(default, float) and type(value) is int:
        return float(value)
    if type(value) is not type(default):
        raise UsageError(f"config key {key!r} must be {type(default).__name__}, got {value!r}")
    return value


def parse_value(raw):
    """A Python literal, else a bare string (--dataset=shakespeare); a bracketed list of bare words is a tuple of
    strings (--tasks=(cola,rte) -> ('cola', 'rte'))."""
    try:
        return literal_eval(raw)
    except (SyntaxError, ValueError):
        pass
    if len(raw) >= 2 and raw[0] + raw[-1] in ('()', '[]'):
        return tuple(parse_value(item.strip()) for item in raw[1:-1].split(',') if item.strip())
    return raw


def check_ranges(config, ranges):
    """ranges: {key: interval} with intervals written as in maths, '[1, inf)', '(0, 1)', '[0, 1]'. A value outside
    stops with one line naming the key and its range; None (the script picks) passes; tuples are checked item by
    item."""
    for key, interval in ranges.items():
        low, high = (float(bound) for bound in interval[1:-1].split(','))
        values = config[key] if isinstance(config[key], tuple) else (config[key],)
        for value in values:
            if value is None:
                continue
            inside = (low < value if interval[0] == '(' else low <= value) and \
                (value < high if interval[-1] == ')' else value <= high)
            if not inside:
                raise UsageError(f"config key {key!r} must lie in {interval}, got {config[key]!r}")


def read_config(path, values=None):
    """Run a config file; inside it, include('base.py') first runs base.py (found beside it) into the same values."""
    values = {} if values is None else values
    values['include'] = lambda name: read_config(os.path.join(os.path.dirname(path), name), values)
    try:
        with open(path) as f:
            exec(compile(f.read(), path, 'exec'), {}, values)
    except UsageError:
        raise
    except SyntaxError as error:
        raise UsageError(f"config file {path}, line {error.lineno}: {error.msg}: fix the file") from None
    except Exception as error:  # the file's own line, not the config machinery's
        frames = traceback.extract_tb(error.__traceback__)
        line = next((frame.lineno for frame in frames if frame.filename == path), '?')
        raise UsageError(f"config file {path}, line {line}: {type(error).__name__}: {error}: fix the file") from None
    return values


def print_help(config):
    """The script's docstring, then one line per key: its value and the comment beside its default in the script
    (`key = value  # why`, continued on comment-only lines below it), under the section comments of the script's
    default config. A plain dict of defaults, with no script source beside it, lists all its keys."""
    path = config.get('__file__', sys.argv[0])
    source = ''
    if os.path.isfile(path):
        with open(path) as f:
            source = f.read()
    comments, sections, key, section = {}, {}, None, None
    for line in source.splitlines():
        assignment, continued = re.match(r"(\w+) *=[^=].*?(?:  +# (.*))?$", line), re.match(r" +# (.*)", line)
        if assignment and assignment[1] not in comments:  # the first assignment is the default
            key, comments[assignment[1]] = assignment[1], assignment[2] or ''
            sections[key], section = section, None
        elif key and continued:
            comments[key] += ' ' + continued[1]
        else:
            key, section = None, line[2:] if re.match(r"# \w", line) else section
    keys = [k for k, v in config.items() if is_setting(k) and
            isinstance(v, (int, float, bool, str, tuple, type(None))) and (k in comments or '__file__' not in config)]
    print(docstring(source) + "\n\nkeys (--key=value, after any config files):")
    width = max((len(f"--{k}={config[k]!r}") for k in keys), default=0)
    for k in keys:
        if sections.get(k):
            print(f"# {sections[k]}")
        print((f"  --{k}={config[k]!r}".ljust(width + 4) + (f"# {comments[k]}" if comments.get(k) else '')).rstrip())


def docstring(source):
    """A module's docstring as its source writes it: a shell command continued with a backslash stays on two lines
    (the string's value joins them)."""
    body = ast.parse(source).body
    if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return ''
    written = ast.get_source_segment(source, body[0].value)
    return inspect.cleandoc(literal_eval(written if written[0] in 'rR' else 'r' + written)).strip()


def is_setting(key):
    """A script's settings are its globals but for _private ones and UPPER_CASE constants (URLs, class names),
    which no config file or command line changes (a one-letter name like theory.py's T is a setting)."""
    return not key.startswith('_') and not (key.isupper() and len(key) > 1)


def configure(config, argv):
    """Apply config files and --key=value overrides from argv onto the dict `config` (a script's globals).
    A key whose default is a tuple collects repeated overrides: --ckpt=a.pt --ckpt=b.pt -> ('a.pt', 'b.pt').
    --help (or -h) anywhere prints the keys with their values after the other arguments, and exits."""
    collected = {}
    for arg in argv:
        if arg in ('--help', '-h'):
            continue
        if not arg.startswith('--'):
            if not os.path.isfile(arg):
                raise UsageError(f"config file {arg} not found: see config/ for the available ones")
            values = read_config(arg)
            items = [(k, v) for k, v in values.items() if not k.startswith('_') and k != 'include']
        else:
            key, sep, raw = arg[2:].partition('=')
            if not sep:
                raise UsageError(f"override {arg!r} must look like --key=value")
            value = parse_value(raw)
            if isinstance(config.get(key), tuple) and not isinstance(value, (tuple, list)):
                collected[key] = collected.get(key, ()) + (value,)
                value = collected[key]
            items, arg = [(key, value)], f"--{key}"
        for key, value in items:
            if key not in config or not is_setting(key):
                raise UsageError(f"unknown config key {key!r} (from {arg}): "
                                 "check the spelling against the script's globals")
            config[key] = _coerce(key, value, config[key])
    if '--help' in argv or '-h' in argv:
        print_help(config)
        sys.exit(0)


def one_line_errors(script, interrupted=''):
    """Bad input ends with `script: error: <one line>` and exit code 1, not a traceback; with `interrupted` (what a
    Ctrl-C leaves, e.g. before train.py's loop takes over the signal) so does Ctrl-C, as `script: <interrupted>`, and
    Python exits by SIGINT (130 in a shell). The hook returns rather than exiting (an uncaught exception exits with 1
    anyway): under torchrun, torch.distributed wraps it to prefix each line with the rank, and writes what it printed
    only after it returns. torchrun then reports any child's non-zero exit with a traceback of its own launcher
    (ChildFailedError), whatever the child printed or raised."""
    def hook(kind, error, tb):
        if issubclass(kind, UsageError):
            # under torchrun every process checks the same input and fails alike: local rank 0 of each node says
            # it. Once the process group has started, a process can fail alone (its own GPU): each says its own
            # line, which torch.distributed prefixes with its rank
            distributed = sys.modules.get('torch.distributed')
            grouped = distributed is not None and distributed.is_available() and distributed.is_initialized()
            if grouped or os.environ.get('LOCAL_RANK', '0') == '0':
                print(f"{script}: error: {error}", file=sys.stderr, flush=True)
        elif interrupted and issubclass(kind, KeyboardInterrupt):  # a terminal's Ctrl-C reaches every process
            if os.environ.get('LOCAL_RANK', '0') == '0':
                print(f"{script}: {interrupted}", file=sys.stderr, flush=True)
        else:
            sys.__excepthook__(kind, error, tb)
    sys.excepthook = hook

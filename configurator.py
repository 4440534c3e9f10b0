"""
Config the nanoGPT way, but strict: a script's module globals are its defaults; `config/x.py` files and
`--key=value` overrides replace them in order. Unknown keys and wrong types stop with one line.
    python train.py config/vm_shakespeare.py --batch_size=32 --mask_ratio='(0.15,0.3)'
    python train.py --help    # every key, its value and the comment beside its default
"""
import ast
import os
import re
import signal
import sys
import tempfile
import threading
from ast import literal_eval
from contextlib import nullcontext

import torch
import torch.distributed as dist


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
    stops with one line naming the key and its range; None (the script picks) passes; tuples are checked item by item."""
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
    exec(compile(open(path).read(), path, 'exec'), {}, values)
    return values


def print_help(config):
    """The script's docstring, then one line per key: its value and the comment beside its default in the script
    (`key = value  # why`, continued on comment-only lines below it), under the section comments of the script's
    default config. A plain dict of defaults (theory.py, the prepare scripts) lists all its keys."""
    path = config.get('__file__', sys.argv[0])
    source = open(path).read() if os.path.isfile(path) else ''
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
    keys = [k for k, v in config.items() if not k.startswith('_') and
            isinstance(v, (int, float, bool, str, tuple, type(None))) and (k in comments or '__file__' not in config)]
    print((ast.get_docstring(ast.parse(source)) or '').strip() + "\n\nkeys (--key=value, after any config files):")
    width = max((len(f"--{k}={config[k]!r}") for k in keys), default=0)
    for k in keys:
        if sections.get(k):
            print(f"# {sections[k]}")
        print((f"  --{k}={config[k]!r}".ljust(width + 4) + (f"# {comments[k]}" if comments.get(k) else '')).rstrip())


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
            if key not in config:
                raise UsageError(f"unknown config key {key!r} (from {arg}): check the spelling against the script's globals")
            config[key] = _coerce(key, value, config[key])
    if '--help' in argv or '-h' in argv:
        print_help(config)
        sys.exit(0)


def one_line_errors(script):
    """Bad input ends with `script: error: <one line>` and exit code 1, not a traceback."""
    def hook(kind, error, traceback):
        if issubclass(kind, UsageError):
            print(f"{script}: error: {error}", file=sys.stderr)
            sys.exit(1)
        sys.__excepthook__(kind, error, traceback)
    sys.excepthook = hook


# -----------------------------------------------------------------------------
# processes and devices, the same for every script

DTYPES = ('auto', 'float32', 'bfloat16', 'float16')


def setup_processes(device='auto', dtype='auto'):
    """Join torchrun's process group when RANK is set (nccl on CUDA, gloo on CPU) and pick this process's device.
    -> (ddp, rank, local_rank, world_size, device, dtype, autocast): bf16 autocast on CUDA, fp32 on CPU."""
    if not (isinstance(device, str) and re.fullmatch(r'auto|cpu|mps|cuda(:\d+)?', device)):
        raise UsageError(f"device must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps', got {device!r}")
    if dtype not in DTYPES:
        raise UsageError(f"dtype must be one of {', '.join(map(repr, DTYPES))}, got {dtype!r}")
    if device.startswith('cuda') and not torch.cuda.is_available():
        raise UsageError(f"device={device!r} but this torch sees no CUDA GPU: use --device=cpu (or auto)")
    if device.startswith('cuda:') and int(device[5:]) >= torch.cuda.device_count():
        n = torch.cuda.device_count()
        raise UsageError(f"device={device!r} but this machine has {n} CUDA GPU(s): use --device=cuda:0 to "
                         f"cuda:{n - 1}, --device=cuda, or --device=cpu")
    if device == 'mps' and not torch.backends.mps.is_available():
        raise UsageError("device='mps' but this machine has no Apple GPU: use --device=cpu (or auto)")
    ddp = 'RANK' in os.environ
    if device == 'auto':
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
    rank, local_rank, world_size = 0, 0, 1
    if ddp:
        rank, local_rank, world_size = (int(os.environ[k]) for k in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE'))
        if device.startswith('cuda'):
            device = f'cuda:{local_rank}'
            torch.cuda.set_device(device)
        dist.init_process_group(backend='nccl' if device.startswith('cuda') else 'gloo')
    device_type = device.split(':')[0]
    if dtype == 'auto':
        dtype = 'bfloat16' if device_type == 'cuda' and torch.cuda.is_bf16_supported() else 'float32'
    if device_type == 'cuda':
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    autocast = nullcontext() if dtype == 'float32' else torch.autocast(device_type, dtype=getattr(torch, dtype))
    return ddp, rank, local_rank, world_size, device, dtype, autocast


def pick_attn_backend(attn_backend, device):
    """'auto' -> flex on CUDA (block-sparse, compiled), sdpa with a dense mask elsewhere (flex has no CPU backward)."""
    if attn_backend not in ('auto', 'sdpa', 'flex'):
        raise UsageError(f"attn_backend must be 'auto', 'sdpa' or 'flex', got {attn_backend!r}")
    if attn_backend == 'auto':
        return 'flex' if device.startswith('cuda') else 'sdpa'
    return attn_backend


def pick_compile(compile, device):
    """'auto' -> torch.compile on CUDA only; True / False as given (True on CPU compiles with inductor)."""
    if compile not in ('auto', True, False) or isinstance(compile, int) and not isinstance(compile, bool):
        raise UsageError(f"compile must be True, False or 'auto', got {compile!r}")
    return device.startswith('cuda') if compile == 'auto' else compile


def available_memory(device):
    """Bytes this process may still allocate on `device`: free GPU memory, or the OS's MemAvailable."""
    if device.startswith('cuda'):
        return torch.cuda.mem_get_info(torch.device(device))[0]
    try:
        with open('/proc/meminfo') as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith('MemAvailable:'))
    except (OSError, StopIteration):
        return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')


def check_memory(needed, device, what):
    """Stop with one line, before allocating, when a lower bound on the bytes needed exceeds what is free."""
    free = available_memory(device)
    if needed > free:
        raise UsageError(f"{what} needs at least {needed / 2 ** 30:.1f} GiB on {device}, {free / 2 ** 30:.1f} GiB are "
                         "free: lower block_size or batch_size (or use more gradient_accumulation_steps)")


def stop_on_signals(signals=(signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)):
    """-> a list that receives the first of `signals` (cluster preemption, timeout, Ctrl-C): the training loop saves
    and stops after the current step. A second signal ends the process at once, even inside a long step. Python runs
    signal handlers only between bytecodes, which a step spent in one C++ call never reaches, so a watcher thread
    reads the signal numbers that the C-level handler writes to a wakeup pipe (torch ops release the GIL)."""
    received = []
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    for sig in signals:
        signal.signal(sig, lambda signum, frame: None)  # the watcher acts; this only makes Python trip the pipe

    def watch():
        while True:
            signum = os.read(read_end, 1)[0]
            if signum not in signals:
                continue
            if received:
                print(f"signal {signum} again: exiting now (the last checkpoint written is intact)", file=sys.stderr,
                      flush=True)
                os._exit(128 + signum)
            received.append(signum)
            print(f"signal {signum}: saving and stopping after this step; send it again to exit now", file=sys.stderr,
                  flush=True)
    threading.Thread(target=watch, daemon=True, name='signal-watcher').start()
    return received


def atomic_write(path, content):
    """Write str or bytes, or call content(file) on a binary file, under a temporary name beside path, then rename:
    a crash never leaves a half-written file at path (an old one stays whole). The project's one such helper."""
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
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise

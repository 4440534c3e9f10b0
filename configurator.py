"""
Config the nanoGPT way, but strict: a script's module globals are its defaults; `config/x.py` files and
`--key=value` overrides replace them in order. Unknown keys and wrong types stop with one line.
    python train.py config/vm_shakespeare.py --batch_size=32 --mask_ratio=(0.15,0.3)
"""
import os
import sys
from ast import literal_eval
from contextlib import nullcontext

import torch
import torch.distributed as dist


def _coerce(key, value, default):
    """Same type as the default (an int may stand for a float, a list for a tuple); None defaults take anything."""
    if isinstance(value, list):
        value = tuple(value)
    if default is None or value is None:
        return value
    if isinstance(default, float) and type(value) is int:
        return float(value)
    if type(value) is not type(default):
        raise ValueError(f"config key {key!r} must be {type(default).__name__}, got {value!r}")
    return value


def configure(config, argv):
    """Apply config files and --key=value overrides from argv onto the dict `config` (a script's globals).
    A key whose default is a tuple collects repeated overrides: --ckpt=a.pt --ckpt=b.pt -> ('a.pt', 'b.pt')."""
    collected = {}
    for arg in argv:
        if not arg.startswith('--'):
            if not os.path.isfile(arg):
                raise ValueError(f"config file {arg} not found: see config/ for the available ones")
            values = {}
            exec(compile(open(arg).read(), arg, 'exec'), {}, values)
            items = [(k, v) for k, v in values.items() if not k.startswith('_')]
        else:
            key, sep, raw = arg[2:].partition('=')
            if not sep:
                raise ValueError(f"override {arg!r} must look like --key=value")
            try:
                value = literal_eval(raw)
            except (SyntaxError, ValueError):
                value = raw  # a bare string such as --dataset=shakespeare
            if isinstance(config.get(key), tuple) and not isinstance(value, (tuple, list)):
                collected[key] = collected.get(key, ()) + (value,)
                value = collected[key]
            items, arg = [(key, value)], f"--{key}"
        for key, value in items:
            if key not in config:
                raise ValueError(f"unknown config key {key!r} (from {arg}): check the spelling against the script's globals")
            config[key] = _coerce(key, value, config[key])


def one_line_errors(script):
    """Bad input ends with `script: error: <one line>` and exit code 1, not a traceback."""
    def hook(kind, error, traceback):
        if issubclass(kind, (ValueError, FileNotFoundError)):
            print(f"{script}: error: {error}", file=sys.stderr)
            sys.exit(1)
        sys.__excepthook__(kind, error, traceback)
    sys.excepthook = hook


# -----------------------------------------------------------------------------
# processes and devices, the same for every script

def setup_processes(device='auto', dtype='auto'):
    """Join torchrun's process group when RANK is set (nccl on CUDA, gloo on CPU) and pick this process's device.
    -> (ddp, rank, local_rank, world_size, device, dtype, autocast): bf16 autocast on CUDA, fp32 on CPU."""
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

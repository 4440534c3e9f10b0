"""
Processes and devices, the same for every script: torchrun's process group, the device and dtype,
whether a step fits in memory, how fast the accelerator can go (for MFU), and stopping cleanly on a
signal.
"""
import os
import re
import signal
import sys
import threading
import warnings
from contextlib import contextmanager, nullcontext

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from configurator import UsageError

# -----------------------------------------------------------------------------
# processes, device, dtype

DTYPES = ('auto', 'float32', 'bfloat16', 'float16')


def check_device(device='auto', dtype='auto'):
    """device and dtype as the user gave them, checked where they enter: -> the device with 'auto'
    resolved."""
    if not (isinstance(device, str) and re.fullmatch(r'auto|cpu|mps|cuda(:\d+)?', device)):
        raise UsageError("device must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps', "
                         f"got {device!r}")
    if dtype not in DTYPES:
        raise UsageError(f"dtype must be one of {', '.join(map(repr, DTYPES))}, got {dtype!r}")
    if device.startswith('cuda') and not torch.cuda.is_available():
        raise UsageError(f"device={device!r} but this torch sees no CUDA GPU: "
                         "use --device=cpu (or auto)")
    if device.startswith('cuda:') and int(device[5:]) >= torch.cuda.device_count():
        n = torch.cuda.device_count()
        raise UsageError(f"device={device!r} but this machine has {n} CUDA GPU(s): "
                         f"use --device=cuda:0 to cuda:{n - 1}, --device=cuda, or --device=cpu")
    if device == 'mps' and not torch.backends.mps.is_available():
        raise UsageError("device='mps' but this machine has no Apple GPU: "
                         "use --device=cpu (or auto)")
    return ('cuda' if torch.cuda.is_available() else 'cpu') if device == 'auto' else device


def setup_processes(device='auto', dtype='auto'):
    """Join torchrun's process group when RANK is set (nccl on CUDA, gloo on CPU) and pick this
    process's device. -> (ddp, rank, local_rank, world_size, device, dtype, autocast): bf16 autocast
    on CUDA, fp32 on CPU."""
    device = check_device(device, dtype)
    ddp = 'RANK' in os.environ
    rank, local_rank, world_size = 0, 0, 1
    if ddp:
        rank, local_rank, world_size = (int(os.environ[k])
                                        for k in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE'))
        if device.startswith('cuda'):
            device = f'cuda:{local_rank}'
            torch.cuda.set_device(device)
        dist.init_process_group(backend='nccl' if device.startswith('cuda') else 'gloo')
    device_type = device.split(':')[0]
    if dtype == 'auto':
        dtype = ('bfloat16' if device_type == 'cuda' and torch.cuda.is_bf16_supported()
                 else 'float32')
    if device_type == 'cuda':
        set_tf32(True)
    autocast = (nullcontext() if dtype == 'float32'
                else torch.autocast(device_type, dtype=getattr(torch, dtype)))
    return ddp, rank, local_rank, world_size, device, dtype, autocast


# a batch of objectives.py: tensors move, flags stay
def to_device(batch, device, non_blocking=False):
    return {k: v.to(device, non_blocking=non_blocking) if torch.is_tensor(v) else v
            for k, v in batch.items()}


def micro_steps(gradient_accumulation_steps, batch_size):
    """-> (world_size, micro-steps of each process): torchrun's WORLD_SIZE processes share the
    global batch's gradient_accumulation_steps micro-steps, so it must be a multiple of their
    number. The fix it names keeps a step's rows, as a resumed run must
    (checkpoint.check_resume)."""
    world_size = int(os.environ.get('WORLD_SIZE', 1))
    if gradient_accumulation_steps % world_size:
        # a step's rows: the same with fewer rows per micro-step
        rows = batch_size * gradient_accumulation_steps
        steps = world_size * -(-gradient_accumulation_steps // world_size)
        steps = next((n for n in range(steps, rows + 1, world_size) if rows % n == 0), steps)
        raise UsageError(f"gradient_accumulation_steps={gradient_accumulation_steps} must be a "
                         f"multiple of the {world_size} processes: it counts micro-steps summed "
                         f"over all of them (pass --gradient_accumulation_steps={steps}" +
                         (f" --batch_size={rows // steps} for the same {rows} rows a step"
                          if rows % steps == 0 else '') + ")")
    return world_size, gradient_accumulation_steps // world_size


def pick_attn_backend(attn_backend, device, dropout=0.0):
    """'auto' -> flex on CUDA (block-sparse, compiled), sdpa with a dense mask elsewhere (flex has
    no CPU backward). dropout: the attention dropout of the training this backend runs.
    FlexAttention has none, so a run with it trains on sdpa (one line says so): a fine-tune is then
    regularised alike on a GPU and a CPU."""
    if attn_backend not in ('auto', 'sdpa', 'flex'):
        raise UsageError("attn_backend must be 'auto', 'sdpa' or 'flex', "
                         f"got {attn_backend!r}")
    if dropout and attn_backend == 'flex':
        raise UsageError(f"the flex backend has no attention dropout (dropout={dropout}): "
                         "pick sdpa (--attn_backend=sdpa or auto; bench.py: --backends='(sdpa,)'), "
                         "or --dropout=0")
    if attn_backend == 'auto' and device.startswith('cuda') and dropout:
        if int(os.environ.get('RANK', 0)) == 0:
            print(f"attn_backend=auto: sdpa, not flex, for dropout={dropout} "
                  "(flex has no attention dropout)", file=sys.stderr)
        return 'sdpa'
    if attn_backend == 'auto':
        return 'flex' if device.startswith('cuda') else 'sdpa'
    return attn_backend


def pick_compile(compile, device):
    """'auto' -> torch.compile on CUDA only; True / False as given (True on CPU compiles with
    inductor)."""
    if (compile not in ('auto', True, False)
            or isinstance(compile, int) and not isinstance(compile, bool)):
        raise UsageError(f"compile must be True, False or 'auto', got {compile!r}")
    return device.startswith('cuda') if compile == 'auto' else compile


def available_memory(device):
    """Bytes this process may still allocate on `device`: free GPU memory, or the OS's
    MemAvailable."""
    if device.startswith('cuda'):
        return torch.cuda.mem_get_info(torch.device(device))[0]
    try:
        with open('/proc/meminfo') as f:
            return next(int(line.split()[1]) * 1024
                        for line in f if line.startswith('MemAvailable:'))
    except (OSError, StopIteration):
        return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')


def check_memory(needed, device, what):
    """Stop with one line, before allocating, when a lower bound on the bytes needed exceeds what is
    free."""
    free = available_memory(device)
    if needed > free:
        raise UsageError(f"{what} needs at least {needed / 2 ** 30:.1f} GiB on {device}, "
                         f"{free / 2 ** 30:.1f} GiB are free: lower block_size or batch_size "
                         "(or use more gradient_accumulation_steps)")

# -----------------------------------------------------------------------------
# peaks, for MFU (model.step_flops counts a step's work)

# dense tensor-core peaks in TFLOP/s, most specific name first (fp32 runs use TF32, which
# setup_processes turns on)
# (B200, GB200: NVIDIA's datasheets per GPU, dense, half their sparse figures)
PEAK_TFLOPS = {'bfloat16': [('H100 PCIe', 756), ('H100 NVL', 835), ('H100', 989), ('H200', 989),
                            ('A100', 312), ('GB200', 2500), ('B200', 2250)],
               'float32': [('H100 PCIe', 378), ('H100 NVL', 418), ('H100', 494), ('H200', 494),
                           ('A100', 156), ('GB200', 1250), ('B200', 1125)]}
PEAK_TFLOPS['float16'] = PEAK_TFLOPS['bfloat16']

def peak_flops(device_name, dtype):
    """FLOP/s of one accelerator at dtype, for MFU; None when unknown (CPUs included)."""
    return next((tflops * 1e12 for name, tflops in PEAK_TFLOPS.get(dtype, [])
                 if name in device_name), None)

# -----------------------------------------------------------------------------
# numerics and attention kernels, for equivalence checks and for naming what ran

def set_tf32(enabled):
    """TF32 for CUDA matmuls and cuDNN on or off; -> a function that restores what was set.
    torch >= 2.9 says it per backend, fp32_precision = 'tf32' / 'ieee', and deprecates allow_tf32
    (whose getters raise once both APIs have been used): the new API where it exists, the old flags
    otherwise."""
    if hasattr(torch.backends.cuda.matmul, 'fp32_precision'):
        backends = (torch.backends.cuda.matmul, torch.backends.cudnn.conv, torch.backends.cudnn.rnn)
        saved = [backend.fp32_precision for backend in backends]
        for backend in backends:
            backend.fp32_precision = 'tf32' if enabled else 'ieee'
        return lambda: [setattr(backend, 'fp32_precision', value)
                        for backend, value in zip(backends, saved)]
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled

    def restore():
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    return restore

@contextmanager
def full_float32():
    """IEEE float32 matmuls (TF32 off, restored after): TF32's 10-bit mantissa alone moves results
    by ~1e-3, so an equivalence check in float32 would compare roundings. setup_processes turns TF32
    on for training."""
    restore = set_tf32(False)
    try:
        yield
    finally:
        restore()

SDPA_KERNELS = {'flash': SDPBackend.FLASH_ATTENTION, 'cuDNN': SDPBackend.CUDNN_ATTENTION,
                'memory-efficient': SDPBackend.EFFICIENT_ATTENTION, 'math': SDPBackend.MATH}

def sdpa_with(kernel):
    """F.scaled_dot_product_attention held to one kernel, by its name in SDPA_KERNELS."""
    def attend(*args, **kwargs):
        with sdpa_kernel(SDPA_KERNELS[kernel]):
            return F.scaled_dot_product_attention(*args, **kwargs)
    return attend

def sdpa_kernels(q, k, v, **kwargs):
    """Names of the SDPA kernels that take these inputs (device, dtype, mask), forward and, where q,
    k or v needs a gradient, backward: each is run once."""
    names = []
    for name in SDPA_KERNELS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')  # a kernel that declines says why, at length
                out = sdpa_with(name)(q, k, v, **kwargs)
                if out.requires_grad:
                    torch.autograd.grad(out.sum(), [t for t in (q, k, v) if t.requires_grad])
            names.append(name)
        except RuntimeError:
            pass
    return names

# -----------------------------------------------------------------------------
# preemption

def stop_on_signals(signals=(signal.SIGTERM, signal.SIGUSR1, signal.SIGINT),
                    left_behind=lambda: ''):
    """-> a list that receives the first of `signals` (cluster preemption, timeout, Ctrl-C): the
    training loop saves and stops after the current step. A second signal ends the process at once,
    even inside a long step, saying left_behind() (what the caller's files hold then). Python runs
    signal handlers only between bytecodes, which a step spent in one C++ call never reaches, so a
    watcher thread reads the signal numbers that the C-level handler writes to a wakeup pipe (torch
    ops release the GIL)."""
    received = []
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    for sig in signals:
        # the watcher acts; this only makes Python trip the pipe
        signal.signal(sig, lambda signum, frame: None)

    def watch():
        while True:
            signum = os.read(read_end, 1)[0]
            if signum not in signals:
                continue
            if received:
                note = left_behind()
                print(f"signal {signum} again: exiting now" + (f": {note}" if note else ''),
                      file=sys.stderr, flush=True)
                os._exit(128 + signum)
            received.append(signum)
            print(f"signal {signum}: saving and stopping after this step; "
                  "send it again to exit now", file=sys.stderr, flush=True)
    threading.Thread(target=watch, daemon=True, name='signal-watcher').start()
    return received

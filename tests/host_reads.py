"""Where a train.py run reads values of device tensors on the host, counted on a CPU. On a GPU each such read (.item(),
float(), bool(), .tolist(), .cpu(), .numpy(), or an op whose output shape depends on values, like nonzero) makes the
host wait until the device has run everything queued, and the device then idles while the host builds the next step.
Device tensors: the model's parameters and buffers once moved, the batches train.py sends with devices.to_device,
what all_reduce reduces (NCCL reduces device tensors), and everything computed from them.

    with counting(peak=1e12) as reads: ...run train.py in this process...   # reads.reads: [(iter_num, function, op)]
$ torchrun --nproc_per_node=2 tests/host_reads.py OUT train.py ARGS...     # writes OUT.<rank>.json
"""
import json
import os
import runpy
import sys
from contextlib import ExitStack, contextmanager
from unittest import mock

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.weak import WeakIdKeyDictionary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import devices  # noqa: E402

aten = torch.ops.aten
VALUE_READS = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default, aten.equal.default,
               aten.repeat_interleave.Tensor, aten._unique2.default, aten.unique_consecutive.default,
               aten.unique_dim.default}
METHOD_READS = ('tolist', 'numpy', 'cpu')  # reads that never reach the dispatcher


class HostReads(TorchDispatchMode):
    def __init__(self, script):
        super().__init__()
        self.script, self.on_device, self.reads = script, WeakIdKeyDictionary(), []

    def mark(self, tree):
        for tensor in tree_leaves(tree):
            if isinstance(tensor, torch.Tensor):
                self.on_device[tensor] = True

    def read(self, op):
        """Record (iter_num, function) of the script's innermost frame on the stack: the step, and where in it."""
        frame = sys._getframe(1)
        while frame is not None and os.path.basename(frame.f_code.co_filename) != self.script:
            frame = frame.f_back
        self.reads.append((frame and frame.f_globals.get('iter_num'), frame and frame.f_code.co_name, op))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        on_device = any(isinstance(t, torch.Tensor) and t in self.on_device for t in tree_leaves((args, kwargs)))
        boolean_index = func is aten.index.Tensor and any(
            isinstance(t, torch.Tensor) and t.dtype == torch.bool for t in tree_leaves(args[1:]))
        if on_device and (func in VALUE_READS or boolean_index):
            self.read(str(func))
        out = func(*args, **kwargs)
        if on_device:
            self.mark(out)
        return out


@contextmanager
def counting(peak=None, script='train.py'):
    """Count the script's host reads of device tensors while the block runs. peak: a made-up peak FLOP/s for
    devices.peak_flops to give on the CPU, so that the script counts FLOPs for MFU as it does on a GPU."""
    reads = HostReads(script)
    to_device, module_to, all_reduce = devices.to_device, torch.nn.Module.to, dist.all_reduce

    def copy_to_device(batch, *args, **kwargs):  # a copy, as on a GPU: the host batch stays a host batch
        batch = to_device(batch, *args, **kwargs)
        batch = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        reads.mark(list(batch.values()))
        return batch

    def move_module(module, *args, **kwargs):
        module = module_to(module, *args, **kwargs)
        reads.mark([*module.parameters(), *module.buffers()])
        return module

    def reduce_on_device(tensor, *args, **kwargs):
        reads.mark(tensor)
        return all_reduce(tensor, *args, **kwargs)

    def reader(name, method):
        def read(tensor, *args, **kwargs):
            if tensor in reads.on_device:
                reads.read(name)
            return method(tensor, *args, **kwargs)
        return read

    patches = [(devices, 'to_device', copy_to_device), (torch.nn.Module, 'to', move_module),
               (dist, 'all_reduce', reduce_on_device)]
    patches += [(torch.Tensor, name, reader(name, getattr(torch.Tensor, name))) for name in METHOD_READS]
    if peak:
        patches.append((devices, 'peak_flops', lambda device_name, dtype: peak))
    with ExitStack() as stack:
        for owner, name, replacement in patches:
            stack.enter_context(mock.patch.object(owner, name, replacement))
        with reads:
            yield reads


if __name__ == '__main__':  # under torchrun: one file of reads per process
    out, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    sys.argv = [script, *args]
    os.chdir(ROOT)
    with counting(peak=1e12) as reads:
        try:
            runpy.run_path(os.path.join(ROOT, script), run_name='__main__')
        finally:  # a stopped run (SystemExit) keeps its reads too
            with open(f"{out}.{os.environ.get('RANK', 0)}.json", 'w') as f:
                json.dump(reads.reads, f)

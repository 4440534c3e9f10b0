"""
FlexAttention (model.py's attn_backend='flex') on any device. Eager, flex_attention materialises every score and
create_block_mask every mask entry, so on CUDA both always run compiled: inside a model that a script compiled whole
they join its graph, and an eager caller (evaluation, bench.py) gets them compiled once, here. On CPU they run eagerly
(there is no CPU flex backward).
"""
import functools

import torch
from torch.nn.attention import flex_attention as flex


# tiles: the BlockMask's block (rows = keys) and the flex kernel's own (e.g. BLOCK_M, BLOCK_N; {}: its choice). Their
# best values for a head size are measured (bench.py --flex_block, --flex_kernel), not assumed here
BLOCK_SIZE = 128
KERNEL_OPTIONS = {}


@functools.cache  # once per function, at its first eager use on CUDA (at import, every CPU script would load dynamo)
def compiled(fn):
    return torch.compile(fn)  # static for the first shape, dynamic from the second on (the evaluations' lengths)


def on_device(fn, device):
    return compiled(fn) if device.type == 'cuda' and not torch.compiler.is_compiling() else fn


def create_block_mask(mask_mod, batch, rows, keys, device):
    return on_device(flex.create_block_mask, device)(mask_mod, batch, None, rows, keys, device=device,
                                                     BLOCK_SIZE=BLOCK_SIZE)


def flex_attention(q, k, v, block_mask):
    if q.device.type == 'cpu':  # contiguous: inductor's CPU template misreads q, k, v of differing strides
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    return on_device(flex.flex_attention, q.device)(q, k, v, block_mask=block_mask,
                                                    kernel_options=dict(KERNEL_OPTIONS) or None)

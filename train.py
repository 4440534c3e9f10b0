r"""
Pretrain one Transformer with any objective of the paper (ar, dar, mlm, vm, mdlm, gvp) on text or image patches.
$ python train.py config/ar_shakespeare_bytes.py                          # one CPU, minutes
$ torchrun --standalone --nproc_per_node=8 train.py config/vm_pile.py     # one node, 8 GPUs
$ torchrun --nproc_per_node=8 --nnodes=2 --node_rank=0 --master_addr=$MASTER_ADDR --master_port=29500 \
      train.py config/vm_pile.py                                          # on each node, with its --node_rank
The story: config (checked where it enters) -> data (data/sources.py) -> model and optimizer (resumed from
checkpoint.py) -> the loop (log, evaluate, save; a signal saves and stops).
"""
import json
import math
import os
import signal
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict

from configurator import UsageError, check_ranges, configure, one_line_errors

# first: a Ctrl-C in the seconds of imports, data and model below is one line (the loop saves on it instead)
one_line_errors('train.py', interrupted='interrupted before training began: nothing written')
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from checkpoint import (check_resume, checked_model_config, claim_run, gather_generators, left_behind, read_checkpoint,
                        restore_generators, save_checkpoint)
from data.sources import image_source, text_source
from devices import (check_device, check_memory, micro_steps, peak_flops, pick_attn_backend, pick_compile,
                     setup_processes, stop_on_signals, to_device)
from model import Transformer, step_flops, step_memory
from objectives import Objective
from output import plot_log, progress as progress_bar
from schedule import check_schedule, lr_at

# -----------------------------------------------------------------------------
# default config: a small ar model on the embedded Shakespeare corpus, on CPU in minutes
# I/O
out_dir = 'out-shakespeare'
eval_interval = 100
log_interval = 10
eval_iters = 20
init_from = 'scratch'       # 'scratch' or 'resume' (from out_dir/ckpt_last.pt)
overwrite = False           # a scratch run into an out_dir that holds a run: True deletes that run first
# data
dataset = 'shakespeare'     # data/<dataset> (or a path) with train.bin / val.bin, or an image set (patches)
train_tokens = 0            # text: train on the first train_tokens tokens only (0: all), repeated for many epochs
input_kind = 'tokens'       # 'tokens' or 'patches'
image_size = 28
patch_size = 4
channels = 1
augment = True              # images: MAE's random-resized-crop (+ flip for natural images)
flip = False
batch_size = 16             # micro-batch per process
block_size = 128            # BOS + 127 tokens (ignored for images: patches + CLS)
gradient_accumulation_steps = 1  # micro-steps per optimizer step, summed over all processes
# model
n_layer = 4
n_head = 4
n_embd = 128
dropout = 0.0
bias = False
mlp = 'gelu'
rope = False                # text: rotary positions on q and k (RoPE) instead of a learned position table
attn_backend = 'auto'       # 'flex' on CUDA, 'sdpa' (dense mask) on CPU
norm_pix_loss = False
# objective (objectives.py)
objective = 'ar'            # ar | dar | mlm | vm | mdlm | gvp (objectives.KINDS)
mask_ratio = None           # mlm: rho (default 0.15); vm: (a, b) (default (0.15, 0.30)); mdlm draws m ~ U{1..L}
t = 2                       # dar: predict one of the next t tokens
two_stream = None           # mlm/vm/ar: True for the two-stream form; dar, gvp always are (None: the default)
random_order = None         # ar/dar along a random permutation (XLNet); None = the objective's default (random for gvp)
bert_replace = False        # one-stream mlm/vm: BERT's 80/10/10
n_groups = 20               # gvp: K
segmentation = 'mixed'      # gvp: fixed | random | mixed
# optimizer (AdamW)
learning_rate = 1e-3
max_iters = 1000
weight_decay = 0.1
beta1 = 0.9
beta2 = 0.95
grad_clip = 1.0             # 0 disables
schedule = 'cosine'         # 'cosine' (warmup + cosine) or 'triangle' (Cramming: linear up, linear down)
warmup_iters = 100
lr_decay_iters = 1000
min_lr = 1e-4
# system
device = 'auto'             # 'cpu', 'cuda', 'cuda:1', ... ; auto = cuda if available
dtype = 'auto'              # bf16 autocast on CUDA, fp32 on CPU; float16 trains with a gradient scaler
compile = 'auto'            # True / False; auto = torch.compile on CUDA, off on CPU
seed = 1337
eval_objective = ''         # score both splits with another objective's loss ('' = the pretraining one): 'ar' reads a
                            # dar model left to right, 'mdlm' gives a masked model's any-order likelihood bound
progress = True
# -----------------------------------------------------------------------------
config_keys = [k for k, v in globals().items()
               if not k.startswith('_') and isinstance(v, (int, float, bool, str, tuple, type(None)))]
configure(globals(), sys.argv[1:])
config = {k: globals()[k] for k in config_keys}
# every check that needs no process group runs before torchrun's group starts: an error there is one line per process
check_ranges(config, {
    'eval_interval': '[1, inf)', 'log_interval': '[1, inf)', 'eval_iters': '[1, inf)', 'image_size': '[1, inf)',
    'patch_size': '[1, inf)', 'channels': '[1, inf)', 'batch_size': '[1, inf)', 'block_size': '[2, inf)',
    'gradient_accumulation_steps': '[1, inf)', 'n_layer': '[1, inf)', 'n_head': '[1, inf)', 'n_embd': '[1, inf)',
    'dropout': '[0, 1)', 'learning_rate': '(0, inf)', 'max_iters': '[0, inf)', 'weight_decay': '[0, inf)',
    'beta1': '[0, 1)', 'beta2': '[0, 1)', 'grad_clip': '[0, inf)', 'warmup_iters': '[0, inf)',
    'lr_decay_iters': '[0, inf)', 'min_lr': '[0, inf)', 't': '[1, inf)', 'n_groups': '[1, inf)', 'seed': '[0, inf)',
    'train_tokens': '[0, inf)'})
if init_from not in ('scratch', 'resume'):
    raise UsageError(f"init_from must be 'scratch' or 'resume', got {init_from!r}")
if bert_replace and input_kind != 'tokens':
    raise UsageError("bert_replace (BERT's 80/10/10 random tokens) needs text: set bert_replace=False for images")
master = int(os.environ.get('RANK', 0)) == 0  # torchrun's rank 0 speaks for all (its process group starts below)
device_type = check_device(device, dtype).split(':')[0]  # 'auto' resolved
attn_backend, compile = pick_attn_backend(attn_backend, device_type, dropout), pick_compile(compile, device_type)
world_size, accum = micro_steps(gradient_accumulation_steps, batch_size)  # accum: micro-steps of this process
schedule_warning = check_schedule(learning_rate, warmup_iters, lr_decay_iters, min_lr, max_iters, schedule)
sequence_length = block_size if input_kind == 'tokens' else (image_size // patch_size) ** 2 + 1  # + BOS / CLS
pretraining = Objective.from_config(config).check(sequence_length)  # every objective setting, resolved
scoring = pretraining if not eval_objective else Objective.from_config(
    {**config, 'objective': eval_objective, 'two_stream': pretraining.two_stream, 'mask_ratio': None,
     'bert_replace': False}).check(sequence_length)
if scoring.kind.masked != pretraining.kind.masked:  # a masked model never saw a causal input, nor ar a [MASK]
    raise UsageError(f"eval_objective={eval_objective!r} reads other inputs than {objective}: "
                     "use 'ar' for ar or dar, 'mdlm' for a masked objective")
run_files = claim_run(out_dir, init_from, overwrite, master)
last_path, best_path, log_path = run_files[:3]

# -----------------------------------------------------------------------------
# data and model settings
if input_kind == 'tokens':
    sequences, data_settings, bos = text_source(dataset, block_size, batch_size, train_tokens)
else:
    sequences, data_settings, bos = image_source(dataset, image_size, patch_size, channels, batch_size, augment, flip)
model_config = checked_model_config(**data_settings, block_size=sequence_length, n_layer=n_layer, n_head=n_head,
                                    n_embd=n_embd, dropout=dropout, bias=bias, mlp=mlp, norm_pix_loss=norm_pix_loss,
                                    attn_backend=attn_backend, rope=rope)
checkpoint = read_checkpoint(last_path) if init_from == 'resume' else None
if checkpoint is not None and check_resume(checkpoint, last_path, config, model_config):
    if master:  # a finished run, resumed again (a rerun script): leave it as it is
        print(f"{last_path} is at iter {max_iters} = max_iters: finished, nothing to train (a larger --max_iters "
              "trains on)")
    sys.exit(0)

# -----------------------------------------------------------------------------
# processes and devices
ddp, rank, local_rank, _, device, dtype, autocast = setup_processes(device, dtype)  # world_size: above
torch.manual_seed(seed + rank)  # dropout differs per process; data comes from the streams below
# every micro-batch of the global batch has its own data stream (generator), so one process with accumulation
# draws exactly the data that several processes draw: stream = rank * accum + micro_step
streams = [torch.Generator().manual_seed(seed * 1000 + rank * accum + m) for m in range(accum)]

def host_batch(split, generator, reading=pretraining):  # bert_replace draws its random tokens from the ids below BOS
    return reading.batch(sequences(split, generator), generator, bos)

def on_device(batch):  # from pinned pages the copy runs beside the compute; from pageable ones it waits for the device
    if device_type == 'cuda':  # contiguous: positions are one row expanded, and an expanded view cannot be pinned
        batch = {k: v.contiguous().pin_memory() if torch.is_tensor(v) else v for k, v in batch.items()}
    return to_device(batch, device, non_blocking=device_type == 'cuda')

# -----------------------------------------------------------------------------
# model, optimizer, resume
model = Transformer(model_config)
# DDP wants a gradient for every trainable parameter: freeze the learned inputs this objective never reads
probe = host_batch('train', torch.Generator().manual_seed(0))
model.query_emb.requires_grad_(probe['query_pos'] is not None)
model.mask_emb.requires_grad_(probe['content_masked'] is not None)
check_memory(step_memory(model, probe, training=True), device,
             f"one training step of batch_size={batch_size} x block_size={block_size}")
model = model.to(device)
optimizer = torch.optim.AdamW(model.optim_groups(weight_decay), lr=learning_rate, betas=(beta1, beta2),
                              **({'fused': True} if device_type == 'cuda' else {}))
# float16's narrow range underflows small gradients: scale the loss up, and the gradients back down before the step
scaler = torch.amp.GradScaler(device_type, enabled=dtype == 'float16')
iter_num, best_val_loss, data_warning = 0, float('inf'), ''
if checkpoint is not None:
    model.load_state_dict(checkpoint['model'])
    kernels = {k: optimizer.defaults[k] for k in ('fused', 'foreach', 'capturable')}  # this device's AdamW
    optimizer.load_state_dict(checkpoint['optimizer'])  # it restores the saving device's too: a CPU's fused=None
    for group in optimizer.param_groups:
        group.update(kernels)
    if scaler.is_enabled() and checkpoint.get('scaler'):
        scaler.load_state_dict(checkpoint['scaler'])
    iter_num, best_val_loss = checkpoint['iter'], checkpoint['best_val_loss']
    data_warning = restore_generators(checkpoint, streams, rank, device, batch_size)
    checkpoint = None  # free memory
raw_model = model  # evaluation and checkpoints use the plain module: its state_dict keys carry no wrapper's prefix
if compile:  # static shapes: every batch of a run has the same (objectives pad to fixed widths, Kind.counts)
    model = torch.compile(model, dynamic=False)
    torch._dynamo.config.fail_on_recompile_limit_hit = True  # as bench.py: past the limit, an error, not eager
if ddp:  # around the compiled module, as PyTorch advises: DDP's forward runs eagerly and marks itself active, so
    # dynamo splits the graph at DDP's gradient buckets (DDPOptimizer) and their all-reduces overlap the backward
    model = DDP(model, device_ids=[local_rank] if device_type == 'cuda' else None)

# -----------------------------------------------------------------------------
# evaluation
@torch.no_grad()
def estimate_loss():
    """The scoring objective's loss on fixed batches (the same every evaluation, so curves are comparable)."""
    model.eval()
    out = {}
    for split in ('train', 'val'):
        generator = torch.Generator().manual_seed(seed * 7919 + rank)
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            with autocast:
                _, loss = raw_model(**on_device(host_batch(split, generator, scoring)), return_preds=False)
            losses[k] = loss.item()
        out[split] = losses.mean().to(device)
        if ddp:  # SUM then divide: gloo has no AVG
            dist.all_reduce(out[split])
            out[split] /= world_size
    model.train()
    return {split: float(v) for split, v in out.items()}

# -----------------------------------------------------------------------------
# checkpoints and preemption
# TERM / USR1 / INT: save and stop after this step; a second one exits at once, saying what out_dir holds then
stop_signal = stop_on_signals(left_behind=lambda: left_behind(run_files))

def save(paths):  # stream 0 as it was before the next step's first draw: see train_batch. -> seconds it took
    began = time.time()
    states, torch_rng = gather_generators([stream0_state] + [g.get_state() for g in streams[1:]], device)
    if master:  # written once, the best a link to the last where they are the same (checkpoint.save_checkpoint)
        save_checkpoint({'model': raw_model.state_dict(), 'optimizer': optimizer.state_dict(),
                         'model_config': asdict(model_config), 'objective': asdict(pretraining), 'config': config,
                         'iter': iter_num, 'best_val_loss': best_val_loss, 'scaler': scaler.state_dict(),
                         'world_size': world_size, 'streams': states, 'torch_rng': torch_rng}, *paths)
    return time.time() - began

def stop_on_nan(value, where):
    if not math.isfinite(value):
        raise SystemExit(f"train.py: error: {where} loss is {value} at iter {iter_num}: nothing was saved after the "
                         f"last finite evaluation ({last_path}); lower learning_rate or raise warmup_iters and start "
                         "again with --overwrite=True (a resumed run keeps the schedule)")

# -----------------------------------------------------------------------------
# training loop. log.jsonl gets a training line every log_interval steps (the mean loss of those steps) and an
# evaluation line (val_loss, eval_train_loss) every eval_interval; the tag names the run when several share a terminal
tag = os.path.basename(os.path.normpath(out_dir))
if master:
    print(f"{tag} | {pretraining.label} | {raw_model.num_params() / 1e6:.2f}M parameters | {device} {dtype} "
          f"{attn_backend}{' compiled' if compile else ''} | "
          f"{world_size} process(es) x {accum} micro-steps x {batch_size} | -> {out_dir}")
    for warning in filter(None, (schedule_warning, data_warning)):  # now that no check can refuse the run
        print(warning, file=sys.stderr)
    os.makedirs(out_dir, exist_ok=True)  # only now: a run refused or interrupted before leaves no empty out_dir
    for path in filter(os.path.exists, run_files if init_from == 'scratch' else []):  # --overwrite=True said so
        os.remove(path)

def write_log(record):
    if master:
        with open(log_path, 'a') as f:
            f.write(json.dumps(record) + '\n')

# one accelerator's peak FLOP/s at dtype, for MFU (None where unknown, CPUs included)
peak = peak_flops(torch.cuda.get_device_name(device) if device_type == 'cuda' else device_type, dtype)

def train_batch(micro_step):
    """The next batch of this micro-step's stream, built on the host while the device computes the one before it
    (nanoGPT's prefetch): its FLOPs are counted there, so MFU reads no device tensor. -> (batch on its way, FLOPs)"""
    batch = host_batch('train', streams[micro_step])
    flops = step_flops(raw_model, batch) if peak else 0.0
    return on_device(batch), flops

bar = progress_bar(total=max_iters, initial=iter_num, desc=tag, unit='steps', enabled=master and progress)
train_loss_sum, train_loss_count = torch.zeros((), device=device), 0
window_time, window_flops, window_steps = 0.0, 0.0, 0  # MFU's window: the timed steps since the last line
stopping, compiled_once, first_iter = False, False, iter_num
tokens_per_step = batch_size * sequence_length * accum * world_size
model.train()
# the next step's first micro-batch is drawn during this step's last: a checkpoint keeps stream 0 as it was before
# that draw, so a resumed run draws the same batch again
stream0_state = streams[0].get_state()
batch, flops = train_batch(0)
while iter_num < max_iters:
    lr = lr_at(iter_num, learning_rate, warmup_iters, lr_decay_iters, min_lr, schedule)
    for group in optimizer.param_groups:
        group['lr'] = lr
    t0 = time.time()
    for micro_step in range(accum):
        if ddp:  # sync gradients only on the last micro-step, and say so BEFORE its forward pass
            model.require_backward_grad_sync = micro_step == accum - 1
        # the first forward compiles; a recompile after it (a batch of another shape) is an error, not a silent
        # minute of compiling per shape and, past the recompile limit, an eager run
        with (torch.compiler.set_stance('fail_on_recompile') if compiled_once else nullcontext()), autocast:
            _, loss = model(**batch, return_preds=False)  # no logits of the whole batch (model.chunked_loss)
        compiled_once = compile
        window_flops += flops
        if micro_step == accum - 1:
            stream0_state = streams[0].get_state()
        batch, flops = train_batch((micro_step + 1) % accum)  # while the device runs this forward
        scaler.scale(loss / accum).backward()
        train_loss_sum += loss.detach()
        train_loss_count += 1
    if grad_clip:
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    first_step = iter_num == first_iter  # of a start or resume: it compiles, so it stays out of MFU's window
    if first_step:
        window_flops = 0.0
        if device_type == 'cuda':
            torch.cuda.synchronize()  # its queued work too (a wait at the step the first batch's waits count at)
    iter_num += 1
    bar.update(1)
    # the host reads device values, and so waits for the device, only at log and evaluation steps: every other step
    # is queued while the device still runs the one before. Processes must stop at the same step: they agree at log
    # steps, so under torchrun a signal stops the run within log_interval steps (one process stops after this step)
    log_step = iter_num % log_interval == 0 or iter_num == max_iters
    eval_step = iter_num % eval_interval == 0 or iter_num == max_iters
    stopping = bool(stop_signal) and not ddp
    loss_sum, loss_count = train_loss_sum, train_loss_count  # this process's micro-batches since the last line
    if ddp and log_step:  # with the FLOPs (MFU) and losses of every process: the line speaks for all of them
        shared = torch.cat([torch.tensor([float(bool(stop_signal)), window_flops, loss_count], dtype=torch.float64,
                                         device=device), loss_sum.double()[None]])
        dist.all_reduce(shared)
        stop_votes, window_flops, loss_count, loss_sum = shared.tolist()
        stopping = stop_votes > 0
    if device_type == 'cuda' and (log_step or eval_step or stopping):
        torch.cuda.synchronize()  # the window's clock includes all the device work queued in it
    if not first_step:
        window_time += time.time() - t0
        window_steps += 1
    if log_step or stopping:
        train_loss = float(loss_sum) / loss_count
        stop_on_nan(train_loss, 'training')
        speed = {}
        if window_steps:  # none where the window held the first step alone
            speed['tokens_per_sec'] = tokens_per_step * window_steps / window_time
            if peak:  # all processes' FLOPs over all their peaks
                speed['mfu'] = window_flops / window_time / (world_size * peak)
        write_log(dict(iter=iter_num, train_loss=train_loss, lr=lr, **speed, time=time.time()))
        bar.set_postfix(loss=f"{train_loss:.4f}", lr=f"{lr:.2e}",
                        **({'tok_s': f"{speed['tokens_per_sec']:.0f}"} if speed else {}),
                        **({'mfu': f"{100 * speed['mfu']:.1f}%"} if 'mfu' in speed else {}))
        train_loss_sum.zero_()
        train_loss_count, window_time, window_flops, window_steps = 0, 0.0, 0.0, 0
    if eval_step or stopping:
        losses = estimate_loss()
        stop_on_nan(losses['val'], 'validation')
        improved = losses['val'] < best_val_loss
        best_val_loss = min(best_val_loss, losses['val'])
        save_seconds = save([last_path, best_path] if improved else [last_path])
        write_log(dict(iter=iter_num, eval_train_loss=losses['train'], val_loss=losses['val'], lr=lr,
                       save_seconds=save_seconds, time=time.time()))
        if master:
            bar.write(f"{tag} | iter {iter_num}: train {losses['train']:.4f}, val {losses['val']:.4f}"
                      f"{' (best)' if improved else ''}")
    if stopping:
        if master:
            bar.write(f"signal {stop_signal[0] if stop_signal else ''}: saved {last_path} at iter {iter_num}; "
                      "continue with --init_from=resume")
        break
bar.close()

if master and os.path.exists(log_path):  # the loss curve, next to its CSV
    plot_log(log_path, os.path.join(out_dir, 'loss.png'), title=f"{pretraining.label} on {dataset}")
if master:
    print(f"{tag} | {out_dir}: " + (', '.join(os.path.basename(path) for path in run_files if os.path.exists(path))
                                    or 'nothing written'))
if ddp:
    dist.destroy_process_group()
if stopping:  # saved, not finished: the status a signal gives, so no wrapper (reproduce.sh, a scheduler) counts it done
    sys.exit(128 + (stop_signal[0] if stop_signal else signal.SIGTERM))

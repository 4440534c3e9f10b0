r"""
Pretrain one Transformer, on text or image patches, with any objective of the paper
(ar, dar, mlm, vm, mdlm, gvp: objectives.py).
$ python train.py config/ar_shakespeare_bytes.py                          # one CPU, minutes
$ torchrun --standalone --nproc_per_node=8 train.py config/vm_pile.py     # one node, 8 GPUs
$ torchrun --nproc_per_node=8 --nnodes=2 --node_rank=0 --master_addr=$MASTER_ADDR \
      --master_port=29500 train.py config/vm_pile.py                # on each node, its --node_rank
The story: config (checked up front: preflight.py) -> data (data/sources.py) -> model and optimizer
(resumed from checkpoint.py) -> the loop (log, evaluate, save; a signal saves and stops).
"""
import json
import math
import os
import signal
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict

from configurator import configure, one_line_errors

# first: a Ctrl-C in the imports, data and model below is one line (the loop saves on it instead)
one_line_errors('train.py', interrupted='interrupted before training began: nothing written')
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from checkpoint import (check_resume, checked_model_config, gather_generators, left_behind,
                        read_checkpoint, restore_generators, save_checkpoint)
from data.sources import image_source, text_source
from devices import check_memory, peak_flops, setup_processes, stop_on_signals, to_device
from log_window import LogWindow
from model import Transformer, step_flops, step_memory
from output import plot_log, progress as progress_bar
from preflight import check_training
from schedule import lr_at

# -----------------------------------------------------------------------------
# default config: a small ar model on the embedded Shakespeare corpus, on CPU in minutes
# I/O
out_dir = 'out-shakespeare'
eval_interval = 100
log_interval = 10
eval_iters = 20
init_from = 'scratch'       # 'scratch' or 'resume' (from out_dir/ckpt_last.pt)
overwrite = False           # a scratch run into an out_dir with a run: True deletes that run first
# data
dataset = 'shakespeare'     # data/<dataset> (or a path) with train.bin / val.bin, or an image set
train_tokens = 0            # text: train on the first train_tokens tokens only (0: all), repeated
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
rope = False                # text: rotary positions on q and k (RoPE), not a learned position table
attn_backend = 'auto'       # 'flex' on CUDA, 'sdpa' (dense mask) on CPU
norm_pix_loss = False
# objective (objectives.py)
objective = 'ar'            # ar | dar | mlm | vm | mdlm | gvp (objectives.KINDS)
mask_ratio = None           # mlm: rho (default 0.15); vm: (a, b) (default (0.15, 0.30));
                            # mdlm draws m ~ U{1..L}
t = 2                       # dar: predict one of the next t tokens
two_stream = None           # mlm/vm/ar: True for the two-stream form; dar, gvp always are
random_order = None         # ar/dar along a random permutation (XLNet); None: the objective's
                            # default (random for gvp)
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
schedule = 'cosine'         # 'cosine' (warmup + cosine) or 'triangle' (Cramming: linear up, down)
warmup_iters = 100
lr_decay_iters = 1000
min_lr = 1e-4
# system
device = 'auto'             # 'cpu', 'cuda', 'cuda:1', ... ; auto = cuda if available
dtype = 'auto'              # bf16 autocast on CUDA, fp32 on CPU; float16 with a gradient scaler
compile = 'auto'            # True / False; auto = torch.compile on CUDA, off on CPU
seed = 1337
eval_objective = ''         # score both splits with another objective's loss ('': the pretraining
                            # one): 'ar' reads a dar model left to right, 'mdlm' gives a masked
                            # model's any-order likelihood bound
progress = True
# -----------------------------------------------------------------------------
config_keys = [k for k, v in globals().items() if not k.startswith('_')
               and isinstance(v, (int, float, bool, str, tuple, type(None)))]
configure(globals(), sys.argv[1:])
config = {k: globals()[k] for k in config_keys}
# every check that needs no data, device or out_dir, before torchrun's group starts (preflight.py)
(master, device_type, attn_backend, compile, world_size, accum, sequence_length, pretraining,
 scoring, schedule_warning, run_files) = check_training(config)
last_path, best_path, log_path = run_files[:3]

# -----------------------------------------------------------------------------
# data: rows of tokens or patches (data/sources.py), and the run to resume (checked against them)
if input_kind == 'tokens':
    sequences, data_settings, bos = text_source(dataset, block_size, batch_size, train_tokens)
else:
    sequences, data_settings, bos = image_source(dataset, image_size, patch_size, channels,
                                                 batch_size, augment, flip)
model_config = checked_model_config(**data_settings, block_size=sequence_length, n_layer=n_layer,
                                    n_head=n_head, n_embd=n_embd, dropout=dropout, bias=bias,
                                    mlp=mlp, norm_pix_loss=norm_pix_loss, attn_backend=attn_backend,
                                    rope=rope)
checkpoint = read_checkpoint(last_path) if init_from == 'resume' else None
if checkpoint is not None and check_resume(checkpoint, last_path, config, model_config):
    if master:  # a finished run, resumed again (a rerun script): leave it as it is
        print(f"{last_path} is at iter {max_iters} = max_iters: finished, nothing to train "
              "(a larger --max_iters trains on)")
    sys.exit(0)

# -----------------------------------------------------------------------------
# processes and devices. Each micro-batch of the global batch has its own data stream, so one
# process with accumulation draws what several processes draw: stream = rank * accum + micro_step
ddp, rank, local_rank, _, device, dtype, autocast = setup_processes(device, dtype)
torch.manual_seed(seed + rank)  # dropout differs per process; the data comes from the streams
streams = [torch.Generator().manual_seed(seed * 1000 + rank * accum + m) for m in range(accum)]

def host_batch(split, generator, reading=pretraining):  # bert_replace's random ids: those below BOS
    return reading.batch(sequences(split, generator), generator, bos)

def on_device(batch):  # from pinned pages the copy runs beside the compute (pageable ones wait)
    if device_type == 'cuda':  # contiguous: positions are a row expanded, which cannot be pinned
        batch = {k: v.contiguous().pin_memory() if torch.is_tensor(v) else v
                 for k, v in batch.items()}
    return to_device(batch, device, non_blocking=device_type == 'cuda')

# -----------------------------------------------------------------------------
# model, optimizer, resume
model = Transformer(model_config)
probe = host_batch('train', torch.Generator().manual_seed(0))
# DDP wants a gradient for every trainable parameter: freeze the inputs this objective never reads
model.query_emb.requires_grad_(probe['query_pos'] is not None)
model.mask_emb.requires_grad_(probe['content_masked'] is not None)
check_memory(step_memory(model, probe, training=True), device,
             f"one training step of batch_size={batch_size} x block_size={block_size}")
model = model.to(device)
optimizer = torch.optim.AdamW(model.optim_groups(weight_decay), lr=learning_rate,
                              betas=(beta1, beta2),
                              **({'fused': True} if device_type == 'cuda' else {}))
# float16's narrow range underflows small gradients: scale the loss up, the gradients back down
scaler = torch.amp.GradScaler(device_type, enabled=dtype == 'float16')
iter_num, best_val_loss, data_warning = 0, float('inf'), ''
if checkpoint is not None:
    model.load_state_dict(checkpoint['model'])
    kernels = {k: optimizer.defaults[k] for k in ('fused', 'foreach', 'capturable')}
    optimizer.load_state_dict(checkpoint['optimizer'])  # it restores the saver's kernels too
    for group in optimizer.param_groups:  # so this device's: CUDA's fused AdamW after a CPU's
        group.update(kernels)
    if scaler.is_enabled() and checkpoint.get('scaler'):
        scaler.load_state_dict(checkpoint['scaler'])
    iter_num, best_val_loss = checkpoint['iter'], checkpoint['best_val_loss']
    data_warning = restore_generators(checkpoint, streams, rank, device, batch_size)
    checkpoint = None  # free memory
raw_model = model  # for evaluation and checkpoints: its keys carry no wrapper's prefix
if compile:  # static shapes: every batch of a run has the same (objectives pad to fixed widths)
    model = torch.compile(model, dynamic=False)
    torch._dynamo.config.fail_on_recompile_limit_hit = True  # as bench.py: past the limit, an error
if ddp:  # around the compiled module, as PyTorch advises: the bucket all-reduces overlap backward
    model = DDP(model, device_ids=[local_rank] if device_type == 'cuda' else None)

def recompile_guard(compiled_once):  # once compiled, another shape is an error, not a recompile
    return torch.compiler.set_stance('fail_on_recompile') if compiled_once else nullcontext()

# -----------------------------------------------------------------------------
# evaluation, checkpoints, logs
@torch.no_grad()
def estimate_loss():
    """The scoring objective's loss on fixed batches (the same each time: comparable curves)."""
    model.eval()
    out = {}
    for split in ('train', 'val'):
        generator = torch.Generator().manual_seed(seed * 7919 + rank)
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            batch = on_device(host_batch(split, generator, scoring))
            with autocast:
                _, loss = raw_model(**batch, return_preds=False)
            losses[k] = loss.item()
        out[split] = losses.mean().to(device)
        if ddp:  # SUM then divide: gloo has no AVG
            dist.all_reduce(out[split])
            out[split] /= world_size
    model.train()
    return {split: float(v) for split, v in out.items()}

def save(paths):  # -> the seconds it took
    began = time.time()
    stream_states = [stream0_state] + [g.get_state() for g in streams[1:]]
    states, torch_rng = gather_generators(stream_states, device)
    if master:  # written once: the best is a link to the last where they are the same
        save_checkpoint({'model': raw_model.state_dict(), 'optimizer': optimizer.state_dict(),
                         'model_config': asdict(model_config), 'objective': asdict(pretraining),
                         'config': config, 'iter': iter_num, 'best_val_loss': best_val_loss,
                         'scaler': scaler.state_dict(), 'world_size': world_size, 'streams': states,
                         'torch_rng': torch_rng}, *paths)
    return time.time() - began

def stop_on_nan(value, where):
    if not math.isfinite(value):
        raise SystemExit(f"train.py: error: {where} loss is {value} at iter {iter_num}: nothing "
                         f"was saved after the last finite evaluation ({last_path}); lower "
                         "learning_rate or raise warmup_iters and start again with "
                         "--overwrite=True (a resumed run keeps the schedule)")

def write_log(record):  # a line of log.jsonl, written by rank 0
    if master:
        with open(log_path, 'a') as f:
            f.write(json.dumps(record) + '\n')

# -----------------------------------------------------------------------------
# training loop
# TERM / USR1 / INT: save and stop after this step; a second one exits at once, saying what is left
stop_signal = stop_on_signals(left_behind=lambda: left_behind(run_files))
tag = os.path.basename(os.path.normpath(out_dir))  # names the run's lines: runs share terminals
if master:
    print(f"{tag} | {pretraining.label} | {raw_model.num_params() / 1e6:.2f}M parameters | "
          f"{device} {dtype} {attn_backend}{' compiled' if compile else ''} | "
          f"{world_size} process(es) x {accum} micro-steps x {batch_size} | -> {out_dir}")
    for warning in filter(None, (schedule_warning, data_warning)):  # no check can refuse it now
        print(warning, file=sys.stderr)
    os.makedirs(out_dir, exist_ok=True)  # only now: a run refused or interrupted leaves no out_dir
    for path in filter(os.path.exists, run_files if init_from == 'scratch' else []):  # overwrite
        os.remove(path)
# one accelerator's peak FLOP/s at dtype, for MFU (None where unknown, CPUs included)
peak = peak_flops(torch.cuda.get_device_name(device) if device_type == 'cuda' else device_type,
                  dtype)

def train_batch(micro_step):
    """The next batch of this micro-step's stream, built on the host while the device computes
    the one before it (nanoGPT's prefetch); its FLOPs counted here, MFU reads no device tensor."""
    global stream0_state
    if micro_step == 0:  # a checkpoint keeps stream 0 from before this draw: resume redraws it
        stream0_state = streams[0].get_state()
    batch = host_batch('train', streams[micro_step])
    flops = step_flops(raw_model, batch) if peak else 0.0
    return on_device(batch), flops

bar = progress_bar(total=max_iters, initial=iter_num, desc=tag, unit='steps',
                   enabled=master and progress)
window = LogWindow(device, batch_size * sequence_length * accum * world_size, peak, world_size, ddp)
stopping, compiled_once = False, False
model.train()
batch, flops = train_batch(0)
while iter_num < max_iters:
    lr = lr_at(iter_num, learning_rate, warmup_iters, lr_decay_iters, min_lr, schedule)
    for group in optimizer.param_groups:
        group['lr'] = lr
    began = time.time()
    for micro_step in range(accum):
        if ddp:  # sync gradients only on the last micro-step, and say so BEFORE its forward pass
            model.require_backward_grad_sync = micro_step == accum - 1
        with recompile_guard(compiled_once), autocast:
            _, loss = model(**batch, return_preds=False)  # no logits of the whole batch
        compiled_once = compile
        window.add(loss, flops)
        batch, flops = train_batch((micro_step + 1) % accum)  # while the device runs the forward
        scaler.scale(loss / accum).backward()
    if grad_clip:
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
    bar.update(1)
    log_step = iter_num % log_interval == 0 or iter_num == max_iters
    eval_step = iter_num % eval_interval == 0 or iter_num == max_iters
    line, stopping = window.end_step(began, log_step, eval_step, signalled=bool(stop_signal))
    if line:  # the mean loss and the speed of the steps since the last training line
        train_loss, speed = line
        stop_on_nan(train_loss, 'training')
        write_log(dict(iter=iter_num, train_loss=train_loss, lr=lr, **speed, time=time.time()))
        bar.set_postfix(loss=f"{train_loss:.4f}", lr=f"{lr:.2e}",
                        **({'tok_s': f"{speed['tokens_per_sec']:.0f}"} if speed else {}),
                        **({'mfu': f"{100 * speed['mfu']:.1f}%"} if 'mfu' in speed else {}))
    if eval_step or stopping:
        losses = estimate_loss()
        stop_on_nan(losses['val'], 'validation')
        improved = losses['val'] < best_val_loss
        best_val_loss = min(best_val_loss, losses['val'])
        save_seconds = save([last_path, best_path] if improved else [last_path])
        write_log(dict(iter=iter_num, eval_train_loss=losses['train'], val_loss=losses['val'],
                       lr=lr, save_seconds=save_seconds, time=time.time()))
        if master:
            bar.write(f"{tag} | iter {iter_num}: train {losses['train']:.4f}, "
                      f"val {losses['val']:.4f}{' (best)' if improved else ''}")
    if stopping:
        if master:
            bar.write(f"signal {stop_signal[0] if stop_signal else ''}: saved {last_path} at iter "
                      f"{iter_num}; continue with --init_from=resume")
        break
bar.close()

if master and os.path.exists(log_path):  # the loss curve, next to its CSV
    plot_log(log_path, os.path.join(out_dir, 'loss.png'), title=f"{pretraining.label} on {dataset}")
if master:
    print(f"{tag} | {out_dir}: " + (', '.join(os.path.basename(path) for path in run_files
                                              if os.path.exists(path)) or 'nothing written'))
if ddp:
    dist.destroy_process_group()
if stopping:  # saved, not finished: a signal's status, so no wrapper counts the run done
    sys.exit(128 + (stop_signal[0] if stop_signal else signal.SIGTERM))

"""
Evaluate image checkpoints of any objective (paper Sec. 6.2): linear probe, fine-tuning, reconstruction.

  task=linprobe  frozen features (pretraining mask kept in a fixed order, as GVP, or dropped), pooled, then
                 BatchNorm without affine + linear (MAE protocol; SGD with momentum instead of LARS). Features
                 are computed once, without augmentation, so many probe epochs cost seconds (Tables 3-5).
  task=finetune  every weight trained, every mask dropped, soft-target cross-entropy (label smoothing, optional
                 mixup), layer-wise lr decay, random-resized-crop (Tables 3-5, 9).
  task=recon     mask recon_ratio of each image's patches at random, fill them one patch at a time, each fill
                 conditioned on the visible patches and the ones already filled; score pixel L2 over the masked
                 patches and LPIPS of the recomposed image against the original (Table 8). L2 is the mean squared
                 error on pixels in [0, 1]; LPIPS is the shift-tolerant variant (evals/lpips.py), so neither is on
                 the paper's scale: compare checkpoints with each other and with the mean-fill baseline columns.
                 A norm_pix_loss model is de-normalised with its visible patches' mean statistics (never with the
                 masked patch's own); a one-stream causal model fills in raster order from earlier patches only.

One CPU:
$ python eval_vision.py config/linprobe_fmnist.py --ckpt=out-ar-fmnist/ckpt_best.pt --ckpt=out-dar-fmnist/ckpt_best.pt
Beside them, where the input stands (evals/baselines.py): --ckpt=pixels (linprobe only: the same probe on the raw
pixels; needs --dataset) and --ckpt=random:out-ar-fmnist/ckpt_best.pt (that run's model at initialisation).
Several GPUs (features, fine-tuning batches and reconstructions are split over processes; rank 0 writes):
$ torchrun --standalone --nproc_per_node=8 eval_vision.py config/finetune_fmnist.py --ckpt=...
Writes out_dir/<task>.md and <task>.csv (one row per checkpoint), and for recon a PNG grid per checkpoint.
"""
import csv
import io
import math
import os
import re
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from output import atomic_write, claim_out_dir, progress as progress_bar, refuse_training_run
from configurator import UsageError, check_ranges, configure, one_line_errors
from data.images import load_images
from devices import pick_attn_backend, setup_processes
from evals.baselines import RANDOM, open_model
from evals.lpips import MIN_SIDE
from evals.ppl import prefix_style
from evals.vision import (ImageClassifier, accuracy, check_pool, encode, fill_order, layer_decay_groups, masked_l2,
                          mean_fill, mixup, probe_groups, reconstruct, save_grid, soft_cross_entropy, soft_targets,
                          to_sequence, train_linear_probe)
from data.images import unpatchify
from schedule import lr_at

# -----------------------------------------------------------------------------
# default config: the MAE linear-probe protocol
ckpt = ()                   # checkpoints to compare, one table row each: --ckpt=a.pt --ckpt=b.pt
names = ()                  # their labels, same order (default: the checkpoint's folder name)
task = 'linprobe'           # linprobe | finetune | recon
dataset = ''                # '' = each checkpoint's pretraining set; else mnist5k | fmnist | mnist | imagefolder:<path>
image_size = 0              # 0 = the checkpoint's; any other value must equal it (the position table is fixed)
train_subset = 0            # linprobe / finetune: use this many training images (a seeded random subset); 0 = all
val_subset = 0              # images scored (all tasks); 0 = the whole val split
out_dir = 'out/eval_vision'
overwrite = False           # True: replace this task's table (and recon grids) of an earlier run in out_dir; False
                            # refuses. Tasks write files of their own, so linprobe, finetune and recon share an out_dir
# features and heads
pooling = 'mean'            # 'mean' over the patch rows (MAE's global pool), 'cls', or linprobe's 'concat' (every
                            # patch row side by side)
layer = 0                   # linprobe: features of the last block (0) or of block k = 1..n_layer (ln_f applied)
keep_mask = True            # linprobe: encode with the pretraining mask in raster order (GVP) or with none
epochs = 90                 # linprobe / finetune epochs
batch_size = 256            # per process (linprobe: the probe's batch; rank 0 fits it on the gathered features)
learning_rate = 0.1         # peak lr (MAE probe: 0.1 x batch / 256 with LARS; fine-tune: 1e-3 x batch / 256 AdamW)
warmup_epochs = 10
weight_decay = 0.0
# fine-tuning only
layer_decay = 0.75          # MAE's layer-wise lr decay (1 = off)
label_smoothing = 0.1       # soft targets
mixup_alpha = 0.0           # 0 = no mixup
augment = True              # random-resized-crop on the training images (flip as the checkpoint trained)
# reconstruction only
recon_ratio = 0.25          # fraction of patches masked and refilled
recon_order = 'random'      # order the masked patches are filled in: 'random' or 'raster' (causal models: raster)
grid_images = 8             # images in the PNG grid
lpips_net = 'alex'          # 'alex' or 'vgg' (shift-tolerant LPIPS weights, evals/lpips.py)
# system
eval_batch_size = 256
device = 'auto'             # 'cpu', 'cuda', 'cuda:1', ... ; auto = cuda if available
dtype = 'auto'              # bf16 autocast on CUDA, fp32 on CPU
attn_backend = 'auto'       # 'flex' on CUDA, 'sdpa' (dense mask) on CPU
seed = 1337
progress = True
# -----------------------------------------------------------------------------
one_line_errors('eval_vision.py')
configure(globals(), sys.argv[1:])
check_ranges(globals(), {
    'image_size': '[0, inf)', 'train_subset': '[0, inf)', 'val_subset': '[0, inf)', 'epochs': '[1, inf)',
    'batch_size': '[1, inf)', 'learning_rate': '(0, inf)', 'warmup_epochs': '[0, inf)', 'weight_decay': '[0, inf)',
    'layer_decay': '(0, 1]', 'label_smoothing': '[0, 1)', 'mixup_alpha': '[0, inf)', 'recon_ratio': '(0, 1)',
    'grid_images': '[1, inf)', 'eval_batch_size': '[1, inf)', 'seed': '[0, inf)', 'layer': '[0, inf)'})

# -----------------------------------------------------------------------------
# processes and devices (as in train.py)
ddp, rank, local_rank, world_size, device, dtype, autocast = setup_processes(device, dtype)
master, device_type = rank == 0, device.split(':')[0]
attn_backend = pick_attn_backend(attn_backend, device)

# -----------------------------------------------------------------------------
# checks: every checkpoint and data set before any work, so a bad one fails in seconds
if task not in ('linprobe', 'finetune', 'recon'):
    raise UsageError(f"task must be one of linprobe, finetune, recon, got {task!r}")
if not ckpt:
    raise UsageError("no checkpoint given: pass --ckpt=out-dar-fmnist/ckpt_best.pt (repeat --ckpt=... to compare)")
if names and len(names) != len(ckpt):
    raise UsageError(f"{len(names)} names for {len(ckpt)} checkpoints: give one --names=... per --ckpt=..., or none")
image_sets = {}
runs = []
for i, path in enumerate(ckpt):
    if path == 'pixels':  # the input baseline: no model, the probe reads the pixels themselves
        if task != 'linprobe':
            raise UsageError(f"--ckpt=pixels has no model to {task} with: it is the linear probe on raw pixels "
                             "(task=linprobe); for a model without pretraining use --ckpt=random:<checkpoint>")
        if not dataset:
            raise UsageError("--ckpt=pixels needs --dataset=... (no checkpoint says which data set to read)")
        checkpoint, data_name = None, dataset
    else:
        checkpoint = open_model(path, 'patches')
        model_config = checkpoint.model_config
        if image_size and image_size != model_config.image_size:
            raise UsageError(f"image_size={image_size} but {path} was trained at {model_config.image_size} px: "
                             "its position table fixes the size; drop --image_size (images are resized to the "
                             "checkpoint's)")
        if layer > model_config.n_layer:
            raise UsageError(f"layer={layer} but {path} has {model_config.n_layer} blocks: pick one of 1.."
                             f"{model_config.n_layer} (0 = the last)")
        data_name = dataset or checkpoint.train_config.get('dataset', '')
        if not data_name:
            raise UsageError(f"{path} does not say which data set it was trained on: pass --dataset=...")
    for split in ('train', 'val') if task != 'recon' else ('val',):
        if (data_name, split) not in image_sets:
            image_sets[data_name, split] = load_images(data_name, split)
    image_set = image_sets[data_name, 'val']
    if checkpoint is None:  # every pixel a feature: the whole image as one patch, at the set's size or image_size
        side = image_size or image_set.image_size
        shape, objective = dict(image_size=side, patch_size=side, flip=image_set.flip), 'raw pixels'
    else:
        if image_set.channels != model_config.channels:
            raise UsageError(f"{data_name} has {image_set.channels}-channel images but {path} was trained on "
                             f"{model_config.channels}-channel ones: evaluate it on a data set like its own "
                             "(--dataset=...)")
        shape = dict(image_size=model_config.image_size, patch_size=model_config.patch_size,
                     flip=bool(checkpoint.train_config.get('flip', image_set.flip)))
        objective = checkpoint.objective.label + (' at initialisation' if path.startswith(RANDOM) else '')
    random = RANDOM if path.startswith(RANDOM) else ''
    label = names[i] if names else 'pixels' if checkpoint is None else \
        random + os.path.basename(os.path.dirname(os.path.abspath(path.removeprefix(RANDOM))))
    runs.append(dict(path=path, name=label, checkpoint=checkpoint, data=data_name, objective=objective, **shape))
if len({run['name'] for run in runs}) < len(runs):  # e.g. ckpt_best.pt and ckpt_last.pt of one out_dir
    for run in runs:
        run['name'] = run['path']
check_pool(pooling, torch.zeros(2, dtype=torch.long))  # the value alone (no mask); each mask in linprobe
if task != 'linprobe' and (pooling == 'concat' or layer):
    raise UsageError(f"pooling='concat' and layer are linprobe's: {task} reads the last block, pooled by 'mean' or "
                     "'cls'")
if task == 'recon' and lpips_net not in MIN_SIDE:
    raise UsageError(f"lpips_net must be one of {', '.join(MIN_SIDE)}, got {lpips_net!r}")
if task == 'recon' and recon_order not in ('random', 'raster'):
    raise UsageError(f"recon_order must be 'random' or 'raster', got {recon_order!r}")

# -----------------------------------------------------------------------------
# shared helpers: subsets, batches of sequences split over processes, gathering

def subset(run, split):
    """The split's image ids a task uses: all, or a seeded random train_subset / val_subset of them (sorted), the
    same on every process."""
    n = len(image_sets[run['data'], split])
    limit, salt = (train_subset, 1) if split == 'train' else (val_subset, 2)
    if not limit or limit >= n:
        return torch.arange(n)
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed + salt))[:limit].sort().values


def sequences(run, image_set, indices, generator=None, train=False):
    """(model-ready sequences on device, labels on device) for these image indices."""
    pixels, labels = image_set.batch(indices, run['image_size'], generator, augment=train and augment,
                                     flip=run['flip'])
    return to_sequence(pixels, run['patch_size']).to(device), labels.to(device)


def shards(run, split, ids, desc):
    """This process's share of ids (every world_size-th) in eval batches: (ids, sequences, labels)."""
    image_set, mine = image_sets[run['data'], split], ids[rank::world_size]
    bar = progress_bar(total=len(mine), desc=desc, unit='images', enabled=master and progress)
    for chunk in mine.split(eval_batch_size):
        yield (chunk, *sequences(run, image_set, chunk))
        bar.update(len(chunk))
    bar.close()


def gather(items):
    """Concatenate a list from every process (rank order) on all of them."""
    if not ddp:
        return items
    gathered = [None] * world_size
    dist.all_gather_object(gathered, items)
    return [item for part in gathered for item in part]


@torch.no_grad()
def predict(run, split, fn, desc):
    """(fn(sequences), labels) on the CPU for the split's subset, each process a shard, gathered in id order."""
    parts = []
    for chunk, seqs, labels in shards(run, split, subset(run, split), desc):
        with autocast:
            parts.append((chunk, fn(seqs).cpu(), labels.cpu()))
    parts = gather(parts)
    order_back = torch.cat([p[0] for p in parts]).argsort()  # rank-interleaved shards back to one order
    return torch.cat([p[1] for p in parts])[order_back], torch.cat([p[2] for p in parts])[order_back]

# -----------------------------------------------------------------------------
# linear probe on frozen features

def linprobe(run, model):
    if model is None:  # --ckpt=pixels: every pixel a feature (the probe's BatchNorm standardises each)
        features = lambda seqs: seqs[:, 1:].flatten(1).float()  # noqa: E731
        result = dict(keep_mask=False, pooling='none', layer='-')
    else:
        n_patches = run['checkpoint'].model_config.block_size - 1  # the CLS slot, then the patches
        # keep_mask: the pretraining mask in raster order (GVP keeps it at linear probing); else none
        groups = probe_groups(run['checkpoint'].objective, n_patches) if keep_mask else \
            torch.zeros(n_patches + 1, dtype=torch.long)
        check_pool(pooling, groups)
        features = lambda seqs: encode(model, seqs, groups, pooling, layer)  # noqa: E731
        result = dict(keep_mask=keep_mask and bool(groups.any()), pooling=pooling,
                      layer=layer or run['checkpoint'].model_config.n_layer)  # the block the features come from
    train_x, train_y = predict(run, 'train', features, 'encode train')
    val_x, val_y = predict(run, 'val', features, 'encode val')
    if not torch.isfinite(train_x).all():
        raise UsageError(f"{run['path']} gives non-finite features: the checkpoint's weights are broken (NaN/inf)")
    result['train_images'] = len(train_y)
    if master:  # the probe is small: one process fits it
        probe = train_linear_probe(train_x, train_y, image_sets[run['data'], 'train'].num_classes, epochs,
                                   batch_size, learning_rate, warmup_epochs, weight_decay, seed)
        with torch.no_grad():
            result.update(train_acc=100 * accuracy(probe(train_x), train_y),
                          val_acc=100 * accuracy(probe(val_x), val_y))
    return result

# -----------------------------------------------------------------------------
# fine-tuning

def finetune(run, model):
    image_set = image_sets[run['data'], 'train']
    torch.manual_seed(seed)
    classifier = ImageClassifier(model, image_set.num_classes, pooling).to(device).train()
    optimizer = torch.optim.AdamW(layer_decay_groups(classifier, weight_decay, layer_decay), lr=learning_rate)
    trainer = DDP(classifier, device_ids=[local_rank] if device_type == 'cuda' else None) if ddp else classifier
    indices = subset(run, 'train')
    steps_per_epoch = max(1, len(indices) // (batch_size * world_size))  # the same on every process
    total, warmup = epochs * steps_per_epoch, warmup_epochs * steps_per_epoch
    generator = torch.Generator().manual_seed(seed * 1000 + rank)  # augmentation draws, per process
    rng = np.random.default_rng(seed * 1000 + rank)                # mixup draws, per process
    bar = progress_bar(total=total, desc='fine-tune', unit='steps', enabled=master and progress)
    last_epoch_loss = 0.0  # the training loss reported: the last epoch's mean
    for step in range(total):
        epoch, k = divmod(step, steps_per_epoch)
        if k == 0:
            shuffle = torch.randperm(len(indices), generator=torch.Generator().manual_seed(seed + epoch))
            mine = indices[shuffle][rank::world_size]  # the same epoch order on every process, then sharded
        lr = lr_at(step, learning_rate, warmup, total)
        for group in optimizer.param_groups:
            group['lr'] = lr * group['lr_scale']
        seqs, labels = sequences(run, image_set, mine[k * batch_size:(k + 1) * batch_size], generator, train=True)
        seqs, targets = mixup(seqs, soft_targets(labels, image_set.num_classes, label_smoothing), mixup_alpha, rng)
        with autocast:
            loss = soft_cross_entropy(trainer(seqs), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if epoch == epochs - 1:
            last_epoch_loss += loss.item()
        bar.update(1)
        if not math.isfinite(loss.item()):
            raise UsageError(f"fine-tuning {run['path']}: loss is {loss.item()} at step {step}: lower learning_rate")
    bar.close()
    classifier.eval()
    predictions, labels = predict(run, 'val', lambda seqs: classifier(seqs).argmax(dim=-1), 'val')
    return dict(epochs=epochs, train_images=len(indices), train_loss=last_epoch_loss / steps_per_epoch,
                val_acc=100 * int((predictions == labels).sum()) / len(labels))

# -----------------------------------------------------------------------------
# reconstruction, one patch at a time

def recon(run, model):
    cfg = run['checkpoint'].model_config
    style = prefix_style(run['checkpoint'].objective)
    ids = subset(run, 'val')
    ids = ids[torch.randperm(len(ids), generator=torch.Generator().manual_seed(seed))]  # a mix of classes in the grid
    scores, grid = [], None
    for chunk, seqs, _ in shards(run, 'val', ids, 'reconstruct'):
        fill_positions = fill_order(chunk.tolist(), cfg.block_size - 1, recon_ratio, seed, recon_order).to(device)
        with autocast:
            filled = reconstruct(model, seqs, fill_positions, style, norm_pix=cfg.norm_pix_loss)
        baseline = mean_fill(seqs, fill_positions)
        pictures = [unpatchify(x[:, 1:].float(), cfg.patch_size, cfg.channels) for x in (seqs, filled, baseline)]
        scores += zip(masked_l2(filled, seqs, fill_positions).tolist(), lpips(pictures[1], pictures[0]).tolist(),
                      masked_l2(baseline, seqs, fill_positions).tolist(), lpips(pictures[2], pictures[0]).tolist())
        if grid is None:
            grid = (seqs[:grid_images].cpu(), filled[:grid_images].cpu(), fill_positions[:grid_images].cpu())
    scores = torch.tensor(gather(scores), dtype=torch.float64)
    if not torch.isfinite(scores).all():
        raise UsageError(f"{run['path']} gives non-finite reconstructions: the checkpoint's weights are broken")
    if master and grid is not None:
        save_grid(os.path.join(out_dir, grid_name(run)), *grid, cfg.patch_size, cfg.channels)
    mean = scores.mean(dim=0).tolist()
    return dict(style=style, images=len(scores), l2=mean[0], lpips=mean[1], baseline_l2=mean[2],
                baseline_lpips=mean[3])


def grid_name(run):
    return f"recon_{re.sub(r'[^A-Za-z0-9_.-]+', '_', run['name'])}.png"

# -----------------------------------------------------------------------------
# run every checkpoint

if master:  # every input is good: claim out_dir before any work (the writing rank only)
    results = [task + '.md', task + '.csv']
    if task == 'recon':  # this run's grids, and an earlier recon's of other checkpoints: no stale grid stays beside
        earlier = os.listdir(out_dir) if os.path.isdir(out_dir) else []
        results += sorted({grid_name(run) for run in runs} | {n for n in earlier if re.fullmatch(r'recon_.*\.png', n)})
    refuse_training_run(out_dir)
    claim_out_dir(out_dir, results, overwrite)
if task == 'recon':
    from evals.lpips import LPIPS  # needs the stlpips wheel: only for recon
    lpips = LPIPS(lpips_net).to(device)
if master:
    print(f"{task} | {len(runs)} checkpoint(s) | {device} {dtype} {attn_backend} | {world_size} process(es)")
rows = []
for run in runs:
    t0 = time.time()
    model = run['checkpoint'].model(device, attn_backend=attn_backend) if run['checkpoint'] else None
    result = {'linprobe': linprobe, 'finetune': finetune, 'recon': recon}[task](run, model)
    rows.append(dict(model=run['name'], objective=run['objective'], dataset=run['data'],
                     **result, seconds=time.time() - t0))
    del model
    if master:
        print(f"{run['name']}: " + ', '.join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                             for k, v in rows[-1].items() if k != 'model'))

# -----------------------------------------------------------------------------
# results table: printed, and written as markdown + CSV (rank 0)

def cell(value):
    return f"{value:.4f}" if isinstance(value, float) else str(value)


if master:
    columns = list(rows[0])
    lines = ['| ' + ' | '.join(columns) + ' |', '|' + '---|' * len(columns)]
    lines += ['| ' + ' | '.join(cell(row[c]) for c in columns) + ' |' for row in rows]
    table = '\n'.join(lines) + '\n'
    print(table, end='')
    path = os.path.join(out_dir, task)
    table_csv = io.StringIO()
    writer = csv.DictWriter(table_csv, columns)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path + '.md', table)
    atomic_write(path + '.csv', table_csv.getvalue())
    print(f"wrote {path}.md and .csv")
if ddp:  # together: a rank that tore gloo down while rank 0 still wrote was seen to abort at exit
    dist.barrier()
    dist.destroy_process_group()

"""
The pieces of eval_vision.py that tests call directly (a script runs on import, so they live here):
  - which attention mask frozen features are encoded with (GVP keeps the pretraining mask for linear probing),
  - the linear probe of the MAE protocol (BatchNorm without affine + linear, on frozen features),
  - fine-tuning parts (classifier head, soft targets, mixup, layer-wise lr decay),
  - reconstruction one patch at a time (the paper's Table 8), and the PNG grid of its results.

A sequence is (B, 1 + N, C*p*p): a zero slot at row 0 (the model puts its CLS vector there) and N patches in
raster order, exactly what train.py feeds the model.
"""
import math
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

from output import atomic_write
from configurator import UsageError
from data.images import patchify, unpatchify
from schedule import lr_at
from objectives import PAD_GROUP, model_batch

RECON_STYLES = ('causal', 'bert', 'masked_two_stream', 'groups')
HOLE_COLOR = (0.25, 0.45, 0.85)  # masked patches in the grid's middle column

# -----------------------------------------------------------------------------
# sequences and features

def probe_groups(objective, N):
    """(1 + N,) content group ids to encode frozen features with, in raster order: masked objectives (one
    bidirectional visible group) all 0; sequential ones their groups in a fixed draw (GVP keeps the mask at linear
    probing): ar every position its own group, dar groups of t, gvp its 'fixed' segmentation (Kind.probe_groups)."""
    if not objective.kind.masked and objective.kind.probe_groups is None:
        raise UsageError(f"objective {objective.name!r} has no probe_groups: set its Kind's in objectives.py")
    groups = torch.zeros(N, dtype=torch.long) if objective.kind.masked else objective.kind.probe_groups(objective, N)
    return torch.cat([torch.zeros(1, dtype=torch.long), groups])


def to_sequence(pixels, patch_size):
    """(B, C, H, W) in [0, 1] -> (B, 1 + N, C*p*p): the zero CLS slot, then the patches in raster order."""
    patches = patchify(pixels, patch_size)
    return torch.cat([patches.new_zeros(patches.shape[0], 1, patches.shape[-1]), patches], dim=1)


def pool_rows(hidden, pooling):
    """(B, S, d) -> (B, d): mean over the patch rows (MAE's global pool) or the CLS row; 'concat': (B, N d), every
    patch row side by side (a probe that keeps where each feature came from)."""
    if pooling == 'concat':
        return hidden[:, 1:].flatten(1)
    return hidden[:, 1:].mean(dim=1) if pooling == 'mean' else hidden[:, 0]  # check_pool vetted the name


def check_pool(pooling, groups):
    if pooling not in ('mean', 'cls', 'concat'):
        raise UsageError(f"pooling must be 'mean', 'cls' or 'concat', got {pooling!r}")
    if pooling == 'cls' and bool((groups[1:] > 0).all()):
        raise UsageError("pooling='cls' with the pretraining mask kept: the CLS row sees only itself under this mask, "
                         "so its feature is the same for every image; use pooling='mean' or keep_mask=False")


@torch.no_grad()
def encode(model, seqs, groups, pooling, layer=0):
    """Frozen pooled features of (B, S, D) sequences, every row encoded with the (S,) content groups; from the last
    block (layer 0) or block `layer` (1 = the first), through the final LayerNorm either way."""
    hidden = model.features(seqs, content_groups=groups.to(seqs.device).expand(seqs.shape[:2]), all_layers=layer > 0)
    return pool_rows(hidden[layer - 1] if layer else hidden, pooling).float()

# -----------------------------------------------------------------------------
# linear probe (MAE protocol; SGD with momentum stands in for LARS)

def classifier_head(dim, num_classes):
    """A linear classifier with MAE's head init."""
    head = nn.Linear(dim, num_classes)
    nn.init.normal_(head.weight, std=0.01)
    nn.init.zeros_(head.bias)
    return head


def train_linear_probe(features, labels, num_classes, epochs, batch_size, learning_rate, warmup_epochs=0,
                       weight_decay=0.0, seed=0):
    """BatchNorm1d without affine (a parameter-free whitening of each feature) + a linear classifier, fitted on
    cached frozen features (n, d) with cross-entropy; returned in eval mode."""
    if len(features) < 2:
        raise UsageError(f"a linear probe needs at least 2 training images, got {len(features)}")
    torch.manual_seed(seed)
    probe = nn.Sequential(OrderedDict(norm=nn.BatchNorm1d(features.shape[1], affine=False, eps=1e-6),
                                      head=classifier_head(features.shape[1], num_classes)))
    optimizer = torch.optim.SGD(probe.parameters(), lr=learning_rate, momentum=0.9, weight_decay=weight_decay)
    generator = torch.Generator().manual_seed(seed)
    steps_per_epoch = math.ceil(len(features) / batch_size)
    total, warmup = epochs * steps_per_epoch, warmup_epochs * steps_per_epoch
    probe.train()
    # thousands of steps of a batch x d by d x classes layer: a second thread only adds barriers (minutes instead of
    # seconds on a busy 2-core CPU); one thread is also how experiments/reproduce.sh ran every probe
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for step in range(total):
            if step % steps_per_epoch == 0:
                permutation = torch.randperm(len(features), generator=generator)
            index = permutation[(step % steps_per_epoch) * batch_size:][:batch_size]
            if len(index) < 2:  # BatchNorm needs two samples to estimate a variance
                continue
            for group in optimizer.param_groups:
                group['lr'] = lr_at(step, learning_rate, warmup, total)
            loss = F.cross_entropy(probe(features[index]), labels[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return probe.eval()


def accuracy(logits, labels):  # nan for no labels
    return float((logits.argmax(dim=-1) == labels).float().mean())

# -----------------------------------------------------------------------------
# fine-tuning: every weight trained, every mask dropped, soft targets

class ImageClassifier(nn.Module):
    """The pretrained trunk with all groups 0 (no mask: GVP drops it "for a larger receptive field"), then
    pooling, a fresh LayerNorm (MAE's fc_norm: a mean of normalised rows is no longer normalised) and a linear
    head. The inputs only pretraining reads are frozen, so DDP sees no unused trainable parameter."""

    def __init__(self, model, num_classes, pooling='mean'):
        super().__init__()
        self.model, self.pooling = model, pooling
        self.norm = nn.LayerNorm(model.config.n_embd)
        self.head = classifier_head(model.config.n_embd, num_classes)
        for p in (model.query_emb, model.mask_emb, *model.pixel_head.parameters()):
            p.requires_grad_(False)

    def forward(self, seqs):
        positions = torch.arange(seqs.shape[1], device=seqs.device).expand(seqs.shape[:2])
        hidden = self.model.trunk(seqs, positions, torch.zeros_like(positions))  # features() is no_grad
        return self.head(self.norm(pool_rows(hidden, self.pooling)))


def soft_targets(labels, num_classes, smoothing):
    """Label smoothing: (1 - s) on the true class plus s spread evenly over all classes."""
    return F.one_hot(labels, num_classes).float() * (1 - smoothing) + smoothing / num_classes


def mixup(pixels, targets, alpha, rng):
    """Mixup (Zhang et al. 2018): blend the batch with its reverse by lambda ~ Beta(alpha, alpha); alpha 0 = off."""
    if alpha <= 0:
        return pixels, targets
    lam = float(rng.beta(alpha, alpha))
    return lam * pixels + (1 - lam) * pixels.flip(0), lam * targets + (1 - lam) * targets.flip(0)


def soft_cross_entropy(logits, targets):
    return -(targets * F.log_softmax(logits.float(), dim=-1)).sum(dim=-1).mean()


def layer_decay_groups(classifier, weight_decay, layer_decay):
    """AdamW groups with MAE's layer-wise lr decay: depth 0 = embeddings, i + 1 = block i, L + 1 = ln_f and
    head; a parameter at depth k gets lr_scale = layer_decay ** (L + 1 - k). Weight decay on matrices only."""
    n_layer = len(classifier.model.blocks)
    groups = {}
    for name, p in classifier.named_parameters():
        if not p.requires_grad:
            continue
        if name.startswith('model.blocks.'):
            depth = int(name.split('.')[2]) + 1
        elif name.startswith(('model.patch_embed', 'model.cls_emb', 'model.wte', 'model.wpe')):
            depth = 0
        else:
            depth = n_layer + 1
        decay = weight_decay if p.dim() >= 2 else 0.0
        groups.setdefault((depth, decay), {'params': [], 'weight_decay': decay,
                                           'lr_scale': layer_decay ** (n_layer + 1 - depth)})['params'].append(p)
    return list(groups.values())

# -----------------------------------------------------------------------------
# reconstruction (Table 8): mask a fraction of the patches, fill them one at a time

def fill_order(image_ids, n_patches, ratio, seed, order='random'):
    """(B, M) positions (1..N) to mask, in the order they are filled: M = round(ratio N) of them drawn at random
    per image from a generator seeded by (seed, image id), so every process masks an image the same way."""
    n_masked = round(ratio * n_patches)
    if not 1 <= n_masked < n_patches:
        raise UsageError(f"mask ratio {ratio} of {n_patches} patches masks {n_masked}: pick a ratio that masks "
                         "at least one patch and leaves one visible")
    rows = []
    for image_id in image_ids:
        generator = torch.Generator().manual_seed(seed * 1_000_003 + int(image_id))
        rows.append(torch.randperm(n_patches, generator=generator)[:n_masked] + 1)
    positions = torch.stack(rows)
    return positions.sort(dim=1).values if order == 'raster' else positions


def fill_step_batch(current, order, step, style):
    """The model batch that predicts patch order[:, step] from the visible patches and order[:, :step] (already
    filled, their content in `current`). Content rows of patches not yet filled are zeroed AND hidden by the
    groups (PAD_GROUP) or replaced by [MASK] ('bert'): nothing of their true pixels can reach any prediction."""
    B, S = current.shape[:2]
    device = current.device
    positions = torch.arange(S, device=device).expand(B, S)
    fill_rank = torch.full((B, S), -1, dtype=torch.long, device=device)
    fill_rank.scatter_(1, order, torch.arange(order.shape[1], device=device).expand_as(order).contiguous())
    pending = fill_rank >= step           # the target and every later one
    done = (fill_rank >= 0) & ~pending
    content = current.masked_fill(pending[..., None], 0.0)
    target = order[:, step:step + 1]
    one_row = torch.ones(B, 1, dtype=torch.bool, device=device)
    if style == 'causal':  # the output at position p - 1 predicts p from positions 0..p-1
        return model_batch(content, positions, positions, valid=one_row, pred_index=target - 1, causal=True)
    if style == 'bert':    # pending patches are [MASK] inputs, as the masked set was in pretraining
        return model_batch(content, positions, torch.zeros_like(positions), valid=one_row, content_masked=pending,
                           pred_index=target)
    if style == 'masked_two_stream':
        groups = torch.zeros_like(positions).masked_fill(pending, PAD_GROUP)
        return model_batch(content, positions, groups, valid=one_row, query_pos=target,
                           query_groups=torch.ones_like(target))
    groups = torch.where(done, fill_rank + 1, 0).masked_fill(pending, PAD_GROUP)  # 'groups'
    return model_batch(content, positions, groups, valid=one_row, query_pos=target,
                       query_groups=torch.full_like(target, step + 1))


def masked_at(order, length):
    """(B, length) bool, True at each row's positions in order (B, M): the patches a reconstruction fills."""
    return torch.zeros(order.shape[0], length, dtype=torch.bool, device=order.device).scatter_(1, order, True)


@torch.no_grad()
def reconstruct(model, seqs, order, style, norm_pix=False):
    """Fill the patches at `order` (B, M) one at a time; returns (B, S, D) with the visible patches of seqs and
    the model's fills (clamped to the pixel range [0, 1]; each becomes visible content for later steps)."""
    if style == 'causal':  # a causal model can only continue the raster scan
        order = order.sort(dim=1).values
    masked = masked_at(order, seqs.shape[1])
    current = seqs.masked_fill(masked[..., None], 0.0)
    # a norm_pix_loss model predicts normalised pixels: de-normalise them with the mean over the visible patches of
    # each patch's pixel mean and (unbiased) variance, never with the masked patch's own (that reads its truth)
    if norm_pix:
        patches, visible = seqs[:, 1:], (~masked[:, 1:]).float()
        count = visible.sum(dim=1, keepdim=True).clamp(min=1)
        mean = (patches.mean(dim=-1) * visible).sum(dim=1, keepdim=True) / count
        var = (patches.var(dim=-1) * visible).sum(dim=1, keepdim=True) / count
    rows = torch.arange(seqs.shape[0], device=seqs.device)
    for step in range(order.shape[1]):
        preds, _ = model(**fill_step_batch(current, order, step, style))
        fill = preds[:, 0].float()
        if norm_pix:
            fill = fill * (var + 1e-6).sqrt() + mean
        current[rows, order[:, step]] = fill.clamp(0, 1).to(current.dtype)
    return current


def mean_fill(seqs, order):
    """The trivial baseline: every masked pixel set to the mean of the image's visible pixels."""
    masked = masked_at(order, seqs.shape[1])
    visible = (~masked[:, 1:]).float()[..., None]
    mean = (seqs[:, 1:] * visible).sum(dim=(1, 2)) / (visible.sum(dim=(1, 2)) * seqs.shape[-1])
    return torch.where(masked[..., None], mean[:, None, None], seqs)


def masked_l2(filled, seqs, order):
    """(B,) mean squared pixel error over the masked patches, pixels in [0, 1]."""
    rows = torch.arange(seqs.shape[0], device=seqs.device)[:, None]
    return ((filled[rows, order] - seqs[rows, order]) ** 2).float().mean(dim=(1, 2))


def save_grid(path, seqs, filled, order, patch_size, channels, scale=4):
    """PNG of CPU tensors, one image a row: original | masked (holes coloured) | filled. Written atomically."""
    masked = masked_at(order, seqs.shape[1])
    original, filled_image = (unpatchify(x[:, 1:].float(), patch_size, channels).expand(-1, 3, -1, -1)
                              for x in (seqs, filled))  # grey -> RGB
    per_pixel = masked[:, 1:, None].float().expand(-1, -1, patch_size ** 2)
    hole_pixels = unpatchify(per_pixel, patch_size, 1).bool()
    holes = torch.where(hole_pixels, torch.tensor(HOLE_COLOR).view(1, 3, 1, 1), original)
    columns = [original, holes, filled_image]
    B, _, H, W = original.shape
    gap = 2
    canvas = torch.ones(3, B * (H + gap) + gap, 3 * (W + gap) + gap)
    for i in range(B):
        for j, column in enumerate(columns):
            top, left = gap + i * (H + gap), gap + j * (W + gap)
            canvas[:, top:top + H, left:left + W] = column[i].clamp(0, 1)
    array = (canvas.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
    image = Image.fromarray(array).resize((canvas.shape[2] * scale, canvas.shape[1] * scale), Image.NEAREST)
    atomic_write(path, lambda f: image.save(f, format='PNG'))

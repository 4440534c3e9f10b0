"""
Prepare Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; MIT licence): 28x28 grey images of 10 kinds of clothing.
We take the four IDX files from Debian's `dataset-fashion-mnist` package (found with `dpkg -L`), or from a folder
given on the command line, and write its 60k train / 10k test sets as our train / val, uint8 (N, 1, 28, 28)
+ int64 labels:

    data/fmnist/train.npz   60000 images
    data/fmnist/val.npz     10000 images

Usage (from the repo root): python data/fmnist/prepare.py [idx_dir [out_dir]]
"""

import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO_ROOT)

import numpy as np

from configurator import UsageError
from data.images import read_idx_pair, save_image_split

DEBIAN_PACKAGE = 'dataset-fashion-mnist'
DEBIAN_DIR = '/usr/share/datasets/fashion-mnist'
CLASS_NAMES = ('T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag',
               'Ankle boot')
IDX_FILES = {'train': ('train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz'),
             'val': ('t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz')}


def find_idx_dir():
    """The folder the Debian package installed its IDX files into, or None."""
    try:
        listing = subprocess.run(['dpkg', '-L', DEBIAN_PACKAGE], capture_output=True, text=True).stdout
    except OSError:  # no dpkg on this system
        listing = ''
    for path in listing.splitlines():
        if path.endswith(IDX_FILES['train'][0]):
            return os.path.dirname(path)
    return DEBIAN_DIR if os.path.isdir(DEBIAN_DIR) else None


def prepare(idx_dir, out_dir):
    for split, (images_name, labels_name) in IDX_FILES.items():
        paths = [os.path.join(idx_dir, name) for name in (images_name, labels_name)]
        for path in paths:
            if not os.path.exists(path):
                raise UsageError(f"{path} not found: the folder must hold the four Fashion-MNIST .gz IDX files")
        images, labels = read_idx_pair(*paths)
        if labels.min() < 0 or labels.max() >= len(CLASS_NAMES):
            raise UsageError(f"{paths[1]}: labels must lie in 0..{len(CLASS_NAMES) - 1}")
        path = os.path.join(out_dir, f'{split}.npz')
        save_image_split(path, images, labels, CLASS_NAMES)
        print(f"{path}: images {images.shape} uint8, per class {np.bincount(labels).tolist()}")


if __name__ == '__main__':
    if sys.argv[1:2] in (['--help'], ['-h']):
        print(__doc__.strip())
        sys.exit(0)
    idx_dir = sys.argv[1] if len(sys.argv) > 1 else find_idx_dir()
    if idx_dir is None:
        sys.exit(f"fmnist: Fashion-MNIST not found: run `sudo apt-get install {DEBIAN_PACKAGE}` (Debian/Ubuntu), "
                 f"or pass a folder holding its four IDX .gz files: python data/fmnist/prepare.py DIR")
    try:
        prepare(idx_dir, sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO_ROOT, 'data', 'fmnist'))
    except ValueError as err:
        sys.exit(f"fmnist: {err}")

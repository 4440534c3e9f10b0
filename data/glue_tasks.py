"""
GLUE (and an offline GLUE-like suite): task specs, a strict TSV reader, and the metrics.

The paper fine-tunes on GLUE (Table 1, Table 2) and reports F1 for QQP and MRPC, Pearson for STS-B, Matthews
correlation for CoLA and accuracy for the rest; its "Avg" column is the plain mean of those nine numbers with
MNLI-m and MNLI-mm counted separately and WNLI left out (Cramming's convention; Table 2 checks out: the nine
numbers of the ar row average to 74.1, those of the dar row to 76.0). glue_average() follows exactly that.

Data lives where the prepare scripts put it, in the layout of GLUE as its original download script ships it:
    data/glue/<Folder>/{train,dev}.tsv            python data/glue/prepare.py          (needs a network)
    data/glue/offline/<task>/{train,dev}.tsv      python data/glue/prepare_offline.py  (package registry only)
    data/glue/probing/<task>/{train,dev}.tsv      python data/glue/prepare_probing.py  (from the prepared corpora)
Rows come back as (text_a, text_b or None, label): label an int index into spec.labels, or a float (regression).
"""

import csv
import os
from dataclasses import dataclass

import numpy as np

from output import atomic_write
from configurator import UsageError

GLUE_DIR = os.path.join("data", "glue")
OFFLINE_DIR = os.path.join("data", "glue", "offline")
PROBING_DIR = os.path.join("data", "glue", "probing")

# -----------------------------------------------------------------------------
# task specs


@dataclass(frozen=True)
class TaskSpec:
    folder: str                   # directory name under the data dir (the official GLUE spelling)
    header: bool                  # False only for CoLA's train/dev.tsv: columns are then found by index
    text_columns: tuple           # one column (single sentence) or two (a pair): header names or indices
    label_column: object          # header name or index
    labels: tuple = None          # raw label strings; the int label is the index here. None = regression
    score_range: tuple = None     # (low, high) for regression labels
    metrics: tuple = ("accuracy",)  # the first one is the task's main metric (the one GLUE averages)
    dev_splits: tuple = ("dev",)
    n_columns: int = None         # headerless files only: how many fields a row must have
    offline: bool = False         # part of the offline suite (prepare_offline.py) rather than GLUE
    probing: bool = False         # part of the probing suite (prepare_probing.py)

    @property
    def is_regression(self):
        return self.labels is None


# The official files. Label orders follow the GLUE/HF convention (MNLI: entailment, neutral, contradiction),
# so a class index means the same thing here as in every other GLUE codebase.
TASKS = {
    # CoLA train/dev.tsv: no header; source, label, original mark ('*' or empty), sentence
    "cola": TaskSpec("CoLA", header=False, text_columns=(3,), label_column=1, labels=("0", "1"),
                     metrics=("mcc",), n_columns=4),
    "sst2": TaskSpec("SST-2", header=True, text_columns=("sentence",), label_column="label", labels=("0", "1")),
    # MRPC: the download script copies the Microsoft file's header, BOM and all: read with utf-8-sig
    "mrpc": TaskSpec("MRPC", header=True, text_columns=("#1 String", "#2 String"), label_column="Quality",
                     labels=("0", "1"), metrics=("f1", "accuracy")),
    "stsb": TaskSpec("STS-B", header=True, text_columns=("sentence1", "sentence2"), label_column="score",
                     score_range=(0.0, 5.0), metrics=("pearson", "spearman")),
    "qqp": TaskSpec("QQP", header=True, text_columns=("question1", "question2"), label_column="is_duplicate",
                    labels=("0", "1"), metrics=("f1", "accuracy")),
    "mnli": TaskSpec("MNLI", header=True, text_columns=("sentence1", "sentence2"), label_column="gold_label",
                     labels=("entailment", "neutral", "contradiction"),
                     dev_splits=("dev_matched", "dev_mismatched")),
    "qnli": TaskSpec("QNLI", header=True, text_columns=("question", "sentence"), label_column="label",
                     labels=("entailment", "not_entailment")),
    "rte": TaskSpec("RTE", header=True, text_columns=("sentence1", "sentence2"), label_column="label",
                    labels=("entailment", "not_entailment")),
    "wnli": TaskSpec("WNLI", header=True, text_columns=("sentence1", "sentence2"), label_column="label",
                     labels=("0", "1")),
}

# The offline suite: real annotated data from package registries, written by prepare_offline.py in the same
# layout, so that everything downstream (fine-tuning, scoring) runs without GLUE.
OFFLINE_TASKS = {
    # Pang & Lee sentence polarity, 0 = negative, 1 = positive (an SST-2 stand-in)
    "polarity": TaskSpec("polarity", header=True, text_columns=("sentence",), label_column="label",
                         labels=("0", "1"), offline=True),
    # CoNLL-2010 Wikipedia hedges, 0 = certain, 1 = uncertain/hedged (a CoLA stand-in: one sentence, MCC)
    "hedge": TaskSpec("hedge", header=True, text_columns=("sentence",), label_column="label",
                      labels=("0", "1"), metrics=("mcc", "accuracy"), offline=True),
    # Clough & Stevenson: a student answer and the Wikipedia source it was written from; 0 = written
    # independently, 1 = heavy revision, 2 = light revision, 3 = cut and paste (a pair task, 4 classes)
    "plagiarism": TaskSpec("plagiarism", header=True, text_columns=("answer", "source"), label_column="label",
                           labels=("0", "1", "2", "3"), metrics=("accuracy", "mcc"), offline=True),
    # Lee et al. 2005: pairs of news documents with mean human similarity, rescaled to [0, 1] (an STS-B stand-in)
    "lee_sts": TaskSpec("lee_sts", header=True, text_columns=("document1", "document2"), label_column="score",
                        score_range=(0.0, 1.0), metrics=("pearson", "spearman"), offline=True),
}

# The probing suite: SentEval-style tasks (Conneau et al. 2018) cut by prepare_probing.py from text the byte-level
# models never trained on (the held-out plays; Wikipedia out of domain); its docstring says how each is built.
_probe = lambda name, labels=("0", "1"): TaskSpec(name, header=True, text_columns=("sentence",),
                                                  label_column="label", labels=labels, probing=True)
PROBING_TASKS = {
    "bigram_shift": _probe("bigram_shift"),          # 1 = two adjacent words swapped
    "somo": _probe("somo"),                          # 1 = one word replaced by another of its length
    "play": _probe("play", ("0", "1", "2", "3")),    # which held-out play (data/shakespeare/prepare.py VAL_PLAYS)
    "speaker_change": _probe("speaker_change"),      # 1 = one character's speech ends and another's starts
    "verse_prose": _probe("verse_prose"),            # 0 = verse, 1 = prose
    "wiki_bigram_shift": _probe("wiki_bigram_shift"),
    "wiki_somo": _probe("wiki_somo"),
    # one spoken line (Wikipedia: one sentence), changed where no capital or punctuation shows it
    "line_bigram_shift": _probe("line_bigram_shift"),  # 1 = two adjacent lowercase words swapped
    "line_somo": _probe("line_somo"),  # 1 = a word replaced by one of its length and frequency band
    "wiki_line_bigram_shift": _probe("wiki_line_bigram_shift"),
    "wiki_line_somo": _probe("wiki_line_somo"),
}

ALL_TASKS = {**TASKS, **OFFLINE_TASKS, **PROBING_TASKS}


def get_task(task):
    if task not in ALL_TASKS:
        raise UsageError(f"unknown task {task!r}: choose one of {', '.join(ALL_TASKS)}")
    return ALL_TASKS[task]


def default_dir(task):
    """Where the prepare scripts put a task's data (relative to the repo root)."""
    spec = get_task(task)
    return PROBING_DIR if spec.probing else OFFLINE_DIR if spec.offline else GLUE_DIR


def prepare_hint(task, glue_dir=None):
    """The command that writes a task's files where they are read: into glue_dir (--out_dir) when that is not the
    prepare script's own folder (a GLUE task asked of config/glue_probing.py's data/glue/probing, say)."""
    spec = get_task(task)
    script = "prepare_probing.py" if spec.probing else "prepare_offline.py" if spec.offline else \
        f"prepare.py --tasks={task}"
    own = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), default_dir(task))
    elsewhere = glue_dir is not None and os.path.realpath(glue_dir) != os.path.realpath(own)
    network = "" if spec.probing or spec.offline else " (needs a network)"
    return f"run `python data/glue/{script}{f' --out_dir={glue_dir}' if elsewhere else ''}`{network}"


def result_key(task, split):
    """The name a (task, dev split) score goes under in glue_average's input: 'mnli_m' / 'mnli_mm', else task."""
    return {"dev_matched": f"{task}_m", "dev_mismatched": f"{task}_mm"}.get(split, task)

# -----------------------------------------------------------------------------
# reading the TSVs


def _column_index(task, header, column, path):
    if header is None:
        return column
    if column not in header:
        raise UsageError(f"{path}:1: header has no column {column!r} (it has {header}); "
                         f"not the official layout? {prepare_hint(task, os.path.dirname(os.path.dirname(path)))}")
    return header.index(column)


def _parse_label(spec, raw, where):
    if spec.is_regression:
        try:
            score = float(raw)
        except ValueError:
            raise UsageError(f"{where}: score {raw!r} is not a number") from None
        low, high = spec.score_range
        if not low <= score <= high:  # also rejects nan
            raise UsageError(f"{where}: score {score} is outside [{low}, {high}]")
        return score
    if raw not in spec.labels:
        raise UsageError(f"{where}: label {raw!r} is not one of {list(spec.labels)}")
    return spec.labels.index(raw)


def read_task(glue_dir, task, split):
    """Rows of one split as a list of (text_a, text_b or None, label). Strict: any bad row is one clear error."""
    spec = get_task(task)  # split: 'train' or one of spec.dev_splits, as the callers pass it
    task_dir = os.path.join(glue_dir, spec.folder)
    if not os.path.isdir(task_dir):
        raise UsageError(f"{task}: no folder {task_dir}: {prepare_hint(task, glue_dir)}")
    path = os.path.join(task_dir, f"{split}.tsv")
    if not os.path.isfile(path):
        raise UsageError(f"{task}: {path} is missing: {prepare_hint(task, glue_dir)}")

    rows = []
    # utf-8-sig drops MRPC's BOM; QUOTE_NONE because GLUE text is raw: a '"' is a character, never quoting
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header, n_columns = None, spec.n_columns
        if spec.header:
            header = next(reader, None)
            if header is None:
                raise UsageError(f"{path}: file is empty (expected a header): {prepare_hint(task, glue_dir)}")
            n_columns = len(header)
        text_idx = [_column_index(task, header, column, path) for column in spec.text_columns]
        label_idx = _column_index(task, header, spec.label_column, path)
        for fields in reader:
            if not fields:
                continue  # a blank line holds no example
            where = f"{path}:{reader.line_num}"
            if len(fields) != n_columns:
                raise UsageError(f"{where}: expected {n_columns} tab-separated fields, got {len(fields)} "
                                 f"(a stray tab or newline inside a text?)")
            label = _parse_label(spec, fields[label_idx], where)
            text_b = fields[text_idx[1]] if len(text_idx) == 2 else None
            rows.append((fields[text_idx[0]], text_b, label))
    if not rows:
        raise UsageError(f"{path}: no examples in the file: {prepare_hint(task, glue_dir)}")
    return rows


def clean(text):
    """One line, single spaces: a tab or newline inside a text would split the row (files are read QUOTE_NONE)."""
    return " ".join(text.split())


def write_tsv(path, header, rows):
    """Write a TSV atomically (temp + rename): a half-written split would read as a shorter, wrong data set.
    header None: no header line (CoLA's layout). Fields hold no tab or newline: the callers clean() the text."""
    lines = ([] if header is None else [header]) + list(rows)
    atomic_write(path, "".join("\t".join(fields) + "\n" for fields in lines))

# -----------------------------------------------------------------------------
# metrics of equal-length non-empty 1-D preds and labels (eval_glue.py scores whole dev splits); plain numpy, tests
# check each against scikit-learn / scipy


def accuracy(preds, labels):
    return float(np.mean(np.asarray(preds) == np.asarray(labels)))


def f1(preds, labels):
    """Binary F1 of the positive class 1 = 2TP / (2TP + FP + FN); 0 when there are no positives at all."""
    predicted, positive = np.asarray(preds) == 1, np.asarray(labels) == 1
    denominator = predicted.sum() + positive.sum()  # (TP + FP) + (TP + FN)
    return float(2 * np.sum(predicted & positive) / denominator) if denominator > 0 else 0.0


def matthews_corrcoef(preds, labels):
    """Matthews correlation, the K-class form (Gorodkin 2004) that reduces to (TP TN - FP FN) / sqrt(...) for
    two classes. 0 when either side is constant (no correlation is measurable), as scikit-learn does."""
    preds, labels = np.asarray(preds), np.asarray(labels)
    codes = np.unique(np.concatenate([labels, preds]), return_inverse=True)[1].reshape(2, -1)  # shared class ids
    true_counts, pred_counts = (np.bincount(row, minlength=codes.max() + 1).astype(np.float64) for row in codes)
    total = float(len(labels))
    covariance = np.sum(preds == labels) * total - pred_counts @ true_counts
    denominator = np.sqrt((total**2 - pred_counts @ pred_counts) * (total**2 - true_counts @ true_counts))
    return float(covariance / denominator) if denominator > 0 else 0.0


def pearson(preds, labels):
    """Pearson correlation; 0 (not nan) when either side is constant, so one collapsed run can't nan an average."""
    preds, labels = np.asarray(preds), np.asarray(labels)
    x = preds.astype(np.float64) - preds.mean(dtype=np.float64)
    y = labels.astype(np.float64) - labels.mean(dtype=np.float64)
    denominator = np.sqrt((x @ x) * (y @ y))
    return float(np.clip(x @ y / denominator, -1.0, 1.0)) if denominator > 0 else 0.0


def average_ranks(values):
    """1-based ranks; tied values share the mean of the ranks they span (what Spearman's rho needs)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # each distinct value spans the sorted ranks ends - counts + 1 .. ends
    return (ends - counts + 1 + ends)[inverse] / 2.0


def spearman(preds, labels):
    return pearson(average_ranks(preds), average_ranks(labels))


METRICS = {"accuracy": accuracy, "f1": f1, "mcc": matthews_corrcoef, "pearson": pearson, "spearman": spearman}

# -----------------------------------------------------------------------------
# scores and the GLUE average


def task_score(task, preds, labels):
    """Every metric of the task, in percent, main metric first. preds: class ids (the argmax of the logits), or
    scores for regression."""
    return {name: 100.0 * METRICS[name](preds, labels) for name in get_task(task).metrics}


# GLUE's average as the paper's Table 2 (and Cramming) reports it: nine numbers, WNLI out
GLUE_AVERAGE_KEYS = ("mnli_m", "mnli_mm", "sst2", "stsb", "rte", "qnli", "qqp", "mrpc", "cola")


def glue_average(results):
    """Mean of each task's main metric. results: {result_key(task, split): task_score(...)}, one suite only.

    GLUE: the nine GLUE_AVERAGE_KEYS (main metrics: CoLA MCC, STS-B Pearson, MRPC/QQP F1, accuracy elsewhere);
    WNLI, when present, is ignored (its dev set is adversarial; Devlin et al. and Cramming leave it out).
    Offline (probing) suite: the mean over its tasks. Fewer keys average whatever subset is there (quick runs;
    eval_glue.py marks such a GLUE average as not comparable with the paper)."""
    return float(np.mean([scores[get_task("mnli" if key in ("mnli_m", "mnli_mm") else key).metrics[0]]
                          for key, scores in results.items() if key != "wnli"]))

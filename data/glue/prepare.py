"""
Download the real GLUE (needs a network) into data/glue/<Folder>/ in the layout GLUE's own download script
produces, then read every labelled split back with data/glue_tasks.read_task to prove the layout is right.

Two sources:
  --source=urls (default): the per-task zips GLUE publishes (dl.fbaipublicfiles.com), and for MRPC, which GLUE
      may not host, Microsoft's two text files (the SentEval mirror) plus GLUE's list of dev pair ids, split here
      into train/dev exactly as GLUE's script does. Files land in --cache_dir first; whatever is already there
      (e.g. zips copied over by hand on a machine with no network) is used as is: add --download=False to insist.
  --source=hf: the Hugging Face `datasets` package, if installed (`pip install datasets`), dataset nyu-mll/glue.
      Its rows are written with only the columns read_task uses (index, texts, label).

    python data/glue/prepare.py                            # all nine tasks -> data/glue/<Folder>/*.tsv
    python data/glue/prepare.py --tasks=cola,sst2          # some of them (or repeat --tasks=)
"""

import os
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.glue_tasks import`

import numpy as np

from configurator import UsageError, configure, one_line_errors
from output import atomic_write
from data import DATA_DIR, fetch
from data.glue_tasks import TASKS, clean, read_task, write_tsv

GLUE_URL = "https://dl.fbaipublicfiles.com/glue/data/"
ZIP_URLS = {
    "cola": GLUE_URL + "CoLA.zip",
    "sst2": GLUE_URL + "SST-2.zip",
    "stsb": GLUE_URL + "STS-B.zip",
    "qqp": GLUE_URL + "QQP-clean.zip",
    "mnli": GLUE_URL + "MNLI.zip",
    "qnli": GLUE_URL + "QNLIv2.zip",
    "rte": GLUE_URL + "RTE.zip",
    "wnli": GLUE_URL + "WNLI.zip",
}
MRPC_URLS = {
    "train": "https://dl.fbaipublicfiles.com/senteval/senteval_data/msr_paraphrase_train.txt",
    "test": "https://dl.fbaipublicfiles.com/senteval/senteval_data/msr_paraphrase_test.txt",
    "dev_ids": GLUE_URL + "mrpc_dev_ids.tsv",
}
MRPC_HEADER = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]

# -----------------------------------------------------------------------------
# default config
tasks = ()                  # () = all nine; --tasks=cola,rte or repeated --tasks=
out_dir = str(DATA_DIR / "glue")  # written as <out_dir>/<Folder>/{train,dev*,test*}.tsv
cache_dir = str(fetch.CACHE_DIR / "glue")  # downloads land here first (kept: data/cache/ is git-ignored)
source = "urls"             # 'urls' (GLUE's zips, Microsoft's MRPC files) or 'hf' (the `datasets` package)
download = True             # False: use only the files already in cache_dir

# -----------------------------------------------------------------------------
# the three ways a task gets into the layout


def extract_zip(zip_path, task, out_dir):
    """Copy <top folder>/{train,dev*,test*}.tsv out of a GLUE zip into out_dir/<Folder>/."""
    spec = TASKS[task]
    needed = ["train"] + list(spec.dev_splits)
    try:
        archive = zipfile.ZipFile(zip_path)
    except zipfile.BadZipFile:
        raise UsageError(f"{zip_path} is not a zip file (a failed download?): delete it and rerun") from None
    with archive:
        # top-level TSVs only (MNLI.zip also holds original/ and the zips carry __MACOSX/ junk on some mirrors)
        top_level = {name.split("/")[1]: name for name in archive.namelist()
                     if name.count("/") == 1 and name.endswith(".tsv") and not name.startswith("__MACOSX")}
        missing = [split for split in needed if f"{split}.tsv" not in top_level]
        if missing:
            raise UsageError(f"{zip_path} has no <folder>/{missing[0]}.tsv: not GLUE's {task} archive; "
                             f"delete it and rerun")
        for base, name in top_level.items():
            if base[:-len(".tsv")] in needed or base.startswith("test"):
                atomic_write(os.path.join(out_dir, spec.folder, base), archive.read(name))


def build_mrpc(train_txt, test_txt, dev_ids_tsv, out_dir):
    """GLUE's MRPC: Microsoft's training file, rows whose id pair is in mrpc_dev_ids.tsv go to dev."""
    def read_rows(path):
        with open(path, encoding="utf-8-sig") as f:  # the Microsoft files start with a BOM
            lines = [line.rstrip("\r\n") for line in f if line.strip()]
        rows = [line.split("\t") for line in lines[1:]]  # first line is the header
        for number, fields in enumerate(rows, 2):
            if len(fields) != 5:
                raise UsageError(f"{path}:{number}: expected 5 tab-separated fields, got {len(fields)}")
        return rows

    with open(dev_ids_tsv, encoding="utf-8-sig") as f:
        dev_ids = {tuple(line.split()) for line in f if line.strip()}
    train_rows = read_rows(train_txt)
    dev = [fields for fields in train_rows if (fields[1], fields[2]) in dev_ids]
    train = [fields for fields in train_rows if (fields[1], fields[2]) not in dev_ids]
    if not dev:
        raise UsageError(f"no pair of {train_txt} is listed in {dev_ids_tsv}: wrong or corrupt files")
    folder = os.path.join(out_dir, TASKS["mrpc"].folder)
    write_tsv(os.path.join(folder, "train.tsv"), MRPC_HEADER, train)
    write_tsv(os.path.join(folder, "dev.tsv"), MRPC_HEADER, dev)
    test = [[str(index)] + fields[1:] for index, fields in enumerate(read_rows(test_txt))]  # labels dropped
    write_tsv(os.path.join(folder, "test.tsv"), ["index"] + MRPC_HEADER[1:], test)


def write_examples(task, split, examples, out_dir):
    """Write (text_a, text_b or None, label id / score) examples as out_dir/<Folder>/<split>.tsv."""
    spec = TASKS[task]
    rows = []
    for index, (text_a, text_b, label) in enumerate(examples):
        label_text = f"{float(label):.3f}" if spec.is_regression else spec.labels[int(label)]
        texts = [clean(text_a)] + ([] if text_b is None else [clean(text_b)])
        if spec.header:
            rows.append([str(index)] + texts + [label_text])
        else:  # CoLA: source, label, original '*' mark for unacceptable, sentence
            rows.append(["hf", label_text, "*" if label_text == "0" else "", texts[0]])
    header = ["index"] + list(spec.text_columns) + [spec.label_column] if spec.header else None
    write_tsv(os.path.join(out_dir, spec.folder, f"{split}.tsv"), header, rows)


def from_huggingface(task, out_dir):
    try:
        import datasets
    except ImportError:
        raise UsageError("--source=hf needs the `datasets` package: `pip install datasets`, "
                         "or use --source=urls") from None
    text_fields = {"cola": ("sentence",), "sst2": ("sentence",), "mnli": ("premise", "hypothesis"),
                   "qqp": ("question1", "question2"), "qnli": ("question", "sentence")}
    fields = text_fields.get(task, ("sentence1", "sentence2"))
    hf_splits = {"train": "train", "dev": "validation", "dev_matched": "validation_matched",
                 "dev_mismatched": "validation_mismatched"}
    for split in ["train"] + list(TASKS[task].dev_splits):
        data = datasets.load_dataset("nyu-mll/glue", task, split=hf_splits[split])
        texts_b = data[fields[1]] if len(fields) == 2 else [None] * len(data)
        write_examples(task, split, zip(data[fields[0]], texts_b, data["label"]), out_dir)

# -----------------------------------------------------------------------------


def check_layout(out_dir, task):
    """Read every labelled split back (read_task is strict) and describe it."""
    spec = TASKS[task]
    parts = []
    for split in ["train"] + list(spec.dev_splits):
        labels = np.array([label for _, _, label in read_task(out_dir, task, split)])
        if spec.is_regression:
            parts.append(f"{split} {len(labels)} (mean score {labels.mean():.2f})")
        else:
            counts = np.bincount(labels, minlength=len(spec.labels))
            parts.append(f"{split} {len(labels)} ({' '.join(f'{n}:{c}' for n, c in zip(spec.labels, counts))})")
    return f"{task:<5} " + "   ".join(parts)


def prepare(tasks, out_dir, cache_dir, source="urls", allow_download=True):
    fetched = lambda url: fetch.download(url, cache_dir, allow_download, otherwise="use --source=hf")
    for task in tasks:
        if source == "hf":
            from_huggingface(task, out_dir)
        elif task == "mrpc":
            paths = {name: fetched(url) for name, url in MRPC_URLS.items()}
            build_mrpc(paths["train"], paths["test"], paths["dev_ids"], out_dir)
        else:
            extract_zip(fetched(ZIP_URLS[task]), task, out_dir)
        print(check_layout(out_dir, task))


if __name__ == "__main__":  # imported (tests/test_glue_data.py), it only defines the steps
    one_line_errors("data/glue/prepare.py")
    configure(globals(), sys.argv[1:])
    task_names = [name for entry in tasks for name in str(entry).split(",") if name]
    if tasks and not task_names:  # --tasks= : a typo, not a request for all nine downloads
        raise UsageError("--tasks names no task: pass e.g. --tasks=cola,rte, or leave it out for all nine")
    task_names = task_names or list(TASKS)
    unknown = [task for task in task_names if task not in TASKS]
    if unknown:
        raise UsageError(f"unknown task {unknown[0]!r}: choose from {','.join(TASKS)} (leave --tasks out for all)")
    if source not in ("urls", "hf"):
        raise UsageError(f"unknown source {source!r}: choose 'urls' or 'hf'")
    prepare(task_names, out_dir, cache_dir, source, allow_download=download)
    print(f"wrote {out_dir}/<Folder>/*.tsv (GLUE's licences are per task: do not commit the data)")

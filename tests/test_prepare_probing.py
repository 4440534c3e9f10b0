"""The probing suite's builder (data/glue/prepare_probing.py) on a tiny synthetic corpus laid out as the prepare
scripts write theirs: balanced labels, what each perturbation changes, held-out text only, determinism, and the
one-line errors of a corpus not prepared, of bad flags and of sizes the sources cannot give."""
import json
import os
import re
from collections import Counter

import numpy as np
import pytest

from conftest import one_error_line, run_in_process, run_script, script_error
from configurator import UsageError
from data import glue_tasks as gt
from data.glue import prepare_probing as pp
from data.shakespeare.prepare import VAL_PLAYS

WORDS = ("love honour night sweet lord lady king death heart grace blood tongue eyes fair gentle noble heaven "
         "brother father mother letter music sword crown answer").split()
SIZES = {"train": 40, "dev": 20}


def play_text(rng, names, extra):
    """Speeches of alternating characters, in blocks of verse (every line capitalised) and prose (continuation
    lines lowercase), ~50-byte lines as the edition breaks them."""
    blocks = []
    for i in range(120):
        lines = []
        for j in range(int(rng.integers(3, 6))):
            line = " ".join(rng.choice(WORDS + [extra], size=8))
            lines.append(line.capitalize() if i % 3 or j == 0 else line)
        blocks.append(f"{names[i % 2]}:\n" + "\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def write_bytes_corpus(folder, docs, source, train_docs=()):
    os.makedirs(folder, exist_ok=True)
    for split, texts in (("val", docs), ("train", train_docs)):
        ids = [b for text in texts for b in list(text.encode()) + [256]]
        np.asarray(ids, dtype=np.uint16).tofile(os.path.join(folder, f"{split}.bin"))
    json.dump(dict(tokenizer="bytes", source=source), open(os.path.join(folder, "meta.json"), "w"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(0)
    plays = [play_text(rng, (f"KING {p}", f"Lady {p}"), f"word{p}") for p in "ABCD"]
    # a training play: every one of its words is 'trainonly', which no window may hold
    write_bytes_corpus(root / "shakespeare_bytes", plays, "Shakespeare; val plays: " + ", ".join(VAL_PLAYS),
                       train_docs=["TRAINER:\n" + "trainonly " * 5000])
    articles = [" ".join(rng.choice(WORDS, size=2000)) for _ in range(3)]
    write_bytes_corpus(root / "wikipedia_bytes", articles, "Wikipedia")
    return str(root)


@pytest.fixture(scope="module")
def suite(data_dir):
    return pp.build(pp.load_sources(data_dir), 7, SIZES, 1 / 3)


def test_every_task_balanced_and_sized(suite):
    assert set(suite) == set(gt.PROBING_TASKS)
    for task, splits in suite.items():
        n_labels = len(gt.PROBING_TASKS[task].labels)
        for split, rows in splits.items():
            counts = Counter(row[1] for row in rows)
            assert len(rows) == SIZES[split] and set(counts) == set(range(n_labels)), (task, split)
            assert max(counts.values()) - min(counts.values()) <= 1, (task, split, counts)
            assert all(len(row[0].encode()) <= pp.MAX_BYTES for row in rows)
        assert pp.majority(splits) == pytest.approx(100 / n_labels)


def test_bigram_shift_positive_is_one_adjacent_swap(suite):
    for task in ("bigram_shift", "wiki_bigram_shift"):
        for text, label, source in suite[task]["train"] + suite[task]["dev"]:
            words = text.split()
            differ = [i for i, (a, b) in enumerate(zip(words, source)) if a != b]
            if label == 0:
                assert words == source
            else:  # exactly positions i and i + 1, exchanged
                assert len(words) == len(source) and len(differ) == 2 and differ[1] == differ[0] + 1
                i = differ[0]
                assert (words[i], words[i + 1]) == (source[i + 1], source[i])


def test_somo_replacement_same_length_different_word(suite, data_dir):
    vocabulary = {w for words in pp.vocabulary(pp.load_sources(data_dir)["plays"]).values() for w in words}
    for text, label, source in suite["somo"]["train"] + suite["somo"]["dev"]:
        words = text.split()
        differ = [i for i, (a, b) in enumerate(zip(words, source)) if a != b]
        assert len(words) == len(source) and len(differ) == label
        for i in differ:
            assert len(words[i]) == len(source[i]) and words[i] in vocabulary


def test_windows_only_from_held_out_plays_and_dev_apart(suite, data_dir):
    plays = [" ".join(words) for words, _, _ in pp.load_sources(data_dir)["plays"]]
    for task in ("play", "speaker_change", "verse_prose"):
        for split in SIZES:
            for text, label in suite[task][split]:
                assert "trainonly" not in text and any(text in play for play in plays)
    # play: the label is the play the window came from (each play has its own word)
    for text, label in suite["play"]["train"]:
        assert f"word{'ABCD'[label]}" in text or not any(f"word{p}" in text for p in "ABCD")
    # dev windows come from the last third of each play: none is a train window
    train = {row[0] for row in suite["play"]["train"]}
    assert not train & {row[0] for row in suite["play"]["dev"]}


def test_play_words_speakers_and_verse():
    text = ("KING A:\nOne two three\nFour five six\nSeven eight\n\nLady B:\nnine ten eleven\ntwelve thirteen\n"
            "fourteen\n\nAnd so it ends:\nwith a line\nand another\n\nLady B:\nyes")
    words, speaker, verse = pp.play_words(text)
    assert "KING" not in words and "Lady" not in words  # names dropped
    assert speaker.tolist() == [0] * 8 + [1] * 6 + [1] * 9 + [1]  # the nameless block and Lady B again: one speech
    assert verse[:8].tolist() == [0] * 8 and verse[8:14].tolist() == [1] * 6 and verse[-1] == -1
    assert pp.window_end(["a" * 60, "b" * 60, "c"], 0, 3) == 2  # 121 bytes: the first point past WINDOW
    assert pp.window_end(["a" * 60, "b" * 80], 0, 2) is None  # 141 bytes: over MAX_BYTES


def test_deterministic_given_the_seed(data_dir, suite):
    sources = pp.load_sources(data_dir)
    again = pp.build(sources, 7, SIZES, 1 / 3)
    assert again == suite
    assert pp.build(sources, 8, SIZES, 1 / 3)["somo"] != suite["somo"]


def test_missing_corpus_is_one_line_naming_the_prepare_command(tmp_path, data_dir):
    with pytest.raises(UsageError, match=r"prepare\.py --tokenizer=bytes"):
        pp.load_sources(str(tmp_path))
    result = run_script("data/glue/prepare_probing.py", f"--data_dir={tmp_path}", f"--out_dir={tmp_path / 'out'}")
    one_error_line(result, f"{tmp_path}/shakespeare_bytes/val.bin",
                   "python data/shakespeare/prepare.py --tokenizer=bytes")  # the file, its command


def test_script_writes_the_layout_eval_glue_reads(tmp_path, data_dir, capsys):
    """In this process (the command line's one-line printing is the missing-corpus test's)."""
    run_in_process("data/glue/prepare_probing.py", f"--data_dir={data_dir}", f"--out_dir={tmp_path}",
                   "--train_size=40", "--dev_size=20")
    assert "majority 25.0%" in capsys.readouterr().out  # play: 4 balanced labels
    for task in gt.PROBING_TASKS:
        rows = gt.read_task(str(tmp_path), task, "dev")
        assert len(rows) == 20 and rows[0][1] is None


def test_bad_flags_stop_with_one_line_naming_the_key(tmp_path, data_dir):
    (tmp_path / "a_file").write_text("not a folder")
    common = [f"--data_dir={data_dir}", "--train_size=40", "--dev_size=20"]
    assert "'seed'" in script_error("data/glue/prepare_probing.py", *common, "--seed=-1", f"--out_dir={tmp_path}/out")
    for out_dir in (tmp_path / "a_file", tmp_path / "a_file" / "sub"):
        assert "--out_dir" in script_error("data/glue/prepare_probing.py", *common, f"--out_dir={out_dir}")


def test_sizes_the_sources_cannot_give_stop_before_drawing_naming_the_most(tmp_path, data_dir):
    """A size past what the windows allow stops at once (a huge one ran for minutes first), naming the most the
    sources give; exactly that many is built, one more is refused."""
    sources = pp.load_sources(data_dir)
    with pytest.raises(UsageError, match=r"--train_size=\d+") as error:
        pp.build(sources, 7, {"train": 100_000, "dev": 20}, 1 / 3)
    most = int(re.search(r"--train_size=(\d+)", str(error.value))[1])
    built = pp.build(sources, 7, {"train": most, "dev": 20}, 1 / 3)
    assert all(len(splits["train"]) == most for splits in built.values())
    with pytest.raises(UsageError, match=f"--train_size={most}\\b"):
        pp.build(sources, 7, {"train": most + 1, "dev": 20}, 1 / 3)
    assert "--dev_size=" in script_error("data/glue/prepare_probing.py", f"--data_dir={data_dir}", "--train_size=40",
                                         "--dev_size=1000000000", f"--out_dir={tmp_path}")
    assert pp.most_balanced([5, 3, 3]) == 10  # 4 + 3 + 3: the first label takes the one left over

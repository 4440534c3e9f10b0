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
LINE_SIZES = {"train": 60, "dev": 30}
NAMES = ("Paris", "Rome", "Turing")  # capitalised words inside Wikipedia's sentences: never moved


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


def article_text(rng):
    """~2,000 words of sentences (a capital, 3-16 words with names among them, a stop), five to a
    paragraph line, a heading line now and then, as data/wikipedia/prepare.py writes articles."""
    paragraphs = []
    for p in range(50):
        sentences = [" ".join(rng.choice(WORDS + list(NAMES), size=int(rng.integers(3, 17))))
                     for _ in range(5)]
        paragraphs.append(" ".join(s[0].upper() + s[1:] + "." for s in sentences))
        if p % 10 == 9:
            paragraphs.append("Heading of a section")  # no stop: not a sentence
    return "\n\n".join(paragraphs)


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
    articles = [article_text(rng) for _ in range(3)]
    write_bytes_corpus(root / "wikipedia_bytes", articles, "Wikipedia")
    return str(root)


@pytest.fixture(scope="module")
def suite(data_dir):
    return pp.build(pp.load_sources(data_dir), 7, SIZES, 1 / 3)


@pytest.fixture(scope="module")
def line_suite(data_dir):
    return pp.build_lines(pp.load_lines(data_dir), 7, LINE_SIZES, 1 / 3)


def test_every_task_balanced_and_sized(suite, line_suite):
    assert set(suite) | set(line_suite) == set(gt.PROBING_TASKS)
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
                   "--train_size=40", "--dev_size=20", "--line_train_size=40", "--line_dev_size=20")
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
                                         "--dev_size=1000000000", f"--out_dir={tmp_path}",
                                         "--line_train_size=40", "--line_dev_size=20")
    assert pp.most_balanced([5, 3, 3]) == 10  # 4 + 3 + 3: the first label takes the one left over


# -----------------------------------------------------------------------------
# the line tasks: one spoken line or one sentence, changed where no capital or stop marks it


def test_line_tasks_balanced_sized_and_each_unit_once(line_suite):
    assert set(line_suite) == {"line_bigram_shift", "line_somo", "wiki_line_bigram_shift",
                               "wiki_line_somo"}
    for task, splits in line_suite.items():
        for split, rows in splits.items():
            n = LINE_SIZES[split]
            assert len(rows) == n and sum(row[1] for row in rows) == n // 2
            # a unit is changed or kept, never both
            assert len({tuple(row[2]) for row in rows}) == len(rows), (task, split)
            assert all(pp.MIN_LINE_BYTES <= len(row[0].encode()) <= pp.MAX_BYTES for row in rows)
        assert pp.majority(splits) == 50.0


def differences(text, source):
    words = text.split()
    assert len(words) == len(source)
    return words, [i for i, (a, b) in enumerate(zip(words, source)) if a != b]


def capital_positions(words):
    """Where a capitalised word follows a lowercase one: the old task's cue."""
    return {k for k in range(1, len(words))
            if words[k][:1].isupper() and words[k - 1][:1].islower()}


def test_line_bigram_shift_swaps_two_lowercase_words_leaving_no_capital_cue(line_suite):
    moved_beside_names = 0
    for task in ("line_bigram_shift", "wiki_line_bigram_shift"):
        for text, label, source in line_suite[task]["train"] + line_suite[task]["dev"]:
            words, differ = differences(text, source)
            # no cue that the untouched line lacks
            assert capital_positions(words) == capital_positions(source)
            assert words[0] == source[0]  # the first word never moves
            if label == 0:
                assert differ == []
                continue
            i = differ[0]
            assert differ == [i, i + 1] and (words[i], words[i + 1]) == (source[i + 1], source[i])
            assert i >= 1 and all(pp.LOWER_WORD.fullmatch(w) for w in words[i:i + 2])
            moved_beside_names += any(w in NAMES for w in source[i - 1:i + 3])
    assert moved_beside_names  # the cue could have arisen: capitals stood next to the swapped pair


def test_swappable_pairs_and_frequency_bands_by_hand():
    # neither the first word, 'Orsino' nor 'home,' may move
    line = "and so Orsino went home, my lord o'er the the sea".split()
    assert pp.swappable_pairs(line) == [5, 6, 7, 9]
    units = [["Love,", "love", "love!"] + ["dove"] * 4 + ["care"] * 2 + ["cure"] * 3,
             ["Dove", "dove", "once", "it's", "hate", "hate"]]
    band, groups = pp.frequency_bands(units)
    # 'Love' is not lowercase, 'once' seen once, "it's" has an apostrophe; punctuation is stripped
    assert band == {"love": 1, "dove": 2, "care": 1, "cure": 1, "hate": 1}  # 2-3 times: 1, 4-7: 2
    assert groups[4, 1][0] == ["care", "cure", "hate", "love"]
    assert groups[4, 1][1].tolist() == [2, 3, 2, 2]
    bands = band, groups
    assert pp.replaceable_slots(["Love", "dove", "love", "care,"], bands) == [2]  # 'dove' is alone
    rng = np.random.default_rng(0)
    replaced = Counter(pp.band_somo(["Love", "love"], [1], rng, bands)[0][1] for _ in range(2000))
    assert set(replaced) == {"care", "cure", "hate"}
    assert replaced["cure"] > replaced["care"]  # drawn by count, 3 : 2


def test_line_somo_replaces_one_later_word_by_one_of_its_length_case_and_band(line_suite, data_dir):
    lines = pp.load_lines(data_dir)
    for task, source_name in (("line_somo", "plays"), ("wiki_line_somo", "wikipedia")):
        band, _ = pp.frequency_bands([unit for units in lines[source_name] for unit in units])
        for text, label, source in line_suite[task]["train"] + line_suite[task]["dev"]:
            words, differ = differences(text, source)
            assert len(differ) == label
            for i in differ:
                old, new = source[i], words[i]
                assert i >= 1 and len(old) == len(new) and old.islower() and new.islower()
                assert pp.REPLACEABLE.fullmatch(new) and band[old] == band[new]


def test_line_units_read_in_window_order_and_dev_apart(line_suite, data_dir):
    """The lines hold the words the windows are cut from, so one cut splits both; a unit across it
    is used by neither, and no dev unit is a train unit."""
    sources, lines = pp.load_sources(data_dir), pp.load_lines(data_dir)
    for name in ("plays", "wikipedia"):
        for (words, _, _), units in zip(sources[name], lines[name]):
            assert [w for unit in units for w in unit] == words
    assert not any("Heading" in row[0] for row in line_suite["wiki_line_somo"]["train"])
    long = ["wordy" * 4] * 3  # 3 words a unit, 62 bytes
    # the cut at word 4 of 9: inside the second unit
    regions = pp.line_regions([long, long, long], 1 / 2, lambda text: True)
    assert (len(regions["train"]), len(regions["dev"])) == (1, 1)
    for task, splits in line_suite.items():
        train = {tuple(row[2]) for row in splits["train"]}
        assert not train & {tuple(row[2]) for row in splits["dev"]}, task
        assert not any("trainonly" in row[0] for split in splits.values() for row in split)


def test_line_tasks_deterministic_given_the_seed(data_dir, line_suite):
    lines = pp.load_lines(data_dir)
    assert pp.build_lines(lines, 7, LINE_SIZES, 1 / 3) == line_suite
    assert pp.build_lines(lines, 8, LINE_SIZES, 1 / 3)["line_somo"] != line_suite["line_somo"]


def test_line_sizes_the_sources_cannot_give_are_refused_naming_the_most(tmp_path, data_dir):
    lines = pp.load_lines(data_dir)
    with pytest.raises(UsageError, match=r"--line_dev_size=\d+ or less") as error:
        pp.build_lines(lines, 7, {"train": 20, "dev": 100_000}, 1 / 3)
    most = int(re.search(r"--line_dev_size=(\d+)", str(error.value))[1])
    built = pp.build_lines(lines, 7, {"train": 20, "dev": most}, 1 / 3)
    assert all(len(splits["dev"]) == most for splits in built.values())
    with pytest.raises(UsageError, match=f"at most {most:,} dev examples per line task"):
        pp.build_lines(lines, 7, {"train": 20, "dev": most + 1}, 1 / 3)
    message = script_error("data/glue/prepare_probing.py", f"--data_dir={data_dir}",
                           "--line_train_size=1000000", f"--out_dir={tmp_path}")
    assert "--line_train_size=" in message

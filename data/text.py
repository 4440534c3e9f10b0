"""
Text data: two tokenizers (GPT-2 BPE, which works offline, and raw UTF-8 bytes), prepared corpora, and batches.

A prepared corpus is a folder data/<name>/ written by `python data/<name>/prepare.py` (byte-level: data/<name>_bytes/
from `python data/<name>/prepare.py --tokenizer=bytes`):
    train.bin, val.bin (test.bin)   uint16 ids; every document is followed by BOS (GPT-2's <|endoftext|>)
    meta.json                       tokenizer, vocab size, BOS id, token and document counts, source, and from
                                    data/prepare.py the input files' size and sha256
Training draws random windows with get_batch(); evaluation scores a split's consecutive windows (evals/ppl.py).
Every window starts with BOS in column 0: the always-visible conditioning token that
every row of every attention mask may see (App. B.3, two-stream attention), so no row is empty.
"""

import codecs
import collections
import glob
import gzip
import hashlib
import io
import itertools
import json
import os
from pathlib import Path

import numpy as np
import tiktoken
import tiktoken.load
import torch

from configurator import UsageError
from data import DATA_DIR
from data.fetch import CACHE_DIR, download, pip_archive, read_members
from output import atomic_write, progress as progress_lines, writable_folder

BOS = 50256  # GPT-2 <|endoftext|>: conditioning token of every window and separator between documents
VOCAB_SIZE = 50257
# name -> (vocabulary size, BOS id). meta.json names a corpus's tokenizer, train.py copies it into the checkpoint
# (ModelConfig.tokenizer), and every script reads it from there: nobody has to say it twice.
TOKENIZERS = {"gpt2": (VOCAB_SIZE, BOS), "bytes": (257, 256)}

# -----------------------------------------------------------------------------
# tokenizer: tiktoken's GPT-2 BPE, with its ranks also found offline

# The GPT-2 ranks ship inside the openai-whisper source package (MIT); tiktoken itself downloads them
# from the network on first use. The sha256 pins the exact file, whatever the package version.
RANKS_FILE = CACHE_DIR / "gpt2.tiktoken"
RANKS_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
RANKS_SDIST = ("openai-whisper==20250625", "openai_whisper-*.tar.gz", ["--no-binary", ":all:"])
RANKS_MEMBER = "whisper/assets/gpt2.tiktoken"
PIP_FETCH = f"python -m pip download --no-deps {' '.join(RANKS_SDIST[2])} {RANKS_SDIST[0]} -d data/cache/"
# GPT-2's pre-tokenizer: contractions, letter runs, digit runs, other symbols (each with at most one
# leading space), then whitespace; BPE merges only ever act inside one of these pieces.
GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

_tokenizer = None


def encoding_from_ranks(path):
    """Build the GPT-2 Encoding from a local ranks file; a file with the wrong hash is refused."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if digest != RANKS_SHA256:
        raise UsageError(f"{path} is not the GPT-2 BPE ranks file (sha256 {digest[:16]}..., expected "
                         f"{RANKS_SHA256[:16]}...): delete it and rerun, or fetch it with `{PIP_FETCH}`")
    ranks = tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=RANKS_SHA256)
    return tiktoken.Encoding(name="gpt2", pat_str=GPT2_SPLIT_PATTERN, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": BOS}, explicit_n_vocab=VOCAB_SIZE)


def fetch_ranks(dest):
    """Extract the GPT-2 ranks to dest from the openai-whisper sdist, fetched with pip into dest's folder."""
    sdist = pip_archive(*RANKS_SDIST, cache_dir=Path(dest).parent)
    atomic_write(dest, read_members(sdist, {RANKS_MEMBER: RANKS_SHA256})[RANKS_MEMBER])
    return dest


class ByteTokenizer:
    """UTF-8 bytes as ids 0..255, BOS = 256: every string round-trips, and the output head is 257 wide instead of
    50257, which on a CPU is most of a small model's compute (nanoGPT's character-level Shakespeare, in bytes).
    tiktoken's method names, so code that tokenises never asks which tokenizer it holds."""
    name, n_vocab, eot_token = "bytes", 257, 256

    def encode_ordinary(self, text):
        return list(text.encode("utf-8"))

    def encode_ordinary_batch(self, texts, num_threads=1):
        return [self.encode_ordinary(text) for text in texts]

    def decode(self, ids):
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def check_tokenizer(name):
    if name not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer {name!r}: choose one of {', '.join(TOKENIZERS)}")
    return name


def model_vocab_size(name):
    """The model's embedding rows for a tokenizer: its vocabulary padded up to a multiple of 64 (nanoGPT)."""
    return -(-TOKENIZERS[check_tokenizer(name)][0] // 64) * 64


def get_tokenizer(name="gpt2"):
    """'bytes', or the GPT-2 Encoding (cached): the local ranks file first (no network wait), then tiktoken's own
    download, then the ranks from the openai-whisper sdist via pip."""
    global _tokenizer
    if check_tokenizer(name) == "bytes":
        return ByteTokenizer()
    if _tokenizer is not None:
        return _tokenizer
    if not RANKS_FILE.exists():
        try:
            _tokenizer = tiktoken.get_encoding("gpt2")
            return _tokenizer
        except Exception:  # no network (or a broken tiktoken cache): fall back to pip
            pass
        try:
            fetch_ranks(RANKS_FILE)
        except (UsageError, OSError) as error:
            raise UsageError(f"cannot load the GPT-2 BPE: tiktoken could not download it and {error}; "
                             f"or copy gpt2.tiktoken to {RANKS_FILE}") from None
    _tokenizer = encoding_from_ranks(RANKS_FILE)
    return _tokenizer


# -----------------------------------------------------------------------------
# reading documents from files

TEXT_SUFFIXES = (".txt",)
JSONL_SUFFIXES = (".jsonl", ".json")  # C4 names its JSON-lines shards *.json.gz
COMPRESSED_SUFFIXES = ("", ".gz", ".zst")
SUPPORTED = tuple(base + comp for base in TEXT_SUFFIXES + JSONL_SUFFIXES for comp in COMPRESSED_SUFFIXES)


def expand_inputs(spec):
    """'a.jsonl,shards/*.json.gz,dir' -> sorted list of files (a directory = its supported files)."""
    paths = []
    for part in [p for p in str(spec).split(",") if p.strip()]:
        part = os.path.expanduser(part.strip())
        matches = sorted(map(Path, glob.glob(part, recursive=True))) if glob.has_magic(part) else [Path(part)]
        for match in matches:
            if match.is_dir():
                paths += sorted(f for f in match.rglob("*") if f.name.lower().endswith(SUPPORTED))
            elif match.exists():
                paths.append(match)
    if not paths:
        raise UsageError(f"no input files match --input={spec} (supported: {', '.join(SUPPORTED)})")
    return paths


def open_bytes(path):
    """Open a file for reading bytes, decompressing .gz or .zst (zstandard is optional: only Pile shards need it)."""
    path = Path(path)
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    if path.name.lower().endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise UsageError(f"reading {path.name} needs the zstandard package: pip install zstandard") from None
        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
    return open(path, "rb")


def not_utf8(path):
    """-> the UsageError for a file that is not UTF-8, naming the offset of its first bad byte (after decompression):
    a text decoder reports offsets within its current chunk only, so the file is decoded again from its start."""
    decoder, offset = codecs.getincrementaldecoder("utf-8")(), 0
    with open_bytes(path) as f:
        for chunk in itertools.chain(iter(lambda: f.read(1 << 20), b""), [b""]):
            pending = len(decoder.getstate()[0])  # bytes of a character cut by the previous chunk
            try:
                decoder.decode(chunk, final=not chunk)  # the last, empty chunk: a character cut by the file's end
            except UnicodeDecodeError as error:
                offset += error.start - pending
                break
            offset += len(chunk)
    return UsageError(f"{path} is not UTF-8 text (byte offset {offset:,}): every tokenizer reads text, "
                      f"--tokenizer=bytes included (it stores the text's UTF-8 bytes); convert the file to UTF-8 "
                      f"first (e.g. iconv -f latin1 -t utf-8), or leave it out if it is not text")


def read_documents(paths, text_field="text"):
    """Yield the documents (str) of files in order.

    .txt: one file is one document (a play, a book, an article; blank lines are paragraphs, not
    document breaks). .jsonl / .json: JSON lines, one document per line, taken from `text_field`.
    Either may be compressed as .gz or .zst. A directory stands for its supported files, sorted.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    for path in [f for spec in paths for f in ([Path(spec)] if Path(spec).is_file() else expand_inputs(spec))]:
        name = path.name.lower()
        if not name.endswith(SUPPORTED):
            raise UsageError(f"{path}: unsupported file type (supported: {', '.join(SUPPORTED)})")
        try:
            with io.TextIOWrapper(open_bytes(path), encoding="utf-8") as lines:
                if name.removesuffix(".gz").removesuffix(".zst").endswith(TEXT_SUFFIXES):
                    yield lines.read()
                    continue
                for line_number, line in enumerate(lines, 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as error:
                        raise UsageError(f"{path}:{line_number}: not a JSON line ({error.msg})") from None
                    if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
                        raise UsageError(f"{path}:{line_number}: no string field '{text_field}' "
                                         f"(pick the field with --text_field=...)")
                    yield record[text_field]
        except UnicodeDecodeError:
            raise not_utf8(path) from None


def documents(paths, text_field="text", max_docs=0):
    """The non-empty documents of paths, the first max_docs of them (0 = all)."""
    docs = (doc for doc in read_documents(paths, text_field) if doc.strip())
    return itertools.islice(docs, max_docs) if max_docs else docs


def hold_out_tail(docs, n_tail):
    """Split a document stream into (all but the last n_tail, the last n_tail), buffering only the tail.
    The second iterator is valid only once the first is exhausted (write_corpus reads train first)."""
    tail, head_done = collections.deque(), []

    def head():
        for doc in docs:
            if doc.strip():
                tail.append(doc)
                if len(tail) > n_tail:
                    yield tail.popleft()
        head_done.append(True)

    def held_out():
        if not head_done:
            raise RuntimeError("hold_out_tail: read the first iterator to its end before the second")
        yield from tail

    return head(), held_out()


# -----------------------------------------------------------------------------
# writing a corpus

def write_split(path, docs, encoder, split):
    """Tokenise docs (EOT after each) into a uint16 file, streaming and atomically; returns (tokens, docs)."""
    counts = dict(tokens=0, docs=0)

    def write(out):
        with progress_lines(desc=f"tokenizing {split}", unit="docs") as progress:
            batch = []
            for doc in itertools.chain(docs, [None]):  # None flushes the last batch
                if doc is not None and doc.strip():
                    batch.append(doc)
                if batch and (doc is None or len(batch) == 256):
                    for ids in encoder.encode_ordinary_batch(batch, num_threads=os.cpu_count() or 1):
                        ids.append(encoder.eot_token)
                        out.write(np.asarray(ids, dtype=np.uint16).tobytes())
                        counts['tokens'] += len(ids)
                    counts['docs'] += len(batch)
                    progress.update(len(batch))
                    batch = []
    atomic_write(path, write)
    return counts['tokens'], counts['docs']


def corpus_dir(here, tokenizer):
    """Where a prepare script in data/<name>/ writes by default: data/<name> (GPT-2 BPE) or data/<name>_bytes."""
    here = Path(here)
    return str(here if check_tokenizer(tokenizer) == "gpt2" else here.parent / f"{here.name}_{tokenizer}")


CORPUS_FILES = ("meta.json", "train.bin", "val.bin", "test.bin")


def input_content(paths):
    """{'bytes', 'sha256'} of the input files as they lie on disk, in order: a file changed under the same name is
    another corpus, which its name alone cannot tell. Each file's size goes into the hash too, so moving bytes from
    one file to the next changes it."""
    digest, total = hashlib.sha256(), 0
    for path in paths:
        size = 0
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
                size += len(chunk)
        digest.update(f"\0{size}\0".encode())
        total += size
    return {"bytes": total, "sha256": digest.hexdigest()}


def claim_corpus_dir(out_dir, tokenizer, source, overwrite=False, content=None):
    """Before any work: -> True when out_dir already holds this very corpus (same tokenizer, same source, and the same
    input_content when one is given): nothing to do. Otherwise out_dir becomes a writable folder and False is
    returned, unless it holds another corpus: that one is refused without overwrite, since a checkpoint names its
    corpus by folder and would find other tokens there, or none. A prepare that stopped early (its meta.json lists
    no split yet) left nothing to lose."""
    out_dir = Path(out_dir)
    found = [name for name in CORPUS_FILES if (out_dir / name).exists()]
    try:
        meta = json.loads((out_dir / "meta.json").read_text()) if "meta.json" in found else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        meta = None
    meta = meta if isinstance(meta, dict) else None
    if found and not overwrite and (meta is None or meta.get("splits") != []):
        held = (meta.get("tokenizer", "gpt2"), meta.get("source")) if meta else None
        if held != (tokenizer, source):
            what = f"{held[0]!r} tokens of {held[1]}" if meta else f"{', '.join(found)} but no readable meta.json"
            raise UsageError(f"{out_dir} already holds another corpus ({what}): pass --overwrite=True to replace "
                             f"it, or another --out_dir")
        if content is not None and meta.get("input") != content:
            held = meta.get("input")
            was = f"{held['bytes']:,} bytes, sha256 {held['sha256'][:12]}" if isinstance(held, dict) else "unrecorded"
            now = f"{content['bytes']:,} bytes, sha256 {content['sha256'][:12]}"
            raise UsageError(f"{out_dir} already holds the corpus of earlier contents of this input ({was}; now "
                             f"{now}): pass --overwrite=True to prepare it again, or another --out_dir")
        if all((out_dir / f"{split}.bin").exists() for split in meta.get("splits", ())):
            print(f"{out_dir} already holds this corpus ({tokenizer} tokens of {source}): nothing to do "
                  f"(--overwrite=True prepares it again)")
            return True  # else a split of it is missing: it is made again
    writable_folder(out_dir)
    return False


def write_corpus(out_dir, train_docs, val_docs, source, test_docs=None, tokenizer="gpt2", overwrite=False,
                 content=None):
    """Tokenise document iterables into out_dir/{train,val,test}.bin and meta.json (unless out_dir already holds
    this corpus, or another one: claim_corpus_dir). An empty split (an eval-only corpus has no train) gets no .bin;
    meta.json lists the splits written. test_docs=None: the corpus has no test split at all (only WikiText-2 ships
    one). content: the input_content of the files read, recorded in meta.json as 'input'."""
    encoder = get_tokenizer(tokenizer)  # before out_dir exists: a typo leaves no empty folder
    out_dir = Path(out_dir)
    if claim_corpus_dir(out_dir, tokenizer, source, overwrite, content):
        return read_meta(out_dir)
    meta = {"tokenizer": tokenizer, "vocab_size": encoder.n_vocab, "bos": encoder.eot_token, "dtype": "uint16",
            "source": source, **({"input": content} if content else {}), "splits": []}
    atomic_write(out_dir / "meta.json", json.dumps(meta, indent=2) + "\n")  # no split yet: a stopped prepare's mark
    splits = [("train", train_docs), ("val", val_docs)] + ([("test", test_docs)] if test_docs is not None else [])
    for split, docs in splits:
        n_tokens, n_docs = write_split(out_dir / f"{split}.bin", docs, encoder, split)
        meta[f"{split}_tokens"], meta[f"{split}_docs"] = n_tokens, n_docs
        if n_docs:
            meta["splits"].append(split)
            print(f"{split}: {n_docs:,} docs, {n_tokens:,} tokens -> {out_dir / (split + '.bin')}")
    for name in CORPUS_FILES[1:]:  # no split rather than an empty one (an eval-only corpus has no train), nor one
        if name[:-4] not in meta["splits"]:  # left by the corpus this one replaces
            (out_dir / name).unlink(missing_ok=True)
    if not meta["splits"]:
        (out_dir / "meta.json").unlink()
        raise UsageError(f"no non-empty documents to write to {out_dir}: check the input files")
    if "train" not in meta["splits"]:
        print(f"no train split: {out_dir} is an evaluation-only corpus")
    atomic_write(out_dir / "meta.json", (json.dumps(meta, indent=2) + "\n").encode())
    return meta


# -----------------------------------------------------------------------------
# loading tokens and making batches

def prepare_command(data_dir, tokenizer=None):
    """The command that (re)creates data_dir (with `tokenizer`, default: the one its name implies)."""
    data_dir = Path(data_dir)
    name = data_dir.name.removesuffix("_bytes")
    tokenizer = tokenizer or ("bytes" if data_dir.name.endswith("_bytes") else "gpt2")
    flag = "" if tokenizer == "gpt2" else f" --tokenizer={tokenizer}"
    if (DATA_DIR / name / "prepare.py").exists() and data_dir.resolve().parent == DATA_DIR:
        return f"python data/{name}/prepare.py{flag}"
    return f"python data/prepare.py --input=YOUR_FILES --out_dir={data_dir}{flag}"


def prepare_file_first(path, tokenizer=None):
    """A text file given as a corpus: -> the line naming the data/prepare.py command that makes a corpus of it."""
    given = Path(path)
    if not given.exists() and Path(given.name).is_file():  # --dataset=book.txt means ./book.txt, not data/book.txt
        given = Path(given.name)
    stem = given.name
    for suffix in COMPRESSED_SUFFIXES[1:] + TEXT_SUFFIXES + JSONL_SUFFIXES:
        stem = stem.removesuffix(suffix)
    flag = "" if tokenizer in (None, "gpt2") else f" --tokenizer={tokenizer}"
    corpus = str(given.parent / (f"{stem}_{tokenizer}" if flag else stem if stem != given.name else f"{stem}_corpus"))
    corpus = corpus if os.sep in corpus else os.path.join(".", corpus)  # a bare name would mean data/<name>
    return (f"{given} is a text file, not a corpus: --dataset names a folder prepared from text (train.bin, val.bin, "
            f"meta.json); make one with `python data/prepare.py --input={given} --out_dir={corpus}{flag}`, then pass "
            f"--dataset={corpus}")


def read_meta(data_dir):
    """meta.json of a prepared corpus, or None if there is none (e.g. bins made elsewhere)."""
    path = Path(data_dir) / "meta.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        raise UsageError(f"{path} is corrupt: rerun `{prepare_command(data_dir)}`") from None


def corpus_tokenizer(data_dir, meta=None):
    """The tokenizer a corpus was prepared with (meta.json, or its already read `meta`; 'gpt2' without one)."""
    meta = meta or read_meta(data_dir) or {}
    name = meta.get("tokenizer", "gpt2")
    if name not in TOKENIZERS or meta.get("vocab_size", TOKENIZERS[name][0]) != TOKENIZERS[name][0]:
        raise UsageError(f"vocab mismatch: {data_dir} was prepared with tokenizer {name!r} and vocab_size "
                         f"{meta.get('vocab_size')}, not one of {TOKENIZERS}: rerun `{prepare_command(data_dir)}`")
    return name


def load_tokens(data_dir, split, tokenizer=None):
    """The uint16 token stream of one split, memory-mapped (read-only). tokenizer: the one the reader's model was
    trained with; a corpus of another one stops with one line (ids of one mean nothing to the other)."""
    data_dir = Path(data_dir)
    path = data_dir / f"{split}.bin"
    meta = read_meta(data_dir)
    if meta is None and not path.exists():  # nothing prepared here (a typo, or never prepared): name the command
        if data_dir.is_file() or data_dir.name.endswith(SUPPORTED):  # --dataset=book.txt
            raise UsageError(prepare_file_first(data_dir, tokenizer))
        name = data_dir.name.removesuffix("_bytes")
        twin = Path(corpus_dir(DATA_DIR / name, check_tokenizer(tokenizer))) if tokenizer else data_dir
        if data_dir.resolve().parent == DATA_DIR and (DATA_DIR / name / "prepare.py").exists() and \
                twin.resolve() != data_dir.resolve():  # data/<name>/prepare.py writes the model's tokens elsewhere
            raise UsageError(f"{data_dir} is not prepared, and the model reads {tokenizer!r} tokens: use "
                             f"--dataset={twin.name} (`{prepare_command(twin)}` makes it)")
        raise UsageError(f"{data_dir} is not prepared: run `{prepare_command(data_dir, tokenizer)}` first")
    found = corpus_tokenizer(data_dir, meta)
    if tokenizer is not None and found != tokenizer:
        twin = Path(corpus_dir(data_dir.parent / data_dir.name.removesuffix("_bytes"), check_tokenizer(tokenizer)))
        raise UsageError(f"{data_dir} holds {found!r} tokens but the model reads {tokenizer!r} tokens: use "
                         f"--dataset={twin.name} (`{prepare_command(twin)}` makes it), or a model trained on {found!r}")
    if not path.exists() and meta is not None and meta.get("splits"):
        raise UsageError(f"{data_dir} has no '{split}' split (it has {', '.join(meta['splits'])}): "
                         f"pick another split or dataset")
    return open_bin(path)


def open_bin(path):
    """A uint16 .bin file memory-mapped read-only; a missing, empty or truncated one names its prepare command."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path} not found: run `{prepare_command(path.parent)}` first")
    size = path.stat().st_size
    if size == 0 or size % 2:
        raise UsageError(f"{path} is {'empty' if size == 0 else 'truncated'}: rerun `{prepare_command(path.parent)}`")
    return np.memmap(path, dtype=np.uint16, mode="r")


def as_token_array(data):
    """A 1-D token array from a .bin path (reopened per call: a long-lived memmap leaks memory, as
    nanoGPT notes), a numpy array or a tensor."""
    if isinstance(data, (str, Path)):
        return open_bin(data)
    return data.numpy() if isinstance(data, torch.Tensor) else np.asarray(data)


def with_bos(rows, bos=BOS):
    """(n, L) token rows -> (n, L + 1) LongTensor with bos in column 0."""
    batch = torch.empty((rows.shape[0], rows.shape[1] + 1), dtype=torch.long)
    batch[:, 0] = bos
    batch[:, 1:] = torch.from_numpy(rows.astype(np.int64))
    return batch


def get_batch(data, batch_size, block_size, generator, bos=BOS):
    """(batch_size, block_size) LongTensor: column 0 is BOS, columns 1.. are block_size-1 consecutive
    tokens from offsets drawn with `generator` (a CPU torch.Generator), so the data position is part of
    the generator state that a checkpoint saves and restores. block_size >= 2 and len(data) >= block_size:
    train.py checks both where they enter."""
    tokens = as_token_array(data)
    span = block_size - 1
    starts = torch.randint(len(tokens) - span + 1, (batch_size,), generator=generator).numpy()
    return with_bos(tokens[starts[:, None] + np.arange(span)], bos)  # one gather, not a loop over rows


# -----------------------------------------------------------------------------
# helpers for the prepare scripts

def input_paths(inputs, urls, raw_dir, example):
    """A prepare script's --input files, then its --url downloads (into --raw_dir)."""
    paths = expand_inputs(inputs) if inputs else []
    paths += [download(url, raw_dir) for url in urls.split(",") if url.strip()]
    if not paths:
        raise UsageError(f"no input: pass --input=PATH_TO/{example} (comma-separated, globs allowed) or --url=URL")
    return paths

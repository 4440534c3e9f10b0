"""
Any text corpus -> GPT-2 tokens, or bytes with --tokenizer=bytes (train.bin, val.bin, meta.json), for train.py.

    python data/prepare.py --input=book.txt --out_dir=data/book
    python data/prepare.py --input="shards/*.jsonl.gz,more.jsonl" --out_dir=data/web --val_fraction=0.01

--input: comma-separated files, globs or directories of .txt (one file = one document) or JSON lines
(.jsonl / .json, one document per line in --text_field), each optionally compressed as .gz or .zst.
The last val_fraction of the documents, in input order, are held out for validation (the paper holds
out the tail of the Pile); a corpus of a single document (one .txt file) is cut at a line boundary.
An out_dir that holds another corpus (another tokenizer or input, or input files whose contents changed: meta.json
records their size and sha256) is refused unless --overwrite=True; the same corpus again is left as it is.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere: `from data.text import`

from configurator import UsageError, check_ranges, configure, one_line_errors
from data.text import (check_tokenizer, claim_corpus_dir, documents, expand_inputs, hold_out_tail, input_content,
                       write_corpus)

# -----------------------------------------------------------------------------
# default config
input = ""                  # comma-separated files, globs or folders of .txt / .jsonl / .json (.gz, .zst)
out_dir = ""                # where train.bin, val.bin and meta.json go
val_fraction = 0.05         # the last documents in input order held out for validation
text_field = "text"         # JSON lines: the field holding each document
tokenizer = "gpt2"          # 'gpt2' (BPE) or 'bytes'
overwrite = False           # True: replace another corpus in out_dir (a checkpoint trained on it loses its tokens)
# -----------------------------------------------------------------------------


def split_text(text, val_fraction):
    """One document -> (train text, val text), cut at the line break nearest below (1 - val_fraction)."""
    target = round(len(text) * (1 - val_fraction))
    cut = text.rfind("\n", 0, target) + 1 or target  # no line break before the target: cut mid-line
    return text[:cut], text[cut:]


if __name__ == "__main__":  # imported (tests/test_data.py), it only defines split_text
    one_line_errors("data/prepare.py")
    configure(globals(), sys.argv[1:])
    check_ranges(globals(), {"val_fraction": "[0, 1)"})
    if not input or not out_dir:
        raise UsageError("pass --input=FILES and --out_dir=DIR (python data/prepare.py --help lists every key)")
    paths = expand_inputs(input)
    source = f"data/prepare.py --input={input} ({len(paths)} files), val_fraction={val_fraction}"
    content = input_content(paths)  # one plain read of the files: a file edited under its name is another corpus
    if claim_corpus_dir(out_dir, check_tokenizer(tokenizer), source, overwrite, content):
        sys.exit()  # before the counting pass below, which reads every input once
    n_docs = sum(1 for _ in documents(paths, text_field))  # a counting pass: nothing is held in memory
    if n_docs == 0:
        raise UsageError(f"no non-empty documents in --input={input}")
    if n_docs == 1:
        train, val = split_text(next(documents(paths, text_field)), val_fraction)
        train, val = [train], [val]
    else:
        n_val = max(1, round(n_docs * val_fraction)) if val_fraction > 0 else 0
        train, val = hold_out_tail(documents(paths, text_field), n_val)
        print(f"{n_docs:,} documents: the last {n_val:,} are held out for validation")
    write_corpus(out_dir, train, val, source=source, tokenizer=tokenizer, overwrite=overwrite,
                 content=content)

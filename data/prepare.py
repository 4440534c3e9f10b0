"""
Any text corpus -> GPT-2 tokens, or bytes with --tokenizer=bytes (train.bin, val.bin, meta.json), for train.py.

    python data/prepare.py --input=book.txt --out_dir=data/book
    python data/prepare.py --input="shards/*.jsonl.gz,more.jsonl" --out_dir=data/web --val_fraction=0.01

--input: comma-separated files, globs or directories of .txt (one file = one document) or JSON lines
(.jsonl / .json, one document per line in --text_field), each optionally compressed as .gz or .zst.
The last val_fraction of the documents, in input order, are held out for validation (the paper holds
out the tail of the Pile); a corpus of a single document (one .txt file) is cut at a line boundary.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere: `from data.text import`

from data.text import documents, expand_inputs, hold_out_tail, parse_overrides, run_main, write_corpus

DEFAULTS = {"input": "", "out_dir": "", "val_fraction": 0.05, "text_field": "text", "tokenizer": "gpt2"}


def split_text(text, val_fraction):
    """One document -> (train text, val text), cut at the line break nearest below (1 - val_fraction)."""
    target = round(len(text) * (1 - val_fraction))
    cut = text.rfind("\n", 0, target) + 1 or target  # no line break before the target: cut mid-line
    return text[:cut], text[cut:]


def main(argv=None):
    config = parse_overrides(DEFAULTS, argv)
    if not config["input"] or not config["out_dir"]:
        raise SystemExit("usage: python data/prepare.py --input=FILES --out_dir=DIR [--val_fraction=0.05] "
                         "[--text_field=text]")
    if not 0 <= config["val_fraction"] < 1:
        raise SystemExit(f"--val_fraction={config['val_fraction']}: must be in [0, 1)")
    paths = expand_inputs(config["input"])
    n_docs = sum(1 for _ in documents(paths, config["text_field"]))  # a counting pass: nothing is held in memory
    if n_docs == 0:
        raise SystemExit(f"no non-empty documents in --input={config['input']}")
    if n_docs == 1:
        train, val = split_text(next(documents(paths, config["text_field"])), config["val_fraction"])
        train, val = [train], [val]
    else:
        n_val = max(1, round(n_docs * config["val_fraction"])) if config["val_fraction"] > 0 else 0
        train, val = hold_out_tail(documents(paths, config["text_field"]), n_val)
        print(f"{n_docs:,} documents: the last {n_val:,} are held out for validation")
    source = f"data/prepare.py --input={config['input']} ({len(paths)} files), val_fraction={config['val_fraction']}"
    return write_corpus(config["out_dir"], train, val, source=source, tokenizer=config["tokenizer"])


if __name__ == "__main__":
    run_main(main)

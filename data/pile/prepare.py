"""
The Pile (Gao et al., 2020), the paper's pretraining corpus (Sec. 5, Table 2, Table 7): JSON-lines shards
compressed with zstandard (00.jsonl.zst ...), one document per line in the 'text' field.

    pip install zstandard                                  # .zst shards need it
    python data/pile/prepare.py --input="pile/train/00.jsonl.zst" --max_docs=2000000
    python data/pile/prepare.py --url=https://.../00.jsonl.zst   # downloaded to --raw_dir first

The paper evaluates perplexity on "the tail of the Pile dataset, which is never exhibited to the model
during the pretraining process" (Sec. 6): the last --val_tail_docs documents read (in input order,
after the --max_docs cap) become val.bin and never enter train.bin.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.text import`

from configurator import check_ranges, configure, one_line_errors
from data.text import documents, hold_out_tail, input_paths, write_corpus

HERE = Path(__file__).resolve().parent

# -----------------------------------------------------------------------------
# default config
input = ""                  # comma-separated .jsonl.zst / .jsonl / .jsonl.gz files, globs or folders
url = ""                    # comma-separated URLs, downloaded into --raw_dir and read after --input
raw_dir = str(HERE / "raw")  # where --url downloads go (kept: data/*/raw/ is git-ignored)
out_dir = str(HERE)
overwrite = False           # True: replace another corpus in out_dir (a checkpoint trained on it loses its tokens)
val_tail_docs = 10000       # held-out tail, for the Table 7 perplexity
max_docs = 0                # read at most this many documents (0 = all): a full shard is ~7M documents
text_field = "text"
# -----------------------------------------------------------------------------
one_line_errors("data/pile/prepare.py")
configure(globals(), sys.argv[1:])
check_ranges(globals(), {"val_tail_docs": "[0, inf)", "max_docs": "[0, inf)"})
paths = input_paths(input, url, raw_dir, "00.jsonl.zst")
train, val = hold_out_tail(documents(paths, text_field, max_docs), val_tail_docs)
write_corpus(out_dir, train, val, source=f"The Pile: {', '.join(p.name for p in paths)}; max_docs={max_docs}; "
             f"val = the last {val_tail_docs} documents", overwrite=overwrite)

"""
C4 (Raffel et al., 2020; the English 'en' release), the paper's second perplexity corpus (Table 7):
JSON-lines shards compressed with gzip (c4-train.00000-of-01024.json.gz, c4-validation.00000-of-00008.json.gz),
one document per line in the 'text' field.

    python data/c4/prepare.py --input=c4/en/c4-validation.00000-of-00008.json.gz --max_docs=10000
    python data/c4/prepare.py --url=https://.../c4-validation.00000-of-00008.json.gz

The paper evaluates on "a subset of C4", so the usual run is evaluation-only: shards whose file name
contains 'validation' go to val.bin, every other shard to train.bin (left out when there is none).
--max_docs caps the documents read per split (0 = all; a validation shard holds ~45K).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.text import`

from configurator import check_ranges, configure, one_line_errors
from data.text import documents, input_paths, write_corpus

HERE = Path(__file__).resolve().parent

# -----------------------------------------------------------------------------
# default config
input = ""                  # comma-separated .json.gz shards, globs or folders
url = ""                    # comma-separated URLs, downloaded into --raw_dir and read after --input
raw_dir = str(HERE / "raw")  # where --url downloads go
out_dir = str(HERE)
overwrite = False           # True: replace another corpus in out_dir (a checkpoint trained on it loses its tokens)
max_docs = 0                # per split, 0 = all
text_field = "text"
# -----------------------------------------------------------------------------
one_line_errors("data/c4/prepare.py")
configure(globals(), sys.argv[1:])
check_ranges(globals(), {"max_docs": "[0, inf)"})
paths = input_paths(input, url, raw_dir, "c4-validation.00000-of-00008.json.gz")
val_paths = [path for path in paths if "validation" in path.name]
train_paths = [path for path in paths if "validation" not in path.name]
write_corpus(out_dir, documents(train_paths, text_field, max_docs), documents(val_paths, text_field, max_docs),
             source=f"C4 en: train {[p.name for p in train_paths]}, val {[p.name for p in val_paths]}; "
                    f"max_docs={max_docs} per split", overwrite=overwrite)

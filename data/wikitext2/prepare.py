"""
WikiText-2 (raw), the perplexity benchmark of the paper's Table 1 (Merity et al., CC BY-SA; not committed).

    python data/wikitext2/prepare.py --input=path/to/wikitext-2-raw        # folder (or .zip) with the files
    python data/wikitext2/prepare.py --url=https://.../wikitext-2-raw-v1.zip  # downloaded to --raw_dir first

Reads the raw-text release: wiki.train.raw, wiki.valid.raw, wiki.test.raw (-> train.bin, val.bin,
test.bin). Each file is a run of articles, each opening with a ' = Title = ' line (sections are
' = = Section = = '); one article is one document.

The raw files are pre-tokenised (' @-@ ' for a hyphen inside a word, spaces around punctuation), text
GPT-2 never saw in training. --detokenize=True (default) undoes that with a few rules (detokenize_line()
below), as the GPT-2 paper did for its WikiText numbers; --detokenize=False keeps the text as released.
"""

import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.text import`

from configurator import UsageError, configure, one_line_errors
from data.fetch import download
from data.text import write_corpus

HERE = Path(__file__).resolve().parent
SPLIT_FILES = {"train": "wiki.train.raw", "val": "wiki.valid.raw", "test": "wiki.test.raw"}

# -----------------------------------------------------------------------------
# default config
input = str(HERE / "raw")   # a folder holding the three .raw files (at any depth), or a .zip of them
url = ""                    # the release's .zip, downloaded into --raw_dir and read instead of --input
raw_dir = str(HERE / "raw")  # where --url downloads go
out_dir = str(HERE)
overwrite = False           # True: replace another corpus in out_dir (a checkpoint trained on it loses its tokens)
detokenize = True           # undo the release's tokenisation (' @-@ ', spaces around punctuation), as GPT-2 did
# -----------------------------------------------------------------------------

ARTICLE_TITLE = re.compile(r"^ ?= (?!=)(.*) = ?$")  # ' = Title = ', but not ' = = Section = = '

# -----------------------------------------------------------------------------
# parsing and detokenizing

# (pattern, replacement) applied in order to every line
DETOKENIZE_RULES = [
    (r" @([-,.])@ ", r"\1"),                    # 1 @,@ 000 -> 1,000 ; state @-@ of @-@ the @-@ art
    (r" (n't|'s|'re|'ve|'ll|'m|'d)\b", r"\1"),  # do n't -> don't ; Valkyria 's -> Valkyria's
    (r" ([.,;:!?%)\]}])", r"\1"),               # no space before closing punctuation
    (r"([(\[{$£]) ", r"\1"),                    # no space after opening brackets and currency signs
    (r'" ([^"]*?) "', r'"\1"'),                 # " quoted " -> "quoted"
    (r"^(=(?: =)*) (.*?) (=(?: =)*)$", lambda m: f"{m.group(1).replace(' ', '')} {m.group(2)} "
                                                 f"{m.group(3).replace(' ', '')}"),  # = = A = = -> == A ==
]


def detokenize_line(line):
    """Undo WikiText's tokenisation of one line (approximately: the rules cover the common cases)."""
    line = line.strip()
    for pattern, replacement in DETOKENIZE_RULES:
        line = re.sub(pattern, replacement, line)
    return line


def split_articles(raw_text, detokenized=True):
    """A WikiText file -> list of articles (str): a new article starts at each ' = Title = ' line."""
    articles, lines = [], []
    for line in raw_text.split("\n"):
        if ARTICLE_TITLE.match(line) and any(existing.strip() for existing in lines):
            articles.append(lines)
            lines = []
        lines.append(detokenize_line(line) if detokenized else line)
    articles.append(lines)
    texts = [re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") for lines in articles]
    return [text for text in texts if text.strip()]


# -----------------------------------------------------------------------------
# finding the files

def find_split_files(source):
    """{split: text} from a folder holding the three .raw files (at any depth) or a .zip of them."""
    source = Path(source)
    if source.is_file() and zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            names = {Path(name).name: name for name in archive.namelist()}
            if all(name in names for name in SPLIT_FILES.values()):
                return {split: archive.read(names[name]).decode("utf-8") for split, name in SPLIT_FILES.items()}
    elif source.is_dir():
        found = {name: sorted(source.rglob(name)) for name in SPLIT_FILES.values()}
        if all(found.values()):
            return {split: found[name][0].read_text(encoding="utf-8") for split, name in SPLIT_FILES.items()}
    raise UsageError(f"no WikiText-2 raw files ({', '.join(SPLIT_FILES.values())}) in {source}: pass "
                     f"--input=FOLDER_OR_ZIP, or --url=URL_OF_wikitext-2-raw-v1.zip to download them")


if __name__ == "__main__":  # imported (tests/test_data.py), it only defines the readers
    one_line_errors("data/wikitext2/prepare.py")
    configure(globals(), sys.argv[1:])
    source = download(url, raw_dir) if url else input
    articles = {split: split_articles(text, detokenize) for split, text in find_split_files(source).items()}
    print(", ".join(f"{split}: {len(docs)} articles" for split, docs in articles.items()))
    write_corpus(out_dir, articles["train"], articles["val"], test_docs=articles["test"],
                 source=f"WikiText-2 raw (CC BY-SA) from {source}, detokenize={detokenize}", overwrite=overwrite)

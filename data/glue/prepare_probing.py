"""
Build the probing suite under data/glue/probing/<task>/{train,dev}.tsv: single-window classification tasks in the
manner of SentEval's probing tasks (Conneau et al. 2018, "What you can cram into a single vector"), cut from text the
byte-level models never trained on, so that a 4 x 128 model can read a whole example (BOS + ~100 bytes < 128).

Sources (prepared corpora, read as bytes; nothing is downloaded here):
  plays      data/shakespeare_bytes/val.bin: the four plays data/shakespeare/prepare.py holds out (VAL_PLAYS), one a
             document; speaker names are dropped, only spoken text is kept
  wikipedia  data/wikipedia_bytes/val.bin: the 106 articles of data/wikipedia/prepare.py (out of domain)

A window: the words (whitespace-separated) from a start word on until the window has WINDOW bytes or more, joined by
single spaces (a line break reads as a space: TSV rows hold one line); windows over MAX_BYTES are never used. Every
document's words split once: the first (1 - dev_fraction) of them are the train region, the rest the dev region;
a window lies inside one region, so no dev text is seen in training. Starts are drawn without replacement (windows
of one split may overlap). Labels are exactly balanced.

  bigram_shift     1: two adjacent words (both letters and apostrophes only, and different) swapped; 0: untouched
  somo             1: one lowercase word of 3+ letters replaced by a different word of the same length drawn
                   uniformly from the source's vocabulary (lowercase words seen twice or more); 0: untouched
  play             which held-out play (0-3, VAL_PLAYS's order); windows never cross a play
  speaker_change   1: the window holds the end of one character's speech and the start of another's; 0: it lies
                   inside one character's speech (a block without a name continues the speech before it)
  verse_prose      0: verse, 1: prose. The edition breaks prose into ~50-byte lines too, but a prose line that
                   continues a sentence starts lowercase, while every verse line starts uppercase. A block of 3+
                   spoken lines is verse if none of lines 2.. starts lowercase, prose if half of them or more do,
                   else left out; a window must lie in blocks of one kind.
  wiki_bigram_shift, wiki_somo   the same two tasks on Wikipedia
The line tasks, one unit an example: a spoken line of the plays as the edition breaks them, or a
Wikipedia sentence (a paragraph split at . ! ? before a space and a capital; ending in . ! ?, so
no heading), of MIN_LINE_BYTES to MAX_BYTES bytes. A unit lies in one region as windows do (one
across the cut is used by neither), is used once per split at most, and is drawn, for either
label, from the units the change applies to, so that only the change tells the labels apart.
  line_bigram_shift  1: two adjacent lowercase words (letters, apostrophes), different, neither the
                     first, swapped: no capital moves, so none lands after a lowercase word (the
                     window swap's cue); 0: untouched
  line_somo          1: a lowercase word of 3+ letters, not the first, replaced by another of its
                     length and frequency band, drawn in proportion to its count. Bands: of the
                     source's lowercase words (punctuation stripped) seen twice or more,
                     floor(log2(count)): 1 = 2-3 times, 2 = 4-7, 3 = 8-15, ...; 0: untouched
  wiki_line_bigram_shift, wiki_line_somo   the same on Wikipedia's sentences
Sizes: TRAIN_SIZE / DEV_SIZE examples per window task, LINE_TRAIN_SIZE / LINE_DEV_SIZE per line task
(below), deterministic given --seed; a size the sources cannot give is refused before its tasks
are drawn, naming the most they give.

    python data/glue/prepare_probing.py              # -> data/glue/probing/<task>/{train,dev}.tsv
    python data/glue/prepare_probing.py --seed=7 --train_size=400 --dev_size=200 --out_dir=elsewhere
    python data/glue/prepare_probing.py --line_train_size=1000 --line_dev_size=500
"""

import json
import os
import re
import string
import sys
from collections import Counter
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.glue_tasks import`

import numpy as np

from configurator import UsageError, check_ranges, configure, one_line_errors
from data import DATA_DIR
from data.glue_tasks import PROBING_TASKS, write_tsv
from data.shakespeare.prepare import VAL_PLAYS
from output import writable_folder

WINDOW, MAX_BYTES = 100, 126  # BOS + 126 bytes fit a block of 128
TRAIN_SIZE, DEV_SIZE = 4000, 2000
LINE_TRAIN_SIZE, LINE_DEV_SIZE = 6000, 2900  # of the most: 6,387 (plays train), 2,972 (wiki dev)
MIN_LINE_BYTES = 20         # a shorter line ('What, Curio?') has few words to swap or replace among
LINE_STREAM = 100           # the line tasks' random streams start here, the window tasks' at 0
SOURCES = {"plays": ("shakespeare_bytes", "python data/shakespeare/prepare.py --tokenizer=bytes"),
           "wikipedia": ("wikipedia_bytes", "python data/wikipedia/prepare.py --tokenizer=bytes")}
SWAPPABLE = re.compile(r"[A-Za-z']+")   # a word bigram shift may move: no punctuation travels with it
REPLACEABLE = re.compile(r"[a-z]{3,}")  # a word somo may replace, and the vocabulary it draws from
LOWER_WORD = re.compile(r"[a-z']*[a-z][a-z']*")  # what line_bigram_shift moves: no capital, no stop
PUNCTUATION = string.punctuation + "\u2018\u2019\u201c\u201d\u2014\u2013"  # stripped from words
SENTENCE_BREAK = re.compile(r"(?<=[.!?]) (?=[A-Z])")
SENTENCE_END = re.compile(r".*[.!?][\"')\]]?")  # a heading or a list item ends no sentence
# a speaker line, every word capitalised: 'DUKE ORSINO:', 'Captain:', 'DUKE OF VENICE & Senator:'; not 'And so:'
NAME_LINE = re.compile(r"[A-Z][A-Za-z'.-]*( (&|[A-Z][A-Za-z'.-]*)){0,4}:")

# -----------------------------------------------------------------------------
# default config
data_dir = str(DATA_DIR)    # where the prepared corpora are
out_dir = str(DATA_DIR / "glue" / "probing")  # written as <out_dir>/<task>/{train,dev}.tsv
seed = 1337
train_size = TRAIN_SIZE     # examples per task, balanced over its labels
dev_size = DEV_SIZE
line_train_size = LINE_TRAIN_SIZE  # examples per line task (line_*, wiki_line_*)
line_dev_size = LINE_DEV_SIZE
dev_fraction = 1 / 3        # of each document's words (its end) that windows for dev come from

# -----------------------------------------------------------------------------
# reading a prepared corpus: documents of words, each word tagged with its block


def read_documents(data_dir, source):
    """The byte corpus's val split as a list of document texts (BOS-separated). One line naming the prepare
    command when it is missing."""
    folder, command = SOURCES[source]
    path = Path(data_dir) / folder / "val.bin"
    if not path.is_file():
        raise UsageError(f"{path} is missing: run `{command}` first")
    meta = json.loads((path.parent / "meta.json").read_text())
    if meta.get("tokenizer") != "bytes":
        raise UsageError(f"{path.parent} is not a byte corpus: run `{command}`")
    if source == "plays" and not meta.get("source", "").endswith("val plays: " + ", ".join(VAL_PLAYS)):
        raise UsageError(f"{path.parent} holds out other plays than {VAL_PLAYS}: run `{command} --overwrite=True`")
    ids = np.fromfile(path, dtype=np.uint16)
    docs = [bytes(d[d != 256].astype(np.uint8)).decode("utf-8") for d in np.split(ids, np.flatnonzero(ids == 256))]
    return [d for d in docs if d.strip()]


def play_words(text):
    """(words, speaker, verse) of one play: per word, the index of its character's speech, and 0 verse / 1 prose /
    -1 neither for its block (the rule in the module docstring)."""
    words, speaker, verse = [], [], []
    speech, name = -1, None
    for block in text.split("\n\n"):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if lines and NAME_LINE.fullmatch(lines[0]):
            if lines[0] != name:  # a new character speaks
                speech, name = speech + 1, lines[0]
            lines = lines[1:]
        if not lines:
            continue
        speech = max(speech, 0)
        lowercase = sum(line[0].islower() for line in lines[1:])
        kind = -1 if len(lines) < 3 else 0 if lowercase == 0 else 1 if 2 * lowercase >= len(lines) - 1 else -1
        block = " ".join(lines).split()
        words += block
        speaker += [speech] * len(block)
        verse += [kind] * len(block)
    return words, np.array(speaker), np.array(verse)


def article_words(text):
    words = text.split()
    return words, np.zeros(len(words), int), np.full(len(words), -1)

# -----------------------------------------------------------------------------
# windows and the tasks' examples


def window_end(words, start, stop):
    """The end (exclusive) of the window from `start`: the first point at WINDOW bytes or more; None if the region
    ends first or the window would pass MAX_BYTES."""
    size = -1
    for end in range(start, stop):
        size += 1 + len(words[end].encode("utf-8"))
        if size >= WINDOW:
            return end + 1 if size <= MAX_BYTES else None
    return None


def windows(document, dev_fraction):
    """{'train': [...], 'dev': [...]} of (start, end) for every start whose window fits its region."""
    words = document[0]
    cut = int(round(len(words) * (1 - dev_fraction)))
    out = {}
    for split, (low, high) in (("train", (0, cut)), ("dev", (cut, len(words)))):
        ends = [(start, window_end(words, start, high)) for start in range(low, high)]
        out[split] = [(start, end) for start, end in ends if end is not None]
    return out


def draw(rng, candidates, n, what):
    if len(candidates) < n:
        raise UsageError(f"{what}: only {len(candidates)} windows qualify, {n} asked: lower train_size / dev_size")
    return [candidates[i] for i in rng.choice(len(candidates), n, replace=False)]


def bigram_shift(words, rng, pairs=None):
    """(shifted words, i): words[i] and words[i + 1] swapped for an i of pairs (default: every
    adjacent pair that qualifies); None when none does."""
    if pairs is None:
        pairs = [i for i in range(len(words) - 1) if SWAPPABLE.fullmatch(words[i]) and
                 SWAPPABLE.fullmatch(words[i + 1]) and words[i] != words[i + 1]]
    if not pairs:
        return None
    i = pairs[rng.integers(len(pairs))]
    return words[:i] + [words[i + 1], words[i]] + words[i + 2:], i


def somo(words, rng, by_length):
    """(words with one replaced, i): a lowercase word of 3+ letters swapped for another word of its length from the
    vocabulary; None when no word qualifies."""
    slots = [i for i, word in enumerate(words) if REPLACEABLE.fullmatch(word) and len(by_length.get(len(word), ())) > 1]
    if not slots:
        return None
    i = slots[rng.integers(len(slots))]
    choices = [w for w in by_length[len(words[i])] if w != words[i]]
    return words[:i] + [choices[rng.integers(len(choices))]] + words[i + 1:], i


def vocabulary(documents):
    """{length: sorted words}: lowercase words of 3+ letters that occur twice or more in the source."""
    counts = Counter(w for words, _, _ in documents for w in words if REPLACEABLE.fullmatch(w))
    by_length = {}
    for word in sorted(w for w, c in counts.items() if c >= 2):
        by_length.setdefault(len(word), []).append(word)
    return by_length


def perturbed(documents, spans, n, rng, change, what):
    """n examples, half of them changed by change(words, rng) -> (words, i) or None: [(text, label, source words)]."""
    candidates = [(d, s, e) for d, split_spans in enumerate(spans) for s, e in split_spans]
    order = iter(rng.permutation(len(candidates)))
    out = []
    for label in rng.permutation([1] * (n // 2) + [0] * (n - n // 2)):
        for index in order:  # the next window that this label can use
            d, s, e = candidates[index]
            source = documents[d][0][s:e]
            changed = change(source, rng) if label else (source, None)
            if changed is not None:
                out.append((" ".join(changed[0]), int(label), source))
                break
        else:
            raise UsageError(f"{what}: not enough windows for {n} examples: lower train_size / dev_size")
    return out


def label_pools(spans, label_of, n_labels):
    """{label: [(document, start, end)]}: the windows label_of(document, start, end) gives each label (None:
    unusable)."""
    by_label = {label: [] for label in range(n_labels)}
    for d, split_spans in enumerate(spans):
        for s, e in split_spans:
            label = label_of(d, s, e)
            if label is not None:
                by_label[label].append((d, s, e))
    return by_label


def labelled(documents, spans, n, rng, label_of, n_labels, what):
    """n examples balanced over n_labels by label_of(document, start, end) (None: unusable): [(text, label)]."""
    by_label = label_pools(spans, label_of, n_labels)
    out = []
    for label in range(n_labels):
        share = n // n_labels + (label < n % n_labels)
        out += [(" ".join(documents[d][0][s:e]), label) for d, s, e in draw(rng, by_label[label], share,
                                                                              f"{what} label {label}")]
    return [out[i] for i in rng.permutation(len(out))]


def play_rules(documents):
    """{task: (number of labels, label_of(document, start, end))} of the tasks only the plays have."""
    return {
        "play": (len(documents), lambda d, s, e: d),
        "speaker_change": (2, lambda d, s, e: int(documents[d][1][s] != documents[d][1][e - 1])),
        "verse_prose": (2, lambda d, s, e: int(documents[d][2][s]) if documents[d][2][s] >= 0 and
                        len(set(documents[d][2][s:e])) == 1 else None),
    }


def most_balanced(counts):
    """The largest n that labelled() draws from pools of these sizes: label l takes n // k + (l < n % k)."""
    low = min(counts)
    return len(counts) * low + counts.index(low)  # the labels before the first smallest pool take one more


def supply(documents_by_source, spans_by_source):
    """{split: (n, task)}: the most examples per task the sources can give a split, and the task that gives fewest.
    bigram_shift and somo count every window (one with nothing to change cannot be a positive: perturbed() may still
    run short, and says so)."""
    most = {}
    for source, documents in documents_by_source.items():
        spans, prefix = spans_by_source[source], "" if source == "plays" else "wiki_"
        rules = play_rules(documents) if source == "plays" else {}
        for split in ("train", "dev"):
            n_windows = sum(len(s[split]) for s in spans)
            most.setdefault(split, []).extend((n_windows, prefix + task) for task in ("bigram_shift", "somo"))
            for task, (n_labels, rule) in rules.items():
                pools = label_pools([s[split] for s in spans], rule, n_labels)
                most[split].append((most_balanced([len(pool) for pool in pools.values()]), task))
    return {split: min(pairs) for split, pairs in most.items()}


def build(documents_by_source, seed, sizes, dev_fraction):
    """{task: {split: [(text, label)]}} (bigram_shift and somo rows carry the source words third). Sizes the
    sources cannot give stop before any drawing, with the most they can."""
    spans_by_source = {source: [windows(document, dev_fraction) for document in documents]
                       for source, documents in documents_by_source.items()}
    for split, (most, task) in supply(documents_by_source, spans_by_source).items():
        if sizes[split] > most:
            raise UsageError(f"{split}_size={sizes[split]:,} is more than the sources give: at most {most:,} {split} "
                             f"examples per task ({task} has the fewest windows): pass --{split}_size={most} or less")
    tasks = {}
    for source, documents in documents_by_source.items():
        spans = spans_by_source[source]
        by_length = vocabulary(documents)
        prefix = "" if source == "plays" else "wiki_"
        for task, change in (("bigram_shift", bigram_shift), ("somo", lambda w, r: somo(w, r, by_length))):
            tasks[prefix + task] = {split: perturbed(documents, [s[split] for s in spans], n,
                                                     np.random.default_rng([seed, len(tasks), i]), change,
                                                     f"{prefix + task} {split}")
                                    for i, (split, n) in enumerate(sizes.items())}
        if source != "plays":
            continue
        for task, (n_labels, rule) in play_rules(documents).items():
            tasks[task] = {split: labelled(documents, [s[split] for s in spans], n,
                                           np.random.default_rng([seed, len(tasks), i]), rule, n_labels,
                                           f"{task} {split}")
                           for i, (split, n) in enumerate(sizes.items())}
    return tasks


# -----------------------------------------------------------------------------
# line tasks: one spoken line or one sentence an example, perturbed where no surface cue marks it


def play_lines(text):
    """The spoken lines of one play as word lists, speaker names dropped: play_words' words."""
    lines = []
    for block in text.split("\n\n"):
        spoken = [line.strip() for line in block.splitlines() if line.strip()]
        if spoken and NAME_LINE.fullmatch(spoken[0]):
            spoken = spoken[1:]
        lines += [line.split() for line in spoken]
    return lines


def article_sentences(text):
    """The sentences of one article as word lists (article_words' words): each paragraph, a text
    line, split at . ! ? followed by a space and a capital."""
    return [sentence.split() for paragraph in text.split("\n")
            for sentence in SENTENCE_BREAK.split(paragraph)]


def line_regions(units, dev_fraction, whole):
    """{'train': [...], 'dev': [...]}: the units (word lists) of one document of MIN_LINE_BYTES to
    MAX_BYTES bytes for which whole(text) holds, by region: the document's words cut where
    windows() cuts them, a unit across the cut used by neither."""
    cut = int(round(sum(len(unit) for unit in units) * (1 - dev_fraction)))
    out, end = {"train": [], "dev": []}, 0
    for unit in units:
        start, end = end, end + len(unit)
        text = " ".join(unit)
        if MIN_LINE_BYTES <= len(text.encode("utf-8")) <= MAX_BYTES and whole(text) and \
                (end <= cut or start >= cut):
            out["train" if end <= cut else "dev"].append(unit)
    return out


def swappable_pairs(words):
    """i where words[i], words[i + 1] may be swapped: lowercase words (letters, apostrophes), not
    the first word, different: the swap moves no capital and no punctuation."""
    return [i for i in range(1, len(words) - 1) if LOWER_WORD.fullmatch(words[i]) and
            LOWER_WORD.fullmatch(words[i + 1]) and words[i] != words[i + 1]]


def frequency_bands(units):
    """({word: band}, {(length, band): (words, counts)}) of the lowercase words of 3+ letters that
    the units hold twice or more (punctuation around them stripped): band = floor(log2(count))."""
    counts = Counter(word.strip(PUNCTUATION) for unit in units for word in unit)
    counts = {w: c for w, c in counts.items() if REPLACEABLE.fullmatch(w) and c >= 2}
    band = {word: int(np.log2(count)) for word, count in counts.items()}
    groups = {}
    for word in sorted(band):
        groups.setdefault((len(word), band[word]), []).append(word)
    return band, {key: (words, np.array([counts[w] for w in words]))
                  for key, words in groups.items()}


def replaceable_slots(words, bands):
    """i where words[i], not the first word, is a word of the bands whose (length, band) holds
    another."""
    band, groups = bands
    return [i for i in range(1, len(words))
            if words[i] in band and len(groups[len(words[i]), band[words[i]]][0]) > 1]


def band_somo(words, slots, rng, bands):
    """(words with one replaced, i): words[i] for i in slots swapped for another word of its length
    and band, drawn in proportion to its count, as the replaced one was drawn from running text."""
    band, groups = bands
    i = slots[rng.integers(len(slots))]
    candidates, counts = groups[len(words[i]), band[words[i]]]
    weights = np.where(np.array(candidates) == words[i], 0, counts)
    replacement = candidates[rng.choice(len(candidates), p=weights / weights.sum())]
    return words[:i] + [replacement] + words[i + 1:], i


def build_lines(lines_by_source, seed, sizes, dev_fraction):
    """{task: {split: [(text, label, source words)]}} of the line tasks: n units drawn without
    replacement from those the change can apply to, half of them changed, so that only the change
    tells the labels apart. A size the sources cannot give stops before any drawing, naming the
    most."""
    pools, changes = {}, {}
    for source, documents in lines_by_source.items():
        whole = (lambda text: True) if source == "plays" else SENTENCE_END.fullmatch
        regions = [line_regions(units, dev_fraction, whole) for units in documents]
        bands = frequency_bands([unit for units in documents for unit in units])
        prefix = "" if source == "plays" else "wiki_"
        swap = lambda words, pairs, rng: bigram_shift(words, rng, pairs)
        for task, eligible, change in (("line_bigram_shift", swappable_pairs, swap),
                                       ("line_somo", partial(replaceable_slots, bands=bands),
                                        partial(band_somo, bands=bands))):
            changes[prefix + task] = change
            for split in sizes:
                units = [unit for region in regions for unit in region[split]]
                pools[prefix + task, split] = [(unit, places) for unit in units
                                               for places in [eligible(unit)] if places]
    for split, n in sizes.items():
        most, task = min((len(pool), task) for (task, s), pool in pools.items() if s == split)
        if n > most:
            raise UsageError(f"line_{split}_size={n:,} is more than the sources give: at most "
                             f"{most:,} {split} examples per line task ({task} has the fewest "
                             f"units): pass --line_{split}_size={most} or less")
    tasks = {}
    for k, (task, change) in enumerate(changes.items()):
        tasks[task] = {}
        for i, (split, n) in enumerate(sizes.items()):
            rng = np.random.default_rng([seed, LINE_STREAM + k, i])
            pool = pools[task, split]
            chosen = [pool[j] for j in rng.choice(len(pool), n, replace=False)]
            labels = rng.permutation([1] * (n // 2) + [0] * (n - n // 2))
            tasks[task][split] = [
                (" ".join(change(unit, places, rng)[0] if label else unit), int(label), unit)
                for (unit, places), label in zip(chosen, labels)]
    return tasks


def load_lines(data_dir):
    """{source: [units of one document]}: the plays' spoken lines, Wikipedia's sentences, all of
    them (build_lines keeps those that fit)."""
    return {"plays": [play_lines(text) for text in read_documents(data_dir, "plays")],
            "wikipedia": [article_sentences(text)
                          for text in read_documents(data_dir, "wikipedia")]}


def load_sources(data_dir):
    plays = [play_words(text) for text in read_documents(data_dir, "plays")]
    if len(plays) != len(VAL_PLAYS):
        raise UsageError(f"{data_dir}/shakespeare_bytes/val.bin holds {len(plays)} plays, not {len(VAL_PLAYS)}: "
                         f"run `{SOURCES['plays'][1]} --overwrite=True`")
    return {"plays": plays, "wikipedia": [article_words(text) for text in read_documents(data_dir, "wikipedia")]}


def write(out_dir, tasks):
    for task, splits in tasks.items():
        spec = PROBING_TASKS[task]
        for split, rows in splits.items():
            write_tsv(os.path.join(out_dir, spec.folder, f"{split}.tsv"), [spec.text_columns[0], spec.label_column],
                      [[row[0], str(row[1])] for row in rows])


def majority(splits):
    """Dev accuracy (%) of always answering the train split's most frequent label."""
    top = Counter(row[1] for row in splits["train"]).most_common(1)[0][0]
    return 100.0 * np.mean([row[1] == top for row in splits["dev"]])


if __name__ == "__main__":  # imported (tests/test_prepare_probing.py), it only defines the steps
    one_line_errors("data/glue/prepare_probing.py")
    configure(globals(), sys.argv[1:])
    check_ranges(globals(), {"dev_fraction": "(0, 1)", "train_size": "[2, inf)", "dev_size": "[2, inf)",
                             "line_train_size": "[2, inf)", "line_dev_size": "[2, inf)",
                             "seed": "[0, inf)"})  # numpy seeds are non-negative
    sources, lines = load_sources(data_dir), load_lines(data_dir)
    writable_folder(out_dir)  # before the drawing, not after it
    line_sizes = {"train": line_train_size, "dev": line_dev_size}
    line_tasks = build_lines(lines, seed, line_sizes, dev_fraction)  # seconds: first
    tasks = build(sources, seed, {"train": train_size, "dev": dev_size}, dev_fraction)
    tasks.update(line_tasks)
    write(out_dir, tasks)
    for task, splits in tasks.items():
        print(f"{task:<22} train {len(splits['train']):>5}  dev {len(splits['dev']):>5}  "
              f"labels {len(PROBING_TASKS[task].labels)}  majority {majority(splits):.1f}%")
    print(f"wrote {out_dir}/<task>/{{train,dev}}.tsv")

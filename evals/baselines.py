"""
Where the input itself stands: the two baselines every probe and fine-tune table reads beside its checkpoints.
  - the input baseline: the same linear probe on the raw input instead of a model's features (eval_vision.py
    --ckpt=pixels: every pixel a feature; eval_glue.py --ckpt=bag_of_words: word counts, --ckpt=bag_of_bytes: byte
    n-gram counts, the surface a byte-level model reads). Pretrained features below
    it carry less linearly usable information than the input they were computed from.
  - the random-initialisation baseline, --ckpt=random:<checkpoint>: that checkpoint's architecture, objective and
    probe mask with the weights its run started from (train.py seeds torch with the run's seed just before it builds
    the model), so the probe of a pretrained run and of its own initialisation differ by pretraining alone.
"""
import re
from collections import Counter
from dataclasses import replace

import torch

from checkpoint import Pretrained
from configurator import UsageError
from model import Transformer

RANDOM = 'random:'
WORD = re.compile(r"[a-z0-9']+")
VOCABULARY = 2000  # bag of words: the train split's most frequent words (ties broken alphabetically)
NGRAMS, MAX_N = 4000, 3  # bag of bytes: the train split's most frequent byte 1- to 3-grams


class RandomInit(Pretrained):
    """A Pretrained whose model() is the untrained Transformer its run began with (train.py: torch.manual_seed(seed)
    at rank 0, then Transformer(model_config)); the trained weights are never read."""

    def __init__(self, path, input_kind):
        super().__init__(path, input_kind)
        if 'seed' not in self.train_config:
            raise UsageError(f"{path} does not record the seed its run started from: random:<checkpoint> needs a "
                             "checkpoint train.py wrote")
        self.seed = int(self.train_config['seed'])

    def model(self, device='cpu', **overrides):
        devices = [torch.device(device).index or 0] if str(device).startswith('cuda') else []
        with torch.random.fork_rng(devices=devices):  # the caller's own draws (head init, dropout) are left alone
            torch.manual_seed(self.seed)
            model = Transformer(replace(self.model_config, **overrides))
        return model.to(device).eval()


def open_model(spec, input_kind):
    """--ckpt=PATH (a trained checkpoint) or --ckpt=random:PATH (its architecture at initialisation)."""
    if spec.startswith(RANDOM):
        if not spec[len(RANDOM):].strip():
            raise UsageError(f"--ckpt={spec} names no checkpoint after '{RANDOM}': pass --ckpt={RANDOM}<checkpoint>, "
                             "the run whose initialisation to read (e.g. random:out-<name>/ckpt_best.pt)")
        return RandomInit(spec[len(RANDOM):], input_kind)
    return Pretrained(spec, input_kind)

# -----------------------------------------------------------------------------
# bags of units (words, byte n-grams): the text input as a linear model sees it

def ranked_vocabulary(rows, units, size):
    """{unit: column} for the `size` most frequent units of the rows' texts (a and b of each (a, b, label)), ties
    broken by the unit itself."""
    counts = Counter(u for a, b, _ in rows for text in (a, b or '') for u in units(text))
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:size]
    return {u: i for i, (u, _) in enumerate(ranked)}


def unit_counts(texts, vocabulary, units):
    """(n, V) counts of the vocabulary's units in each text (None: an empty text)."""
    out = torch.zeros(len(texts), len(vocabulary))
    for i, text in enumerate(texts):
        for u in units(text or ''):
            if u in vocabulary:
                out[i, vocabulary[u]] += 1
    return out


def words(text):
    return WORD.findall(text.lower())


def word_vocabulary(rows, size=VOCABULARY):
    return ranked_vocabulary(rows, words, size)


def bag_of_words(rows, vocabulary):
    """(n, V) word counts of single texts; (n, 2V) for pairs: the counts of a + b, then min(a, b) per word (the
    words the two share, which a linear model cannot form from the sum alone)."""
    a, b = (unit_counts([row[k] for row in rows], vocabulary, words) for k in (0, 1))
    return torch.cat([a + b, torch.minimum(a, b)], dim=1) if rows and rows[0][1] is not None else a

# bag of bytes: byte 1- to 3-grams, the character n-gram baseline of probing tasks (Conneau et al. 2018 report a
# bag-of-vectors one). Word counts cannot see a swap of two words (bigram shift keeps every word); the 3-grams
# across a word boundary can, and unigram bytes see letter frequencies (a play's names, verse's line capitals).

def byte_ngrams(text, max_n=MAX_N):
    data = text.encode('utf-8')
    return [data[i:i + n] for n in range(1, max_n + 1) for i in range(len(data) - n + 1)]


def ngram_vocabulary(rows, size=NGRAMS):
    return ranked_vocabulary(rows, byte_ngrams, size)


def bag_of_bytes(rows, vocabulary):
    """(n, V) byte n-gram counts of single texts (pairs: of a and b joined by a newline)."""
    return unit_counts([a if b is None else a + '\n' + b for a, b, _ in rows], vocabulary, byte_ngrams)

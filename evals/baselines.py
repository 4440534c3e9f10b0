"""
Where the input itself stands: the baselines every probe and fine-tune table reads beside its
checkpoints.
  - the input baseline: the same linear probe on the raw input instead of a model's features (eval_vision.py
    --ckpt=pixels: every pixel a feature; eval_glue.py --ckpt=bag_of_words: word counts, --ckpt=bag_of_bytes: byte
    n-gram counts, the surface a byte-level model reads). Pretrained features below
    it carry less linearly usable information than the input they were computed from.
  - the random-initialisation baseline, --ckpt=random:<checkpoint>: that checkpoint's architecture, objective and
    probe mask with the weights its run started from (train.py seeds torch with the run's seed just before it builds
    the model), so the probe of a pretrained run and of its own initialisation differ by pretraining alone.
  - the cue rules, --ckpt=rule:<name> (below): a surface cue read with no learned feature, the
    shortcut a probing task may leave.
"""
import re
from collections import Counter
from dataclasses import replace

import numpy as np
import torch

from checkpoint import Pretrained
from configurator import UsageError
from data.glue.prepare_probing import PUNCTUATION, REPLACEABLE
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

# -----------------------------------------------------------------------------
# cue rules (--ckpt=rule:<name>): what can be read off the text with no learned feature, one number
# per text and one threshold fit on train. A probing task's change should leave no surface cue
# (Conneau et al. 2018 check their tasks against bag-of-vectors baselines): a rule above chance
# shows what an untrained model can learn instead of the task.

RULE = 'rule:'
PMI_SMOOTHING = 0.1  # added to a pair's count and to its expected count


def capitals_after_lowercase(text):
    """How many words start with a capital right after a word that starts lowercase: the cue a
    swap that moves a capitalised word leaves (the window bigram shift's)."""
    words = text.split()
    return sum(b[:1].isupper() and a[:1].islower() for a, b in zip(words, words[1:]))


def plain_words(text):
    return [word.strip(PUNCTUATION).lower() for word in text.split()]


def later_words(text):
    """The words but the first, stripped of punctuation, of 3+ lowercase letters (what somo
    replaces)."""
    words = (word.strip(PUNCTUATION) for word in text.split()[1:])
    return [word for word in words if REPLACEABLE.fullmatch(word)]


def word_bigrams(text):
    words = plain_words(text)
    return list(zip(words, words[1:]))


def capital_rule(texts, reference, counted):
    return np.array([capitals_after_lowercase(text) for text in texts], dtype=float)


def rarest_word(texts, reference, counted):
    """Minus the reference count of each text's rarest later word (higher: rarer; -inf: none),
    the text's own words taken out where counted[i] (it is one of the reference texts)."""
    counts = Counter(word for text in reference for word in later_words(text))
    out = []
    for text, own in zip(texts, counted):
        mine = Counter(later_words(text))
        out.append(-min((counts[w] - own * mine[w] for w in mine), default=np.inf))
    return np.array(out, dtype=float)


def bigram_surprise(texts, reference, counted):
    """Minus the summed pointwise mutual information (Church & Hanks 1990) of each text's adjacent
    word pairs in the reference texts (own counts out where counted[i]): a swap keeps every word
    and makes pairs that seldom go together."""
    pairs = Counter(pair for text in reference for pair in word_bigrams(text))
    singles = Counter(word for text in reference for word in plain_words(text))
    out = []
    for text, own in zip(texts, counted):
        my_pairs, my_words = Counter(word_bigrams(text)), Counter(plain_words(text))
        total = sum(singles.values()) - own * sum(my_words.values())
        single = lambda w: singles[w] - own * my_words[w]
        out.append(-sum(np.log((pairs[p] - own * my_pairs[p] + PMI_SMOOTHING) /
                               (single(p[0]) * single(p[1]) / total + PMI_SMOOTHING))
                        for p in my_pairs.elements()))
    return np.array(out, dtype=float)


# name: (what answers 1, its score(texts, reference texts, counted) -> higher for 1, whether the
# threshold is fit on train; if not, a score of 1 answers 1)
RULES = {
    'capital_after_lowercase': ("a capitalised word right after a lowercase one", capital_rule,
                                False),
    'rare_word': ("the rarest later word's train count under a threshold", rarest_word, True),
    'bigram_pmi': ("the word pairs' summed train PMI under a threshold", bigram_surprise, True),
}


def open_rule(spec):
    name = spec[len(RULE):]
    if name not in RULES:
        raise UsageError(f"--ckpt={spec} names no rule: pass --ckpt={RULE}<name>, one of "
                         f"{', '.join(RULES)}")
    return name


def fit_threshold(scores, labels):
    """The t for which 'score >= t -> 1' is the most accurate on these scores; of equals, the
    lowest."""
    candidates = np.append(np.unique(scores), np.inf)
    return candidates[int(np.argmax([np.mean((scores >= t) == labels) for t in candidates]))]


def rule_predictions(name, train, evaluated):
    """{split: 0/1 answers} of the rule on evaluated's rows ({split: [(text, None, label)]}): its
    counts the train split's untouched texts' (label 0), each of them scored without its own (so
    that train scores read what dev scores read); its threshold the most accurate on train."""
    _, score, fitted = RULES[name]
    reference = [text for text, _, label in train if label == 0]
    threshold = 1
    if fitted:
        labels = np.array([label for _, _, label in train])
        threshold = fit_threshold(score([row[0] for row in train], reference, labels == 0), labels)
    return {split: (score([row[0] for row in rows], reference, np.zeros(len(rows), bool)) >=
                    threshold).astype(int) for split, rows in evaluated.items()}

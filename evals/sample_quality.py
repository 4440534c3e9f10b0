"""
How good are samples (sample.py --judge)? Three numbers, each in nats per token (per byte for a byte tokenizer):
  judge NLL    the samples' mean NLL per token under a judge, a left-to-right model (ar) of the same recipe trained
               longer than the models it judges, so that its likelihood is nearer the text's
  held-out     the judge's NLL on held-out text, in windows as long as the samples: what a sampler that draws from
               the text's own distribution scores (the reference line of a curve against forward passes)
  entropy      each sample's unigram entropy (the plug-in entropy of its token counts), averaged over samples, next
               to the same on the held-out windows (equal lengths, so the plug-in estimator's bias is the same)
A judge NLL at or below that line is no proof of quality: a sharper sampler goes below it, and repeating likely
tokens scores well under any judge. MDLM's low generative perplexities came with low entropy (Zheng et al. 2024, an
imprecise categorical sampler), so ReMDM (Wang et al. 2025) reports entropy beside them. A sampler whose mean entropy
is below REPETITIVE_FRACTION of the held-out text's is flagged repetitive.

The judge is a callable, so the tests can use an exact Markov chain instead of a Transformer:
  judge_nll(windows) -> (B, S-1) NLLs of (B, S) windows (BOS in column 0), column k = -log p(x_{k+1} | x_0..x_k),
  the layout of evals.ppl.score_windows, through which sample.py reads its ar judge.
"""
import numpy as np
import torch

from evals.ppl import mean_se

# below this fraction of the held-out text's entropy, samples are repetitive. On the byte recipe (rope-pilot's ar,
# 600 steps) temperature 0.8 kept 98% of the 3.11 nats of 127-byte held-out windows; a sample looping over
# "the king, " keeps 2.16 nats, about two thirds
REPETITIVE_FRACTION = 0.8


def sample_nll(judge_nll, sequences, first):
    """sequences: token id lists, each BOS, a prompt, then the sampled tokens from index `first` on (lengths may
    differ: a left-to-right sample ends at BOS). -> (n,) float64, each sample's mean NLL per sampled token given
    everything before it."""
    nll = np.zeros(len(sequences))
    by_length = {}
    for index, ids in enumerate(sequences):
        by_length.setdefault(len(ids), []).append(index)
    for indices in by_length.values():
        scores = judge_nll(torch.tensor([sequences[i] for i in indices]))
        nll[indices] = scores[:, first - 1:].double().mean(dim=1).numpy()  # column first - 1 predicts x_first
    return nll


def unigram_entropy(ids):
    """The plug-in entropy of a token sequence's unigram counts, in nats (0 for an empty one)."""
    counts = np.bincount(np.asarray(ids, dtype=np.int64))
    p = counts[counts > 0] / max(1, counts.sum())
    return float(-(p * np.log(p)).sum())


def sample_quality(judge_nll, sequences, first, held_out):
    """Samples (as sample_nll) against held-out windows (W, S) with BOS in column 0, S - 1 the samples' sampled
    length -> the judge's NLL and the unigram entropy of both, each a mean with its standard error across samples
    (windows), and the repetitive flag: the mean entropy below REPETITIVE_FRACTION of the held-out windows'.
    A sample with no sampled token (ended at once) has no NLL per token and is left out."""
    sequences = [ids for ids in sequences if len(ids) > first]
    sampled = [ids[first:] for ids in sequences]
    judged, entropies = sample_nll(judge_nll, sequences, first), [unigram_entropy(ids) for ids in sampled]
    held_out_nll = judge_nll(held_out).double().mean(dim=1).numpy()
    held_out_entropies = [unigram_entropy(row) for row in held_out[:, 1:].tolist()]
    (nll, nll_se), (entropy, entropy_se) = mean_se(judged), mean_se(entropies)
    (reference, reference_se), (reference_entropy, _) = mean_se(held_out_nll), mean_se(held_out_entropies)
    threshold = REPETITIVE_FRACTION * reference_entropy
    return dict(judge_nll=nll, judge_nll_se=nll_se, entropy=entropy, entropy_se=entropy_se,
                held_out_nll=reference, held_out_nll_se=reference_se, held_out_entropy=reference_entropy,
                repetitive=entropy < threshold, repetitive_samples=int(sum(e < threshold for e in entropies)),
                samples=len(sequences), sampled_tokens=sum(map(len, sampled)), held_out_windows=len(held_out))

"""evals/sample_quality.py: on an exact Markov chain as the judge, its own samples score its entropy rate and its
held-out NLL within their standard errors, and sharper or flatter samplers do not; a sampler stuck on one token is
flagged repetitive even where the judge likes it."""
import math

import numpy as np
import pytest
import torch

from evals.sample_quality import REPETITIVE_FRACTION, sample_nll, sample_quality, unigram_entropy

BOS = 4  # the chain's tokens are 0..3

# -----------------------------------------------------------------------------
# an exact judge: a Markov chain over 4 tokens, its first token from the stationary distribution


def markov_chain(seed=0, sticky=0.0):
    rng = np.random.default_rng(seed)
    transition = rng.dirichlet(np.ones(4) * 0.7, size=4)
    transition = (1 - sticky) * transition + sticky * np.eye(4)
    values, vectors = np.linalg.eig(transition.T)
    stationary = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    return transition, stationary / stationary.sum()


def chain_judge(transition, stationary):
    """(B, S) windows, BOS in column 0 -> (B, S-1) exact NLLs: -log pi(x_1), then -log P(x_{k+1} | x_k)."""
    log_p, log_pi = torch.tensor(np.log(transition)), torch.tensor(np.log(stationary))

    def judge_nll(windows):
        x = windows[:, 1:]
        return torch.cat([-log_pi[x[:, :1]], -log_p[x[:, :-1], x[:, 1:]]], dim=1)
    return judge_nll


def draw(transition, stationary, n, L, seed, temperature=1.0):
    """n sequences of L tokens from the chain with every distribution raised to 1 / temperature: -> BOS + tokens."""
    rng = np.random.default_rng(seed)
    sharpen = lambda p: p ** (1 / temperature) / (p ** (1 / temperature)).sum(axis=-1, keepdims=True)  # noqa: E731
    transition, stationary = sharpen(transition), sharpen(stationary)
    x = np.zeros((n, L), dtype=np.int64)
    x[:, 0] = rng.choice(4, size=n, p=stationary)
    for k in range(1, L):
        u = rng.random(n)[:, None]
        x[:, k] = (transition[x[:, k - 1]].cumsum(axis=1) < u).sum(axis=1).clip(max=3)
    return torch.cat([torch.full((n, 1), BOS), torch.from_numpy(x)], dim=1)


def test_the_judges_own_samples_score_its_entropy_rate_and_its_held_out_nll():
    transition, stationary = markov_chain()
    judge, n, L = chain_judge(transition, stationary), 400, 30
    entropy_rate = float(-(stationary[:, None] * transition * np.log(transition)).sum())
    expected = (float(-(stationary * np.log(stationary)).sum()) + (L - 1) * entropy_rate) / L  # per token, exact
    held_out = draw(transition, stationary, n, L, seed=1)
    scores = sample_quality(judge, draw(transition, stationary, n, L, seed=2).tolist(), 1, held_out)
    assert scores['samples'] == n and scores['sampled_tokens'] == n * L and scores['held_out_windows'] == n
    assert abs(scores['judge_nll'] - expected) < 4 * scores['judge_nll_se']  # the tolerance from the sample size
    assert abs(scores['held_out_nll'] - expected) < 4 * scores['held_out_nll_se']
    both = 4 * math.hypot(scores['judge_nll_se'], scores['held_out_nll_se'])
    assert abs(scores['judge_nll'] - scores['held_out_nll']) < both and not scores['repetitive']
    assert abs(scores['entropy'] - scores['held_out_entropy']) < 4 * math.sqrt(2) * scores['entropy_se']
    # a sharper sampler scores below the floor, a flatter one above, both by far more than the tolerance
    sharp = sample_quality(judge, draw(transition, stationary, n, L, 3, temperature=0.5).tolist(), 1, held_out)
    flat = sample_quality(judge, draw(transition, stationary, n, L, 4, temperature=3.0).tolist(), 1, held_out)
    assert sharp['judge_nll'] < scores['held_out_nll'] - both and sharp['entropy'] < scores['held_out_entropy']
    assert flat['judge_nll'] > scores['held_out_nll'] + both


def test_a_sampler_stuck_on_one_token_is_flagged_where_the_judge_likes_it():
    transition, stationary = markov_chain(sticky=0.9)  # token 0 follows itself with probability > 0.9
    judge, L = chain_judge(transition, stationary), 30
    held_out = draw(transition, stationary, 200, L, seed=1)
    stuck = [[BOS] + [0] * L] * 50
    scores = sample_quality(judge, stuck, 1, held_out)
    assert scores['entropy'] == 0 and scores['repetitive'] and scores['repetitive_samples'] == 50
    assert scores['judge_nll'] < scores['held_out_nll']  # the trap: below the floor, yet no sample of the text
    own = sample_quality(judge, draw(transition, stationary, 200, L, seed=2).tolist(), 1, held_out)
    assert not own['repetitive'] and own['entropy'] > REPETITIVE_FRACTION * own['held_out_entropy']


def test_unigram_entropy_in_nats():
    assert unigram_entropy([3] * 10) == 0 and unigram_entropy([]) == 0
    assert unigram_entropy([0, 1, 0, 1]) == pytest.approx(math.log(2))
    assert unigram_entropy([7, 9, 200, 255] * 3) == pytest.approx(math.log(4))
    assert unigram_entropy([0, 0, 0, 1]) == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))


def test_only_the_sampled_tokens_are_scored_given_everything_before_them():
    """Samples of different lengths after a prompt of two tokens: each one's mean over its own sampled tokens."""
    transition, stationary = markov_chain()
    judge = chain_judge(transition, stationary)
    sequences = [[BOS, 1, 2, 3, 0, 0], [BOS, 1, 2, 2], [BOS, 1, 2, 3, 3, 1, 0]]
    nll = sample_nll(judge, sequences, 3)
    for ids, got in zip(sequences, nll):
        expected = np.mean([-math.log(transition[a, b]) for a, b in zip(ids[2:-1], ids[3:])])
        assert got == pytest.approx(expected)
    held_out = draw(transition, stationary, 10, 4, seed=0)
    scores = sample_quality(judge, sequences + [[BOS, 1, 2]], 3, held_out)  # one ended at once: left out
    assert scores['samples'] == 3 and scores['sampled_tokens'] == 3 + 1 + 4
    assert scores['judge_nll'] == pytest.approx(nll.mean())

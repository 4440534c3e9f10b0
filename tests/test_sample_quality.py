"""evals/sample_quality.py: on an exact Markov chain as the judge, its own samples score its entropy rate and its
held-out NLL within their standard errors, and sharper or flatter samplers do not; a sampler stuck on one token is
flagged repetitive even where the judge likes it. experiments/sample_quality.py: its tables and plots from a
synthetic record, the same bytes every time."""
import json
import math
import os
import shutil

import numpy as np
import pytest
import torch

from conftest import ROOT
from evals.sample_quality import REPETITIVE_FRACTION, sample_nll, sample_quality, unigram_entropy
from experiments import sample_quality as sq
from experiments.stats import mean_std

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

# -----------------------------------------------------------------------------
# experiments/sample_quality.py on a synthetic record

SEEDS = (1337, 1338, 1339)
# (model, setting directory, sample.py settings, forward passes)
SETTINGS = [('ar', 'T1', dict(order='left_to_right', temperature=1.0), 127),
            ('ar', 'T0.8', dict(order='left_to_right', temperature=0.8), 127),
            ('mdlm', 'random-k1', dict(order='random', tokens_per_step=1), 127),
            ('mdlm', 'random-k4', dict(order='random', tokens_per_step=4), 32),
            ('mdlm', 'blocks32-k4', dict(order='confident', tokens_per_step=4, block_length=32), 32)]


def scores(index, seed_index):
    """Known numbers for setting `index`, seed `seed_index`: judge NLL, entropy, repetitive."""
    nll = 1.6 + 0.5 * index + 0.01 * seed_index ** 2
    entropy = 3.1 - 0.2 * index + 0.03 * seed_index
    return nll, entropy, index == 4 and seed_index == 0


def write_record(root):
    for index, (model, name, options, passes) in enumerate(SETTINGS):
        for seed_index, seed in enumerate(SEEDS):
            nll, entropy, repetitive = scores(index, seed_index)
            run = dict(dict(order='random', tokens_per_step=1, block_length=0, remask=0.0, temperature=1.0), **options,
                       ckpt=f'out/{model}/{seed}/ckpt_best.pt', top_k=0, seed=seed, prompt='', new_tokens=127,
                       judge='out/judge/ckpt_best.pt', forward_passes=passes, judge_nll=nll,
                       judge_nll_se=0.05, entropy=entropy, entropy_se=0.02, held_out_nll=1.795, held_out_nll_se=0.015,
                       held_out_entropy=3.11, repetitive=repetitive, repetitive_samples=int(repetitive), samples=32,
                       sampled_tokens=32 * 127, held_out_windows=125)
            os.makedirs(root / 'samples' / model / name, exist_ok=True)
            (root / 'samples' / model / name / f'{seed}.json').write_text(json.dumps(run))
    for model, seed, loss in [('ar', s, 1.8 + 0.01 * i) for i, s in enumerate(SEEDS)] + [('judge', None, 1.7)]:
        folder = root / 'judge' if model == 'judge' else root / 'train' / model / str(seed)
        os.makedirs(folder, exist_ok=True)
        rows = [dict(iter=100, train_loss=3.0), dict(iter=100, val_loss=3.0), dict(iter=200, val_loss=loss)]
        (folder / 'log.jsonl').write_text(''.join(json.dumps(row) + '\n' for row in rows))


def test_the_summary_tables_every_setting_over_seeds(tmp_path):
    write_record(tmp_path)
    lines = sq.report(str(tmp_path))
    text = (tmp_path / 'tables.md').read_text()
    assert text == '\n'.join(lines) + '\n' and 'verdict' not in text.lower()
    assert 'scores held-out text at 1.795 ± 0.015' in text
    names = {2: 'random', 3: 'random', 4: 'confident, blocks 32'}
    for index, (model, _, options, passes) in enumerate(SETTINGS):
        column = lambda i: [scores(index, s)[i] for s in range(3)]  # noqa: E731
        sampler = names.get(index, f"T={options.get('temperature', 1.0):g}")
        k = options.get('tokens_per_step', '-') if model != 'ar' else '-'
        row = (f"| {sq.MODELS[model]} | {sampler} | {k} | {passes} | {mean_std(column(0), '.3f')} | "
               f"{mean_std(column(1), '.3f')} | {'1 of 3' if index == 4 else 'no'} | 1337, 1338, 1339 |")
        assert row in lines, row
    assert lines.index(next(line for line in lines if '| T=0.8 |' in line)) < \
        lines.index(next(line for line in lines if '| T=1 |' in line))  # rows in a fixed order
    assert '| ar | 200 | 1.810 ± 0.010 | 1337, 1338, 1339 |' in lines
    assert '| judge | 200 | 1.700 ± 0.000 | one run |' in lines
    plotted = (tmp_path / 'judge_nll.csv').read_text().splitlines()
    assert 'mdlm random,32.0,3.1167' in plotted and f'{sq.REFERENCE},32.0,1.795' in plotted  # mean of seeds
    assert f'{sq.REFERENCE},127.0,1.795' in plotted and (tmp_path / 'judge_nll.png').exists()
    assert (tmp_path / 'entropy.png').exists() and f'{sq.REFERENCE},32.0,3.11' in (tmp_path / 'entropy.csv').read_text()


def test_the_summary_regenerates_byte_for_byte(tmp_path):
    write_record(tmp_path / 'a')
    sq.report(str(tmp_path / 'a'))
    shutil.copytree(tmp_path / 'a' / 'samples', tmp_path / 'b' / 'samples')
    shutil.copytree(tmp_path / 'a' / 'train', tmp_path / 'b' / 'train')
    shutil.copytree(tmp_path / 'a' / 'judge', tmp_path / 'b' / 'judge')
    sq.report(str(tmp_path / 'b'))
    for name in ('tables.md', 'judge_nll.csv', 'entropy.csv', 'judge_nll.png', 'entropy.png'):
        assert (tmp_path / 'a' / name).read_bytes() == (tmp_path / 'b' / name).read_bytes(), name


def test_the_committed_record_regenerates_byte_for_byte(tmp_path):
    """experiments/sample-quality: tables.md, the CSVs and the plots come back from the samples' scores and the
    training logs alone."""
    record = os.path.join(ROOT, 'experiments', 'sample-quality')
    for folder in ('samples', 'train', 'judge'):
        shutil.copytree(os.path.join(record, folder), tmp_path / folder)
    sq.report(str(tmp_path))
    for name in ('tables.md', 'judge_nll.csv', 'entropy.csv', 'judge_nll.png', 'entropy.png'):
        assert (tmp_path / name).read_bytes() == open(os.path.join(record, name), 'rb').read(), name


@pytest.mark.record
def test_experiments_readme_quotes_the_record():
    """experiments/README.md's table of samplers: each cell is tables.md's judge NLL for that model, sampler and step
    size."""
    rows = [line.split(' | ') for line in open(os.path.join(ROOT, 'experiments', 'sample-quality', 'tables.md'))
            if line.startswith('| ') and line.count(' | ') == 7]
    judge = {(row[0][2:], row[1], row[2]): row[4] for row in rows}
    section = open(os.path.join(ROOT, 'experiments', 'README.md')).read().split(
        '## Sample quality against forward passes')[1].split('\n## ')[0]
    settings = {"random order, 1 a step (exactly the model's mixture)": ('random', '1'),
                'random order, 16 a step': ('random', '16'), 'confident (MaskGIT), 1 a step': ('confident', '1'),
                'confident, 16 a step': ('confident', '16'),
                'confident in blocks of 32 (LLaDA), 1 a step': ('confident, blocks 32', '1'),
                'confident in blocks of 32, 16 a step': ('confident, blocks 32', '16')}
    quoted = [line.strip('|\n ').split(' | ') for line in section.splitlines() if line.startswith('| ')]
    assert [cells[0] for cells in quoted[1:]] == list(settings)  # below the header
    for cells in quoted[1:]:
        sampler, k = settings[cells[0]]
        assert cells[2:] == [judge['mdlm two-stream', sampler, k], judge['vm [0.15, 0.3] two-stream', sampler, k]]

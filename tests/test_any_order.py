"""evals/any_order.py: the any-order likelihood bound of masked checkpoints. The estimator's expectation is the exact
average over orders; with the true conditionals of a known distribution the bound averages to its entropy, with
any other conditionals to more (Gibbs); the checkpoint adapters never read a masked token."""
import itertools
import math

import pytest
import torch

from evals.any_order import (bound_summary, model_log_probs, model_masked_nll, nll_from_log_probs, score_bound,
                             strata, stratified_bound, uniform_masks)
from evals.ppl import score_windows
from model import ModelConfig, Transformer

pytestmark = pytest.mark.usefixtures('one_thread')  # tiny ops (conftest.one_thread)

VOCAB = 64  # the Transformer tests

# -----------------------------------------------------------------------------
# conditionals without a Transformer: (x, masked) -> (B, S, V) log-probs at masked positions


def linear_conditionals(V, S, seed, scale=2.0):
    """An arbitrary fixed conditional: logits at each position a random linear function of the one-hot inputs,
    masked positions read as an extra symbol (so they carry no information about their tokens)."""
    weights = scale * torch.randn(S * (V + 1), S, V, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)

    def log_probs(x, masked):
        symbols = x.masked_fill(masked, V)
        symbols[:, 0] = V  # BOS: the same in every window
        features = torch.nn.functional.one_hot(symbols, V + 1).double().flatten(1)
        return torch.log_softmax(torch.einsum('bf,fsv->bsv', features, weights), dim=-1)
    return log_probs


def all_sequences(V, L):
    return torch.tensor(list(itertools.product(range(V), repeat=L)))  # (V^L, L), row r = sequence r in base V


def exact_conditionals(p, V, L):
    """The true conditionals p(x_i | x_visible) of a joint p over V^L (indexed as
    all_sequences), by marginalising: for every masked set and every sequence at once, then
    looked up (the estimators call them thousands of times)."""
    space = all_sequences(V, L)
    # table[masked set, sequence, position]; bit i of the masked set: position i + 1 masked
    table = torch.zeros(2 ** L, len(space), L + 1, V, dtype=torch.float64)
    for hidden in range(2 ** L):
        masked = torch.tensor([bool(hidden >> i & 1) for i in range(L)])
        # weight[r, s]: p(s) where sequence s agrees with sequence r on the visible positions
        weight = (space[:, None, ~masked] == space[None, :, ~masked]).all(dim=-1) * p
        for i in torch.nonzero(masked).flatten().tolist():
            marginal = weight @ torch.nn.functional.one_hot(space[:, i], V).double()
            table[hidden, :, i + 1] = (marginal / marginal.sum(dim=1, keepdim=True)).log()
    digits, bits = V ** torch.arange(L - 1, -1, -1), 2 ** torch.arange(L)

    def log_probs(x, masked):
        return table[(masked[:, 1:].long() * bits).sum(dim=1), (x[:, 1:] * digits).sum(dim=1)]
    return log_probs


def with_bos(sequences, bos):
    return torch.cat([torch.full((len(sequences), 1), bos), sequences], dim=1)

# -----------------------------------------------------------------------------
# references by enumeration


def order_average(masked_nll, x):
    """(B,) the bound by its definition: the mean over all L! orders sigma of sum_k -log q(x_sigma(k) | x_sigma(<k))."""
    B, S = x.shape
    L = S - 1
    total = torch.zeros(B, dtype=torch.float64)
    orders = list(itertools.permutations(range(1, S)))
    for order in orders:
        for k in range(L):
            masked = torch.zeros(B, S, dtype=torch.bool)
            masked[:, list(order[k:])] = True  # sigma(k) and everything after it still hidden
            total += masked_nll(x, masked)[:, order[k]].double()
    return total / len(orders)


def expected_estimate(estimator, masked_nll, x, passes):
    """(B,) the exact expectation of a stratified estimator, by enumerating its draws: in each stratum, every m and
    every masked set of m positions. estimator(nll (B, S) over the masked set, counts, strata index)."""
    B, S = x.shape
    L = S - 1
    expectation = torch.zeros(B, dtype=torch.float64)
    for first, last in strata(L, passes):
        for m in range(first, last + 1):
            subsets = list(itertools.combinations(range(1, S), m))
            for subset in subsets:
                masked = torch.zeros(B, S, dtype=torch.bool)
                masked[:, list(subset)] = True
                nll = masked_nll(x, masked).double() * masked
                expectation += estimator(nll, m, first, last, L) / ((last - first + 1) * len(subsets))
    return expectation


def per_sequence(nll, m, first, last, L):
    """stratified_bound's term: the stratum's size times the mean NLL over the masked set."""
    return (last - first + 1) * nll.sum(dim=1) / m


def token_weighted_bound(masked_nll, x, passes, generator):
    """A broken estimator: the same draws, but all masked tokens of all passes pooled into one mean (times L)."""
    B, S = x.shape
    nll_sum, count = torch.zeros(B, dtype=torch.float64), torch.zeros(B, dtype=torch.float64)
    for first, last in strata(S - 1, passes):
        counts = torch.randint(first, last + 1, (B,), generator=generator)
        masked = uniform_masks(counts, S - 1, generator)
        nll_sum += (masked_nll(x, masked).double() * masked).sum(dim=1)
        count += counts
    return (S - 1) * nll_sum / count


def check_unbiased(estimator, masked_nll, x, passes, draws=400, seed=0):
    """The mean of many draws equals the exact order average within 4 standard errors (per window)."""
    generator = torch.Generator().manual_seed(seed)
    samples = torch.stack([estimator(masked_nll, x, passes, generator) for _ in range(draws)])
    exact = order_average(masked_nll, x)
    se = samples.std(dim=0) / draws ** 0.5
    assert ((samples.mean(dim=0) - exact).abs() < 4 * se + 1e-9).all(), (samples.mean(dim=0), exact, se)

# -----------------------------------------------------------------------------
# the estimator


def test_strata_partition_m():
    assert strata(3) == [(1, 1), (2, 2), (3, 3)]  # L <= passes: every m its own pass
    assert strata(10, 4) == [(1, 2), (3, 5), (6, 7), (8, 10)]
    for L in (1, 15, 16, 17, 127, 1023):
        ranges = strata(L)
        assert len(ranges) == min(16, L) and ranges[0][0] == 1 and ranges[-1][1] == L
        assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))
        sizes = [last - first + 1 for first, last in ranges]
        assert max(sizes) - min(sizes) <= 1


def test_uniform_masks_have_the_drawn_counts_and_never_mask_bos():
    counts = torch.tensor([1, 3, 5, 5])
    masked = uniform_masks(counts, 5, torch.Generator().manual_seed(0))
    assert masked.shape == (4, 6) and not masked[:, 0].any() and torch.equal(masked.sum(dim=1), counts)
    # every position equally likely: position frequencies of m = 2 of 4 are 1/2 each
    masked = uniform_masks(torch.full((20000,), 2), 4, torch.Generator().manual_seed(1))
    assert (masked[:, 1:].double().mean(dim=0) - 0.5).abs().max() < 0.015


@pytest.mark.parametrize('V,L,passes', [(2, 5, 2), (2, 5, 16)])  # strata of several m; one m each
def test_expectation_is_the_average_over_orders(V, L, passes):
    """Exactly (enumerating the estimator's draws) and by sampling (the mean of 400 draws); a token-weighted mean
    over the masked tokens of the passes fails the sampled check."""
    x = with_bos(all_sequences(V, L), V)
    masked_nll = nll_from_log_probs(linear_conditionals(V, L + 1, seed=L))
    exact = order_average(masked_nll, x)
    torch.testing.assert_close(expected_estimate(per_sequence, masked_nll, x, passes), exact, rtol=1e-12, atol=1e-12)
    check_unbiased(stratified_bound, masked_nll, x, passes)
    with pytest.raises(AssertionError):
        check_unbiased(token_weighted_bound, masked_nll, x, passes)


@pytest.mark.parametrize('V,L', [(3, 3), (2, 4)])
def test_true_conditionals_give_the_entropy_and_others_more(V, L):
    """Under the true conditionals every order's chain is -log p(x), so the bound averaged over p is H(p); any other
    conditionals make each order a different normalised model, so E_p[bound] > H(p) (Gibbs)."""
    space = all_sequences(V, L)
    p = torch.rand(len(space), generator=torch.Generator().manual_seed(V * L), dtype=torch.float64) ** 3
    p = p / p.sum()
    entropy = float(-(p * p.log()).sum())
    x = with_bos(space, V)
    true = exact_conditionals(p, V, L)
    masked_nll = nll_from_log_probs(true)
    bound = order_average(masked_nll, x)
    torch.testing.assert_close(bound, -p.log(), rtol=1e-10, atol=1e-10)  # per sequence, every order
    assert float((p * bound).sum()) == pytest.approx(entropy, abs=1e-10)
    estimate = expected_estimate(per_sequence, masked_nll, x, passes=2)  # the stratified estimator's mean
    assert float((p * estimate).sum()) == pytest.approx(entropy, abs=1e-10)
    # sampled: 400 draws of the p-weighted estimate; the token-weighted mean is biased away from H(p)
    standard_errors_off = {}
    for estimator in (stratified_bound, token_weighted_bound):
        generator = torch.Generator().manual_seed(0)
        draws = torch.stack([(p * estimator(masked_nll, x, 2, generator)).sum() for _ in range(400)])
        standard_errors_off[estimator] = abs(float(draws.mean()) - entropy) / float(draws.std() / 400 ** 0.5)
    assert standard_errors_off[stratified_bound] < 4 < standard_errors_off[token_weighted_bound], standard_errors_off
    noise = linear_conditionals(V, L + 1, seed=7, scale=0.3)

    def perturbed(x, masked):
        return torch.log_softmax(true(x, masked) + noise(x, masked), dim=-1)
    assert float((p * order_average(nll_from_log_probs(perturbed), x)).sum()) > entropy + 1e-3

# -----------------------------------------------------------------------------
# the checkpoint adapters


def tiny_model(seed=0):
    torch.manual_seed(seed)
    model = Transformer(ModelConfig(vocab_size=VOCAB, block_size=17, n_layer=2, n_head=2, n_embd=32))
    with torch.no_grad():  # sharper, input-dependent predictions than the near-uniform N(0, 0.02) init
        model.wte.weight.mul_(50)
    return model.eval()


def random_windows(B, S, seed):
    x = torch.randint(0, VOCAB - 1, (B, S), generator=torch.Generator().manual_seed(seed))
    x[:, 0] = VOCAB - 1
    return x


@pytest.mark.parametrize('two_stream', [False, True])
def test_adapter_never_reads_a_masked_token(two_stream):
    model = tiny_model(seed=int(two_stream))
    log_probs = model_log_probs(model, two_stream)
    x = random_windows(4, 17, seed=0)
    generator = torch.Generator().manual_seed(0)
    for counts in (torch.tensor([1, 5, 9, 16]), torch.full((4,), 16)):  # m = L: BOS alone is visible
        masked = uniform_masks(counts, 16, generator)
        before = log_probs(x, masked)
        assert torch.allclose(before.exp().sum(-1)[masked], torch.ones(int(masked.sum())), atol=1e-5)
        changed = torch.where(masked, random_windows(4, 17, seed=1), x)
        assert not torch.equal(changed, x)
        torch.testing.assert_close(log_probs(changed, masked)[masked], before[masked], rtol=0, atol=1e-6)
        # control: a new visible token does change the predictions
        if (~masked[:, 1:]).any():
            visible_changed = torch.where(masked, x, random_windows(4, 17, seed=2))
            visible_changed[:, 0] = x[:, 0]
            assert (log_probs(visible_changed, masked)[masked] - before[masked]).abs().max() > 1e-3


@pytest.mark.parametrize('two_stream,style,bert_future',
                         [(False, 'bert', 'mask'), (True, 'masked_two_stream', 'invisible')])
def test_adapter_agrees_with_prefix_scoring(two_stream, style, bert_future):
    """Masking the suffix k+1..L is the prefix reading of evals/ppl.py: the same NLL for x_{k+1}."""
    model = tiny_model(seed=2)
    x = random_windows(3, 17, seed=3)
    prefix = score_windows(model, x, style, bert_future=bert_future)
    masked_nll = model_masked_nll(model, two_stream)
    for k in (0, 7, 15):
        masked = torch.arange(17).expand(3, 17) > k
        torch.testing.assert_close(masked_nll(x, masked)[:, k + 1], prefix[:, k], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('two_stream', [False, True])
def test_uniform_model_bounds_at_log_vocab_and_chunks_do_not_matter(two_stream):
    model = tiny_model()
    x = random_windows(5, 17, seed=4)
    with torch.no_grad():
        model.wte.weight.zero_()  # tied with the head: every logit 0
    bound = score_bound(model, x, two_stream, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(bound / 16, torch.full((5,), math.log(VOCAB), dtype=torch.float64))
    model = tiny_model(seed=5)
    one_pass = score_bound(model, x, two_stream, generator=torch.Generator().manual_seed(1))
    direct = stratified_bound(model_masked_nll(model, two_stream), x, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(one_pass, direct)
    summary = bound_summary(one_pass / 16)
    assert summary['windows'] == 5 and summary['ppl'] == pytest.approx(math.exp(summary['nll']))
    assert summary['se'] == pytest.approx(float((one_pass / 16).std() / 5 ** 0.5))


@pytest.mark.parametrize('two_stream', [False, True])
def test_mdlm_training_loss_is_an_unbiased_estimate_of_the_bound(two_stream):
    """mdlm's loss (m ~ U{1..L}, each sequence's own mean) has expectation bound / L, the any-order bound per token,
    computed here exactly over every masked set of a sequence of L = 5. The token-weighted mean, which over-weights
    heavily masked rows, does not."""
    from itertools import combinations
    from objectives import Objective
    L, copies = 5, 6000
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=16, block_size=L + 1, n_layer=1, n_head=2, n_embd=32)).eval()
    x = torch.tensor([[15, 3, 7, 1, 9, 4]])
    masked_nll = model_masked_nll(model, two_stream)
    exact = 0.0
    for m in range(1, L + 1):  # E_m uniform on 1..L of the mean NLL over a uniform masked set of size m
        sets = list(combinations(range(1, L + 1), m))
        masks = torch.zeros(len(sets), L + 1, dtype=torch.bool)
        for row, chosen in enumerate(sets):
            masks[row, list(chosen)] = True
        exact += float((masked_nll(x.expand(len(sets), -1), masks).sum(1) / m).mean()) / L
    batch = Objective('mdlm', two_stream=two_stream).batch(x.expand(copies, -1), torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits, loss = model(**batch)
    nll = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch['targets'].flatten(), reduction='none')
    per_sequence = (nll.view(batch['valid'].shape) * batch['valid']).sum(1) / batch['valid'].sum(1)
    standard_error = float(per_sequence.std()) / copies ** 0.5
    assert abs(float(loss) - exact) < 4 * standard_error, (float(loss), exact, standard_error)
    token_weighted = float((nll.view(batch['valid'].shape) * batch['valid']).sum() / batch['valid'].sum())
    assert abs(token_weighted - exact) > 4 * standard_error

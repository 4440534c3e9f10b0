"""sample.py: every objective's next-token distribution is the one eval_ppl.py scores, long contexts keep the last
tokens that fit, and a seeded run is reproducible, for BPE and byte-level checkpoints. Masked checkpoints unmask a
canvas: every position once, the prompt never, one token at a time in random order exactly the any-order model."""
import itertools
import json

import numpy as np
import pytest
import torch

from checkpoint import load_checkpoint
from conftest import make_checkpoint, run_in_process, script_error, write_corpus
from evals.any_order import nll_from_log_probs, unmask
from evals.ppl import score_windows
from test_any_order import all_sequences, linear_conditionals

pytestmark = pytest.mark.usefixtures('one_thread')  # tiny ops (conftest.one_thread)

# (objective, two_stream, prefix style): one checkpoint of each way a model reads a prefix
READINGS = [('ar', None, 'causal'), ('dar', None, 'groups'), ('mlm', None, 'bert'), ('vm', True, 'masked_two_stream')]


def byte_checkpoint(tmp_path, objective, two_stream, seed=0):
    return make_checkpoint(tmp_path / f'{objective}.pt', objective, seed=seed, tokenizer='bytes', vocab_size=320,
                           block_size=17, train_config=dict(two_stream=two_stream))[0]


@pytest.mark.parametrize('objective,two_stream,style', READINGS)
def test_next_token_distribution_is_the_scored_one(tmp_path, objective, two_stream, style):
    path = byte_checkpoint(tmp_path, objective, two_stream)
    script = run_in_process('sample.py', f'--ckpt={path}', '--max_new_tokens=2', '--prompt=To be')
    assert script['style'] == style
    model, _ = load_checkpoint(path)
    for ids in ([256], [256] + list(b'To be, or'), [256] + list(range(40, 80))):  # the last one is past block_size
        log_probs = torch.log_softmax(script['next_token_logits'](ids), dim=-1)
        context = ids[-15:] if len(ids) > 16 else ids[1:]  # BOS + the last block_size - 2 tokens + the next one
        for token in (10, 101, 255):
            window = torch.tensor([[256] + context + [token]])
            assert torch.allclose(-log_probs[token], score_windows(model, window, style)[0, -1], atol=1e-5)
    if objective == 'ar':  # a causal model's long context is exactly its last block_size - 2 tokens
        long_ids = [256] + list(range(40, 80))
        assert torch.equal(script['next_token_logits'](long_ids), script['next_token_logits']([256] + long_ids[-15:]))


def test_seeded_samples_repeat_and_stay_in_the_vocabulary(tmp_path, capsys):
    path = byte_checkpoint(tmp_path, 'ar', None)
    outputs = []
    for _ in range(2):
        run_in_process('sample.py', f'--ckpt={path}', '--prompt=ROMEO:', '--max_new_tokens=30', '--num_samples=2',
                       '--seed=7', '--top_k=20')
        outputs.append(capsys.readouterr().out)
    samples = outputs[0].split('---------- sample ')[1:]
    assert outputs[0] == outputs[1] and len(samples) == 2
    assert all(sample.split('\n', 1)[1].startswith('ROMEO:') for sample in samples)  # each continues the prompt
    run_in_process('sample.py', f'--ckpt={path}', '--prompt=ROMEO:', '--max_new_tokens=30', '--seed=8')
    assert capsys.readouterr().out != outputs[0]
    # padding rows of the head (257..319) are never drawn, even when the model puts all its mass there
    script = run_in_process('sample.py', f'--ckpt={path}', '--max_new_tokens=1')
    logits = torch.full((320,), -50.0)
    logits[300] = 50.0
    logits[65] = 0.0
    assert {script['sample_next'](logits) for _ in range(20)} == {65}


def test_bad_input_is_one_line(tmp_path):
    assert '--ckpt=' in script_error('sample.py')
    image, _ = make_checkpoint(tmp_path / 'image.pt', 'vm', input_kind='patches', train_config=dict(two_stream=True))
    message = script_error('sample.py', f'--ckpt={image}')
    assert image in message and "input_kind='patches'" in message, message
    path = byte_checkpoint(tmp_path, 'ar', None)
    message = script_error('sample.py', f'--ckpt={path}', '--temperature=0.0')
    assert "'temperature'" in message and '(0, inf)' in message, message
    message = script_error('sample.py', f'--ckpt={tmp_path / "missing.pt"}')
    assert str(tmp_path / 'missing.pt') in message and '--ckpt' in message, message

# -----------------------------------------------------------------------------
# unmasking (evals/any_order.unmask): on conditionals with known values, then the script on masked checkpoints


def test_unmasking_fills_each_masked_position_once_and_never_the_prompt():
    V, S = 5, 12
    log_probs = linear_conditionals(V, S, seed=0)
    canvas = torch.zeros(6, S, dtype=torch.long)
    canvas[:, 0], canvas[:, 1:4] = V, torch.tensor([1, 4, 2])  # BOS, then a prompt of 3 tokens
    masked = torch.zeros(6, S, dtype=torch.bool)
    masked[:, 4:] = True
    for k, order in ((1, 'random'), (3, 'random'), (3, 'confident'), (8, 'random'), (100, 'confident')):
        steps = []

        def record(step, filled, still_masked):
            steps.append((step, filled.clone(), still_masked.clone()))
        out, passes = unmask(log_probs, canvas, masked, k, order, torch.Generator().manual_seed(k), on_step=record)
        assert len(steps) == -(-8 // k) and [s[0] for s in steps] == list(range(1, len(steps) + 1))
        assert passes.tolist() == [len(steps)] * 6  # one forward pass a step
        assert torch.equal(out[:, :4], canvas[:, :4]) and torch.equal(out, steps[-1][1]) and not steps[-1][2].any()
        before_canvas, before_masked = canvas, masked
        for _, filled, still_masked in steps:
            newly = before_masked & ~still_masked
            assert not (still_masked & ~before_masked).any()  # a filled position is never masked again
            assert torch.equal(newly.sum(1), torch.clamp(before_masked.sum(1), max=k))
            assert torch.equal(filled[~before_masked], before_canvas[~before_masked])  # filled tokens stay
            before_canvas, before_masked = filled, still_masked
        assert ((out[:, 4:] >= 0) & (out[:, 4:] < V)).all()


def test_confident_order_fills_the_surest_positions_first():
    """A stub sure of positions 6 and 2 (one token with almost all the mass), unsure of the rest: the first step of
    two picks exactly those, and with fewer masked, again the surest left."""
    V, S = 4, 8
    sureness = torch.tensor([0, 1, 9, 3, 2, 4, 10, 5], dtype=torch.float64)  # peak logit by position

    def log_probs(x, masked):
        logits = torch.zeros(*x.shape, V, dtype=torch.float64)
        logits[..., 1] = sureness
        return torch.log_softmax(logits, dim=-1)
    canvas = torch.zeros(3, S, dtype=torch.long)
    masked = torch.ones(3, S, dtype=torch.bool)
    masked[:, 0] = False
    picked = []
    unmask(log_probs, canvas, masked, 2, 'confident', torch.Generator().manual_seed(0),
           on_step=lambda step, filled, still: picked.append(set((~still[0]).nonzero().view(-1).tolist())))
    assert picked[0] == {0, 6, 2} and picked[1] == {0, 6, 2, 7, 5} and picked[2] == {0, 6, 2, 7, 5, 3, 4}
    assert picked[3] == set(range(S))


def test_one_token_at_a_time_in_random_order_samples_the_any_order_model():
    """k = 1, random order, temperature 1: the frequencies of 20,000 samples match the mixture over orders
    (1/L!) sum_sigma prod_k q(x_sigma(k) | x_sigma(<k)) by a chi-square test, and not the left-to-right model alone."""
    V, L, n = 2, 3, 20000
    log_probs = linear_conditionals(V, L + 1, seed=3, scale=1.5)
    space = all_sequences(V, L)
    x = torch.cat([torch.full((len(space), 1), V), space], dim=1)
    masked_nll = nll_from_log_probs(log_probs)

    def chain(order):  # q_sigma(x) for every x of the space
        total = torch.zeros(len(space), dtype=torch.float64)
        for k in range(L):
            masked = torch.zeros_like(x, dtype=torch.bool)
            masked[:, list(order[k:])] = True
            total += masked_nll(x, masked)[:, order[k]]
        return torch.exp(-total)
    orders = list(itertools.permutations(range(1, L + 1)))
    mixture = sum(chain(order) for order in orders) / len(orders)
    left_to_right = chain(tuple(range(1, L + 1)))
    assert float(mixture.sum()) == pytest.approx(1.0) and (mixture - left_to_right).abs().max() > 0.02
    canvas = torch.zeros(n, L + 1, dtype=torch.long)
    canvas[:, 0] = V
    masked = torch.ones_like(canvas, dtype=torch.bool)
    masked[:, 0] = False
    samples, _ = unmask(log_probs, canvas, masked, 1, 'random', torch.Generator().manual_seed(0))
    codes = (samples[:, 1:] * V ** torch.arange(L - 1, -1, -1)).sum(dim=1)  # row index in all_sequences
    observed = torch.bincount(codes, minlength=len(space)).double()

    def chi_square(p):
        return float(((observed - n * p) ** 2 / (n * p)).sum())
    assert chi_square(mixture) < 24.3  # 7 degrees of freedom: p = 0.001
    assert chi_square(left_to_right) > 100


@pytest.mark.parametrize('objective,two_stream', [('mlm', None), ('vm', True)])
def test_sample_py_unmasks_masked_checkpoints(tmp_path, capsys, objective, two_stream):
    path = byte_checkpoint(tmp_path, objective, two_stream)
    script = run_in_process('sample.py', f'--ckpt={path}', '--prompt=To be', '--max_new_tokens=8', '--num_samples=2',
                            '--show_steps=2', '--seed=3', '--order=random')
    out = capsys.readouterr().out
    assert script['order'] == 'random'
    steps = [line for line in out.splitlines() if line.startswith('step')]
    assert len(steps) == 2 * 4  # 8 positions, one a step, shown every 2 steps, 2 samples
    first = steps[0].split(' | ')[-1]
    assert first.startswith('To be') and first.count('_') == 6 and steps[-1].split(' | ')[-1].count('_') == 0
    samples = out.split('---------- sample ')[1:]
    assert len(samples) == 2 and all(sample.split('\n', 1)[1].startswith('To be') for sample in samples)
    # confident, every position in one step; seeded runs repeat
    for _ in range(2):
        run_in_process('sample.py', f'--ckpt={path}', '--max_new_tokens=40', '--tokens_per_step=100',
                       '--order=confident', '--show_steps=1')
        outputs = capsys.readouterr().out
        assert outputs.count('step') == 1 and '_' not in outputs.split('---------- sample 1')[0].split(' | ')[-1]
    # the canvas is the model's window: 16 positions at block_size 17, prompt included
    script = run_in_process('sample.py', f'--ckpt={path}', '--prompt=To be', '--max_new_tokens=100')
    assert script['order'] == 'random'  # the default for masked checkpoints
    text = capsys.readouterr().out.split('---------- sample 1\n')[1]
    assert text.startswith('To be') and len(text.rstrip('\n')) <= 16  # a byte decodes to at most one character


def test_unmasking_draws_ordinary_tokens_only(tmp_path, monkeypatch):
    """The printed text cannot show a leak (a byte tokenizer's decode drops ids >= 256), so this reads the sampled
    ids. Conditionals that put nearly all their mass on BOS (256) and on a padding row of the head (300) still fill
    every position with a byte: BOS would end the document inside the canvas, a padding id is no token at all."""
    import evals.any_order

    def model_log_probs(model, two_stream, autocast):  # in place of the checkpoint's conditionals
        def log_probs(canvas, masked):
            logits = torch.zeros(*canvas.shape, model.config.vocab_size)
            logits[..., [256, 300]] = 30.0
            return torch.log_softmax(logits, dim=-1)
        return log_probs
    monkeypatch.setattr(evals.any_order, 'model_log_probs', model_log_probs)
    path = byte_checkpoint(tmp_path, 'vm', True)
    script = run_in_process('sample.py', f'--ckpt={path}', '--prompt=To be', '--max_new_tokens=10', '--num_samples=4')
    start = script['start']
    filled, _ = script['unmask_samples']()
    assert filled.shape == (4, len(start) + 10) and filled[:, :len(start)].tolist() == [start] * 4
    assert ((filled[:, len(start):] >= 0) & (filled[:, len(start):] < 256)).all(), filled  # bytes: ids 0..255


def test_unmasking_needs_a_masked_checkpoint(tmp_path):
    path = byte_checkpoint(tmp_path, 'ar', None)
    message = script_error('sample.py', f'--ckpt={path}', '--order=random')  # flag, checkpoint, fix
    assert all(key in message for key in ('--order=random', path, '--order=left_to_right')), message
    message = script_error('sample.py', f'--ckpt={path}', '--order=sideways')  # value, choices
    assert "'sideways'" in message and "'left_to_right'" in message, message
    assert script_error('sample.py', f'--ckpt={path}', '--tokens_per_step=0')

# -----------------------------------------------------------------------------
# the sampler's options: greedy, semi-autoregressive blocks, remasking, forward passes


def prompted_canvas(B, S, V, prompt_lengths):
    """BOS (id V), a prompt of random ids of each row's length, the rest masked."""
    canvas = torch.randint(0, V, (B, S), generator=torch.Generator().manual_seed(1))
    canvas[:, 0] = V
    masked = torch.arange(S) > torch.tensor(prompt_lengths)[:, None]
    return canvas.masked_fill(masked, 0), masked


def steps_of(log_probs, canvas, masked, k, order, seed=0, **options):
    """-> (canvas, passes) and [(canvas, masked)] before the first and after every step."""
    states = [(canvas.clone(), masked.clone())]
    out = unmask(log_probs, canvas, masked, k, order, torch.Generator().manual_seed(seed),
                 on_step=lambda step, filled, still: states.append((filled.clone(), still.clone())), **options)
    return out, states


@pytest.mark.parametrize('order', ['random', 'confident'])
def test_a_filled_token_is_drawn_from_the_tempered_top_k_of_the_allowed_ids(order):
    """With blocks and remasking off, a masked position gets a token drawn from softmax(logits / temperature) over
    the allowed ids among the top k: 20,000 rows, each with its last position masked, against those probabilities."""
    V, S, B, temperature, top_k = 6, 14, 20000, 0.7, 3
    log_probs = linear_conditionals(V, S, seed=5, scale=0.3)  # flat enough that each of the three options shows
    canvas, masked = (t.expand(B, S) for t in prompted_canvas(1, S, V, [S - 2]))  # only position S - 1 is masked
    allowed = torch.arange(V) != 2
    logits = log_probs(canvas[:1], masked[:1])[0, -1].masked_fill(~allowed, -float('inf'))
    kept = logits.topk(top_k).indices
    expected = torch.zeros(V, dtype=torch.float64).index_put((kept,), torch.softmax(logits[kept] / temperature, 0))
    out, passes = unmask(log_probs, canvas, masked, 1, order, torch.Generator().manual_seed(0), temperature, top_k,
                         allowed, remask=0.0, block_length=0)
    assert passes.eq(1).all() and torch.equal(out[:, :-1], canvas[:, :-1])
    drawn = torch.bincount(out[:, -1], minlength=V) / B
    assert (drawn - expected).abs().max() < 0.015, (drawn, expected)  # about 4 standard errors at p = 1/2


def test_top_k_one_and_a_tiny_temperature_pick_the_argmax(tmp_path):
    V, S = 7, 12
    log_probs = linear_conditionals(V, S, seed=2)
    canvas, masked = prompted_canvas(4, S, V, [2] * 4)
    for options in (dict(top_k=1), dict(temperature=1e-4)):
        for order, k in (('random', 1), ('confident', 3)):
            _, states = steps_of(log_probs, canvas, masked, k, order, **options)
            for (before, still_before), (after, still_after) in zip(states, states[1:]):
                newly = still_before & ~still_after
                assert newly.any()
                assert torch.equal(after[newly], log_probs(before, still_before).argmax(dim=-1)[newly])
    # left to right: sample.py's next token with --top_k=1 is the argmax of the logits
    script = run_in_process('sample.py', f'--ckpt={byte_checkpoint(tmp_path, "ar", None)}', '--max_new_tokens=1',
                            '--top_k=1')
    logits = torch.randn(320, generator=torch.Generator().manual_seed(0))
    assert {script['sample_next'](logits) for _ in range(5)} == {int(logits[:257].argmax())}


@pytest.mark.parametrize('order', ['random', 'confident'])
def test_blocks_fill_left_to_right(order):
    """Blocks of 4 from each row's first masked position (rows with prompts of 1 and 4 tokens), 3 a step: every step
    fills positions of one block, the leftmost with a masked position, and each block takes ceil(4 / 3) = 2 steps
    (the last, of 3 positions, 1)."""
    V, S, b, k = 5, 16, 4, 3
    log_probs = linear_conditionals(V, S, seed=4)
    canvas, masked = prompted_canvas(2, S, V, [1, 4])
    (out, passes), states = steps_of(log_probs, canvas, masked, k, order, block_length=b)
    for row, first in ((0, 2), (1, 5)):
        block = (torch.arange(S) - first).div(b, rounding_mode='floor')
        for (_, still_before), (_, still_after) in zip(states, states[1:]):
            newly = (still_before[row] & ~still_after[row]).nonzero().view(-1)
            if len(newly):
                leftmost = int(block[still_before[row]].min())
                assert set(block[newly].tolist()) == {leftmost}  # never a position of a later block
    # row 0: 14 masked = blocks of 4, 4, 4, 2 -> 2 + 2 + 2 + 1 steps; row 1: 11 = 4, 4, 3 -> 2 + 2 + 1
    assert passes.tolist() == [7, 5] and not states[-1][1].any()
    assert torch.equal(out[~masked], canvas[~masked])


def test_remasking_masks_again_and_still_fills_every_position_on_schedule():
    V, S, k = 5, 13, 2
    log_probs = linear_conditionals(V, S, seed=6)
    canvas, masked = prompted_canvas(6, S, V, [2] * 6)
    generated = masked.clone()
    for order, b in (('random', 0), ('confident', 0), ('random', 5)):
        (out, passes), states = steps_of(log_probs, canvas, masked, k, order, remask=0.5, block_length=b)
        _, plain = steps_of(log_probs, canvas, masked, k, order, block_length=b)
        again = [still_after & ~still_before for (_, still_before), (_, still_after) in zip(states, states[1:])]
        assert any(a.any() for a in again)  # some filled token was masked again
        assert all(not (a & ~generated).any() for a in again)  # never BOS or the prompt
        # the same number masked after every step as without remasking: the same steps and forward passes
        assert [int(still.sum()) for _, still in states] == [int(still.sum()) for _, still in plain]
        assert not states[-1][1].any() and passes.tolist() == [len(plain) - 1] * 6
        assert torch.equal(out[:, :3], canvas[:, :3]) and ((out >= 0) & (out <= V)).all()


def test_a_row_with_nothing_left_to_fill_gets_no_forward_pass():
    """Rows with 10, 3 and 0 masked positions, 2 a step: 5, 2 and 0 passes, and only unfinished rows reach the
    conditionals; the prompts, and the finished row whole, come back as they were."""
    V, S, k = 5, 13, 2
    linear = linear_conditionals(V, S, seed=8)
    rows_seen = []

    def log_probs(x, masked):
        rows_seen.append(len(x))
        return linear(x, masked)
    canvas, masked = prompted_canvas(3, S, V, [2, 9, 12])
    for order in ('random', 'confident'):
        rows_seen.clear()
        out, passes = unmask(log_probs, canvas, masked, k, order, torch.Generator().manual_seed(3))
        assert passes.tolist() == [5, 2, 0] and rows_seen == [2, 2, 1, 1, 1]
        assert torch.equal(out[~masked], canvas[~masked])  # the prompts, and the finished row whole


def test_sample_py_reports_forward_passes_and_takes_the_options(tmp_path, capsys):
    path = byte_checkpoint(tmp_path, 'vm', True)
    for options, passes in ((('--tokens_per_step=4',), 4), (('--tokens_per_step=4', '--block_length=6'), 5),
                            (('--tokens_per_step=4', '--remask=0.3'), 4)):
        script = run_in_process('sample.py', f'--ckpt={path}', '--max_new_tokens=16', '--num_samples=2', *options)
        assert script['forward_passes'] == passes and f"{passes} forward passes per sample" in capsys.readouterr().err
        assert not any(len(ids) != 17 for ids in script['sequences'])
    script = run_in_process('sample.py', f'--ckpt={byte_checkpoint(tmp_path, "ar", None)}', '--max_new_tokens=5',
                            '--num_samples=2')
    assert script['passes'] == [5, 5] and '5 forward passes per sample' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_in_process('sample.py', '--help')
    shown = capsys.readouterr().out
    assert all(f"--{key}=" in shown for key in ('temperature', 'top_k', 'remask', 'block_length', 'judge'))
    message = script_error('sample.py', f'--ckpt={tmp_path / "ar.pt"}', '--block_length=8')
    assert '--block_length' in message and str(tmp_path / 'ar.pt') in message, message
    message = script_error('sample.py', f'--ckpt={path}', '--remask=1.5')
    assert "'remask'" in message and '[0, 1]' in message, message

# -----------------------------------------------------------------------------
# --judge: the samples scored by an ar checkpoint (evals/sample_quality.py)


def test_the_judge_scores_held_out_text_as_eval_ppl_does(tmp_path, capsys):
    rng = np.random.default_rng(0)
    corpus = write_corpus(tmp_path / 'corpus', rng.integers(97, 123, 3000), rng.integers(97, 123, 2000), 'bytes')
    judge = byte_checkpoint(tmp_path, 'ar', None, seed=1)
    sampled = byte_checkpoint(tmp_path, 'vm', True)
    out = tmp_path / 'quality.json'
    run_in_process('sample.py', f'--ckpt={sampled}', '--max_new_tokens=16', '--num_samples=3', f'--judge={judge}',
                   f'--judge_dataset={corpus}', '--judge_tokens=480', f'--judge_out={out}', '--temperature=1.0')
    assert 'held-out text' in capsys.readouterr().out
    scores = json.load(open(out))
    run_in_process('eval_ppl.py', f'--ckpt={judge}', f'--dataset={corpus}', '--block_size=17', '--max_tokens=480',
                   "--baseline_dataset=''", f'--out_dir={tmp_path / "ppl"}', '--progress=False')
    summary = json.load(open(tmp_path / 'ppl' / 'summary.json'))
    assert summary['windows'] == scores['held_out_windows'] == 30
    assert scores['held_out_nll'] == pytest.approx(summary['checkpoints'][0]['nll'], rel=1e-6)
    assert scores['samples'] == 3 and scores['sampled_tokens'] == 48 and scores['forward_passes'] == 16
    assert scores['order'] == 'random' and scores['judge_dataset'] == corpus


def test_the_judge_must_be_an_exact_likelihood_that_fits_the_samples(tmp_path):
    sampled = byte_checkpoint(tmp_path, 'vm', True)
    masked_judge = make_checkpoint(tmp_path / 'mdlm.pt', 'mdlm', tokenizer='bytes', vocab_size=320, block_size=17,
                                   train_config=dict(two_stream=True))[0]
    message = script_error('sample.py', f'--ckpt={sampled}', f'--judge={masked_judge}')
    assert masked_judge in message and '--judge=' in message, message
    short_judge = make_checkpoint(tmp_path / 'short.pt', 'ar', tokenizer='bytes', vocab_size=320, block_size=9)[0]
    message = script_error('sample.py', f'--ckpt={sampled}', f'--judge={short_judge}',
                           '--max_new_tokens=16')
    assert '--max_new_tokens' in message, message
    bpe_judge = make_checkpoint(tmp_path / 'bpe.pt', 'ar')[0]
    message = script_error('sample.py', f'--ckpt={sampled}', f'--judge={bpe_judge}')  # and tokens
    assert all(key in message for key in (bpe_judge, 'gpt2', 'bytes')), message
    message = script_error('sample.py', f'--ckpt={sampled}', f'--judge_out={tmp_path / "q.json"}')
    assert '--judge_out' in message and '--judge=' in message, message


def test_unmasking_options_are_refused_left_to_right(tmp_path):
    """Options that shape unmasking do nothing left to right: each is refused there, not ignored."""
    ar = byte_checkpoint(tmp_path, 'ar', None)
    vm = byte_checkpoint(tmp_path, 'vm', True)
    for flag in ('--tokens_per_step=4', '--show_steps=2', '--block_length=8', '--remask=0.1'):
        for args in ([f'--ckpt={ar}'], [f'--ckpt={vm}', '--order=left_to_right']):
            message = script_error('sample.py', *args, flag)  # the flag, and the checkpoint
            assert flag.split('=')[0] in message and args[0][len('--ckpt='):] in message, message


def test_the_judge_is_checked_with_its_corpus_and_output_before_any_sampling(tmp_path, capsys):
    """A judge trained on another corpus, held-out text that is not prepared, and a --judge_out that cannot be
    written each stop with one line before a sample is drawn."""
    rng = np.random.default_rng(0)
    corpus = write_corpus(tmp_path / 'corpus', rng.integers(97, 123, 3000), rng.integers(97, 123, 2000), 'bytes')
    sampled = byte_checkpoint(tmp_path, 'vm', True)
    judge = byte_checkpoint(tmp_path, 'ar', None, seed=1)
    elsewhere = make_checkpoint(tmp_path / 'elsewhere.pt', 'ar', tokenizer='bytes', vocab_size=320, block_size=17,
                                train_config=dict(dataset='other_corpus'))[0]
    message = script_error('sample.py', f'--ckpt={sampled}', f'--judge={elsewhere}',
                           f'--judge_dataset={corpus}')  # the judge, and its corpus
    assert elsewhere in message and 'other_corpus' in message, message
    message = script_error('sample.py', f'--ckpt={sampled}', f'--judge={judge}', '--judge_dataset=nope')
    assert all(key in message for key in ('nope', 'data/prepare.py', '--tokenizer=bytes')), message
    (tmp_path / 'a_file').write_text('')
    for judge_out, fix in ((tmp_path / 'a_file' / 'quality.json', str(tmp_path / 'a_file')),
                           (tmp_path, f"--judge_out={tmp_path / 'quality.json'}")):
        message = script_error('sample.py', f'--ckpt={sampled}', '--max_new_tokens=16',
                               f'--judge={judge}', f'--judge_dataset={corpus}',
                               f'--judge_out={judge_out}')
        assert f'--judge_out={judge_out}' in message and fix in message, message
    assert '---------- sample' not in capsys.readouterr().out
    # one sample has no standard error: none is printed
    run_in_process('sample.py', f'--ckpt={sampled}', '--max_new_tokens=16', f'--judge={judge}',
                   f'--judge_dataset={corpus}', '--judge_tokens=160')
    scores = capsys.readouterr().out.splitlines()[-1]
    assert scores.startswith('judge ') and 'nan' not in scores and 'n=1' in scores, scores


def test_auto_samples_with_sdpa_on_every_device(tmp_path, monkeypatch):
    """Left to right the window grows by a token a step, and flex (the training backend on a GPU) compiles again for
    every length, eager after 8: sample.py's auto means sdpa wherever it runs. pick_attn_backend answers here as it
    does on a GPU (auto -> flex); an explicit --attn_backend is kept."""
    import devices
    monkeypatch.setattr(devices, 'pick_attn_backend', lambda backend, device: 'flex' if backend == 'auto' else backend)
    path = byte_checkpoint(tmp_path, 'ar', None)
    assert run_in_process('sample.py', f'--ckpt={path}', '--max_new_tokens=2')['model'].config.attn_backend == 'sdpa'
    chosen = run_in_process('sample.py', f'--ckpt={path}', '--max_new_tokens=2', '--attn_backend=flex')
    assert chosen['model'].config.attn_backend == 'flex'

"""eval_ppl.py and evals/ppl.py: next-token NLL from a prefix only (Eq. 2), by conditioning length (Fig. 3)."""
import csv
import dataclasses
import json
import math
import os
import shlex

import numpy as np
import pytest
import torch

from checkpoint import save_checkpoint
from conftest import (ROOT, make_checkpoint, random_tokens, run_in_process, run_script, script_error, usage_error,
                      write_corpus)
from data.text import BOS
from evals.ppl import bucket_table, gather_windows, prefix_style as evals_prefix_style, score_windows, window_starts
from objectives import Objective

VOCAB = 64                # small vocabularies keep the library tests fast

# the four ways a model reads a prefix, with an objective (and two_stream setting) that needs each
STYLES = [('causal', 'ar', None), ('groups', 'dar', None), ('bert', 'mlm', None), ('masked_two_stream', 'vm', True)]
# ... and each with the positions after the target as it reads them: one-stream BERT also with all of them [MASK]
FUTURES = [(*style, 'invisible') for style in STYLES] + [('bert', 'mlm', None, 'mask')]


pytestmark = pytest.mark.usefixtures('one_thread')  # tiny ops (conftest.one_thread)


def small_model(tmp_path, objective, seed=0, **kwargs):
    _, model = make_checkpoint(tmp_path / f'{objective}.pt', objective, seed=seed, vocab_size=VOCAB, block_size=17,
                               **kwargs)
    with torch.no_grad():  # sharper, input-dependent predictions than the near-uniform N(0, 0.02) init
        model.wte.weight.mul_(50)
    return model.eval()


def random_windows(n, S, seed=0):
    return random_tokens(n, S, VOCAB, seed)


def reference_nll(model, window, style):
    """A plain loop: one forward per prefix length k, on BOS + x_1..x_k alone (nothing after x_k is in the input)."""
    out = []
    for k in range(len(window) - 1):
        prefix, pos = window[None, :k + 1], torch.arange(k + 1)[None]
        target_pos = torch.tensor([[k + 1]])
        if style == 'causal':
            logits, _ = model(prefix, pos, pos, pred_index=torch.tensor([[k]]), causal=True)
        elif style == 'groups':  # prefix content causal (groups of one); the query at k+1 sees all of it
            logits, _ = model(prefix, pos, pos, query_pos=target_pos, query_groups=target_pos)
        elif style == 'bert':  # BOS + prefix + [MASK] (the token under the mask is irrelevant: 0), bidirectional
            content, pos = torch.cat([prefix, torch.zeros(1, 1, dtype=torch.long)], 1), torch.arange(k + 2)[None]
            logits, _ = model(content, pos, torch.zeros_like(pos), content_masked=pos == k + 1, pred_index=target_pos)
        else:  # two-stream masked: prefix content bidirectional (group 0), the query at k+1 in group 1
            logits, _ = model(prefix, pos, torch.zeros_like(pos), query_pos=target_pos,
                              query_groups=torch.ones_like(target_pos))
        out.append(-torch.log_softmax(logits[0, -1].float(), dim=-1)[window[k + 1]])
    return torch.stack(out)


def masked_future_nll(model, window):
    """bert_future='mask' as a plain loop: the whole window, untrimmed, with [MASK] at k+1 and every later position."""
    S = len(window)
    pos = torch.arange(S)[None]
    out = []
    for k in range(S - 1):
        logits, _ = model(window[None], pos, torch.zeros_like(pos), content_masked=pos > k,
                          pred_index=torch.tensor([[k + 1]]))
        out.append(-torch.log_softmax(logits[0, -1].float(), dim=-1)[window[k + 1]])
    return torch.stack(out)

# -----------------------------------------------------------------------------
# 1. batched scoring equals one forward per prefix


@pytest.mark.parametrize('style,objective,two_stream', STYLES)
def test_batched_scores_equal_one_forward_per_prefix(tmp_path, style, objective, two_stream):
    assert prefix_style(dict(objective=objective, two_stream=two_stream)) == style
    model = small_model(tmp_path, objective)
    windows = random_windows(3, 17)
    with torch.no_grad():
        expected = torch.stack([reference_nll(model, w, style) for w in windows])
    for rows_per_pass in (7, 10 ** 6):  # chunked (and, for masked styles, trimmed) passes, and one pass
        nll = score_windows(model, windows, style, rows_per_pass=rows_per_pass)
        assert nll.shape == (3, 16)
        torch.testing.assert_close(nll, expected, rtol=1e-5, atol=1e-5)


def prefix_style(train_config):
    return evals_prefix_style(Objective.from_config(train_config))


def test_eval_style_follows_the_training_config():
    assert prefix_style(dict(objective='ar', two_stream=None, random_order=True)) == 'groups'  # XLNet: two-stream
    assert prefix_style(dict(objective='ar', two_stream=True)) == 'groups'
    assert prefix_style(dict(objective='gvp', two_stream=None)) == 'groups'
    assert prefix_style(dict(objective='mlm', two_stream=True)) == 'masked_two_stream'
    assert prefix_style(dict(objective='vm', two_stream=False)) == 'bert'
    with pytest.raises(ValueError, match='clm'):
        prefix_style(dict(objective='clm'))

# -----------------------------------------------------------------------------
# 2. a prediction at k+1 depends on x_1..x_k only


@pytest.mark.parametrize('style,objective,two_stream,bert_future', FUTURES)
def test_prediction_ignores_the_target_and_everything_after(tmp_path, style, objective, two_stream, bert_future):
    """Windows share x_0..x_k; x_{k+1} runs over the whole vocabulary and the tokens after it are random. If the
    prediction of x_{k+1} saw nothing past x_k, these are the probabilities of one distribution: they sum to 1,
    and the scores of earlier targets are identical across the windows."""
    model = small_model(tmp_path, objective, seed=1)
    for k in (0, 6, 15):
        windows = random_windows(VOCAB, 17, seed=k)
        windows[:, :k + 1] = windows[0, :k + 1]
        windows[:, k + 1] = torch.arange(VOCAB)
        nll = score_windows(model, windows, style, rows_per_pass=100, bert_future=bert_future)
        assert abs(float(torch.exp(-nll[:, k].double()).sum()) - 1) < 1e-5
        torch.testing.assert_close(nll[:, :k], nll[:1, :k].expand(VOCAB, k), rtol=0, atol=1e-5)
    # control: BERT without the [MASK] (reading the target position of the full window) fails this check
    with torch.no_grad():
        leaky_logits = model.lm_head(model.features(windows))[:, k + 1]
    leaky = torch.log_softmax(leaky_logits.double(), dim=-1)[torch.arange(VOCAB), windows[:, k + 1]]
    assert abs(float(torch.exp(leaky).sum()) - 1) > 1e-3


def test_masked_future_sees_how_many_positions_follow_but_none_of_their_tokens(tmp_path):
    """bert_future='mask' equals an untrimmed forward per row (no trimming leak), ignores the tokens after the
    target, and differs from 'invisible' wherever positions follow the target; 'invisible' stays the default."""
    model = small_model(tmp_path, 'mlm', seed=4)
    windows = random_windows(3, 17, seed=4)
    with torch.no_grad():
        expected = torch.stack([masked_future_nll(model, w) for w in windows])
        invisible = torch.stack([reference_nll(model, w, 'bert') for w in windows])
    for rows_per_pass in (7, 10 ** 6):
        torch.testing.assert_close(score_windows(model, windows, 'bert', rows_per_pass, bert_future='mask'),
                                   expected, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(score_windows(model, windows, 'bert', rows_per_pass, bert_future='invisible'),
                                   score_windows(model, windows, 'bert', rows_per_pass), rtol=0, atol=0)
    torch.testing.assert_close(score_windows(model, windows, 'bert'), invisible, rtol=1e-5, atol=1e-5)
    for k in (0, 6, 14):  # new tokens after the target: the same scores at k and before
        changed = windows.clone()
        changed[:, k + 2:] = random_windows(3, 17, seed=10 + k)[:, k + 2:]
        changed_nll = score_windows(model, changed, 'bert', 7, bert_future='mask')
        torch.testing.assert_close(changed_nll[:, :k + 1], expected[:, :k + 1], rtol=1e-5, atol=1e-5)
    # the last target has nothing after it, so both readings agree there, and only there
    torch.testing.assert_close(expected[:, -1], invisible[:, -1], rtol=1e-5, atol=1e-5)
    gap = (expected - invisible).abs()
    assert (gap[:, :-1] > 1e-4).all() and gap.mean() > 0.1

# -----------------------------------------------------------------------------
# 3. uniform logits score ppl = vocab size; buckets recombine to the total


def test_uniform_model_scores_the_vocab_size_and_buckets_add_up(tmp_path, tiny_corpus, capsys):
    uniform_path, _ = make_checkpoint(tmp_path / 'uniform.pt', 'ar', seed=0)
    state = torch.load(uniform_path, weights_only=True)
    state['model']['wte.weight'].zero_()  # tied with lm_head: every logit is exactly 0
    save_checkpoint(state, uniform_path)
    ar_path, ar_model = make_checkpoint(tmp_path / 'ar.pt', 'ar', seed=3)
    out = tmp_path / 'out'
    run_in_process('eval_ppl.py', f'--ckpt={uniform_path}', f'--ckpt={ar_path}', '--names=uniform', '--names=ar',
                   f'--dataset={tiny_corpus}', '--max_tokens=640', '--progress=False', f'--out_dir={out}')
    stdout = capsys.readouterr().out
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['windows'] == 20 and summary['targets'] == 640
    uniform, ar = summary['checkpoints']
    # uniform over the model's padded vocabulary: 50304 (GPT-2's 50257 padded to a multiple of 64), not 50257
    assert uniform['ppl'] == pytest.approx(50304, rel=1e-6)
    assert all(b['ppl'] == pytest.approx(50304, rel=1e-6) for b in uniform['buckets'])
    for run in (uniform, ar):
        buckets = run['buckets']
        assert [b['k_first'] for b in buckets] == [0, 1, 2, 4, 8, 16]  # edges past k = 31 are empty and dropped
        assert buckets[-1]['k_last'] == 31 and sum(b['targets'] for b in buckets) == run['targets'] == 640
        assert sum(b['nll_sum'] for b in buckets) == pytest.approx(run['nll'] * run['targets'], rel=1e-9)
        assert sum(b['nll'] * b['targets'] for b in buckets) / 640 == pytest.approx(run['nll'], rel=1e-9)
    # the script's ppl is exp(mean NLL) over exactly these windows
    tokens = np.fromfile(os.path.join(tiny_corpus, 'val.bin'), dtype=np.uint16)
    windows = gather_windows(tokens, window_starts(len(tokens), 33, 640), 33, BOS)
    nll = score_windows(ar_model.eval(), windows, 'causal')
    assert ar['ppl'] == pytest.approx(math.exp(float(nll.double().mean())), rel=1e-5)
    with open(out / 'ppl_by_k.csv') as f:
        rows = list(csv.reader(f))[1:]
    assert {r[0] for r in rows} == {'uniform', 'ar'} and len(rows) == 12
    assert (out / 'ppl_by_k.png').stat().st_size > 0
    assert 'uniform' in stdout and 'k=16-31' in stdout


def test_buckets_partition_k():
    nll_sum, count = np.arange(10, dtype=float), np.full(10, 3)
    table = bucket_table(nll_sum, count, (0, 1, 4, 32))
    assert [(b['k_first'], b['k_last']) for b in table] == [(0, 0), (1, 3), (4, 9)]
    assert sum(b['nll_sum'] for b in table) == nll_sum.sum() and table[1]['nll'] == pytest.approx(6 / 9)
    for edges in [(1, 2, 4), (0, 4, 2), (0, 0.5), ()]:  # must start at 0 and increase
        with pytest.raises(ValueError, match='--buckets='):
            bucket_table(nll_sum, count, edges)


def test_windows_tile_the_split_or_spread_over_it():
    tokens = np.arange(1000, dtype=np.uint16) % 50000
    all_windows = gather_windows(tokens, window_starts(len(tokens), 17, 0), 17, BOS)
    assert all_windows.shape == (1000 // 16, 17) and (all_windows[:, 0] == BOS).all()
    # consecutive and non-overlapping, in order; the last partial span left out
    assert all_windows[:, 1:].flatten().tolist() == tokens[:62 * 16].tolist()
    starts = window_starts(len(tokens), 17, 160)  # 10 of the 62 windows, evenly spaced
    assert len(starts) == 10 and starts[0] == 0 and (np.diff(starts) >= 6 * 16).all() and starts[-1] > 800

# -----------------------------------------------------------------------------
# 4. bad input: one clear line each


def bad_vocab_corpus(tmp_path):
    folder = write_corpus(tmp_path / 'other_vocab', [1] * 100, [1] * 100)
    meta = json.loads(open(os.path.join(folder, 'meta.json')).read())
    with open(os.path.join(folder, 'meta.json'), 'w') as f:
        json.dump({**meta, 'vocab_size': 32000}, f)
    return folder


@pytest.mark.parametrize('case,keys', [  # what each line names: the file, the flag, the value given
    ('missing', ('{tmp_path}/nope.pt', '--ckpt')),
    ('not_a_checkpoint', ('{tmp_path}/other.pt', 'model_config')),
    ('meta_vocab', ('{tmp_path}/other_vocab', '32000')),
    ('token_id', ('{tmp_path}/small.pt', 'vocab_size=64')),
    ('too_long', ('block_size=34', '--block_size=33')),
    ('image', ('{tmp_path}/img.pt', "input_kind='patches'")),
    ('bert_future', ("'visible'", '--bert_future=mask'))])
def test_bad_input_gives_one_line(tmp_path, tiny_corpus, case, keys):
    ckpt, _ = make_checkpoint(tmp_path / 'ar.pt', 'ar')
    args = [f'--ckpt={ckpt}', f'--dataset={tiny_corpus}']
    if case == 'missing':
        args[0] = f'--ckpt={tmp_path}/nope.pt'
    elif case == 'not_a_checkpoint':
        torch.save({'weights': torch.zeros(2)}, tmp_path / 'other.pt')
        args[0] = f'--ckpt={tmp_path}/other.pt'
    elif case == 'meta_vocab':
        args[1] = f'--dataset={bad_vocab_corpus(tmp_path)}'
    elif case == 'token_id':  # BOS = 50256 does not exist in a 64-token model
        args[0] = f'--ckpt={make_checkpoint(tmp_path / "small.pt", "ar", vocab_size=64)[0]}'
    elif case == 'too_long':
        args.append('--block_size=34')
    elif case == 'image':
        args[0] = f'--ckpt={make_checkpoint(tmp_path / "img.pt", "vm", input_kind="patches")[0]}'
    elif case == 'bert_future':
        args.append('--bert_future=visible')
    keys = [key.format(tmp_path=tmp_path) for key in keys]
    if case == 'missing':  # as a user sees it: exit code 1 and one line on stderr
        result = run_script('eval_ppl.py', *args, f'--out_dir={tmp_path}/out')
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 1 and len(lines) == 1, result.stderr
        assert lines[0].startswith('eval_ppl.py: error:') and all(key in lines[0] for key in keys)
    else:  # the same refusal, a UsageError of one line, in this process (printed as the case above shows)
        message = usage_error('eval_ppl.py', *args, f'--out_dir={tmp_path}/out')
        assert all(key in message for key in keys), message
    assert not (tmp_path / 'out').exists()


def test_bert_future_mask_applies_to_bert_runs_only(tmp_path, tiny_corpus, capsys):
    mlm_path, mlm = make_checkpoint(tmp_path / 'mlm.pt', 'mlm', seed=5)
    ar_path, ar = make_checkpoint(tmp_path / 'ar.pt', 'ar', seed=5)
    out = tmp_path / 'out'
    run_in_process('eval_ppl.py', f'--ckpt={mlm_path}', f'--ckpt={ar_path}', '--names=mlm', '--names=ar',
                   f'--dataset={tiny_corpus}', '--max_tokens=160', '--bert_future=mask', '--progress=False',
                   f'--out_dir={out}')
    stdout = capsys.readouterr().out
    summary = json.loads((out / 'summary.json').read_text())
    bert_run, ar_run = summary['checkpoints']
    assert summary['bert_future'] == 'mask' and bert_run['bert_future'] == 'mask' and ar_run['bert_future'] is None
    assert 'applies to the one-stream BERT runs only: mlm' in stdout and 'bert (mask)' in stdout
    tokens = np.fromfile(os.path.join(tiny_corpus, 'val.bin'), dtype=np.uint16)
    windows = gather_windows(tokens, window_starts(len(tokens), 33, 160), 33, BOS)
    masked = score_windows(mlm.eval(), windows, 'bert', bert_future='mask').double().sum(0).numpy()
    np.testing.assert_allclose(bert_run['nll_sum_by_k'], masked, rtol=1e-5)
    np.testing.assert_allclose(ar_run['nll_sum_by_k'], score_windows(ar.eval(), windows, 'causal').double().sum(0),
                               rtol=1e-5)

# -----------------------------------------------------------------------------
# torchrun: each process scores its shard, rank 0 gathers; the numbers are those of all the windows


def test_torchrun_shards_add_up_to_all_windows(tmp_path, tiny_corpus):
    ckpt, model = make_checkpoint(tmp_path / 'mlm.pt', 'mlm', seed=2)
    result = run_script('-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', 'eval_ppl.py',
                        f'--ckpt={ckpt}', f'--dataset={tiny_corpus}', '--max_tokens=480', '--progress=False',
                        f'--out_dir={tmp_path}/out')
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    run = summary['checkpoints'][0]
    assert summary['world_size'] == 2 and run['style'] == 'bert' and run['count_by_k'] == [15] * 32
    tokens = np.fromfile(os.path.join(tiny_corpus, 'val.bin'), dtype=np.uint16)
    nll = score_windows(model.eval(), gather_windows(tokens, window_starts(len(tokens), 33, 480), 33, BOS), 'bert')
    np.testing.assert_allclose(run['nll_sum_by_k'], nll.double().sum(0).numpy(), rtol=1e-5)

# -----------------------------------------------------------------------------
# the unigram / bigram floors, and checkpoints that read other tokens


def test_ngram_baselines_are_normalised_counts():
    from evals.ppl import NgramBaselines
    stream = np.array([0, 1, 0, 1, 0, 2, 3, 0, 1, 4])
    floors = NgramBaselines(stream, vocab_size=6)
    assert np.allclose(floors.unigram, (np.bincount(stream, minlength=6) + 1) / (10 + 6))
    V = 6
    for previous in range(V):  # every context, seen or not, gives a distribution over the whole vocabulary
        windows = np.array([[5, previous, token] for token in range(V)])
        bigram = np.exp(-floors.nll(windows)['bigram'][:, 1])
        assert bigram.sum() == pytest.approx(1.0, abs=1e-12)
    windows = np.array([[5, 0, 1], [5, 0, 2], [5, 5, 1]])
    nll = floors.nll(windows)
    assert np.allclose(nll['bigram'][:, 0], nll['unigram'][:, 0])  # k = 0: only BOS seen, no context
    seen_after_0 = np.exp(-nll['bigram'][:, 1])  # 0 is followed by 1 three times in four, by 2 once
    assert seen_after_0[0] == pytest.approx((3 - 0.75) / 4 + 0.75 * 2 / 4 * floors.unigram[1])
    assert seen_after_0[2] == pytest.approx(floors.unigram[1])  # id 5 never occurs: back to the unigram


def test_baselines_sit_in_the_table_and_tokenizers_do_not_mix(tmp_path, tiny_corpus, capsys):
    ar_path, _ = make_checkpoint(tmp_path / 'ar.pt', 'ar', seed=3)
    out = tmp_path / 'out'
    run_in_process('eval_ppl.py', f'--ckpt={ar_path}', '--names=ar', f'--dataset={tiny_corpus}', '--max_tokens=320',
                   f'--baseline_dataset={tiny_corpus}', '--progress=False', f'--out_dir={out}')
    stdout = capsys.readouterr().out
    summary = json.loads((out / 'summary.json').read_text())
    ar, unigram, bigram = summary['checkpoints']
    assert (unigram['name'], bigram['name']) == ('(unigram)', '(bigram)') and summary['baseline_dataset'] == tiny_corpus
    assert unigram['targets'] == bigram['targets'] == ar['targets'] == 320
    # the tiny corpus repeats a 50-token pattern: the bigram floor is far below the unigram one
    assert bigram['ppl'] < 0.5 * unigram['ppl'] and '(bigram)' in stdout
    assert {row['series'] for row in csv.DictReader(open(out / 'ppl_by_k.csv'))} == {'ar', '(unigram)', '(bigram)'}
    # a byte-level checkpoint cannot read GPT-2 ids, nor be scored next to a GPT-2 one
    byte_path, _ = make_checkpoint(tmp_path / 'bytes.pt', 'ar', tokenizer='bytes', vocab_size=320)
    message = usage_error('eval_ppl.py', f'--ckpt={byte_path}', f'--dataset={tiny_corpus}')
    assert all(key in message for key in (tiny_corpus, "'gpt2'", "'bytes'", '--dataset=')), message
    message = usage_error('eval_ppl.py', f'--ckpt={byte_path}', f'--ckpt={ar_path}',
                          f'--dataset={tiny_corpus}')  # each checkpoint's tokens
    assert all(key in message for key in ('bytes', 'gpt2')), message


def test_a_corpus_that_is_not_prepared_names_the_command_that_prepares_it(tmp_path, tiny_corpus):
    """A missing corpus (a typo, or never prepared) is reported as such, with the prepare command for the model's
    tokens, whichever flag names it; nothing is written."""
    byte_path, _ = make_checkpoint(tmp_path / 'bytes.pt', 'ar', tokenizer='bytes', vocab_size=320)
    byte_corpus = write_corpus(tmp_path / 'corpus_bytes', [65] * 400, [66] * 400, 'bytes')
    out = f'--out_dir={tmp_path / "out"}'
    for args in (['--dataset=nope'], [f'--dataset={byte_corpus}', '--baseline_dataset=nope']):
        message = script_error('eval_ppl.py', f'--ckpt={byte_path}', *args, out, '--overwrite=True')
        assert 'nope' in message and 'data/prepare.py --input=' in message, message
        assert '--tokenizer=bytes' in message and "'gpt2'" not in message, message  # holds none
    assert not (tmp_path / 'out').exists()
    # an own corpus evaluated without --dataset: the default corpus, data/shakespeare, for a byte-level model
    prepared = os.path.exists(os.path.join(ROOT, 'data', 'shakespeare', 'meta.json'))
    message = usage_error('eval_ppl.py', f'--ckpt={byte_path}', out)
    keys = ('--dataset=shakespeare_bytes', 'python data/shakespeare/prepare.py --tokenizer=bytes')
    assert all(key in message for key in keys), message
    assert ("'gpt2'" in message) == prepared, message  # the tokens it holds, where it holds any


# -----------------------------------------------------------------------------
# --reading=elbo: the any-order bound of masked checkpoints beside the exact left-to-right NLL of the others


def test_elbo_reading_covers_every_masked_kind(tmp_path, tiny_corpus, monkeypatch):
    """One- and two-stream mlm / vm, and a masked objective the script has never heard of (the bound asks only
    whether an objective is masked and how many streams it has): each gets the stratified bound of
    evals/any_order.py on the same windows, ar and dar their exact left-to-right NLL, all with standard errors. On
    the tiny corpus's ids as bytes: a head 320 wide instead of GPT-2's 50,304, tens of times less work."""
    import objectives
    from evals.any_order import score_bound
    another = dataclasses.replace(objectives.KINDS['vm'], defaults=dict(mask_ratio=(0.1, 0.9), random_order=True))
    monkeypatch.setitem(objectives.KINDS, 'another_masked', another)
    kinds = [('mlm', False), ('mlm', True), ('vm', False), ('vm', True), ('another_masked', True), ('ar', None),
             ('dar', None)]
    corpus = write_corpus(tmp_path / 'bytes', *(np.fromfile(os.path.join(tiny_corpus, f'{split}.bin'), dtype=np.uint16)
                                                 for split in ('train', 'val')), 'bytes')  # ids < 40
    paths, models = [], {}
    for i, (objective, two_stream) in enumerate(kinds):
        path, model = make_checkpoint(tmp_path / f'{i}.pt', objective, seed=i, n_embd=16, n_layer=1, block_size=17,
                                      tokenizer='bytes', vocab_size=320, train_config=dict(two_stream=two_stream))
        paths.append(path)
        models[path] = model.eval()
    out = tmp_path / 'out'
    script = run_in_process('eval_ppl.py', *[f'--ckpt={p}' for p in paths], f'--dataset={corpus}',
                            '--reading=elbo', '--max_tokens=160', f'--baseline_dataset={corpus}',
                            '--progress=False', f'--out_dir={out}')
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['reading'] == 'elbo' and summary['windows'] == 10
    runs = summary['checkpoints']
    assert [run['reading'] for run in runs] == ['any-order bound'] * 5 + ['left-to-right'] * 4
    assert [run['name'] for run in runs[-2:]] == ['(unigram)', '(bigram)']
    tokens = np.fromfile(os.path.join(corpus, 'val.bin'), dtype=np.uint16)
    windows = gather_windows(tokens, window_starts(len(tokens), 17, 160), 17, 256)  # the byte BOS
    for run, (objective, two_stream) in zip(runs, kinds):
        model = models[run['path']]
        if run['reading'] == 'any-order bound':  # the same masks (seed 1337) for every checkpoint
            per_window = score_bound(model, windows, bool(two_stream),
                                     generator=torch.Generator().manual_seed(1337)) / 16
            assert run['passes_per_window'] == 16
        else:
            per_window = score_windows(model, windows, 'causal' if objective == 'ar' else 'groups').double().mean(1)
        assert run['nll'] == pytest.approx(float(per_window.mean()), rel=1e-5)
        assert run['se'] == pytest.approx(float(per_window.std() / 10 ** 0.5), rel=1e-4)
        assert run['ppl'] == pytest.approx(math.exp(run['nll']), rel=1e-9) and run['windows'] == 10
    for run in runs[-2:]:
        assert run['se'] > 0 and run['nll'] == pytest.approx(math.log(run['ppl']))
    assert 'any-order bound' in script['runs'][0]['reading']


def test_elbo_reading_rejects_an_unknown_reading(tmp_path, tiny_corpus):
    ckpt, _ = make_checkpoint(tmp_path / 'mlm.pt', 'mlm')
    message = script_error('eval_ppl.py', f'--ckpt={ckpt}', f'--dataset={tiny_corpus}',
                           '--reading=bound')  # the value given, and the choices
    assert all(key in message for key in ("'bound'", "'prefix'", "'elbo'")), message

# -----------------------------------------------------------------------------
# out_dir: a second run never silently replaces the first; the configs' CPU-sized default


def test_a_second_run_into_an_out_dir_is_refused_unless_overwrite(tmp_path, tiny_bytes, capfd):
    """A second run into the same out_dir stops with one line before scoring, leaving the first
    run's results as they were; --overwrite=True deletes them first, so an elbo run leaves no prefix
    run's plot beside its summary. (capfd: stdout and stderr are files, as a pipe is.) Byte-level
    checkpoints: a head 320 wide, not GPT-2's 50,304."""
    byte_level = dict(seed=3, tokenizer='bytes', vocab_size=320)
    ar_path, _ = make_checkpoint(tmp_path / 'ar.pt', 'ar', **byte_level)
    mlm_path, _ = make_checkpoint(tmp_path / 'mlm.pt', 'mlm', **byte_level)
    out = tmp_path / 'out'
    common = [f'--dataset={tiny_bytes}', '--max_tokens=160', '--baseline_dataset=',
              f'--out_dir={out}']
    capfd.readouterr()
    run_in_process('eval_ppl.py', f'--ckpt={ar_path}', '--names=ar', *common)  # progress on, into a file
    stdout, stderr = capfd.readouterr()
    assert '\r' not in stderr and '\x1b' not in stderr and 'ar (1/1): 5/5 windows' in stderr
    assert "5 windows of 33 = 160 scored targets (of the split's 62 windows, 1,984 targets" in stdout
    written = {name: (out / name).read_bytes() for name in ('summary.json', 'ppl_by_k.png', 'ppl_by_k.csv')}
    message = usage_error('eval_ppl.py', f'--ckpt={mlm_path}', '--reading=elbo', *common)
    files = ('summary.json', 'ppl_by_k.png', 'ppl_by_k.csv')
    assert all(key in message for key in (str(out), *files, '--overwrite=True')), message
    assert capfd.readouterr().out == ''  # refused before any scoring
    assert {name: (out / name).read_bytes() for name in written} == written
    run_in_process('eval_ppl.py', f'--ckpt={mlm_path}', '--names=mlm', '--reading=elbo', '--progress=False',
                   *common, '--overwrite=True')
    assert sorted(os.listdir(out)) == ['summary.json']
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['reading'] == 'elbo' and [run['name'] for run in summary['checkpoints']] == ['mlm']
    (tmp_path / 'a_file').write_text('')
    message = script_error('eval_ppl.py', f'--ckpt={ar_path}', *common[:3],
                           f'--out_dir={tmp_path / "a_file"}')
    assert str(tmp_path / 'a_file') in message and '--out_dir' in message, message


def test_a_training_runs_out_dir_is_refused(tmp_path, tiny_corpus):
    """An evaluation never writes into a training run's out_dir, --overwrite=True or not: its files stay as they are."""
    run = tmp_path / 'out-ar'
    ckpt, _ = make_checkpoint(run / 'ckpt_best.pt', 'ar')
    (run / 'log.jsonl').write_text('{}\n')
    for overwrite in ('False', 'True'):
        message = script_error('eval_ppl.py', f'--ckpt={ckpt}', f'--dataset={tiny_corpus}', f'--out_dir={run}',
                               f'--overwrite={overwrite}')
        assert all(key in message for key in (str(run), 'log.jsonl', '--out_dir')), message
    assert sorted(os.listdir(run)) == ['ckpt_best.pt', 'log.jsonl']


def readme_commands(script):
    """The README's Evaluation section: each `python <script>` command, its continuation lines joined, as argv."""
    section = open(os.path.join(ROOT, 'README.md')).read().split('\n## Evaluation\n')[1].split('\n## ')[0]
    block = section.split('```sh\n')[1].split('```')[0].replace('\\\n', ' ')
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.startswith(f'python {script} ')]


def test_the_readme_eval_ppl_commands_run_one_after_another(tmp_path):
    """Each README eval_ppl.py command, as written, on tiny checkpoints of its folders and a tiny byte corpus, in a
    fresh working folder (this process's, for the run): the second runs after the first (no refusal) and leaves the
    first's results as they were."""
    commands = readme_commands('eval_ppl.py')
    assert len(commands) >= 2 and any('--reading=elbo' in command for command in commands)
    os.symlink(os.path.join(ROOT, 'config'), tmp_path / 'config')
    rng = np.random.default_rng(0)
    corpus = write_corpus(tmp_path / 'data' / 'shakespeare_bytes', rng.integers(97, 123, 2000),
                          rng.integers(97, 123, 800), 'bytes')
    for command in commands:
        for arg in command:
            if arg.startswith('--ckpt=') and not os.path.exists(tmp_path / arg[7:]):  # out-<objective>[-2s]-...
                run = arg[7:].split('/')[0].removeprefix('out-')
                make_checkpoint(tmp_path / arg[7:], run.split('-')[0], tokenizer='bytes', vocab_size=320,
                                block_size=17, n_embd=16, train_config=dict(two_stream=True if '-2s-' in run else None))
    written, readings = {}, []
    for command in commands:
        assert command[:2] == ['python', 'eval_ppl.py'], command
        run_in_process('eval_ppl.py', *command[2:], f'--dataset={corpus}', '--progress=False', cwd=tmp_path)
        now = {path: path.read_bytes() for path in (tmp_path / 'out').rglob('*') if path.is_file()}
        assert all(now[path] == content for path, content in written.items())  # the earlier results as they were
        summary, = [path for path in now if path not in written and path.name == 'summary.json']
        readings.append(json.loads(summary.read_text()).get('reading', 'prefix'))
        written = now
    assert readings == ['elbo' if '--reading=elbo' in command else 'prefix' for command in commands]


def logical_lines(path):
    """A shell script's or Makefile's lines with their backslash continuations joined."""
    return open(path).read().replace('\\\n', ' ').splitlines()


def test_byte_configs_score_a_subset_and_the_experiments_say_how_much():
    """The byte-level configs score a CPU-sized subset by default; every recorded experiment names its own
    max_tokens, so its numbers never depend on that default."""
    from configurator import read_config
    from conftest import ROOT
    for corpus in ('shakespeare', 'wikipedia'):
        bytes_config = read_config(os.path.join(ROOT, 'config', f'eval_ppl_{corpus}_bytes.py'))
        assert bytes_config['max_tokens'] == 32000 and bytes_config['dataset'] == f'{corpus}_bytes'
    calls = [line for name in os.listdir(os.path.join(ROOT, 'experiments')) if name.endswith('.sh')
             for line in logical_lines(os.path.join(ROOT, 'experiments', name)) if 'eval_ppl.py config/' in line]
    scripts = {name for name in os.listdir(os.path.join(ROOT, 'experiments')) if name.endswith('.sh')}
    assert {'reproduce.sh', 'data_constrained.sh', 'masked_generators.sh'} <= scripts  # the recorded ones, at least
    assert len(calls) >= 3 and all('--max_tokens=' in line for line in calls), calls

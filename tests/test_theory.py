"""theory.py and evals/theory.py: exact toy spectra against Thm 4.2, the Thm 4.3 term, the checkpoint surrogates,
and the command line."""
import csv
import itertools
import json
import math
import re

import numpy as np
import pytest

from conftest import one_error_line, run_in_process, run_script, script_error, usage_error
from data.text import BOS
from evals import theory

# -----------------------------------------------------------------------------
# Thm 4.2: closed forms, to 1e-9, over every singular value

def mlm_sigma(s, s_m):
    return math.sqrt(s_m / ((s - s_m) * (s - 1)))

@pytest.mark.parametrize('r,s,T,s_m', [(1, 3, 2, 1), (2, 5, 2, 2), (3, 4, 3, 1), (2, 6, 2, 4), (1, 5, 1, 3),
                                       (2, 5, 3, 4)])
def test_spectra_match_closed_forms(r, s, T, s_m):
    mlm = theory.toy_spectrum('mlm', r, s, T, (s_m,))
    assert np.max(np.abs(mlm[:r] - 1)) < 1e-9
    assert np.max(np.abs(mlm[r:r * s] - mlm_sigma(s, s_m))) < 1e-9
    assert np.max(np.abs(mlm[r * s:]), initial=0) < 1e-9
    assert len(mlm) == r * min(math.comb(s, s_m) * T ** s_m, s * T)
    ar = theory.toy_spectrum('ar', r, s, T)
    assert np.max(np.abs(ar[:r * s] - 1)) < 1e-9 and np.max(np.abs(ar[r * s:]), initial=0) < 1e-9
    for objective, sigma, visible in (('mlm', mlm, (s_m,)), ('ar', ar, ())):
        assert np.max(np.abs(sigma - theory.closed_form(objective, r, s, T, visible))) < 1e-9
    # masked SSL has the smaller tail (the theorem's claim) whenever s_m < s - 1
    assert theory.tail_sigma4(mlm, r) <= theory.tail_sigma4(ar, r) + 1e-12
    assert (theory.tail_sigma4(mlm, r) < theory.tail_sigma4(ar, r)) == (s_m < s - 1)

def test_vm_closed_form_is_the_mean_of_mlm_squares():
    r, s, T, visible = 2, 5, 2, (1, 2, 4)
    sigma = theory.toy_spectrum('vm', r, s, T, visible)
    expected = math.sqrt(np.mean([mlm_sigma(s, v) ** 2 for v in visible]))
    assert np.max(np.abs(sigma[r:r * s] - expected)) < 1e-9
    assert np.max(np.abs(sigma - theory.closed_form('vm', r, s, T, visible))) < 1e-9

# -----------------------------------------------------------------------------
# the new objectives reduce to the old ones

@pytest.mark.parametrize('r,s,T', [(1, 4, 2), (2, 5, 2), (3, 3, 3)])
def test_dar_t1_is_ar_and_single_vm_is_mlm(r, s, T):
    assert np.array_equal(theory.toy_spectrum('dar', r, s, T, t=1), theory.toy_spectrum('ar', r, s, T))
    for s_m in range(1, s):
        assert np.array_equal(theory.toy_spectrum('vm', r, s, T, (s_m,)), theory.toy_spectrum('mlm', r, s, T, (s_m,)))
    # t >= s: every prefix predicts the whole rest; the spectrum stops changing with t
    assert np.allclose(theory.toy_spectrum('dar', r, s, T, t=s), theory.toy_spectrum('dar', r, s, T, t=s + 3))

# -----------------------------------------------------------------------------
# the matrix itself: a probability table, normalised so that sigma_1 = 1, of the paper's size

def brute_force_block(objective, r, s, T, visible=(), t=None):
    """Walk every sample of one class and every draw of the objective; sum the joint probability of each
    (conditioning text, target token) pair. Independent of theory.toy_block."""
    table = {}
    draws = []  # (visible positions, target position, probability of that draw)
    if objective in ('ar', 'dar'):
        t = 1 if objective == 'ar' else t
        for i in range(s):
            nexts = list(range(i, min(s, i + t)))
            draws += [(tuple(range(i)), k, 1 / s / len(nexts)) for k in nexts]
    else:
        for s_m in visible:
            for seen in itertools.combinations(range(s), s_m):
                masked = [k for k in range(s) if k not in seen]
                draws += [(seen, k, 1 / len(visible) / math.comb(s, s_m) / len(masked)) for k in masked]
    for sample in itertools.product(range(T), repeat=s):
        for seen, k, p in draws:
            row = table.setdefault((seen, tuple(sample[i] for i in seen)), np.zeros(s * T))
            row[k * T + sample[k]] += p / (r * T ** s)
    return np.array(list(table.values()))

def sorted_rows(matrix):
    return matrix[np.lexsort(matrix.T[::-1])]

@pytest.mark.parametrize('objective,visible,t', [('ar', (), None), ('dar', (), 2), ('dar', (), 3), ('mlm', (2,), None),
                                                 ('vm', (1, 3), None)])
def test_block_equals_brute_force_enumeration(objective, visible, t):
    r, s, T = 2, 4, 2
    block = theory.toy_block(objective, r, s, T, visible, t)
    assert np.allclose(sorted_rows(block), sorted_rows(brute_force_block(objective, r, s, T, visible, t)),
                       atol=1e-15, rtol=0)

@pytest.mark.parametrize('objective,visible,t', [('ar', (), None), ('dar', (), 2), ('mlm', (1,), None),
                                                 ('mlm', (3,), None), ('vm', (1, 2, 3), None)])
def test_probabilities_normalisation_and_top_singular_value(objective, visible, t):
    r, s, T = 3, 4, 2
    block = theory.toy_block(objective, r, s, T, visible, t)
    assert np.all(block >= 0)
    assert abs(r * block.sum() - 1) < 1e-12  # A over all r identical class blocks is a joint distribution
    a_bar = theory.normalised(block)
    assert abs(np.linalg.svd(a_bar, compute_uv=False)[0] - 1) < 1e-12
    # the top singular pair is (sqrt(P_C), sqrt(P_G)) (marginals within the class) with value 1
    root_c, root_g = np.sqrt(block.sum(1) * r), np.sqrt(block.sum(0) * r)
    assert np.allclose(a_bar @ root_g, root_c, atol=1e-12) and np.allclose(a_bar.T @ root_c, root_g, atol=1e-12)
    assert abs(theory.toy_spectrum(objective, r, s, T, visible, t)[0] - 1) < 1e-12

def test_enumeration_sizes_match_the_paper_proof():
    for r, s, T, s_m in [(2, 5, 2, 2), (3, 4, 3, 1), (1, 6, 2, 3)]:
        rows, cols = theory.toy_size('mlm', s, T, (s_m,))
        assert (r * rows, r * cols) == (math.comb(s, s_m) * T ** s_m * r, s * T * r)  # C(s, s_m) T^s_m r x sTr
        assert theory.toy_block('mlm', r, s, T, (s_m,)).shape == (rows, cols)
        rows, cols = theory.toy_size('ar', s, T)
        paper_rows = (T - T ** s) // (1 - T) * r  # the proof's count leaves out the r empty prefixes
        assert (r * rows, r * cols) == (paper_rows + r, s * T * r)
        assert theory.toy_block('ar', r, s, T).shape == (rows, cols)

# -----------------------------------------------------------------------------
# bad input: one clear error, before any big allocation

@pytest.mark.parametrize('objective,visible,t,match', [  # the flag or value refused
    ('mlm', (0,), None, 'visible'), ('mlm', (5,), None, 'visible'), ('vm', (1, 5), None, 'visible'),
    ('mlm', (1, 2), None, 'vm'), ('dar', (), 0, r'--t\b'), ('bert', (), None, "'bert'")])
def test_bad_toy_input(objective, visible, t, match):
    with pytest.raises(ValueError, match=match):
        theory.toy_spectrum(objective, 2, 5, 2, visible, t)

def test_refuses_huge_enumeration_with_its_size():
    # 4^39 rows could never be allocated: only a check before building can answer this fast
    with pytest.raises(ValueError, match=r'\b\d+ x 160\b.*--max_entries'):  # its size, and the flag
        theory.toy_spectrum('ar', 2, 40, 4)
    with pytest.raises(ValueError) as exit_info:
        run_in_process('theory.py', 'toy', '--objective=mlm', '--s=12', '--T=4', '--visible=6', '--max_entries=1000',
                       '--json=True')
    assert 'max_entries' in str(exit_info.value) and '\n' not in str(exit_info.value)

# -----------------------------------------------------------------------------
# command line and files

def test_cli_json_and_table(capsys, tmp_path):
    run_in_process('theory.py', 'toy', '--objective=mlm', '--r=2', '--s=5', '--T=2', '--visible=2', '--json=True')
    report = json.loads(capsys.readouterr().out)
    sigma = np.array(report['singular_values'])
    assert np.all(np.diff(sigma) <= 1e-15) and len(sigma) == 20
    assert abs(report['sum_sigma4_beyond_r'] - 8 * mlm_sigma(5, 2) ** 4) < 1e-12
    run_in_process('theory.py', 'toy', '--r=1', '--s=4', '--T=2', f'--out_dir={tmp_path}')
    png = tmp_path / 'toy_spectra_r1_s4_T2.png'
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    with open(png.with_suffix('.csv')) as f:
        rows = [row for row in csv.DictReader(f) if row['series'] == 'mlm s_m=2']
    assert [float(row['sigma_j']) for row in rows] == pytest.approx([1, 1 / math.sqrt(3), 1 / math.sqrt(3),
                                                                    1 / math.sqrt(3), 0, 0, 0, 0], abs=1e-12)
    run_in_process('theory.py', 'tails', '--r=2', '--s=4', '--T=2', f'--out_dir={tmp_path}')
    with open(tmp_path / 'toy_tails_r2_s4_T2.csv') as f:
        tails = {row['objective']: float(row['sum_sigma4_beyond_r']) for row in csv.DictReader(f)}
    assert tails['ar'] == pytest.approx(2 * 3) and tails['dar t=1'] == pytest.approx(tails['ar'])
    assert tails['mlm s_m=1'] == pytest.approx(2 * 3 * mlm_sigma(4, 1) ** 4)

def test_every_command_takes_only_its_own_keys():
    """One set of keys for all commands (configurator.py, as every script): unknown keys and wrong types stop with
    one line, and so does a key the command would ignore."""
    for args, keys in (  # the command, the key or value refused, and what it takes
            (('tails', '--t=3'), ('tails', '--t', '--r', '--visible')),
            (('misalign', '--ckpt=a.pt'), ('misalign', '--ckpt', '--rho')),
            (('toy', '--sigma=2'), ("'sigma'",)), (('toy', '--r=2.5'), ("'r'", 'int', '2.5')),
            (('effrank', '--ckpt=a.pt', '--ckpt=b.pt'), ('effrank', '--ckpt=')),
            (('spectra',), ("'spectra'", 'toy', 'misalign'))):
        message = script_error('theory.py', *args)
        assert all(key in message for key in keys), message
    message = usage_error('theory.py', 'toy', '--visible=2', 'connectivity')
    assert "'connectivity'" in message and '--key=value' in message, message
    # as a user sees it: exit code 1 and one line on stderr (the other refusals here as one-line UsageErrors)
    result = run_script('theory.py', 'misalign', '--r=3')
    one_error_line(result, 'theory.py: error: ', 'misalign', '--rho')
    assert re.search(r'--r\b', result.stderr), result.stderr
    # values checked before any checkpoint loads (a.pt does not exist: reaching it would be another error)
    for args, keys in (
            (('effrank', '--ckpt=a.pt', '--mask_ratio=1.5'), ("'mask_ratio'", '[0, 1]')),
            (('connectivity', '--ckpt=a.pt', '--pooling=first'), ("'first'", "'last'", "'mean'")),
            (('toy', '--objective=mlm'), ('--objective=mlm', '--json=True'))):
        message = script_error('theory.py', *args)
        assert all(key in message for key in keys), message


def test_an_out_dir_that_is_a_file_stops_before_any_work(tmp_path):
    (tmp_path / 'a_file').write_text('not a folder')
    message = usage_error('theory.py', 'toy', '--r=1', '--s=3', '--T=2',
                          f'--out_dir={tmp_path}/a_file')
    assert f'{tmp_path}/a_file' in message and '--out_dir' in message, message
    message = usage_error('theory.py', 'misalign', f'--out_dir={tmp_path}/a_file/sub')
    assert f'{tmp_path}/a_file/sub' in message and '--out_dir' in message, message

# -----------------------------------------------------------------------------
# Thm 4.3

def test_misalignment_fixed_and_vm_range():
    s, rho = 20, 0.25
    fixed = theory.misalignment(s, (rho, rho))
    k = np.arange(1, s + 1)
    assert np.allclose(fixed['w'], (s * (1 - rho)) ** 3 - (k - 1) ** 3)
    assert fixed['w'][15] == 0  # prefix length k - 1 = s(1 - rho) = 15: no misalignment
    assert np.isnan(fixed['length_term'][0]) and fixed['length_term'][1] == pytest.approx(fixed['w'][1] ** 2)
    low, high = 0.15, 0.30  # E[(1 - rho)^3] for rho ~ U[a, b] in closed form
    cube = ((1 - low) ** 4 - (1 - high) ** 4) / (4 * (high - low))
    vm = theory.misalignment(s, (low, high))
    assert np.allclose(vm['w'], s ** 3 * cube - (k - 1) ** 3, rtol=1e-12)
    ends = [theory.misalignment(s, (r, r))['eq4_length_part'] for r in (low, high)]
    assert min(ends) < vm['eq4_length_part'] < max(ends)
    with pytest.raises(ValueError, match=r'\(0\.3, 0\.2\)'):  # the range given
        theory.misalignment(s, (0.3, 0.2))
    with pytest.raises(ValueError, match=r'--vm=\(0\.3,\)'):
        run_in_process('theory.py', 'misalign', '--vm=0.3')

# -----------------------------------------------------------------------------
# surrogates: effective rank and connectivity on planted structure

def matrix_with_spectrum(rows, sigma, seed):
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((rows, len(sigma))))
    v, _ = np.linalg.qr(rng.standard_normal((len(sigma), len(sigma))))
    return u @ np.diag(sigma) @ v.T

def test_effective_rank_on_known_spectra():
    h = matrix_with_spectrum(50, np.sqrt([4, 3, 2, 1, 0, 0]), seed=0)  # variance shares .4 .3 .2 .1
    assert [theory.effective_rank(h.T @ h, tau) for tau in (0.3, 0.4, 0.5, 0.7, 0.71, 0.9, 0.95, 1.0)] == \
           [1, 1, 2, 2, 3, 3, 4, 4]
    rng = np.random.default_rng(1)
    low_rank = rng.standard_normal((200, 7)) @ rng.standard_normal((7, 32)) + 1e-3 * rng.standard_normal((200, 32))
    gram = low_rank.T @ low_rank
    assert theory.effective_rank(gram, 0.999) == 7 and theory.effective_rank(gram, 1 - 1e-9) > 7
    message = script_error('theory.py', 'effrank', '--tau=0')
    assert all(key in message for key in ("'tau'", '(0, 1]', '0.0')), message

def test_top_pairs_exact_and_planted_clusters():
    rng = np.random.default_rng(0)
    features = rng.standard_normal((150, 8))
    gram = features @ features.T
    everything = np.sort(gram[np.triu_indices(150, k=1)])[::-1]
    assert np.allclose(theory.top_pair_similarities(features, top=500, block_rows=32), everything[:500])
    assert np.allclose(theory.top_pair_similarities(features, top=10 ** 6, block_rows=7), everything)
    # 4 tight clusters of 100 on orthogonal centres of norm 3: the 4 * C(100, 2) = 19800 most similar pairs are
    # exactly the within-cluster ones (~9), then the across-cluster ones (~0)
    centres = 3 * np.eye(16)[:4]
    clustered = np.repeat(centres, 100, axis=0) + 0.05 * rng.standard_normal((400, 16))
    top = theory.top_pair_similarities(clustered, top=20000, block_rows=64)
    assert np.all(top[:19800] > 8) and np.all(top[19800:] < 1)
    scattered = rng.standard_normal((400, 16))
    scattered *= np.linalg.norm(clustered, axis=1, keepdims=True) / np.linalg.norm(scattered, axis=1, keepdims=True)
    assert np.all(theory.top_pair_similarities(scattered, top=19800) < top[:19800])  # same norms, fewer links

# -----------------------------------------------------------------------------
# checkpoints: a tiny random Transformer through both commands

def test_checkpoint_commands(tmp_path, capsys):
    torch = pytest.importorskip('torch')
    from dataclasses import asdict
    from checkpoint import save_checkpoint
    from model import ModelConfig, Transformer
    torch.manual_seed(0)
    config = ModelConfig(block_size=9, n_layer=2, n_head=2, n_embd=16)
    model = Transformer(config).eval()
    ckpts = {}
    for objective in ('mlm', 'ar'):  # the same weights under each pretraining attention
        ckpts[objective] = tmp_path / objective / 'ckpt.pt'
        ckpts[objective].parent.mkdir()
        save_checkpoint({'model': model.state_dict(), 'model_config': asdict(config),
                         'objective': {'name': objective}, 'iter': 0}, ckpts[objective])
    ckpt = ckpts['mlm']
    data_dir = tmp_path / 'data'
    data_dir.mkdir()
    np.random.default_rng(0).integers(0, 50257, 3000).astype(np.uint16).tofile(data_dir / 'val.bin')
    out = tmp_path / 'out'
    run_in_process('theory.py', 'connectivity', f'--ckpt={ckpt}', f"--ckpt={ckpts['ar']}", f'--dataset={data_dir}',
                   '--num_samples=40', '--top=100', '--batch_size=16', f'--out_dir={out}')
    printed = capsys.readouterr()
    lines = printed.out.splitlines()
    assert 'encode' in printed.err  # the progress bar, on by default
    assert 'bidirectional attention, mean pooling' in lines[0] and 'causal attention, last pooling' in lines[1]
    windows = theory.text_windows(data_dir, 9, 40)
    assert windows.shape == (40, 9) and np.all(windows[:, 0] == BOS)
    content = torch.as_tensor(windows)
    causal = torch.arange(9).expand(40, 9)
    with open(out / 'connectivity.csv') as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 200 and (out / 'connectivity.png').exists()
    for pooled, part in ((model.features(content)[:, 1:].mean(1).numpy(), rows[:100]),
                         (model.features(content, content_groups=causal)[:, -1].numpy(), rows[100:])):
        expected = np.sort((pooled @ pooled.T)[np.triu_indices(40, k=1)])[::-1][:100]
        assert np.allclose([float(row['inner product']) for row in part], expected, rtol=1e-4)
    run_in_process('theory.py', 'connectivity', f"--ckpt={ckpts['ar']}", f'--dataset={data_dir}', '--num_samples=20',
                   '--top=10', '--pooling=mean', '--progress=False', f'--out_dir={out}')
    printed = capsys.readouterr()
    assert 'causal attention, mean pooling' in printed.out and printed.err == ''
    run_in_process('theory.py', 'effrank', f'--ckpt={ckpt}', f'--dataset={data_dir}', '--num_samples=24',
                   '--batch_size=10', f'--out_dir={out}')
    ranks = theory.layer_ranks(model, windows[:24], 'bidirectional', tau=0.8, batch_size=10, seed=3)
    content = content[:24]
    draws = np.random.default_rng(3)
    masked = np.concatenate([draws.random((n, 9)) < 0.15 for n in (10, 10, 4)])
    masked[:, 0] = False  # the same draws as layer_ranks: one (batch, 9) block per batch of 10
    clean = model.features(content, all_layers=True)
    with_mask = model.features(content, content_masked=torch.as_tensor(masked), all_layers=True)
    for layer in range(2):
        direct = {'without_mask': clean[layer][:, 1:].reshape(-1, 16), 'with_mask_all':
                  with_mask[layer][:, 1:].reshape(-1, 16), 'with_mask_real': with_mask[layer][:, 1:][~masked[:, 1:]]}
        grams = {name: (h.double().T @ h.double()).numpy() for name, h in direct.items()}
        assert {name: theory.effective_rank(gram, 0.8) for name, gram in grams.items()} == \
               {name: ranks[name][layer] for name in direct}
        assert all(1 <= ranks[name][layer] <= 16 for name in ranks)
    out_text = capsys.readouterr().out
    assert 'with_mask_real' in out_text and 'bidirectional attention' in out_text
    none, missing = tmp_path / 'none', tmp_path / 'missing.pt'
    message = script_error('theory.py', 'effrank', f'--ckpt={ckpt}', f'--dataset={none}')
    assert str(none) in message and 'data/prepare.py' in message, message  # and its command
    message = script_error('theory.py', 'connectivity', f'--ckpt={missing}',
                           f'--dataset={data_dir}')
    assert str(missing) in message and '--ckpt' in message, message

# -----------------------------------------------------------------------------
# every checkpoint is read with its own pretraining attention (causal ar, bidirectional mlm), as eval_glue.py

def windows_differing_last(seed=0, n=6, length=33):
    """Two (n, length) id batches, BOS first, equal except for the last token."""
    rng = np.random.default_rng(seed)
    windows = np.concatenate([np.full((n, 1), BOS), rng.integers(0, 50000, (n, length - 1))], axis=1)
    changed = windows.copy()
    changed[:, -1] = (changed[:, -1] + 1 + rng.integers(0, 1000, n)) % 50000
    return windows, changed

def test_features_follow_pretraining_attention(tmp_path):
    torch = pytest.importorskip('torch')
    from conftest import make_checkpoint
    from checkpoint import load_checkpoint
    windows, changed = windows_differing_last()
    for objective, attention in (('ar', 'causal'), ('mlm', 'bidirectional')):
        model, _ = load_checkpoint(make_checkpoint(tmp_path / f'{objective}.pt', objective=objective)[0])
        before, after = (theory.encode_windows(model, torch.as_tensor(w), attention) for w in (windows, changed))
        early_moved = (after[:, :-1] - before[:, :-1]).abs().max().item()
        if objective == 'ar':  # a GPT's feature at position k has seen tokens 0..k only
            assert early_moved == 0
        else:  # a masked model's features see the whole window
            assert early_moved > 1e-4
        assert (after[:, -1] - before[:, -1]).abs().max().item() > 1e-4
    # auto pooling of an ar model is its causal last-position feature
    model, _ = load_checkpoint(make_checkpoint(tmp_path / 'ar.pt', objective='ar')[0])
    content = torch.as_tensor(windows)
    causal_last = model.features(content, content_groups=torch.arange(33).expand(6, 33))[:, -1].numpy()
    assert np.allclose(theory.pooled_features(model, windows, 'causal', batch_size=4), causal_last, atol=1e-6)
    assert np.allclose(theory.pooled_features(model, windows, 'causal', 'last'), causal_last, atol=1e-6)
    bidirectional_last = model.features(content)[:, -1].numpy()
    assert not np.allclose(theory.pooled_features(model, windows, 'causal'), bidirectional_last, atol=1e-4)
    mean_after_bos = theory.encode_windows(model, content, 'causal')[:, 1:].mean(1).numpy()
    assert np.allclose(theory.pooled_features(model, windows, 'causal', 'mean'), mean_after_bos, atol=1e-6)
    with pytest.raises(ValueError, match='pooling'):
        theory.pooled_features(model, windows, 'causal', 'first')

def test_effective_rank_features_of_ar_do_not_see_later_tokens(tmp_path):
    torch = pytest.importorskip('torch')
    from conftest import make_checkpoint
    from checkpoint import load_checkpoint
    model, _ = load_checkpoint(make_checkpoint(tmp_path / 'ar.pt', objective='ar')[0])
    windows, changed = windows_differing_last(seed=1)
    masked = torch.zeros(windows.shape, dtype=torch.bool)
    masked[:, 3::4] = True
    for content_masked in (None, masked):
        before, after = (theory.encode_windows(model, torch.as_tensor(w), 'causal', content_masked, all_layers=True)
                         for w in (windows, changed))
        assert len(before) == 2 and all(torch.equal(b[:, :-1], a[:, :-1]) for b, a in zip(before, after))
    # and layer_ranks reads every layer through that encoding: record what the model hands it
    seen = []
    features = model.features
    model.features = lambda *args, **kwargs: seen.append(features(*args, **kwargs)) or seen[-1]
    ranks = [theory.layer_ranks(model, w, 'causal', batch_size=4, seed=0) for w in (windows, changed)]
    assert all(1 <= rank <= 32 for r in ranks for name in r for rank in r[name])
    half = len(seen) // 2  # clean and masked passes of every batch, for windows then for changed
    assert half == 4 and all(torch.equal(b[:, :-1], a[:, :-1])
                             for before, after in zip(seen[:half], seen[half:]) for b, a in zip(before, after))


def test_a_byte_checkpoint_reads_byte_windows_only(tmp_path):
    pytest.importorskip('torch')
    from conftest import make_checkpoint, write_corpus
    ckpt, _ = make_checkpoint(tmp_path / 'bytes.pt', 'ar', tokenizer='bytes', vocab_size=320, block_size=9)
    rng = np.random.default_rng(0)
    byte_corpus = write_corpus(tmp_path / 'plays_bytes', rng.integers(0, 256, 100), rng.integers(0, 256, 500), 'bytes')
    windows = theory.text_windows(byte_corpus, 9, 12, 'bytes')
    assert windows.shape == (12, 9) and np.all(windows[:, 0] == 256) and windows[:, 1:].max() < 256
    out = tmp_path / 'out'
    run_in_process('theory.py', 'connectivity', f'--ckpt={ckpt}', f'--dataset={byte_corpus}', '--num_samples=12',
                   '--top=5', f'--out_dir={out}')
    assert (out / 'connectivity.csv').exists()
    bpe_corpus = write_corpus(tmp_path / 'plays', rng.integers(0, 50000, 100), rng.integers(0, 50000, 500))
    message = script_error('theory.py', 'effrank', f'--ckpt={ckpt}', f'--dataset={bpe_corpus}',
                           '--num_samples=12')  # the corpus, its tokens and the model's
    assert all(key in message for key in (bpe_corpus, "'gpt2'", "'bytes'")), message


# -----------------------------------------------------------------------------
# maskloss: Thm 4.3's misalignment measured as masked loss by mask ratio

def test_maskloss_scores_one_and_two_stream_checkpoints_on_the_same_targets(tmp_path):
    torch = pytest.importorskip('torch')
    from conftest import write_corpus
    from objectives import Objective
    rng = np.random.default_rng(0)
    corpus = write_corpus(tmp_path / 'plays', rng.integers(0, 50000, 100), rng.integers(0, 50000, 800))
    windows = torch.as_tensor(theory.text_windows(corpus, 16, 8))
    for rho in (0.1, 0.5, 0.9):
        one = Objective('mlm', mask_ratio=rho).batch(windows, torch.Generator().manual_seed(0))
        two = Objective('mlm', mask_ratio=rho, two_stream=True).batch(windows, torch.Generator().manual_seed(0))
        for b in range(8):
            assert sorted(one['pred_index'][b][one['valid'][b]].tolist()) == \
                   sorted(two['query_pos'][b][two['valid'][b]].tolist())


def test_maskloss_counts_every_masked_token_once(tmp_path):
    """A zeroed head predicts uniformly: exactly log(vocab) nats per target at every ratio, on N * round(rho L)
    targets; round(rho L) rounds ties to even (0.1 * 15 = 1.5 -> 2, 0.5 * 15 = 7.5 -> 8)."""
    torch = pytest.importorskip('torch')
    from conftest import make_checkpoint, write_corpus
    rng = np.random.default_rng(0)
    corpus = write_corpus(tmp_path / 'plays', rng.integers(0, 50000, 100), rng.integers(0, 50000, 800))
    windows = theory.text_windows(corpus, 16, 10)
    for two_stream in (False, True):
        _, model = make_checkpoint(tmp_path / 'mlm.pt', 'mlm', block_size=16)
        with torch.no_grad():
            model.lm_head.weight.zero_()
        losses = theory.masked_loss_by_ratio(model.eval(), windows, two_stream, (0.1, 0.5, 0.9), batch_size=4,
                                             progress=False)
        assert {rho: n for rho, (_, n) in losses.items()} == {0.1: 10 * 2, 0.5: 10 * 8, 0.9: 10 * 14}
        assert all(abs(nll - math.log(model.config.vocab_size)) < 1e-5 for nll, _ in losses.values())


def test_maskloss_command(tmp_path, capsys):
    pytest.importorskip('torch')
    from conftest import make_checkpoint, write_corpus
    rng = np.random.default_rng(0)
    corpus = write_corpus(tmp_path / 'plays', rng.integers(0, 50000, 100), rng.integers(0, 50000, 800))
    mlm, _ = make_checkpoint(tmp_path / 'mlm' / 'ckpt.pt', 'mlm', block_size=16)
    vm, _ = make_checkpoint(tmp_path / 'vm_2s' / 'ckpt.pt', 'vm', block_size=16, train_config=dict(two_stream=True))
    out = tmp_path / 'out'
    run_in_process('theory.py', 'maskloss', f'--ckpt={mlm}', f'--ckpt={vm}', f'--dataset={corpus}', '--num_samples=12',
                   '--ratios=(0.2,0.6)', '--progress=False', f'--out_dir={out}')
    printed = capsys.readouterr()
    assert printed.err == '' and 'vm [0.15, 0.3] two-stream vm_2s' in printed.out
    with open(out / 'maskloss.csv') as f:
        rows = list(csv.DictReader(f))
    assert [(row['series'], row['mask ratio rho']) for row in rows] == [
        ('1: mlm 0.15 mlm', '0.2'), ('1: mlm 0.15 mlm', '0.6'),
        ('2: vm [0.15, 0.3] two-stream vm_2s', '0.2'), ('2: vm [0.15, 0.3] two-stream vm_2s', '0.6')]
    assert all(0 < float(row['nats per masked token']) < 20 for row in rows) and (out / 'maskloss.png').exists()
    ar, _ = make_checkpoint(tmp_path / 'ar' / 'ckpt.pt', 'ar', block_size=16)
    message = script_error('theory.py', 'maskloss', f'--ckpt={ar}', f'--dataset={corpus}',
                           '--num_samples=12')  # the checkpoint, and the script that scores it
    assert ar in message and 'eval_ppl.py' in message, message
    message = script_error('theory.py', 'maskloss', f'--ckpt={mlm}', f'--dataset={corpus}',
                           '--num_samples=12', '--ratios=(0.5,1.0)')
    assert all(key in message for key in ('--ratios', '(0, 1)', '(0.5, 1.0)')), message

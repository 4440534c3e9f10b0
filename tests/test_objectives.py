"""objectives.py: the conditioning sets each objective declares, and its samplers' distributions."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import objectives
from conditioning import conditioning_sets, target_positions
from conftest import ROOT, random_tokens, run_in_process, script_error, write_corpus
from evals.glue import pretraining_attention
from evals.ppl import prefix_batch, prefix_style
from evals.vision import probe_groups
from objectives import (PAD_GROUP, Kind, Objective, dar_sizes, gvp_sizes, masked_count, masked_sizes,
                        visiting_order)

S = 13  # BOS + 12 positions

pytestmark = pytest.mark.usefixtures('one_thread')  # tiny ops (conftest.one_thread)


def tokens(B=4, seed=0):
    return random_tokens(B, S, 100, seed)


def sets_by_position(batch):
    """{(b, target position): conditioning set} for the valid target rows."""
    positions = target_positions(batch)
    out = {}
    for b, rows in enumerate(conditioning_sets(batch)):
        for p, cond in enumerate(rows):
            if cond is not None:
                out[(b, int(positions[b, p]))] = cond
    return out

# -----------------------------------------------------------------------------
# conditioning sets (SPEC §1 table)

def test_ar_conditions_on_the_prefix():
    sets = sets_by_position(Objective('ar').batch(tokens(), torch.Generator().manual_seed(0)))
    assert len(sets) == 4 * (S - 1)
    for (b, p), cond in sets.items():
        assert cond == set(range(p))


@pytest.mark.parametrize('seed', range(5))
def test_dar_t1_equals_ar_exactly(seed):
    x = tokens()
    ar = sets_by_position(Objective('ar').batch(x, torch.Generator().manual_seed(seed)))
    dar = sets_by_position(Objective('dar', t=1).batch(x, torch.Generator().manual_seed(seed)))
    assert ar == dar


@pytest.mark.parametrize('t', [2, 3, 4])
def test_dar_groups_follow_eq3(t):
    """Every token is a target; it sees everything before its group; |G_1| in 1..t, later groups t."""
    sets = sets_by_position(Objective('dar', t=t).batch(tokens(B=16), torch.Generator().manual_seed(t)))
    for b in range(16):
        starts = sorted({max(sets[(b, p)]) + 1 for p in range(1, S)})
        assert starts[0] == 1 and 1 <= starts[1] - 1 <= t
        sizes = [nxt - cur for cur, nxt in zip(starts, starts[1:] + [S])]
        assert all(size == t for size in sizes[1:-1]) and 1 <= sizes[-1] <= t
        for p in range(1, S):
            start = max(s for s in starts if s <= p)
            assert sets[(b, p)] == set(range(start))  # Eq. 3: x_p is one of the next t tokens of prefix < start


@pytest.mark.parametrize('objective,ratio', [('mlm', 0.15), ('mlm', 0.3), ('vm', (0.15, 0.3))])
@pytest.mark.parametrize('two_stream', [False, True])
def test_masked_conditions_on_exactly_the_visible(objective, ratio, two_stream):
    x = tokens(B=8)
    batch = Objective(objective, mask_ratio=ratio, two_stream=two_stream).batch(x, torch.Generator().manual_seed(1))
    sets = sets_by_position(batch)
    for b in range(8):
        targets = {p for (bb, p) in sets if bb == b}
        visible = set(range(S)) - targets
        assert 0 in visible
        for p in targets:
            assert sets[(b, p)] == visible  # bidirectional over the visible tokens, never a masked one
        if objective == 'mlm':
            assert len(targets) == round(ratio * (S - 1))  # Cramming: an exact count per sequence


def test_two_stream_masked_content_holds_no_masked_token():
    """MAE-LM's point: no [MASK] (and no masked token) ever enters the content stream."""
    batch = Objective('vm', two_stream=True).batch(tokens(B=8), torch.Generator().manual_seed(2))
    assert batch['content_masked'] is None
    for b in range(8):
        real = batch['content_groups'][b] < PAD_GROUP
        content_positions = set(batch['content_pos'][b][real].tolist())
        query_positions = set(batch['query_pos'][b][batch['valid'][b]].tolist())
        assert not content_positions & query_positions
        assert content_positions | query_positions == set(range(S))


def test_gvp_sets_are_nested_along_a_random_order():
    batch = Objective('gvp', n_groups=4).batch(tokens(B=6), torch.Generator().manual_seed(3))
    sets = sets_by_position(batch)
    for b in range(6):
        chains = sorted({frozenset(c) for (bb, _), c in sets.items() if bb == b}, key=len)
        assert len(chains) == 4  # K predicted groups
        assert all(a < c for a, c in zip(chains, chains[1:]))  # strictly nested: group k sees groups < k
        for (bb, p), cond in sets.items():
            if bb == b:
                assert p not in cond and 0 in cond


@pytest.mark.parametrize('style,objective,two_stream', [('causal', 'ar', False), ('groups', 'dar', True),
                                                        ('bert', 'mlm', False), ('masked_two_stream', 'vm', True)])
def test_prefix_batches_condition_on_the_prefix_only(style, objective, two_stream):
    assert prefix_style(Objective(objective, two_stream=two_stream)) == style
    batch = prefix_batch(tokens(B=2), style)
    positions = target_positions(batch)
    for b, rows in enumerate(conditioning_sets(batch)):
        for p, cond in enumerate(rows):
            assert cond == set(range(int(positions[b, p])))


def test_bert_prefix_batch_with_masked_future():
    """bert_future='mask': every position is present (group 0) and the target and all after it are [MASK], so
    each row still conditions on exactly {0..k}; the rest of the batch is the 'invisible' one."""
    x = tokens(B=2)
    batch, invisible = prefix_batch(x, 'bert', bert_future='mask'), prefix_batch(x, 'bert')
    positions, target = batch['content_pos'], target_positions(batch)
    assert (batch['content_groups'] == 0).all() and (invisible['content_groups'] == PAD_GROUP).any()
    assert torch.equal(batch['content_masked'], positions >= target)
    for key in ('content', 'content_pos', 'pred_index', 'targets', 'valid'):
        assert torch.equal(batch[key], invisible[key])
    for b, rows in enumerate(conditioning_sets(batch)):
        assert rows == [set(range(int(target[b, 0])))]


# -----------------------------------------------------------------------------
# sampler distributions (fixed seeds, frequency checks)

def test_vm_ratios_are_uniform_on_the_range():
    _, rho = masked_sizes(20000, 100, (0.15, 0.30), torch.Generator().manual_seed(0))
    assert rho.min() >= 0.15 and rho.max() <= 0.30
    counts = torch.histc(rho, bins=10, min=0.15, max=0.30)
    expected = 20000 / 10
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 27.9  # chi-square, 9 dof, p = 0.001


def test_mlm_masks_exactly_round_rho_L():
    for L, rho in [(12, 0.15), (127, 0.15), (127, 0.3), (196, 0.75)]:
        sizes, _ = masked_sizes(64, L, rho, torch.Generator().manual_seed(0))
        assert (sizes[:, 1] == round(rho * L)).all() and (sizes.sum(1) == L).all()


def tie_cases():
    """(L, rho) pairs where rho * L rounds differently in float32 and float64 (the audit's crash cases first),
    plus ordinary pairs."""
    cases = [(95, 0.3), (190, 0.15), (110, 0.55)]
    for L in range(2, 200):
        for rho in (0.05, 0.15, 0.25, 0.3, 0.35, 0.45, 0.5, 0.55, 0.7, 0.75, 0.85, 0.95):
            in_float32 = float((torch.tensor(rho, dtype=torch.float32) * L).round())
            if in_float32 != round(rho * L) or L % 37 == 0:
                cases.append((L, rho))
    return cases


@pytest.mark.parametrize('two_stream', [False, True])
def test_masked_counts_fit_their_static_widths_at_rounding_ties(two_stream):
    """Counts and static widths come from one rounding: no IndexError, and every masked set fills its rows."""
    cases = tie_cases()
    assert len(cases) > 40
    for L, rho in cases:
        x = torch.randint(0, 50, (3, L + 1), generator=torch.Generator().manual_seed(L))
        for objective, ratio in (('mlm', rho), ('vm', (max(0.01, rho - 0.1), rho)),
                                 ('vm', (rho, min(0.99, rho + 0.1)))):
            objective_value = Objective(objective, mask_ratio=ratio, two_stream=two_stream)
            batch = objective_value.batch(x, torch.Generator().manual_seed(0))
            n_masked = batch['valid'].sum(dim=1)
            if objective == 'mlm':
                assert (n_masked == masked_count(rho, L)).all(), (L, rho)
            assert batch['valid'].shape[1] == masked_count(ratio[1] if objective == 'vm' else rho, L), (L, ratio)


def test_bert_random_tokens_are_ordinary_tokens():
    """BERT's 10% random replacements never put BOS (or a padding id) into the text (issue 13.6)."""
    bos = 50256
    x = random_tokens(64, 129, bos + 1)
    batch = Objective('mlm', mask_ratio=0.5, bert_replace=True).batch(x, torch.Generator().manual_seed(1), bos)
    changed = batch['content'] != x
    assert changed.sum() > 200  # about 64 * 64 * 0.1 random replacements happened
    assert (batch['content'][:, 1:] < bos).all()
    # a 3-token vocabulary: every replacement is 0, 1 or 2
    small = Objective('mlm', mask_ratio=0.5, bert_replace=True).batch(x % 3, torch.Generator().manual_seed(1), 3)
    assert set(small['content'][:, 1:].unique().tolist()) <= {0, 1, 2}


@pytest.mark.parametrize('t', [1, 2, 3, 4])
def test_dar_first_group_is_uniform(t):
    first = dar_sizes(12000, 20, t, torch.Generator().manual_seed(t))[:, 1]
    counts = torch.bincount(first, minlength=t + 1)[1:].float()
    assert counts.sum() == 12000 and (first >= 1).all() and (first <= t).all()
    assert ((counts - 12000 / t).abs() / (12000 / t)).max() < 0.06


def test_random_orders_are_uniform_permutations():
    order = visiting_order(12000, 3, True, torch.Generator().manual_seed(0))
    _, counts = torch.unique(order, dim=0, return_counts=True)
    assert len(counts) == 6
    assert ((counts.float() - 2000).abs() / 2000).max() < 0.08


@pytest.mark.parametrize('segmentation', ['fixed', 'random', 'mixed'])
def test_gvp_segmentations(segmentation):
    L, K = 196, 20
    sizes = gvp_sizes(200, L, K, segmentation, torch.Generator().manual_seed(0))
    assert sizes.shape == (200, K + 1) and (sizes >= 1).all() and (sizes.sum(1) == L).all()
    if segmentation == 'mixed':  # the last group starts at round(p L), p ~ N(0.5, 0.1)
        p = (L - sizes[:, -1]).float() / L
        assert abs(float(p.mean()) - 0.5) < 0.03 and abs(float(p.std()) - 0.1) < 0.03
    if segmentation == 'fixed':
        assert (sizes == sizes[0]).all()

# -----------------------------------------------------------------------------
# bad input: one clear ValueError each

@pytest.mark.parametrize('kwargs,match', [
    (dict(objective='dar', t=0), 't >= 1'),
    (dict(objective='vm', mask_ratio=(0.3, 0.15)), 'low <= high'),
    (dict(objective='vm', mask_ratio=(0.0, 0.3)), r'\(0, 1\)'),
    (dict(objective='mlm', mask_ratio=1.2), r'\(0, 1\)'),
    (dict(objective='mlm', mask_ratio=(0.1, 0.2)), 'vm'),
    (dict(objective='bart'), 'unknown objective'),
    (dict(objective='vm', mask_ratio=(1.5,)), r'range \(low, high\)'),  # --mask_ratio=1.5 over a tuple default
    (dict(objective='vm', mask_ratio=(0.1, 0.2, 0.3)), r'range \(low, high\)'),
    (dict(objective='gvp', n_groups=40), 'n_groups'),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Objective(kwargs.pop('objective'), **kwargs).check(S)


def test_sequence_too_short():
    with pytest.raises(ValueError, match='block_size'):
        Objective('dar').check(2)


@pytest.mark.parametrize('objective,options', [('ar', {}), ('ar', dict(two_stream=True)), ('dar', dict(t=3)),
                                               ('mlm', {}), ('mlm', dict(two_stream=True)), ('vm', {}),
                                               ('vm', dict(two_stream=True)), ('gvp', dict(n_groups=3))])
def test_targets_are_the_tokens_at_their_positions(objective, options):
    x = tokens(B=5)
    batch = Objective(objective, **options).batch(x, torch.Generator().manual_seed(4))
    expected = torch.gather(x, 1, target_positions(batch))
    assert torch.equal(batch['targets'][batch['valid']], expected[batch['valid']])


@pytest.mark.parametrize('objective,options', [
    ('vm', {}), ('vm', dict(two_stream=True)), ('mlm', dict(two_stream=True)), ('mdlm', {}), ('dar', dict(t=3)),
    ('ar', dict(random_order=True)), ('gvp', dict(n_groups=3)), ('gvp', dict(n_groups=3, segmentation='random')),
    ('gvp', dict(n_groups=3, segmentation='fixed'))])
def test_every_objectives_batches_have_static_shapes(objective, options):
    """Whatever rho (vm) or first group (gvp's n_0) each sequence draws, every batch has the same shapes, so
    torch.compile(dynamic=False) never recompiles, and the width is the objective's Kind.counts' most."""
    chosen = Objective(objective, **options)
    batches = [chosen.batch(tokens(B=8, seed=s), torch.Generator().manual_seed(s)) for s in range(20)]
    shapes = {tuple((k, tuple(v.shape)) for k, v in batch.items() if torch.is_tensor(v)) for batch in batches}
    assert len(shapes) == 1
    assert batches[0]['valid'].shape[1] == objectives.target_counts(chosen, S - 1)[1]
    assert max(int(b['valid'].sum(dim=1).max()) for b in batches) <= batches[0]['valid'].shape[1]

# -----------------------------------------------------------------------------
# a new objective is one entry in objectives.KINDS: every script takes it from there (README, "Adding an objective")

def train_and_score(tmp_path, corpus, name, *flags):
    out = tmp_path / 'out'
    run_in_process('train.py', f'--dataset={corpus}', f'--out_dir={out}', f'--objective={name}', '--n_layer=1',
                   '--n_head=2', '--n_embd=32', '--block_size=17', '--batch_size=4', '--max_iters=2',
                   '--eval_interval=2', '--eval_iters=1', '--warmup_iters=0', '--progress=False', *flags)
    run_in_process('eval_ppl.py', f'--ckpt={out / "ckpt_best.pt"}', f'--dataset={corpus}', '--max_tokens=64',
                   f'--out_dir={tmp_path / "ppl"}', '--progress=False')
    scored, *floors = json.loads((tmp_path / 'ppl' / 'summary.json').read_text())['checkpoints']
    assert scored['objective'] == name and 1 < scored['ppl'] < 1e6
    assert [floor['name'] for floor in floors] == ['(unigram)', '(bigram)']  # counted on its own training corpus
    return scored


def test_a_new_sequential_objective_is_one_entry_in_kinds(tmp_path, tiny_bytes, monkeypatch):
    """Predict each pair of tokens from the pairs before it. Left at Kind's default flags it trains two-stream
    through its own hook (never GPT's causal shortcut, which would train ar under its name): trained by train.py,
    saved in the checkpoint and scored by eval_ppl.py, with no other file edited."""
    pairs = Kind(groups=lambda objective, B, L, generator: (torch.arange(L) // 2 + 1).expand(B, L),
                 probe_groups=lambda objective, N: torch.arange(N) // 2 + 1)
    monkeypatch.setitem(objectives.KINDS, 'pairs', pairs)
    toy = Objective('pairs')
    assert (toy.two_stream, toy.causal, pretraining_attention(toy), prefix_style(toy), toy.label) == (
        True, False, 'causal', 'groups', 'pairs')
    with pytest.raises(ValueError, match='needs the two-stream model'):
        Objective('pairs', two_stream=False)
    for (b, p), cond in sets_by_position(toy.batch(tokens(), torch.Generator().manual_seed(0))).items():
        first_of_pair = p - (p - 1) % 2
        assert cond == set(range(first_of_pair)), (p, cond)  # BOS and the earlier pairs, never its own pair
    assert probe_groups(toy, 6).tolist() == [0, 1, 1, 2, 2, 3, 3]
    assert train_and_score(tmp_path, tiny_bytes, 'pairs')['style'] == 'groups'


def span_groups(objective, B, L, generator):
    """SpanBERT-style masking: contiguous spans of 1-3 positions at random starts until round(rho L) are masked
    (the last span cut to fit), so the count is exactly what Kind.counts promises."""
    groups = torch.zeros(B, L, dtype=torch.long)
    for b in range(B):
        n_masked = int(objectives.masked_count(objective.mask_ratio, L))
        while int(groups[b].sum()) < n_masked:
            start = int(torch.randint(L, (1,), generator=generator))
            length = int(torch.randint(1, 4, (1,), generator=generator))
            for p in range(start, min(L, start + length)):
                if int(groups[b].sum()) < n_masked:
                    groups[b, p] = 1
    return groups


@pytest.mark.parametrize('two_stream', [False, True])
def test_span_masking_is_one_entry_in_kinds(tmp_path, tiny_bytes, monkeypatch, two_stream):
    """The README's recipe for a new masked objective: a groups hook (0 visible, 1 masked) and its defaults."""
    monkeypatch.setitem(objectives.KINDS, 'span', Kind(groups=span_groups, masked=True, defaults=dict(mask_ratio=0.3)))
    span = Objective('span', two_stream=two_stream).check(S)
    assert span.label == 'span 0.3' + ' two-stream' * two_stream and pretraining_attention(span) == 'bidirectional'
    batch = span.batch(tokens(B=16), torch.Generator().manual_seed(0))
    masked_sets = {}
    for (b, p), cond in sets_by_position(batch).items():  # a masked token sees every visible one, no masked one
        masked_sets.setdefault(b, set()).add(p)
    for (b, p), cond in sets_by_position(batch).items():
        assert cond == set(range(S)) - masked_sets[b], (b, p)
    runs = [sorted(masked_sets[b]) for b in range(16)]
    assert all(len(run) == 4 for run in runs)  # round(0.3 * 12)
    assert any(max(run) - min(run) < 6 for run in runs)  # spans: masked positions cluster (uniform ones rarely do)
    scored = train_and_score(tmp_path, tiny_bytes, 'span', f'--two_stream={two_stream}')
    assert scored['label'].startswith('span')


@pytest.mark.parametrize('hook, fragment', [
    (lambda objective, B, L, generator: torch.zeros(B, L, dtype=torch.long), 'largest id is 0'),  # no target
    (lambda objective, B, L, generator: torch.tensor([0, 1, 1, 3] * (L // 4)).expand(B, L), 'skip a number'),
    (lambda objective, B, L, generator: torch.full((B, L), -1), 'ids -1..-1'),
])
def test_a_sequential_hook_that_breaks_the_numbering_stops_with_one_line(monkeypatch, hook, fragment):
    """Every sequence needs a target and groups numbered 1..K: a sequence of group 0 alone has a loss of 0 / 0
    (NaN), and a skipped id says the hook does not do what its author meant."""
    monkeypatch.setitem(objectives.KINDS, 'broken', Kind(hook))
    with pytest.raises(ValueError, match=f"objective 'broken': its groups hook gave .*{fragment}"):
        Objective('broken').check(S)  # where train.py first meets the objective, not on every batch


def readme_objective():
    """The code block of README's "Adding an objective", as a fork pastes it at the end of objectives.py."""
    readme = open(os.path.join(ROOT, 'README.md')).read()
    section = readme[readme.index('### Adding an objective'):]
    return section[section.index('```python\n') + len('```python\n'):section.index('```\n', 10)]


def test_the_readme_fork_path_trains_scores_and_samples_in_fresh_processes(tmp_path):
    """README's objective pasted into a copy of objectives.py: train.py, eval_ppl.py and sample.py each in its own
    interpreter find it through the checkpoint's name alone, and the prefix is read bidirectionally."""
    fork = tmp_path / 'fork'
    for folder in ('', 'data', 'evals'):
        os.makedirs(fork / folder, exist_ok=True)
        for name in os.listdir(os.path.join(ROOT, folder)):
            if name.endswith('.py'):
                shutil.copy(os.path.join(ROOT, folder, name), fork / folder / name)
    (fork / 'objectives.py').write_text((fork / 'objectives.py').read_text() + '\n' + readme_objective())
    rng = np.random.default_rng(0)
    stream = np.concatenate([rng.integers(0, 40, size=50) for _ in range(100)])
    corpus = write_corpus(tmp_path / 'corpus', stream[:4000], stream[4000:], tokenizer='bytes')
    run = lambda *args: subprocess.run([sys.executable, *args], cwd=fork, capture_output=True, text=True,
                                       timeout=600, env={**os.environ, 'OMP_NUM_THREADS': '1'})  # a hang guard
    trained = run('train.py', f'--dataset={corpus}', '--out_dir=out', '--objective=prefix_lm', '--n_layer=1',
                  '--n_head=2', '--n_embd=32', '--block_size=17', '--batch_size=4', '--max_iters=2',
                  '--eval_interval=2', '--eval_iters=1', '--warmup_iters=0', '--progress=False')
    assert trained.returncode == 0, trained.stderr
    scored = run('eval_ppl.py', '--ckpt=out/ckpt_best.pt', f'--dataset={corpus}', '--max_tokens=64',
                 '--out_dir=ppl', '--progress=False')
    assert scored.returncode == 0, scored.stderr
    summary = json.loads((fork / 'ppl' / 'summary.json').read_text())['checkpoints'][0]
    assert summary['objective'] == 'prefix_lm' and summary['style'] == 'groups' and 1 < summary['ppl'] < 1e6
    sampled = run('sample.py', '--ckpt=out/ckpt_best.pt', '--max_new_tokens=8', '--seed=1')
    assert sampled.returncode == 0 and 'prefix_lm (groups)' in sampled.stderr, sampled.stderr
    assert sampled.stdout.startswith('---------- sample 1\n')
    spec = importlib.util.spec_from_file_location('forked_objectives', fork / 'objectives.py')
    forked = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(forked)
    batch = forked.Objective('prefix_lm').batch(tokens(B=8), torch.Generator().manual_seed(0))
    for (b, p), cond in sets_by_position(batch).items():
        assert cond == set(range(p)), (b, p)  # the prefix and the targets before p, never p itself
    first_target = batch['query_pos'].masked_fill(~batch['valid'], S).min(dim=1).values
    prefix = (batch['content_pos'] >= 1) & (batch['content_pos'] < first_target[:, None])
    assert (batch['content_groups'][prefix] == 0).all() and len(set(first_target.tolist())) > 1  # random splits


def test_a_masked_kind_that_breaks_its_counts_stops_with_one_line(monkeypatch):
    """A groups hook must mask between Kind.counts' fewest and most: one line, not an IndexError deep inside."""
    too_many = Kind(groups=lambda objective, B, L, generator: torch.ones(B, L, dtype=torch.long), masked=True,
                    defaults=dict(mask_ratio=0.3))
    monkeypatch.setitem(objectives.KINDS, 'too_many', too_many)
    with pytest.raises(ValueError, match='masked 12..12 of 12 positions outside Kind.counts = 4..4'):
        Objective('too_many').check(S)

# -----------------------------------------------------------------------------
# masked diffusion (MDLM): m ~ U{1..L}, each sequence's loss the mean over its own masked tokens

def test_mdlm_masked_counts_are_uniform_on_1_to_L():
    L = 12
    batch = Objective('mdlm', two_stream=True).batch(random_tokens(24000, L + 1, 50, 0),
                                                     torch.Generator().manual_seed(0))
    counts = torch.bincount(batch['valid'].sum(dim=1), minlength=L + 1)
    assert counts[0] == 0 and counts[1:].sum() == 24000  # every sequence has a target; all-masked included
    assert ((counts[1:].float() - 2000).abs() / 2000).max() < 0.08


@pytest.mark.parametrize('two_stream', [False, True])
def test_mdlm_loss_weights_every_sequence_alike(two_stream):
    """The ELBO weighting: the mean over sequences of each one's mean NLL, not the mean over all masked tokens
    (which gives a sequence with 12 masked tokens 12 times the weight of one with 1)."""
    from model import ModelConfig, Transformer
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=128, block_size=S, n_layer=1, n_head=2, n_embd=32)).eval()
    batch = Objective('mdlm', two_stream=two_stream).batch(tokens(B=8), torch.Generator().manual_seed(1))
    logits, loss = model(**batch)
    nll = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch['targets'].flatten(), reduction='none')
    nll = nll.view(batch['valid'].shape) * batch['valid']
    n_masked = batch['valid'].sum(dim=1)
    assert len(set(n_masked.tolist())) > 1  # the two means differ only when the counts do
    assert torch.allclose(loss, (nll.sum(1) / n_masked).mean())
    assert not torch.allclose(loss, nll.sum() / n_masked.sum())


def test_python_mask_picture_prints_the_masks_the_readme_shows(capsys):
    """`python mask_picture.py` draws every objective; the README's picture of dar is its output, verbatim."""
    run_in_process('mask_picture.py')
    printed = capsys.readouterr().out
    for name in ('ar', 'dar t=2', 'mlm 0.34', 'vm [0.15, 0.3] two-stream', 'mdlm two-stream', 'gvp K=3 mixed'):
        assert f"\n{name}   (columns" in '\n' + printed, name
    dar = printed[printed.index('dar t=2'):printed.index('\n\n', printed.index('dar t=2'))]
    assert '  query   1        g=1 |#......|' in dar.splitlines()  # the first target sees BOS only
    readme = open(os.path.join(ROOT, 'README.md')).read()
    for block in printed.split('\n\n'):
        if block.startswith('dar'):
            assert block in readme, block.splitlines()[0]


def test_mask_picture_takes_keys_as_every_script_does(capsys):
    """A typo, an unknown objective or too short a sequence stops with one line naming it (every argument used to be
    ignored: --help printed the picture); --objectives and --tokens pick what is drawn, its marks in one column."""
    assert "'typo'" in script_error('mask_picture.py', '--typo=1')
    assert "'nope'" in script_error('mask_picture.py', '--objectives=dar,nope')
    assert "--objectives" in script_error('mask_picture.py', '--objectives=')
    assert "'tokens'" in script_error('mask_picture.py', '--tokens=2')
    with pytest.raises(SystemExit):
        run_in_process('mask_picture.py', '--help')
    assert '--tokens=6' in capsys.readouterr().out
    run_in_process('mask_picture.py', '--objectives=dar,gvp', '--tokens=10')
    printed = capsys.readouterr().out
    assert [line for line in printed.splitlines() if '(columns' in line] == [
        "dar t=2   (columns: positions B 1..10; '#' = may attend)", "gvp K=3 mixed   (columns: positions B 1..10; "
        "'#' = may attend)"]
    dar = printed[:printed.index('\n\n')].splitlines()
    assert '  query   10        g=6 |##########.|' in dar  # the last target sees every group before its own
    assert len({line.index('|') for line in printed.splitlines() if '|' in line}) == 1

# the group ids seed 3 draws for two sequences of 12: every recorded run (experiments/) trained on the batches its seed
# drew, so the draws (sizes first, then the visiting order) must not change
SEED_3_GROUPS = [
    ('dar', dict(t=3, random_order=True), [[2, 1, 3, 1, 4, 4, 3, 5, 3, 4, 2, 2], [1, 3, 1, 4, 3, 4, 3, 2, 4, 1, 2, 2]]),
    ('vm', {}, [[0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0], [0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]]),
    ('mdlm', {}, [[1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [0, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1]]),
    ('gvp', dict(n_groups=3), [[2, 0, 2, 1, 3, 3, 3, 3, 1, 3, 0, 1], [2, 3, 3, 0, 0, 3, 3, 1, 0, 0, 3, 3]]),
]


@pytest.mark.parametrize('objective,options,groups', SEED_3_GROUPS, ids=[case[0] for case in SEED_3_GROUPS])
def test_a_seed_draws_the_groups_of_the_recorded_runs(objective, options, groups):
    drawn = Objective(objective, **options)
    assert drawn.kind.groups(drawn, 2, 12, torch.Generator().manual_seed(3)).tolist() == groups

"""model.py: masks equal Eq. 24 / GVP Eq. 11-12, nothing leaks, both backends agree, patches round-trip."""
import pytest
import torch
import torch.nn.functional as F

from checkpoint import Pretrained, load_checkpoint, save_checkpoint
from conditioning import conditioning_sets, target_positions
from conftest import needs_compiler, random_tokens
from data.images import patchify
from model import ModelConfig, Transformer, dense_mask, open_pairs
from objectives import PAD_GROUP, Objective, groups_from_sizes

S = 11
OBJECTIVES = [
    ('ar', {}),
    ('ar', dict(two_stream=True)),
    ('ar', dict(two_stream=True, random_order=True)),
    ('dar', dict(t=2)),
    ('dar', dict(t=3, random_order=True)),
    ('mlm', dict(mask_ratio=0.3)),
    ('mlm', dict(mask_ratio=0.3, two_stream=True)),
    ('vm', dict(mask_ratio=(0.15, 0.5))),
    ('vm', dict(mask_ratio=(0.15, 0.5), two_stream=True)),
    ('gvp', dict(n_groups=3, segmentation='mixed')),
    ('gvp', dict(n_groups=4, segmentation='random')),
]
IDS = [f"{o}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for o, kw in OBJECTIVES]


def tiny_model(kind='tokens', backend='sdpa', seed=0, n_layer=2):
    """kind: 'tokens' (a learned position table), 'rope' (tokens with rotary positions) or 'patches'."""
    torch.manual_seed(seed)
    if kind in ('tokens', 'rope'):
        config = ModelConfig(vocab_size=64, block_size=S, n_layer=n_layer, n_head=2, n_embd=32, attn_backend=backend,
                             rope=kind == 'rope')
    else:
        config = ModelConfig(input_kind='patches', image_size=12, patch_size=4, channels=1, n_layer=2, n_head=2,
                             n_embd=32, attn_backend=backend)
    return Transformer(config).eval()


def token_batch(B=3, seed=0):
    return random_tokens(B, S, 64, seed)


def image_sequence(B=3, seed=0):
    imgs = torch.rand(B, 1, 12, 12, generator=torch.Generator().manual_seed(seed))
    return torch.cat([torch.zeros(B, 1, 16), patchify(imgs, 4)], dim=1)


pytestmark = pytest.mark.usefixtures('one_thread')  # tiny ops (conftest.one_thread)

# -----------------------------------------------------------------------------
# masks, element by element

def test_masks_equal_eq24_by_hand():
    groups = torch.tensor([[0, 1, 1, 2, 3, 3]])
    content = dense_mask(groups)[0, 0]
    expected_content = torch.tensor([[1, 0, 0, 0, 0, 0],
                                     [1, 1, 1, 0, 0, 0],
                                     [1, 1, 1, 0, 0, 0],
                                     [1, 1, 1, 1, 0, 0],
                                     [1, 1, 1, 1, 1, 1],
                                     [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(content, expected_content)
    query = dense_mask(groups, groups[:, 1:])[0, 0, 6:]  # query rows for positions 1..5
    expected_query = torch.tensor([[1, 0, 0, 0, 0, 0],
                                   [1, 0, 0, 0, 0, 0],
                                   [1, 1, 1, 0, 0, 0],
                                   [1, 1, 1, 1, 0, 0],
                                   [1, 1, 1, 1, 0, 0]], dtype=torch.bool)
    assert torch.equal(query, expected_query)
    assert open_pairs(groups, groups[:, 1:]).item() == expected_content.sum() + expected_query.sum()


def test_padding_is_never_seen_and_never_empty():
    groups = torch.tensor([[0, 0, 1, PAD_GROUP]])
    mask = dense_mask(groups, torch.tensor([[1, 2, 1]]))[0, 0]
    assert not mask[:3, 3].any() and not mask[4:, 3].any()  # no real row sees the pad key
    assert mask.any(dim=1).all()  # every row has an open key


def test_permuted_groups_are_gvp_eq11_12():
    """Groups along an order z give the identity-order masks with rows and columns permuted by z."""
    L = 7
    sizes = torch.tensor([[2, 1, 3, 1]])
    identity = torch.arange(1, L + 1)[None]
    z = torch.tensor([[4, 7, 1, 3, 6, 2, 5]])
    ident_groups = torch.cat([torch.zeros(1, 1, dtype=torch.long), groups_from_sizes(identity, sizes)], 1)
    perm_groups = torch.cat([torch.zeros(1, 1, dtype=torch.long), groups_from_sizes(z, sizes)], 1)
    for query in (False, True):
        m_ident = dense_mask(ident_groups, ident_groups[:, 1:] if query else None)[0, 0]
        m_perm = dense_mask(perm_groups, perm_groups[:, 1:] if query else None)[0, 0]
        rank_to_pos = torch.cat([torch.zeros(1, dtype=torch.long), z[0]])  # row r of identity = position z_r
        rows = torch.cat([rank_to_pos, rank_to_pos[1:] + L]) if query else rank_to_pos
        assert torch.equal(m_perm[rows][:, rank_to_pos], m_ident)

# -----------------------------------------------------------------------------
# leakage: a prediction changes iff a token in its conditioning set changes

def perturbed(x, q, kind, seed):
    x = x.clone()
    if kind != 'patches':
        x[:, q] = (x[:, q] + 1 + torch.randint(0, 60, x[:, q].shape,
                                               generator=torch.Generator().manual_seed(seed))) % 63
    else:
        x[:, q] = x[:, q] + torch.randn(x[:, q].shape, generator=torch.Generator().manual_seed(seed))
    return x


def stacked(batches):
    """Batches of the same static widths as one batch, sequence after sequence."""
    return {key: torch.cat([batch[key] for batch in batches]) if torch.is_tensor(value) else value
            for key, value in batches[0].items()}


@pytest.mark.parametrize('kind', ['tokens', 'rope', 'patches'])
@pytest.mark.parametrize('backend', ['sdpa', 'flex'])
@pytest.mark.parametrize('objective,options', OBJECTIVES, ids=IDS)
def test_no_leakage(objective, options, backend, kind):
    """x and its copies with position q moved (q = 1..S-1), each with the same draws, in one forward
    pass (sequences of a batch never attend to each other): one call instead of S slow eager flex
    calls."""
    model = tiny_model(kind, backend)
    x = image_sequence() if kind == 'patches' else token_batch()
    B, seq_len = x.shape[:2]

    def drawn(x):
        return Objective(objective, **options).batch(x, torch.Generator().manual_seed(7))
    batch = drawn(x)
    copies = [batch] + [drawn(perturbed(x, q, kind, q)) for q in range(1, seq_len)]
    with torch.no_grad():
        preds, _ = model(**stacked(copies))
    base, moved = preds[:B], preds.view(seq_len, B, *preds.shape[1:])
    sets = conditioning_sets(batch)
    positions = target_positions(batch)
    for q in range(1, seq_len):
        change = (moved[q] - base).abs().flatten(2).amax(-1)
        for b, rows in enumerate(sets):
            for p, cond in enumerate(rows):
                if cond is None:
                    continue
                if q in cond:
                    assert change[b, p] > 1e-6, \
                        f"target {int(positions[b, p])} ignores position {q} it should see"
                else:
                    assert change[b, p] <= 1e-5, \
                        f"target {int(positions[b, p])} leaks position {q}"

# -----------------------------------------------------------------------------
# the two backends give the same numbers (flex eager on CPU: forward only)

@pytest.mark.parametrize('kind', ['tokens', 'rope'])
@pytest.mark.parametrize('objective,options', OBJECTIVES, ids=IDS)
def test_flex_equals_sdpa(objective, options, kind):
    sdpa, flex = tiny_model(kind, 'sdpa', n_layer=1), tiny_model(kind, 'flex', n_layer=1)
    flex.load_state_dict(sdpa.state_dict())
    batch = Objective(objective, **options).batch(token_batch(B=4), torch.Generator().manual_seed(3))
    with torch.no_grad():
        a, loss_a = sdpa(**batch)
        b, loss_b = flex(**batch)
    assert (a - b).abs().max() <= 1e-5 and abs(loss_a - loss_b) <= 1e-5


@pytest.mark.parametrize('objective,options', OBJECTIVES, ids=IDS)
def test_rope_sees_only_relative_positions(objective, options):
    """Shifting every row's position by the same c (content rows by content_pos, query rows by query_pos) leaves
    every prediction unchanged with rotary positions; with a learned table it does not. Rows are packed and stacked,
    so a rotation by arange(rows) instead of each row's own position fails this for every objective but ar."""
    batch = Objective(objective, **options).batch(token_batch(B=4), torch.Generator().manual_seed(5))
    shifted = {**batch, 'content_pos': batch['content_pos'] + 37}
    if batch['query_pos'] is not None:
        shifted['query_pos'] = batch['query_pos'] + 37
    rope, learned = tiny_model('rope'), tiny_model('tokens')
    with torch.no_grad():
        assert (rope(**batch)[0] - rope(**shifted)[0]).abs().max() <= 1e-4
        shifted_learned = {**shifted, 'content_pos': shifted['content_pos'] % S}
        if batch['query_pos'] is not None:
            shifted_learned['query_pos'] = shifted['query_pos'] % S
        assert (learned(**batch)[0] - learned(**shifted_learned)[0]).abs().max() > 1e-3


def test_rope_has_no_position_table_and_is_refused_for_patches():
    assert tiny_model('rope').wpe is None and 'wpe.weight' not in tiny_model('rope').state_dict()
    with pytest.raises(ValueError, match='rope rotates pairs of channels'):
        ModelConfig(input_kind='patches', image_size=12, patch_size=4, n_embd=32, n_head=2, rope=True)
    with pytest.raises(ValueError, match='even head size'):
        ModelConfig(vocab_size=64, n_embd=30, n_head=2, rope=True)


@pytest.mark.parametrize('backend', ['sdpa', 'flex'])
def test_causal_kernel_equals_the_mask(monkeypatch, backend):
    """One-stream ar goes to SDPA's causal kernel (is_causal, no mask: flash / cuDNN on a GPU) on either backend,
    with the numbers of the backend's own mask of the same groups (dense, or flex's BlockMask)."""
    import model as model_module
    calls = []
    sdpa, flex = F.scaled_dot_product_attention, model_module.flex_attention
    monkeypatch.setattr(model_module.F, 'scaled_dot_product_attention',
                        lambda *a, **kw: calls.append(('sdpa', kw.get('is_causal'))) or sdpa(*a, **kw))
    monkeypatch.setattr(model_module, 'flex_attention', lambda *a: calls.append(('flex', None)) or flex(*a))
    model = tiny_model(backend=backend)
    batch = Objective('ar').batch(token_batch(), torch.Generator())
    with torch.no_grad():
        fast, loss = model(**batch)
        assert calls == [('sdpa', True)] * 2  # one call per layer
        masked, masked_loss = model(**{**batch, 'causal': False})
        assert calls[2:] == [(backend, None if backend == 'flex' else False)] * 2
    assert (fast - masked).abs().max() <= 1e-5 and abs(loss - masked_loss) <= 1e-6

@pytest.mark.parametrize('backend', ['sdpa', 'flex'])
def test_one_stream_bert_attends_unmasked(monkeypatch, backend):
    """One-stream mlm sees every key: SDPA gets no mask at all (a dense all-True one would rule out the flash
    kernel), on either backend, with the numbers of the dense mask; a padded BERT batch keeps its mask."""
    import model as model_module
    masks = []
    sdpa = F.scaled_dot_product_attention
    monkeypatch.setattr(model_module.F, 'scaled_dot_product_attention',
                        lambda q, k, v, attn_mask=None, **kw: masks.append(attn_mask) or sdpa(q, k, v, attn_mask, **kw))
    model = tiny_model(backend=backend)
    batch = Objective('mlm', mask_ratio=0.3).batch(token_batch(), torch.Generator().manual_seed(1))
    assert batch['all_visible'] is True
    with torch.no_grad():
        unmasked, loss = model(**batch)
        assert masks == [None, None]  # one call per layer
        dense, dense_loss = model(**{**batch, 'all_visible': False})
    assert (unmasked - dense).abs().max() <= 1e-5 and abs(loss - dense_loss) <= 1e-6
    assert all(Objective(name, **kw).batch(token_batch(), torch.Generator())['all_visible'] is False
               for name, kw in OBJECTIVES if not (name in ('mlm', 'vm') and not kw.get('two_stream')))


# -----------------------------------------------------------------------------
# the compiled paths a GPU run takes, exercised on CPU (inductor): what a first cluster user would
# otherwise find

# every objective: gvp's random segmentation draws a different first group per sequence, so its
# widths are the ones a batch could take from its draws (a recompile per width) unless Kind.counts
# fixes them
COMPILED = [('ar', {}), ('dar', {}), ('vm', dict(two_stream=True)), ('mlm', {}),
            ('mdlm', dict(two_stream=True)), ('gvp', dict(n_groups=3, segmentation='random'))]
SEEDS = (0, 3, 5)  # batches of 3 whose gvp sequences have at most 9, 8 and 7 targets: three widths
COMPILED_CASES = [(o, kw, 'tokens') for o, kw in COMPILED] + \
    [('dar', {}, 'rope'), ('vm', dict(two_stream=True), 'rope')]  # rotary rows of both streams
COMPILED_IDS = [o + ('-rope' if kind == 'rope' else '') for o, _, kind in COMPILED_CASES]

# training's graphs, with their backward. vm-rope through inductor: the graph that covers most (both
# streams, the masks built in the graph, rotary q and k, vm's drawn mask ratios), and each cold
# inductor compile costs a core tens of seconds; the other objectives (one-stream causal ar among
# them: the same ops but the mask, which is SDPA's own argument) through aot_eager, which traces the
# same graph (dynamo's guards decide recompiles, whatever the backend) and checks AOT autograd's
# gradients. No case of vm (tokens) or dar-rope: each takes no path that vm-rope and dar do not.
TRAINING_CASES = [pytest.param('vm', dict(two_stream=True), 'rope', 'inductor', id='vm-rope',
                               marks=pytest.mark.long)] + \
    [pytest.param(o, kw, kind, 'aot_eager', id=name)
     for (o, kw, kind), name in zip(COMPILED_CASES, COMPILED_IDS)
     if name not in ('vm', 'dar-rope', 'vm-rope')]


@needs_compiler
@pytest.mark.parametrize('objective,options,kind,backend', TRAINING_CASES)
def test_compiled_model_equals_eager_and_never_recompiles(objective, options, kind, backend):
    """torch.compile(model) (train.py's compile=True, its chunked head): loss and every gradient as
    eager's plain head, and batches of other drawn mask ratios (vm), group sizes (dar) or first
    groups (gvp) reuse the first compiled graph: widths are static."""
    torch._dynamo.reset()
    eager = tiny_model(kind, n_layer=1).train()  # one layer: half the graph to compile, same kernels
    compiled_copy = tiny_model(kind, n_layer=1).train()
    compiled_copy.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_copy, backend=backend, dynamic=False)
    # inductor's C++ kernels unvectorised: fewer of them to build, each faster; what is under test is
    # the graph's lowering and its numbers (a GPU run's kernels are Triton's, not these)
    with torch._inductor.config.patch({'cpp.vec_isa_ok': False}):
        for seed in SEEDS:
            batch = Objective(objective, **options).batch(token_batch(B=3, seed=seed),
                                                          torch.Generator().manual_seed(seed))
            with torch._dynamo.config.patch(error_on_recompile=seed > 0):
                _, loss_compiled = compiled(**batch, return_preds=False)
                loss_compiled.backward()
            _, loss_eager = eager(**batch)
            loss_eager.backward()
            assert abs(loss_compiled.item() - loss_eager.item()) <= 1e-5
            parameters = zip(eager.named_parameters(), compiled_copy.parameters())
            for (name, p_eager), p_compiled in parameters:
                if p_eager.grad is not None:
                    assert torch.allclose(p_eager.grad, p_compiled.grad, atol=1e-5, rtol=1e-4), name
            eager.zero_grad(set_to_none=True)
            compiled_copy.zero_grad(set_to_none=True)


@pytest.mark.long  # eight graphs, each traced by dynamo and AOT autograd: tens of seconds of a core
def test_compiled_flex_model_is_one_graph_per_objective_with_sdpas_numbers():
    """The CUDA path's shape of compilation, forward only: FlexAttention compiled with the model, its
    BlockMask built inside the graph from the group ids, traced by dynamo and AOT autograd
    (aot_eager: inductor's CPU flex kernel cannot read a BlockMask built in the graph; the GPU's
    kernel is gpu_check.py's part 1). Graphs counted as the backend receives them: the BlockMask and
    every flex call join the model's one graph (no graph break), later batches reuse it (no
    recompile, as a compiled kernel stored in a global on first use would cause), and the
    predictions and loss are eager flex's and dense-mask SDPA's."""
    graphs, aot_eager = [], torch._dynamo.lookup_backend('aot_eager')

    def counted(graph, inputs):
        graphs.append(graph)
        return aot_eager(graph, inputs)
    for objective, options, kind in COMPILED_CASES:
        torch._dynamo.reset()
        graphs.clear()
        sdpa, flex = tiny_model(kind, 'sdpa', n_layer=1), tiny_model(kind, 'flex', n_layer=1)
        flex.load_state_dict(sdpa.state_dict())
        compiled = torch.compile(flex, backend=counted, dynamic=False)
        with torch.no_grad():
            for seed in SEEDS:
                batch = Objective(objective, **options).batch(token_batch(B=3, seed=seed),
                                                              torch.Generator().manual_seed(seed))
                preds, loss = compiled(**batch)
                (eager, _), (reference, loss_reference) = flex(**batch), sdpa(**batch)
                case = (objective, kind, seed)
                assert (preds - eager).abs().max() <= 1e-5, case
                assert (preds - reference).abs().max() <= 1e-4, case
                assert abs(loss - loss_reference) <= 1e-4, case
        assert len(graphs) == 1, (objective, kind)


@pytest.mark.parametrize('objective,options', OBJECTIVES, ids=IDS)
def test_bf16_autocast_trains_every_objective(objective, options):
    """train.py's dtype='bfloat16' (the CUDA default) as CPU autocast: finite loss and gradients, near fp32."""
    model = tiny_model().train()
    batch = Objective(objective, **options).batch(token_batch(B=4), torch.Generator().manual_seed(5))
    with torch.autocast('cpu', dtype=torch.bfloat16):
        _, loss = model(**batch)
    loss.backward()
    assert torch.isfinite(loss) and all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())
    with torch.no_grad():
        _, loss_fp32 = model(**batch)
    assert abs(loss.item() - loss_fp32.item()) <= 0.05 * loss_fp32.item()

# -----------------------------------------------------------------------------
# finite loss and gradients, first-group rows included

@pytest.mark.parametrize('kind', ['tokens', 'patches'])
@pytest.mark.parametrize('objective,options', OBJECTIVES, ids=IDS)
def test_finite_loss_and_gradients(objective, options, kind):
    model = tiny_model(kind).train()
    x = token_batch() if kind == 'tokens' else image_sequence()
    batch = Objective(objective, **options).batch(x, torch.Generator().manual_seed(0))
    preds, loss = model(**batch)
    loss.backward()
    assert torch.isfinite(preds).all() and torch.isfinite(loss)
    for name, p in model.named_parameters():
        assert p.grad is None or torch.isfinite(p.grad).all(), name
    assert model.query_emb.grad is not None or batch['query_pos'] is None


@pytest.mark.parametrize('objective,options', [('ar', {}), ('vm', dict(mask_ratio=(0.15, 0.5), two_stream=True)),
                                               ('mdlm', {})], ids=['ar', 'vm', 'mdlm'])
def test_chunked_head_loss_equals_the_plain_one(monkeypatch, objective, options):
    """Training's loss (return_preds=False) runs the head and cross-entropy over chunks of rows, each chunk's logits
    recomputed in backward: the loss and every gradient of the plain head over all rows (float32), padded targets
    left out, MDLM's per-sequence mean included, and no cross-entropy ever sees more than one chunk."""
    import model as model_module
    monkeypatch.setattr(model_module, 'head_rows', lambda vocab_size: 5)
    seen, cross_entropy = [], F.cross_entropy
    monkeypatch.setattr(model_module.F, 'cross_entropy', lambda x, *a, **kw: seen.append(len(x)) or
                        cross_entropy(x, *a, **kw))
    plain, chunked = tiny_model().train(), tiny_model().train()
    batch = Objective(objective, **options).batch(token_batch(B=4), torch.Generator().manual_seed(2))
    _, loss = plain(**batch)
    loss.backward()
    seen.clear()
    preds, chunked_loss = chunked(**batch, return_preds=False)
    chunked_loss.backward()
    assert preds is None and max(seen) <= 5 and sum(seen) == 2 * batch['valid'].numel()  # forward, then backward
    assert abs(loss.item() - chunked_loss.item()) <= 1e-6
    for (name, p), q in zip(plain.named_parameters(), chunked.parameters()):
        assert (p.grad is None) == (q.grad is None) and (p.grad is None or torch.allclose(p.grad, q.grad, atol=1e-7,
                                                                                           rtol=1e-5)), name


def test_norm_pix_loss_targets():
    model = tiny_model('patches')
    model.config.norm_pix_loss = True
    targets = torch.rand(2, 3, 16)
    normed = (targets - targets.mean(-1, keepdim=True)) / (targets.var(-1, keepdim=True) + 1e-6).sqrt()
    assert model.loss(normed, targets, torch.ones(2, 3, dtype=torch.bool)).item() < 1e-10

# -----------------------------------------------------------------------------
# patches

def test_image_not_divisible_by_patch():
    with pytest.raises(ValueError, match='not divisible'):
        ModelConfig(input_kind='patches', image_size=30, patch_size=4)

# -----------------------------------------------------------------------------
# features, checkpoints

def test_features_without_mask_are_bidirectional_and_with_causal_groups_are_not():
    model = tiny_model()
    x = token_batch(B=1)
    y = x.clone()
    y[0, -1] = (y[0, -1] + 1) % 63
    free = model.features(x), model.features(y)
    assert (free[0][0, 0] - free[1][0, 0]).abs().max() > 1e-6
    causal_groups = torch.arange(S)[None]
    masked = model.features(x, content_groups=causal_groups), model.features(y, content_groups=causal_groups)
    assert (masked[0][0, :-1] - masked[1][0, :-1]).abs().max() <= 1e-6
    layers = model.features(x, all_layers=True)
    assert len(layers) == 2 and layers[-1].shape == (1, S, 32)


def test_checkpoint_roundtrip_and_errors(tmp_path):
    from dataclasses import asdict
    model = tiny_model()
    path = tmp_path / 'ckpt.pt'
    save_checkpoint({'model': model.state_dict(), 'model_config': asdict(model.config)}, path)
    loaded, _ = load_checkpoint(path)
    batch = Objective('ar').batch(token_batch(), torch.Generator())
    with torch.no_grad():
        assert torch.equal(loaded(**batch)[0], model(**batch)[0])
    with pytest.raises(ValueError, match='not written by train.py'):  # weights, but no objective to read them by
        Pretrained(path, 'tokens')
    with pytest.raises(ValueError, match='does not exist'):
        load_checkpoint(tmp_path / 'missing.pt')
    (tmp_path / 'corrupt.pt').write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match='corrupt'):
        load_checkpoint(tmp_path / 'corrupt.pt')
    torch.save({'weights': 1}, tmp_path / 'other.pt')
    with pytest.raises(ValueError, match='not a lookaround checkpoint'):
        load_checkpoint(tmp_path / 'other.pt')



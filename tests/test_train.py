"""train.py end to end: DDP equals accumulation, resume equals straight, crashes lose nothing, it learns,
and every bad input stops with one line."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from conftest import ROOT, one_error_line, run_script, script_error, write_corpus
from model import load_checkpoint, read_checkpoint, save_checkpoint

TINY = ['--n_layer=2', '--n_head=2', '--n_embd=32', '--block_size=33', '--batch_size=4', '--eval_iters=2',
        '--log_interval=1', '--progress=False', '--warmup_iters=2', '--lr_decay_iters=20', '--learning_rate=3e-3']


def train(out_dir, corpus, *args, env=None):
    result = run_script('train.py', f'--dataset={corpus}', f'--out_dir={out_dir}', *TINY, *args, env=env)
    return result


def params(out_dir):
    return read_checkpoint(os.path.join(out_dir, 'ckpt_last.pt'))['model']


def log(out_dir):
    return [json.loads(line) for line in open(os.path.join(out_dir, 'log.jsonl'))]

# -----------------------------------------------------------------------------

def test_ddp_equals_gradient_accumulation(tmp_path, tiny_corpus):
    """2 gloo processes x 1 micro-step == 1 process x 2 micro-steps: same data, same averaged gradient."""
    common = ['--objective=dar', '--max_iters=3', '--eval_interval=3', '--gradient_accumulation_steps=2']
    single = train(tmp_path / 'single', tiny_corpus, *common)
    assert single.returncode == 0, single.stderr
    ddp = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2',
                          'train.py', f'--dataset={tiny_corpus}', f'--out_dir={tmp_path / "ddp"}', *TINY, *common],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert ddp.returncode == 0, ddp.stderr
    a, b = params(tmp_path / 'single'), params(tmp_path / 'ddp')
    assert a.keys() == b.keys()
    for name in a:
        assert (a[name] - b[name]).abs().max() <= 1e-6, name
    assert read_checkpoint(tmp_path / 'ddp' / 'ckpt_last.pt')['world_size'] == 2


@pytest.mark.parametrize('objective', ['ar', 'vm'])
def test_resume_equals_straight_run(tmp_path, tiny_corpus, objective):
    common = [f'--objective={objective}', '--eval_interval=3']
    straight = train(tmp_path / 'straight', tiny_corpus, *common, '--max_iters=6')
    assert straight.returncode == 0, straight.stderr
    first = train(tmp_path / 'resumed', tiny_corpus, *common, '--max_iters=3')
    assert first.returncode == 0, first.stderr
    second = train(tmp_path / 'resumed', tiny_corpus, *common, '--max_iters=6', '--init_from=resume')
    assert second.returncode == 0, second.stderr
    assert [r['train_loss'] for r in log(tmp_path / 'straight')] == [r['train_loss'] for r in log(tmp_path / 'resumed')]
    a, b = params(tmp_path / 'straight'), params(tmp_path / 'resumed')
    for name in a:
        assert torch.equal(a[name], b[name]), name  # bitwise on CPU


def test_sigterm_saves_and_resumes(tmp_path, tiny_corpus):
    out = tmp_path / 'out'
    proc = subprocess.Popen([sys.executable, 'train.py', f'--dataset={tiny_corpus}', f'--out_dir={out}', *TINY,
                             '--max_iters=100000', '--eval_interval=100000'], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not os.path.isdir(out) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)  # train.py makes out_dir right before its first step
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stderr  # saved but not finished: no wrapper may count it done
    ckpt = read_checkpoint(out / 'ckpt_last.pt')
    assert 0 < ckpt['iter'] < 100000
    assert 'init_from=resume' in stdout + stderr
    # resuming continues from the saved step; a finished run resumed returns at once and leaves its files alone
    resume = [sys.executable, 'train.py', f'--dataset={tiny_corpus}', f'--out_dir={out}', *TINY,
              f"--max_iters={ckpt['iter'] + 2}", '--eval_interval=100000', '--init_from=resume']
    resumed = subprocess.run(resume, cwd=ROOT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert read_checkpoint(out / 'ckpt_last.pt')['iter'] == ckpt['iter'] + 2
    before = (out / 'ckpt_last.pt').stat().st_mtime_ns
    again = subprocess.run(resume, cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 0 and (out / 'ckpt_last.pt').stat().st_mtime_ns == before, again.stderr


def test_sigkill_during_checkpoint_write_keeps_the_previous_one(tmp_path):
    path = tmp_path / 'ckpt.pt'
    good = {'model': {'w': torch.ones(3)}, 'model_config': {}}
    save_checkpoint(good, path)
    writer = subprocess.Popen([sys.executable, '-c', (
        "import sys, torch; sys.path.insert(0, '.'); from model import save_checkpoint\n"
        f"big = {{'model': {{'w': torch.zeros(150_000_000)}}, 'model_config': {{}}}}\n"
        f"while True: save_checkpoint(big, {str(path)!r})")], cwd=ROOT)
    time.sleep(4)
    writer.kill()
    writer.wait()
    ckpt = read_checkpoint(path)  # the old one, or a complete new one: never a torn file
    assert ckpt['model']['w'].numel() in (3, 150_000_000)


def test_every_objective_learns_and_writes_its_outputs(tmp_path, tiny_corpus):
    # ar with nanoGPT's CPU flags spelled out (issue 17: they used to be refused)
    for objective, extra in [('ar', ['--compile=False', '--device=cpu', '--dtype=float32', '--attn_backend=sdpa']),
                             ('dar', []), ('mlm', []), ('vm', ['--two_stream=True']),
                             ('gvp', ['--n_groups=4'])]:
        out = tmp_path / objective
        result = train(out, tiny_corpus, f'--objective={objective}', *extra, '--max_iters=30', '--eval_interval=10',
                       '--lr_decay_iters=30')
        assert result.returncode == 0, result.stderr
        records = log(out)
        assert [r['iter'] for r in records] == [10, 20, 30]
        assert records[-1]['val_loss'] < records[0]['val_loss'] - 0.2, (objective, records)
        assert {'iter', 'train_loss', 'val_loss', 'lr', 'tokens_per_sec'} <= set(records[0])
        assert (out / 'loss.png').exists() and (out / 'loss.csv').exists() and (out / 'ckpt_best.pt').exists()
        model, ckpt = load_checkpoint(out / 'ckpt_best.pt')
        assert ckpt['config']['objective'] == objective


# the demo's configs at a reduced setting that learns in seconds (the full 400 steps are checked by `make demo`
# itself): ar gets 2 x 128 on rows of 64 bytes; vm 1 x 128 on rows of 16 bytes, where a masked byte's neighbours
# are a large share of its row, so the masked model finds them within 150 steps instead of ~400
REDUCED = {'ar': dict(n_layer=2, block_size=64, batch_size=16, max_iters=250, warmup_iters=20),
           'vm': dict(n_layer=1, block_size=16, batch_size=64, max_iters=150, warmup_iters=10)}


@pytest.mark.parametrize('arm', ['ar', 'vm'])
def test_demo_configs_learn_shakespeare_bytes(tmp_path, arm):
    """`make demo`'s configs on the real plays: ar's held-out loss ends below the bigram floor (it uses more than
    the previous byte) and vm's below the unigram floor (its masked bytes are predicted from context). Both floors
    are counted on the training plays (evals/ppl.NgramBaselines), on held-out rows of the same length."""
    data_dir = tmp_path / 'shakespeare_bytes'
    prepared = run_script('data/shakespeare/prepare.py', '--tokenizer=bytes', f'--out_dir={data_dir}')
    assert prepared.returncode == 0, prepared.stderr
    from data.text import load_tokens
    from evals.ppl import NgramBaselines, gather_windows, window_starts
    reduced = REDUCED[arm]
    val = load_tokens(data_dir, 'val', 'bytes')
    floors = NgramBaselines(load_tokens(data_dir, 'train', 'bytes'), 257).nll(gather_windows(
        val, window_starts(len(val), reduced['block_size'], 100_000), reduced['block_size'], 256).numpy())
    settings = {**reduced, 'lr_decay_iters': reduced['max_iters'], 'eval_interval': reduced['max_iters'],
                'learning_rate': 3e-3, 'min_lr': 3e-4, 'eval_iters': 40, 'progress': False}
    result = run_script('train.py', f'config/{arm}_shakespeare_bytes.py', f'--dataset={data_dir}',
                        f'--out_dir={tmp_path / "out"}', *(f'--{key}={value}' for key, value in settings.items()))
    assert result.returncode == 0, result.stderr
    val_loss = log(tmp_path / 'out')[-1]['val_loss']
    floor = floors['bigram' if arm == 'ar' else 'unigram'].mean()
    assert val_loss < floor, (arm, val_loss, {name: nll.mean() for name, nll in floors.items()})

# -----------------------------------------------------------------------------
# bad input: one line on stderr, non-zero exit, nothing half-written

def test_config_errors(tmp_path, tiny_corpus):
    one_error_line(train(tmp_path, tiny_corpus, '--n_layers=2'), "unknown config key 'n_layers'")
    one_error_line(train(tmp_path, tiny_corpus, '--n_layer=two'), "'n_layer' must be int")
    one_error_line(train(tmp_path, tiny_corpus, 'config/nope.py'), 'config file config/nope.py not found')
    one_error_line(train(tmp_path, tiny_corpus, '--objective=bart'), 'unknown objective')


@pytest.mark.parametrize('flag,match', [
    ('--batch_size=0', "'batch_size' must lie in [1, inf), got 0"),
    ('--dropout=1.0', "'dropout' must lie in [0, 1)"),
    ('--learning_rate=0.0', "'learning_rate' must lie in (0, inf)"),
    ('--beta2=1.0', "'beta2' must lie in [0, 1)"),
    ('--gradient_accumulation_steps=0', "'gradient_accumulation_steps' must lie in [1, inf)"),
    ('--block_size=1', "'block_size' must lie in [2, inf)"),
    ('--max_iters=-5', "'max_iters' must lie in [0, inf)"),  # 0: build, save nothing, no step
    ('--warmup_iters=-1', "'warmup_iters' must lie in [0, inf)"),
    ('--t=0', "'t' must lie in [1, inf)"),
])
def test_out_of_range_values_stop_up_front(tmp_path, tiny_corpus, flag, match):
    message = script_error('train.py', f'--dataset={tiny_corpus}', f'--out_dir={tmp_path / "out"}', *TINY, flag)
    assert match in message and '\n' not in message, message
    assert not os.path.exists(tmp_path / 'out')


def test_an_out_of_range_value_is_one_line_for_the_user(tmp_path, tiny_corpus):
    one_error_line(train(tmp_path / 'out', tiny_corpus, '--batch_size=0'), "'batch_size' must lie in [1, inf)")
    assert not os.path.exists(tmp_path / 'out')


def test_objective_settings_stop_up_front(tmp_path, tiny_corpus):
    """vm's config holds a tuple, so --mask_ratio=1.5 arrives as (1.5,): still one line naming the key."""
    common = [f'--dataset={tiny_corpus}', f'--out_dir={tmp_path / "out"}', *TINY]
    one_error_line(run_script('train.py', 'config/vm_shakespeare.py', *common, '--mask_ratio=1.5'),
                     'mask_ratio must be one ratio in (0, 1) or a range')
    for args, match in [(['config/vm_shakespeare.py', '--mask_ratio=(0.3,0.1)'], 'low <= high'),
                        (['--objective=gvp', '--n_groups=40'], 'n_groups'),
                        (['--objective=gvp', '--segmentation=even'], 'segmentation')]:
        assert match in script_error('train.py', *args[:1], *common, *args[1:])
    assert not os.path.exists(tmp_path / 'out')


def test_a_step_that_cannot_fit_stops_before_allocating(tmp_path, tiny_corpus):
    """block_size=100000 on a CPU: the GPT-2 logits alone are 16 x 100000 x 50304 floats; refuse with one line."""
    corpus = write_corpus(tmp_path / 'long', np.arange(250_000) % 40, np.arange(150_000) % 40)
    result = train(tmp_path / 'out', corpus, '--block_size=100000', '--batch_size=16', '--n_embd=32')
    one_error_line(result, 'needs at least')
    assert 'GiB' in result.stderr and 'lower block_size or batch_size' in result.stderr


def test_a_new_run_never_touches_an_old_one(tmp_path, tiny_corpus):
    out = tmp_path / 'out'
    assert train(out, tiny_corpus, '--max_iters=4', '--eval_interval=2').returncode == 0
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    assert {'ckpt_last.pt', 'ckpt_best.pt', 'log.jsonl', 'loss.csv', 'loss.png'} <= set(before)
    one_error_line(train(out, tiny_corpus, '--max_iters=1'), 'already holds a run')
    assert 'already holds a run' in script_error('train.py', f'--dataset={tiny_corpus}', f'--out_dir={out}', *TINY,
                                                 '--max_iters=8', '--objective=dar')
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before
    for name in ('ckpt_best.pt', 'ckpt_last.pt', 'loss.png', 'loss.csv'):  # any one file of a run is a run
        only = tmp_path / f'only-{name}'
        only.mkdir()
        (only / name).write_bytes(before[name])
        assert 'already holds a run' in script_error('train.py', f'--dataset={tiny_corpus}', f'--out_dir={only}',
                                                     *TINY, '--max_iters=1')
    replaced = train(out, tiny_corpus, '--max_iters=2', '--eval_interval=1', '--overwrite=True')
    assert replaced.returncode == 0, replaced.stderr
    assert [r['iter'] for r in log(out)] == [1, 2]  # the old run's log is gone, not appended to
    assert read_checkpoint(out / 'ckpt_last.pt')['iter'] == 2


def test_a_second_signal_exits_at_once_inside_a_long_step(tmp_path):
    """stop_on_signals: the first TERM asks for a save after the step; the second must end the process even while
    it sits in one long C++ call (Python-level handlers would wait for the call to return)."""
    script = ("import sys, torch; sys.path.insert(0, '.'); from configurator import stop_on_signals\n"
              "received = stop_on_signals()\n"
              "a = torch.randn(12000, 12000)\n"
              "print('ready', flush=True)\n"
              "torch.mm(a, a)\n"  # minutes on one core
              "print('finished', received, flush=True)\n")
    proc = subprocess.Popen([sys.executable, '-c', script], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert proc.stdout.readline().strip() == 'ready'
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    try:
        stdout, stderr = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the second SIGTERM did not end the process inside the long step")
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, stderr)
    assert 'finished' not in stdout
    assert 'send it again to exit now' in stderr and 'exiting now' in stderr


def test_ctrl_c_saves_like_sigterm(tmp_path, tiny_corpus):
    """One SIGINT (Ctrl-C) is a request to stop: the step finishes, ckpt_last.pt is saved, no traceback, and the
    status is Ctrl-C's own (130), so `train.py ... && next` does not go on as if the run had finished."""
    out = tmp_path / 'out'
    proc = subprocess.Popen([sys.executable, 'train.py', f'--dataset={tiny_corpus}', f'--out_dir={out}', *TINY,
                             '--max_iters=100000', '--eval_interval=100000'], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert 'parameters' in proc.stdout.readline()  # the header, printed right before the first step
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGINT, stderr
    assert 'Traceback' not in stderr and 'init_from=resume' in stdout + stderr
    assert 0 < read_checkpoint(out / 'ckpt_last.pt')['iter'] < 100000


def test_data_errors(tmp_path, tiny_corpus):
    one_error_line(train(tmp_path, str(tmp_path / 'nowhere' / 'corpus')), 'prepare')
    empty = tmp_path / 'empty'
    shutil.copytree(tiny_corpus, empty)
    open(empty / 'train.bin', 'wb').close()
    one_error_line(train(tmp_path, str(empty)), 'empty')
    other_vocab = tmp_path / 'other_vocab'
    shutil.copytree(tiny_corpus, other_vocab)
    meta = json.load(open(other_vocab / 'meta.json'))
    json.dump({**meta, 'vocab_size': 32000}, open(other_vocab / 'meta.json', 'w'))
    one_error_line(train(tmp_path, str(other_vocab)), 'vocab mismatch')
    short = write_corpus(tmp_path / 'short', np.arange(100), np.arange(20))
    one_error_line(train(tmp_path, short), 'fewer than block_size')
    assert not os.path.exists(tmp_path / 'ckpt_last.pt')


def test_checkpoint_errors(tmp_path, tiny_corpus):
    out = tmp_path / 'out'
    assert train(out, tiny_corpus, '--max_iters=2', '--eval_interval=2').returncode == 0
    one_error_line(train(out, tiny_corpus, '--n_embd=64', '--max_iters=4', '--init_from=resume'), 'another architecture')
    before = (out / 'ckpt_last.pt').read_bytes()
    (out / 'ckpt_last.pt').write_bytes(before[:len(before) // 2])
    one_error_line(train(out, tiny_corpus, '--max_iters=4', '--init_from=resume'), 'corrupt')


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, tiny_corpus):
    out = tmp_path / 'out'
    assert train(out, tiny_corpus, '--max_iters=2', '--eval_interval=2').returncode == 0
    good = read_checkpoint(out / 'ckpt_last.pt')
    result = train(out, tiny_corpus, '--max_iters=40', '--eval_interval=40', '--init_from=resume',
                   '--learning_rate=1e30', '--grad_clip=0.0', '--warmup_iters=0')
    one_error_line(result, 'loss is nan')
    kept = read_checkpoint(out / 'ckpt_last.pt')
    assert kept['iter'] == good['iter'] == 2
    assert all(torch.isfinite(v).all() for v in kept['model'].values())

"""train.py end to end: DDP equals accumulation, resume equals straight, crashes lose nothing, it learns,
and every bad input stops with one line."""
import glob
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import objectives
from checkpoint import left_behind, load_checkpoint, read_checkpoint, save_checkpoint
from configurator import read_config
from conftest import ROOT, one_error_line, run_in_process, run_script, script_error, write_corpus

TINY = ['--n_layer=2', '--n_head=2', '--n_embd=32', '--block_size=33', '--batch_size=4', '--eval_iters=2',
        '--log_interval=1', '--progress=False', '--warmup_iters=2', '--lr_decay_iters=20', '--learning_rate=3e-3']


def train(out_dir, corpus, *args, env=None):
    """train.py in a new interpreter, as a user runs it: for what only a process shows (exit codes, stderr)."""
    return run_script('train.py', f'--dataset={corpus}', f'--out_dir={out_dir}', *TINY, *args, env=env)


def train_here(out_dir, corpus, *args):
    """train.py in this process: the same run without a new interpreter's seconds of imports."""
    return in_process_one_thread(f'--dataset={corpus}', f'--out_dir={out_dir}', *TINY, *args)


def in_process_one_thread(*args):
    """train.py with these arguments, in this process, on one thread as train() runs (OMP_NUM_THREADS=1): a second
    thread only adds barriers on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return run_in_process('train.py', *args)
    finally:
        torch.set_num_threads(threads)


def train_error(out_dir, corpus, *args):
    """The one-line message a bad input stops train.py with (printed as one line: test_an_out_of_range_value...)."""
    message = script_error('train.py', f'--dataset={corpus}', f'--out_dir={out_dir}', *TINY, *args)
    assert '\n' not in message, message
    return message


def params(out_dir):
    return read_checkpoint(os.path.join(out_dir, 'ckpt_last.pt'))['model']


def ctrl_c_as_in_a_terminal():
    """Popen's preexec_fn for a child a test sends SIGINT: SIGINT at its default, as a command in a
    terminal has it. A shell starts a background job (`pytest &`, nohup) with SIGINT ignored,
    children inherit that, and Python then installs no KeyboardInterrupt handler: train.py would
    ignore the test's Ctrl-C, and the test hang."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def log(out_dir, kind='val_loss'):
    """log.jsonl's evaluation lines (kind='val_loss'), or its training lines (kind='train_loss')."""
    return [record for record in map(json.loads, open(os.path.join(out_dir, 'log.jsonl'))) if kind in record]

# -----------------------------------------------------------------------------

@pytest.mark.long
def test_a_run_resumed_on_two_processes_as_the_hint_says_stops_on_a_signal(tmp_path, tiny_bytes,
                                                                            monkeypatch):
    """The README's byte run (batch_size=32, gradient_accumulation_steps=1) resumed under torchrun:
    the hint for 2 processes splits its 32 rows a step into 2 x 16, and resume takes that command
    (it refused the new split). The processes vote on stopping at log steps: TERM to torchrun (which
    passes it on, as a scheduler's does) stops both after the same step, a log step, with both data
    positions saved."""
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--batch_size=32', '--max_iters=2', '--eval_interval=2')
    with monkeypatch.context() as env:
        env.setenv('WORLD_SIZE', '2')  # as torchrun sets it: the hint comes before its group starts
        hint = re.search(r'--gradient_accumulation_steps=\d+ --batch_size=\d+',
                         train_error(out, tiny_bytes, '--batch_size=32', '--max_iters=4',
                                     '--init_from=resume'))
    assert hint and hint[0] == '--gradient_accumulation_steps=2 --batch_size=16', hint
    first_leg = (out / 'log.jsonl').read_text().count('\n')
    proc = subprocess.Popen([sys.executable, '-m', 'torch.distributed.run', '--standalone',
                             '--nproc_per_node=2', 'train.py', f'--dataset={tiny_bytes}',
                             f'--out_dir={out}', *TINY, '--max_iters=100000',
                             '--eval_interval=100000', '--log_interval=4', '--init_from=resume',
                             *hint[0].split()], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, 'OMP_NUM_THREADS': '1'})
    # a line past the first leg's: both processes passed their first vote, their handlers are set
    while (out / 'log.jsonl').read_text().count('\n') == first_leg:
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=600)  # a guard against a hang only
    warned = [line for line in stderr.splitlines()
              if line.startswith('warning:') and '32 rows' in line]
    # its batches differ from an uninterrupted run's, and it says so once
    assert len(warned) == 1 and 'batch_size=16' in warned[0], stderr
    ckpt = read_checkpoint(out / 'ckpt_last.pt')
    assert ckpt['iter'] % 4 == 0 and 2 < ckpt['iter'] < 100000, stderr
    assert ckpt['world_size'] == 2 and len(ckpt['streams']) == 2
    assert [r['iter'] for r in log(out)] == [2, ckpt['iter']]
    assert math.isfinite(log(out)[-1]['val_loss']) and 'init_from=resume' in stdout + stderr


def test_resume_may_split_a_steps_rows_otherwise_but_not_change_their_number(tmp_path, tiny_bytes,
                                                                             capsys):
    """batch_size x gradient_accumulation_steps is the optimizer's batch: a resume may split it otherwise (as another
    process count needs) and is told that its batches then differ; another number of rows is another run."""
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--max_iters=2', '--eval_interval=2')
    message = train_error(out, tiny_bytes, '--max_iters=4', '--init_from=resume',
                          '--gradient_accumulation_steps=2')
    assert 'gradient_accumulation_steps=1' in message and '4 rows' in message, message
    capsys.readouterr()
    train_here(out, tiny_bytes, '--max_iters=4', '--eval_interval=2', '--init_from=resume',
               '--gradient_accumulation_steps=2', '--batch_size=2')
    assert 'batch_size=2' in capsys.readouterr().err  # the warning: its batches are not the uninterrupted run's
    ckpt = read_checkpoint(out / 'ckpt_last.pt')
    assert ckpt['iter'] == 4 and len(ckpt['streams'][0]) == 2 and ckpt['config']['batch_size'] == 2


@pytest.mark.parametrize('objective,extra', [('ar', []), ('vm', []), ('mdlm', ['--rope=True', '--two_stream=True'])])
def test_resume_equals_straight_run(tmp_path, tiny_bytes, objective, extra):
    common = [f'--objective={objective}', '--eval_interval=3', *extra]
    train_here(tmp_path / 'straight', tiny_bytes, *common, '--max_iters=6')
    train_here(tmp_path / 'resumed', tiny_bytes, *common, '--max_iters=3')
    train_here(tmp_path / 'resumed', tiny_bytes, *common, '--max_iters=6', '--init_from=resume')
    for kind in ('train_loss', 'val_loss'):
        assert [r[kind] for r in log(tmp_path / 'straight', kind)] == [r[kind] for r in log(tmp_path / 'resumed', kind)]
    a, b = params(tmp_path / 'straight'), params(tmp_path / 'resumed')
    for name in a:
        assert torch.equal(a[name], b[name]), name  # bitwise on CPU


def test_a_checkpoint_written_on_cuda_resumes_on_the_cpu(tmp_path, tiny_bytes):
    """device is a resumable change: a CUDA run keeps (CPU state, CUDA state) per process, which the CPU resumes from
    its CPU half. The data streams are CPU generators, so the resumed run draws the straight run's batches (and, with
    dropout, its CPU masks): it ends bitwise equal."""
    common = ['--eval_interval=2', '--dropout=0.1']
    train_here(tmp_path / 'straight', tiny_bytes, *common, '--max_iters=4')
    train_here(tmp_path / 'resumed', tiny_bytes, *common, '--max_iters=2')
    ckpt = read_checkpoint(tmp_path / 'resumed' / 'ckpt_last.pt')
    cuda_state = torch.zeros(16, dtype=torch.uint8)  # torch.cuda.get_rng_state's shape: seed and offset
    save_checkpoint({**ckpt, 'torch_rng': [[rng, cuda_state] for rng in ckpt['torch_rng']]},
                    tmp_path / 'resumed' / 'ckpt_last.pt')
    train_here(tmp_path / 'resumed', tiny_bytes, *common, '--max_iters=4', '--init_from=resume', '--device=cpu')
    assert [r['train_loss'] for r in log(tmp_path / 'straight', 'train_loss')] == \
        [r['train_loss'] for r in log(tmp_path / 'resumed', 'train_loss')]
    a, b = params(tmp_path / 'straight'), params(tmp_path / 'resumed')
    for name in a:
        assert torch.equal(a[name], b[name]), name


def test_resume_at_or_below_the_checkpoints_iter(tmp_path, tiny_bytes, capsys):
    """A max_iters the checkpoint has passed trains nothing: refused, naming the checkpoint's iter. A finished run
    resumed again (a rerun script) says so in one line, exits 0 and leaves its files alone."""
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--max_iters=3', '--eval_interval=3')
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    capsys.readouterr()
    message = train_error(out, tiny_bytes, '--max_iters=2', '--init_from=resume')
    assert 'at iter 3' in message and 'max_iters=2 must exceed' in message
    assert 'warm-up' not in capsys.readouterr().err  # max_iters=2 = warmup_iters: a warning that no longer matters
    with pytest.raises(SystemExit) as stop:
        train_here(out, tiny_bytes, '--max_iters=3', '--init_from=resume')
    assert stop.value.code == 0 and 'finished' in capsys.readouterr().out
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before


def test_sigkill_during_checkpoint_write_keeps_the_previous_one(tmp_path):
    path = tmp_path / 'ckpt.pt'
    good = {'model': {'w': torch.ones(3)}, 'model_config': {}}
    save_checkpoint(good, path)
    writer = subprocess.Popen([sys.executable, '-c', (
        "import sys, torch; sys.path.insert(0, '.'); from checkpoint import save_checkpoint\n"
        f"big = {{'model': {{'w': torch.zeros(25_000_000)}}, 'model_config': {{}}}}\n"
        f"save_checkpoint(big, {str(path)!r})\n"
        "print('saved', flush=True)\n"
        f"while True: save_checkpoint(big, {str(path)!r})")], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline() == 'saved\n'  # its imports done, whatever the machine's speed: it writes on
    time.sleep(0.5)
    writer.kill()
    writer.wait()
    ckpt = read_checkpoint(path)  # the old one, or a complete new one: never a torn file
    assert ckpt['model']['w'].numel() in (3, 25_000_000)


@pytest.mark.parametrize('objective,extra', [
    ('ar', ['--compile=False', '--device=cpu', '--dtype=float32', '--attn_backend=sdpa']),  # nanoGPT's CPU flags
    ('dar', []), ('mlm', []), ('vm', ['--two_stream=True']), ('gvp', ['--n_groups=4']), ('mdlm', []),
    ('mdlm', ['--two_stream=True'])])
def test_every_objective_learns_and_writes_its_outputs(tmp_path, tiny_bytes, objective, extra):
    out = tmp_path / objective
    train_here(out, tiny_bytes, f'--objective={objective}', *extra, '--max_iters=30', '--eval_interval=10',
               '--lr_decay_iters=30')
    records, steps = log(out), log(out, 'train_loss')
    assert [r['iter'] for r in records] == [10, 20, 30] and [r['iter'] for r in steps] == list(range(1, 31))
    assert records[-1]['val_loss'] < records[0]['val_loss'] - 0.2, (objective, records)
    assert {'iter', 'eval_train_loss', 'val_loss', 'lr'} <= set(records[0])
    assert {'iter', 'train_loss', 'lr', 'tokens_per_sec'} <= set(steps[1])
    assert 'tokens_per_sec' not in steps[0]  # the first step's window: it alone, its speed the compile's
    assert (out / 'loss.png').exists() and (out / 'loss.csv').exists() and (out / 'ckpt_best.pt').exists()
    model, ckpt = load_checkpoint(out / 'ckpt_best.pt')
    assert ckpt['config']['objective'] == objective


# the demo's configs (rotary positions) at a reduced setting that learns in seconds (the demo's own
# run is checked by `make demo` itself): ar gets 2 x 128 on rows of 32 bytes (2.37 nats at step 120,
# the bigram floor 2.52); vm 1 x 128 on rows of 16 bytes, where a masked byte's neighbours are a
# large share of its row (3.05 nats at step 80, the unigram floor 3.33)
REDUCED = {'ar': dict(n_layer=2, block_size=32, batch_size=16, max_iters=120, warmup_iters=20),
           'vm': dict(n_layer=1, block_size=16, batch_size=32, max_iters=80, warmup_iters=10)}


@pytest.mark.long
@pytest.mark.parametrize('arm', ['ar', 'vm'])
def test_demo_configs_learn_shakespeare_bytes(tmp_path, shakespeare_bytes, arm):
    """`make demo`'s configs on the real plays: ar's held-out loss ends below the bigram floor (it uses more than
    the previous byte) and vm's below the unigram floor (its masked bytes are predicted from context). Both floors
    are counted on the training plays (evals/ppl.NgramBaselines), on held-out rows of the same length."""
    from data.text import load_tokens
    from evals.ppl import NgramBaselines, gather_windows, window_starts
    data_dir, reduced = shakespeare_bytes, REDUCED[arm]
    val = load_tokens(data_dir, 'val', 'bytes')
    floors = NgramBaselines(load_tokens(data_dir, 'train', 'bytes'), 257).nll(gather_windows(
        val, window_starts(len(val), reduced['block_size'], 100_000), reduced['block_size'], 256).numpy())
    settings = {**reduced, 'lr_decay_iters': reduced['max_iters'], 'eval_interval': reduced['max_iters'],
                'learning_rate': 3e-3, 'min_lr': 3e-4, 'progress': False}  # their eval_iters
    in_process_one_thread(f'config/{arm}_shakespeare_bytes.py', f'--dataset={data_dir}',
                          f'--out_dir={tmp_path / "out"}', *(f'--{key}={value}' for key, value in settings.items()))
    val_loss = log(tmp_path / 'out')[-1]['val_loss']
    floor = floors['bigram' if arm == 'ar' else 'unigram'].mean()
    assert val_loss < floor, (arm, val_loss, {name: nll.mean() for name, nll in floors.items()})

def test_make_demo_writes_only_its_own_folders():
    """make demo trains with --overwrite=True: into the README's own run folders (out-ar-shakespeare-bytes, the
    out_dir of config/ar_shakespeare_bytes.py) it deleted a user's runs. Every folder it writes or reads lies under
    out/demo/, and no config's out_dir does."""
    commands = subprocess.run(['make', '-n', 'demo'], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    paths = re.findall(r"--(?:out_dir|ckpt)=(\S+)", commands)
    assert len(paths) >= 5 and all(path.startswith('out/demo/') for path in paths), paths
    assert commands.count('--out_dir=') == 3 and 'config/ar_shakespeare_bytes.py' in commands
    config_dirs = {read_config(path).get('out_dir') for path in glob.glob(os.path.join(ROOT, 'config', '*.py'))}
    assert not any(d and d.startswith('out/demo') for d in config_dirs), config_dirs


# -----------------------------------------------------------------------------
# bad input: one line on stderr, non-zero exit, nothing half-written

def test_config_errors(tmp_path, tiny_corpus):
    assert "unknown config key 'n_layers'" in train_error(tmp_path, tiny_corpus, '--n_layers=2')
    assert "'n_layer' must be int" in train_error(tmp_path, tiny_corpus, '--n_layer=two')
    assert 'config file config/nope.py not found' in train_error(tmp_path, tiny_corpus, 'config/nope.py')
    assert 'unknown objective' in train_error(tmp_path, tiny_corpus, '--objective=bart')


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
    message = script_error('train.py', 'config/vm_shakespeare.py', *common, '--mask_ratio=1.5')
    assert 'mask_ratio' in message and '1.5' in message and '\n' not in message
    for args, match in [(['config/vm_shakespeare.py', '--mask_ratio=(0.3,0.1)'], 'mask_ratio'),
                        (['--objective=gvp', '--n_groups=40'], 'n_groups'),
                        (['--objective=gvp', '--segmentation=even'], 'segmentation')]:
        assert match in script_error('train.py', *args[:1], *common, *args[1:])
    assert not os.path.exists(tmp_path / 'out')


def test_a_step_that_cannot_fit_stops_before_allocating(tmp_path, tiny_corpus):
    """block_size=100000 on a CPU: dar's dense boolean mask alone is 16 x 200000 x 100000 bytes (training's GPT-2
    logits are only a chunk of rows at a time); refuse with one line."""
    corpus = write_corpus(tmp_path / 'long', np.arange(250_000) % 40, np.arange(150_000) % 40)
    message = train_error(tmp_path / 'out', corpus, '--block_size=100000', '--batch_size=16', '--n_embd=32',
                          '--objective=dar')
    assert 'needs at least' in message and 'GiB' in message and 'lower block_size or batch_size' in message


def test_a_new_run_never_touches_an_old_one(tmp_path, tiny_bytes):
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--max_iters=4', '--eval_interval=2')
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    assert {'ckpt_last.pt', 'ckpt_best.pt', 'log.jsonl', 'loss.csv', 'loss.png'} <= set(before)
    assert 'from an earlier run' in train_error(out, tiny_bytes, '--max_iters=1')
    assert 'from an earlier run' in train_error(out, tiny_bytes, '--max_iters=8', '--objective=dar')
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before
    for name in ('ckpt_best.pt', 'ckpt_last.pt', 'loss.png', 'loss.csv'):  # any one file of a run is a run
        only = tmp_path / f'only-{name}'
        only.mkdir()
        (only / name).write_bytes(before[name])
        assert 'from an earlier run' in train_error(only, tiny_bytes, '--max_iters=1')
    train_here(out, tiny_bytes, '--max_iters=2', '--eval_interval=1', '--overwrite=True')
    assert [r['iter'] for r in log(out)] == [1, 2]  # the old run's log is gone, not appended to
    assert read_checkpoint(out / 'ckpt_last.pt')['iter'] == 2


def test_a_second_signal_exits_at_once_inside_a_long_step(tmp_path):
    """stop_on_signals: the first TERM asks for a save after the step; the second must end the process even while
    it sits in one long C++ call (Python-level handlers would wait for the call to return)."""
    script = ("import sys, torch; sys.path.insert(0, '.'); from devices import stop_on_signals\n"
              "received = stop_on_signals(left_behind=lambda: 'what the files hold')\n"
              "a = torch.ones(12000, 12000)\n"  # filled at memory speed (randn took a second); the product is as long
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
    stdout, stderr = proc.communicate(timeout=600)  # a guard against a hang only: a slow exit is seen below
    assert 'finished' not in stdout, "the second SIGTERM did not end the process inside the long step"
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, stderr)
    assert 'send it again to exit now' in stderr and 'exiting now: what the files hold' in stderr


def test_a_start_killed_before_its_first_checkpoint_restarts_with_one_command(tmp_path, tiny_bytes):
    """A second Ctrl-C before the first evaluation leaves a log and no checkpoint: the exit line says so (not that a
    checkpoint is intact), resume and a plain restart each name --overwrite=True, and that command runs."""
    out = tmp_path / 'out'
    run_files = train_here(out, tiny_bytes, '--max_iters=0')['run_files']
    said = lambda: left_behind(run_files)  # noqa: E731 (what train.py says when a second signal stops it now)
    assert 'no checkpoint was written' in said() and 'overwrite' not in said()
    train_here(out, tiny_bytes, '--max_iters=2', '--eval_interval=2')
    assert 'is intact' in said() and 'init_from=resume' in said()
    for name in ('ckpt_last.pt', 'ckpt_best.pt', 'loss.png', 'loss.csv'):  # as a killed start leaves it: a log only
        (out / name).unlink()
    assert 'no checkpoint was written' in said() and '--overwrite=True' in said()
    for args in ([], ['--init_from=resume']):
        message = train_error(out, tiny_bytes, '--max_iters=2', *args)
        assert '--overwrite=True' in message and '--init_from=resume' not in message, message
    train_here(out, tiny_bytes, '--max_iters=2', '--eval_interval=2', '--overwrite=True')
    assert read_checkpoint(out / 'ckpt_last.pt')['iter'] == 2


def test_ctrl_c_saves_and_resumes_as_sigterm_does(tmp_path, tiny_bytes):
    """One SIGINT (Ctrl-C) is a request to stop, as a scheduler's SIGTERM is (under torchrun: the
    test of the hint above): the step finishes, ckpt_last.pt is saved, no traceback, and the status
    is the signal's own (130), so `train.py ... && next` does not go on as if the run had finished.
    Resuming continues from the saved step."""
    out = tmp_path / 'out'
    proc = subprocess.Popen([sys.executable, 'train.py', f'--dataset={tiny_bytes}',
                             f'--out_dir={out}', *TINY, '--max_iters=100000',
                             '--eval_interval=100000'], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, 'OMP_NUM_THREADS': '1'},
                            preexec_fn=ctrl_c_as_in_a_terminal)
    # the header: printed after the handlers are set, before step 1
    assert 'parameters' in proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=600)  # a guard against a hang only
    assert proc.returncode == 128 + signal.SIGINT, stderr
    assert 'Traceback' not in stderr and 'init_from=resume' in stdout + stderr
    ckpt = read_checkpoint(out / 'ckpt_last.pt')
    assert 0 < ckpt['iter'] < 100000
    train_here(out, tiny_bytes, f"--max_iters={ckpt['iter'] + 2}", '--eval_interval=100000',
               '--init_from=resume')
    assert read_checkpoint(out / 'ckpt_last.pt')['iter'] == ckpt['iter'] + 2


INTERRUPTED = 'train.py: interrupted before training began: nothing written\n'


def test_ctrl_c_before_training_is_one_line_and_leaves_no_out_dir(tmp_path, tiny_corpus):
    """Before the loop takes Ctrl-C over (imports, data, model) it ends the run with one line, not a traceback, and
    Python's exit by SIGINT (130 in a shell). In the imports, a KeyboardInterrupt raised by `import torch` stands
    for the signal; in the data, train.py blocks reading a meta.json that is a pipe until the signal comes."""
    script = ("import runpy, sys\n"
              "class Interrupt:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name == 'torch': raise KeyboardInterrupt\n"
              "sys.meta_path.insert(0, Interrupt())\n"
              f"sys.path.insert(0, '.'); sys.argv = ['train.py', '--out_dir={tmp_path / 'imports'}']\n"
              "runpy.run_path('train.py', run_name='__main__')\n")
    during_imports = subprocess.run([sys.executable, '-c', script], cwd=ROOT, capture_output=True, text=True,
                                    timeout=600, preexec_fn=ctrl_c_as_in_a_terminal)
    assert during_imports.returncode == -signal.SIGINT and during_imports.stderr == INTERRUPTED, during_imports.stderr
    corpus = tmp_path / 'piped'
    shutil.copytree(tiny_corpus, corpus)
    os.remove(corpus / 'meta.json')
    os.mkfifo(corpus / 'meta.json')
    proc = subprocess.Popen([sys.executable, 'train.py', f'--dataset={corpus}',
                             f'--out_dir={tmp_path / "data"}', *TINY], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ctrl_c_as_in_a_terminal)
    while True:  # a writer opens only once train.py has opened the pipe to read it
        assert proc.poll() is None, proc.communicate()
        try:
            writer = os.open(corpus / 'meta.json', os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=600)  # a guard against a hang only
    os.close(writer)
    assert proc.returncode == -signal.SIGINT and stderr == INTERRUPTED, stderr
    assert not os.path.exists(tmp_path / 'imports') and not os.path.exists(tmp_path / 'data')


def test_a_run_refused_before_training_leaves_no_out_dir(tmp_path, tiny_corpus):
    """The out_dir (and any folder above it) is made when training begins: bad data leaves nothing to clean up."""
    assert 'prepare' in train_error(tmp_path / 'new' / 'run', str(tmp_path / 'nowhere'))
    assert not os.path.exists(tmp_path / 'new')
    message = train_error('', tiny_corpus)  # --out_dir= would write into the working folder
    assert 'empty' in message and '--out_dir=' in message, message


def test_a_text_file_as_dataset_names_the_command_that_prepares_it(tmp_path):
    """--dataset=book.txt: the line names data/prepare.py for the file and the --dataset it makes, and both work."""
    (tmp_path / 'book.txt').write_text(''.join(f"Line {i} of the book, and more words.\n" for i in range(400)))
    message = train_error(tmp_path / 'out', str(tmp_path / 'book.txt'))
    command, dataset = re.search(r"`python data/prepare.py ([^`]+)`, then pass (--dataset=\S+)", message).groups()
    assert f'--input={tmp_path / "book.txt"}' in command, message
    run_in_process('data/prepare.py', *command.split())
    assert train_here(tmp_path / 'out', dataset.removeprefix('--dataset='), '--max_iters=0')['iter_num'] == 0


def test_data_errors(tmp_path, tiny_corpus):
    assert 'prepare' in train_error(tmp_path, str(tmp_path / 'nowhere' / 'corpus'))
    empty = tmp_path / 'empty'
    shutil.copytree(tiny_corpus, empty)
    open(empty / 'train.bin', 'wb').close()
    assert 'empty' in train_error(tmp_path, str(empty))
    other_vocab = tmp_path / 'other_vocab'
    shutil.copytree(tiny_corpus, other_vocab)
    meta = json.load(open(other_vocab / 'meta.json'))
    json.dump({**meta, 'vocab_size': 32000}, open(other_vocab / 'meta.json', 'w'))
    assert 'vocab mismatch' in train_error(tmp_path, str(other_vocab))
    short = write_corpus(tmp_path / 'short', np.arange(100), np.arange(20))
    assert 'fewer than block_size' in train_error(tmp_path, short)
    assert not os.path.exists(tmp_path / 'ckpt_last.pt')


def test_checkpoint_errors(tmp_path, tiny_bytes):
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--max_iters=2', '--eval_interval=2')
    assert 'another architecture' in train_error(out, tiny_bytes, '--n_embd=64', '--max_iters=4',
                                                 '--init_from=resume')
    before = (out / 'ckpt_last.pt').read_bytes()
    (out / 'ckpt_last.pt').write_bytes(before[:len(before) // 2])
    assert 'corrupt' in train_error(out, tiny_bytes, '--max_iters=4', '--init_from=resume')


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, tiny_bytes):
    """A run whose learning rate diverges after its first checkpoint (written here into that checkpoint's config,
    since resume refuses a changed schedule)."""
    out = tmp_path / 'out'
    diverging = dict(learning_rate=1e30, grad_clip=0.0, warmup_iters=0)
    train_here(out, tiny_bytes, '--max_iters=2', '--eval_interval=2')
    good = read_checkpoint(out / 'ckpt_last.pt')
    save_checkpoint({**good, 'config': {**good['config'], **diverging}}, out / 'ckpt_last.pt')
    stop = r'^train.py: error: \w+ loss is nan at iter \d+: [^\n]*start again with --overwrite=True [^\n]*$'
    with pytest.raises(SystemExit, match=stop):
        train_here(out, tiny_bytes, '--max_iters=40', '--eval_interval=40', '--init_from=resume',
                   '--learning_rate=1e30', '--grad_clip=0.0', '--warmup_iters=0')
    kept = read_checkpoint(out / 'ckpt_last.pt')
    assert kept['iter'] == good['iter'] == 2
    assert all(torch.isfinite(v).all() for v in kept['model'].values())


def test_train_tokens_keeps_training_on_the_first_tokens_only(tmp_path):
    """A data-constrained run: with train_tokens=N every training row comes from the first N tokens (repeated),
    while validation still reads the whole held-out split."""
    rng = np.random.default_rng(0)
    corpus = write_corpus(tmp_path / 'corpus', np.concatenate([rng.integers(0, 20, 600), rng.integers(20, 40, 3000)]),
                          rng.integers(0, 40, 600))
    state = run_in_process('train.py', f'--dataset={corpus}', f'--out_dir={tmp_path / "out"}', *TINY,
                           '--train_tokens=600', '--max_iters=0')
    generator = torch.Generator().manual_seed(0)
    rows = torch.cat([state['sequences']('train', generator)[:, 1:] for _ in range(50)])
    assert rows.max() < 20  # never past the first 600 tokens (ids 20-39 begin there)
    held_out = torch.cat([state['sequences']('val', generator)[:, 1:] for _ in range(50)])
    assert held_out.max() >= 20
    assert 'train_tokens' in script_error('train.py', f'--dataset={corpus}', f'--out_dir={tmp_path / "other"}',
                                          *TINY, '--train_tokens=-1')


def test_eval_objective_scores_dar_by_its_exact_left_to_right_likelihood(tmp_path, tiny_bytes):
    """eval_objective='ar' reads a dar model left to right: the logged held-out loss is the exact NLL of the same
    windows scored prefix by prefix (evals/ppl.py); a reading that needs inputs the model never saw (a [MASK] for
    ar) stops up front with one line."""
    from evals.ppl import score_windows
    state = train_here(tmp_path / 'ar', tiny_bytes, '--objective=dar', '--max_iters=3',
                       '--eval_interval=3', '--eval_iters=1', '--eval_objective=ar')
    windows = state['sequences']('val', torch.Generator().manual_seed(1337 * 7919))  # estimate_loss's draw
    with torch.no_grad():
        exact = float(score_windows(state['raw_model'].eval(), windows, 'groups').mean())
    assert log(tmp_path / 'ar')[-1]['val_loss'] == pytest.approx(exact, abs=1e-5)
    assert 'eval_objective' in train_error(tmp_path / 'bad', tiny_bytes, '--eval_objective=mdlm')


# -----------------------------------------------------------------------------
# what a new user hits: errors under torchrun, resume, files, logs

def torchrun(*args):
    return subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2',
                           'train.py', *args], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, 'OMP_NUM_THREADS': '1'})


@pytest.mark.long
def test_errors_reach_the_terminal_under_torchrun(tmp_path, tiny_corpus):
    """torchrun's own wrapper swallowed the line (the design card's command printed only
    ChildFailedError). Every refusal before the process group starts (a setting, the data) takes
    the path shown here."""
    result = torchrun(f'--dataset={tiny_corpus}', f'--out_dir={tmp_path / "out"}', *TINY,
                      '--max_iters=1')
    assert result.returncode != 0, result.stderr
    assert result.stderr.count('train.py: error: ') == 1, result.stderr  # not once per process
    assert 'gradient_accumulation_steps=1 must be a multiple of the 2 processes' in result.stderr
    assert '--gradient_accumulation_steps=2 --batch_size=2' in result.stderr  # the same 4 rows a step
    assert not os.path.exists(tmp_path / 'out')


def test_resume_refuses_another_objective_schedule_or_data(tmp_path, tiny_bytes):
    """A resumed run continues the checkpoint's run: --objective=mlm used to train on as mlm and compare its loss with
    ar's best. Where, how long and how it is shown may change."""
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--max_iters=2', '--eval_interval=2')
    for flag in ('--objective=mlm', '--learning_rate=1e-2', '--warmup_iters=0', '--train_tokens=1000',
                 '--eval_iters=3', '--batch_size=8', '--seed=7'):
        message = train_error(out, tiny_bytes, '--max_iters=4', '--init_from=resume', flag)
        key = flag[2:].split('=')[0]
        assert f"was trained with {key}=" in message and f"this command says {key}=" in message, message
        assert "resume with the checkpoint's settings" in message
    train_here(out, tiny_bytes, '--max_iters=4', '--init_from=resume', '--eval_interval=1',
               '--log_interval=2')
    assert read_checkpoint(out / 'ckpt_last.pt')['iter'] == 4


def test_checkpoints_that_are_not_checkpoints(tmp_path, tiny_bytes):
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--max_iters=1', '--eval_interval=1')
    (out / 'ckpt_last.pt').write_text('not a checkpoint\n')
    assert 'is not a checkpoint' in train_error(out, tiny_bytes, '--max_iters=2',
                                                '--init_from=resume')
    (out / 'ckpt_last.pt').unlink()
    (out / 'ckpt_last.pt').mkdir()
    assert 'is a folder' in train_error(out, tiny_bytes, '--max_iters=2', '--init_from=resume')


def test_an_out_dir_that_cannot_be_written_is_one_line(tmp_path, tiny_corpus):
    (tmp_path / 'file').write_text('')
    assert 'is a file, not a folder' in train_error(tmp_path / 'file', tiny_corpus, '--max_iters=1')
    assert 'cannot write to out_dir' in train_error(tmp_path / 'file' / 'run', tiny_corpus, '--max_iters=1')


def test_float16_trains_with_a_gradient_scaler_that_resumes(tmp_path, tiny_bytes):
    """float16 underflows small gradients without loss scaling (bfloat16 does not): the scaler's state is saved, so
    a resumed run scales as the straight one does."""
    straight, out = tmp_path / 'straight', tmp_path / 'out'
    corpus = tiny_bytes  # CPU float16 matmuls are slow: a head 320 wide, not GPT-2's 50,304
    flags = ('--dtype=float16', '--eval_interval=1', '--n_layer=1')
    train_here(straight, corpus, *flags, '--max_iters=3')
    train_here(out, corpus, *flags, '--max_iters=2')
    assert read_checkpoint(out / 'ckpt_last.pt')['scaler']['scale'] > 1  # the loss is scaled
    train_here(out, corpus, *flags, '--max_iters=3', '--init_from=resume')
    assert read_checkpoint(out / 'ckpt_last.pt')['scaler'] == read_checkpoint(straight / 'ckpt_last.pt')['scaler']
    assert all(math.isfinite(r['train_loss']) for r in log(out, 'train_loss'))


def test_logs_read_well_in_a_file(tmp_path, tiny_bytes, capfd):
    """Into a pipe (make, a log file) progress comes as plain lines, never tqdm's carriage returns; every line names
    its run (two runs share a terminal in make demo); a schedule that never decays is pointed out. In this process:
    capfd's stdout and stderr are files, as a pipe is (no terminal), and it reads what reaches the descriptors too."""
    capfd.readouterr()
    train_here(tmp_path / 'ar-run', tiny_bytes, '--max_iters=3', '--eval_interval=3',
               '--progress=True')
    stdout, stderr = capfd.readouterr()
    assert '\r' not in stdout + stderr and '\x1b' not in stdout + stderr
    assert 'ar-run: 3/3 steps' in stderr
    assert all(line.startswith('ar-run | ') for line in stdout.splitlines()), stdout
    assert 'max_iters=3 < lr_decay_iters=20' in stderr and '--lr_decay_iters=3' in stderr
    first, *_, last = stdout.splitlines()  # where the run writes, and what it wrote there
    assert first.endswith(f"-> {tmp_path / 'ar-run'}")
    assert last == f"ar-run | {tmp_path / 'ar-run'}: ckpt_last.pt, ckpt_best.pt, log.jsonl, loss.png, loss.csv"


def test_a_warm_up_longer_than_the_schedule(tmp_path, tiny_bytes, capsys):
    """A warm-up past lr_decay_iters would drop from the peak to min_lr in one step: refused. A run that stops inside
    its warm-up (a first leg, a smoke run) or ends its decay before its last step is pointed out; a constant rate
    (min_lr = learning_rate) needs no decay."""
    assert 'lr_decay_iters' in train_error(tmp_path / 'out', tiny_bytes, '--warmup_iters=30',
                                           '--max_iters=40')
    assert not os.path.exists(tmp_path / 'out')
    train_here(tmp_path / 'short', tiny_bytes, '--warmup_iters=30', '--max_iters=2',
               '--eval_interval=2')
    assert 'inside its warm-up' in capsys.readouterr().err
    train_here(tmp_path / 'tail', tiny_bytes, '--warmup_iters=1', '--lr_decay_iters=2', '--min_lr=1e-4',
               '--max_iters=4', '--eval_interval=4')  # decayed by step 2, then two steps at min_lr: pointed out
    assert 'the last 2 steps run at min_lr' in capsys.readouterr().err
    assert [r['lr'] for r in log(tmp_path / 'tail', 'train_loss')][-2:] == pytest.approx([1e-4, 1e-4])
    train_here(tmp_path / 'constant', tiny_bytes, '--warmup_iters=2', '--lr_decay_iters=0',
               '--min_lr=3e-3', '--max_iters=4', '--eval_interval=4')
    assert [r['lr'] for r in log(tmp_path / 'constant', 'train_loss')] == pytest.approx([1e-3, 2e-3, 3e-3, 3e-3])


def test_checkpoints_honour_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        save_checkpoint({'model': {}, 'model_config': {}}, tmp_path / 'ckpt.pt')
    finally:
        os.umask(old)
    assert (tmp_path / 'ckpt.pt').stat().st_mode & 0o777 == 0o640


# -----------------------------------------------------------------------------
# the GPU path, shown on a CPU: MFU, when the host waits for the device, compile and DDP

PEAK = 1e12  # a made-up peak FLOP/s: train.py counts FLOPs for MFU only where it knows the device's peak
# 7 steps of 2 micro-batches: a training line every 3 steps, an evaluation at 6, both at the last step
WINDOWS = ['--objective=vm', '--max_iters=7', '--log_interval=3', '--eval_interval=6',
           '--gradient_accumulation_steps=2']


def assert_mfu_counts_every_micro_batch_once(out_dir, run, world_size, start=0):
    """Each training line's MFU = the FLOPs of every micro-batch of every process in its window,
    over the window's seconds (read back from tokens_per_sec) times world_size peaks: one definition
    for any number of processes. The first step of a run, or of its resume at step `start` (it
    compiles), is in no window; the lines up to `start` are the first leg's."""
    from model import step_flops
    streams = [torch.Generator().manual_seed(1337 * 1000 + k) for k in range(2)]  # in any layout

    def step():  # the FLOPs of a step: its micro-batches, one from each stream
        return sum(step_flops(run['raw_model'], run['pretraining'].batch(
            run['sequences']('train', g), g, run['bos'])) for g in streams)
    for _ in range(start):  # the first leg's batches
        step()
    tokens_per_step, done = 4 * 33 * 2, start
    for record in log(out_dir, 'train_loss')[start:]:
        flops = [step() for _ in range(record['iter'] - done)]
        timed = flops[1:] if done == start else flops
        seconds = tokens_per_step * len(timed) / record['tokens_per_sec']
        expected = sum(timed) / seconds / (world_size * PEAK)
        assert record['mfu'] == pytest.approx(expected, rel=1e-9), record
        done = record['iter']
    assert done == 7


def test_no_step_waits_for_the_device_outside_log_and_eval_steps(tmp_path, tiny_bytes):
    """On a GPU every host read of a device value (.item(), float(), ...) waits for the device's queue to drain, and
    the device idles while the host builds the next step: MFU's FLOPs are counted on the host batch, and device
    values are read at log and evaluation steps only (tests/host_reads.py counts the reads on the CPU)."""
    from host_reads import counting
    with counting(peak=PEAK) as reads:
        run = train_here(tmp_path / 'out', tiny_bytes, *WINDOWS)
    assert {step for step, _, _ in reads.reads} == {3, 6, 7}, reads.reads
    assert_mfu_counts_every_micro_batch_once(tmp_path / 'out', run, world_size=1)


@pytest.mark.long
def test_a_run_resumed_on_two_processes_trains_as_one_with_gradient_accumulation(tmp_path,
                                                                                tiny_bytes):
    """A run started on 1 process continues on 2 (8 GPUs -> 4, an elastic restart): each of a
    step's 2 micro-steps has its own data stream, and each process takes its own again, so 2 gloo
    processes x 1 micro-step train as 1 process x 2 micro-steps: the same data, the same averaged
    gradient, the uninterrupted run's weights. They log the MFU one process with 2 micro-steps
    defines (it was world_size times too high), and their vote to stop no longer reads the device
    every step: they vote at log steps."""
    ddp = tmp_path / 'ddp'
    train_here(ddp, tiny_bytes, *WINDOWS, '--max_iters=1')  # its first step on one process
    result = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone',
                             '--nproc_per_node=2', 'tests/host_reads.py', str(tmp_path / 'reads'),
                             'train.py', f'--dataset={tiny_bytes}', f'--out_dir={ddp}', *TINY,
                             *WINDOWS, '--init_from=resume'], cwd=ROOT, capture_output=True,
                            text=True, timeout=600, env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert result.returncode == 0, result.stderr
    for rank in (0, 1):
        reads = json.load(open(tmp_path / f'reads.{rank}.json'))
        assert {step for step, _, _ in reads} == {3, 6, 7}, (rank, reads)
    assert read_checkpoint(ddp / 'ckpt_last.pt')['world_size'] == 2
    run = train_here(tmp_path / 'single', tiny_bytes, *WINDOWS)  # the uninterrupted run
    a, b = params(tmp_path / 'single'), params(ddp)
    assert a.keys() == b.keys()
    for name in a:
        assert (a[name] - b[name]).abs().max() <= 1e-6, name
    assert_mfu_counts_every_micro_batch_once(ddp, run, world_size=2, start=1)
    # each line's train loss is the mean over every process's micro-batches, not rank 0's alone:
    # the lines whose windows are the uninterrupted run's (the resume's first began at step 2)
    single = {r['iter']: r['train_loss'] for r in log(tmp_path / 'single', 'train_loss')}
    lines = [r for r in log(ddp, 'train_loss') if r['iter'] > 3]
    assert [r['iter'] for r in lines] == [6, 7]
    assert [r['train_loss'] for r in lines] == pytest.approx([single[6], single[7]], rel=1e-5)


def compiled_with_aot_eager(monkeypatch):
    """torch.compile as train.py calls it, on aot_eager: what recompiles and where graphs break is dynamo's doing
    whatever the backend, and inductor's C++ build takes a minute a model on a CPU. train.py raises on a recompile
    (its dynamo settings are restored after the test)."""
    import functools
    monkeypatch.setattr(torch, 'compile', functools.partial(torch.compile, backend='aot_eager'))
    monkeypatch.setattr(torch._dynamo.config, 'fail_on_recompile_limit_hit', False)
    torch._dynamo.reset()  # what other tests compiled would count as this run's recompiles
    torch._dynamo.utils.counters.clear()
    return torch._dynamo.utils.counters


@pytest.mark.parametrize('objective', [['--objective=ar'], ['--objective=vm', '--two_stream=True'],
                                       ['--objective=gvp', '--n_groups=4', '--segmentation=random']])
def test_a_compiled_model_trains_without_recompiling(tmp_path, tiny_bytes, monkeypatch, objective):
    """Every batch of a run has the same shapes: the first micro-step compiles one graph, and the second and every
    later step reuse it, across the evaluations between them (eval mode and back)."""
    counters = compiled_with_aot_eager(monkeypatch)
    try:
        train_here(tmp_path / 'out', tiny_bytes, *objective, '--compile=True', '--max_iters=4',
                   '--eval_interval=2', '--gradient_accumulation_steps=2')
        assert counters['stats']['unique_graphs'] == 1 and not counters['graph_break'], dict(counters)
    finally:
        torch._dynamo.reset()


def test_a_recompile_during_training_is_an_error(tmp_path, tiny_bytes, monkeypatch):
    """A batch of another shape after the first compile stops the run (dynamo would otherwise recompile in silence,
    and past its recompile limit run the model eagerly): here every batch is one query row wider."""
    counters = compiled_with_aot_eager(monkeypatch)
    widths = iter(range(32, 10 ** 6))
    monkeypatch.setattr(objectives, 'target_counts', lambda objective, L: (1, next(widths)))
    try:
        with pytest.raises(RuntimeError, match='fail_on_recompile'):
            train_here(tmp_path / 'out', tiny_bytes, '--objective=dar', '--compile=True',
                       '--max_iters=4')
        assert counters['stats']['unique_graphs'] == 1, dict(counters)
    finally:
        torch._dynamo.reset()


def test_ddp_around_the_compiled_model_splits_its_graph_at_the_gradient_buckets(tmp_path, tiny_corpus, monkeypatch):
    """torch.compile inside DDP, as PyTorch advises: DDP's eager forward marks itself active, so dynamo cuts the
    compiled graph at DDP's gradient buckets (DDPOptimizer: one backward graph per bucket, whose all-reduce can start
    while the rest of the backward runs); compiling DDP instead breaks the graph inside DDP's forward. One gloo
    process; checkpoints hold the plain module's keys."""
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    for key, value in dict(RANK=0, LOCAL_RANK=0, WORLD_SIZE=1, MASTER_ADDR='127.0.0.1', MASTER_PORT=port).items():
        monkeypatch.setenv(key, str(value))
    counters = compiled_with_aot_eager(monkeypatch)
    try:
        run = train_here(tmp_path / 'out', tiny_corpus, '--objective=vm', '--two_stream=True', '--compile=True',
                         '--max_iters=2', '--eval_interval=2', '--gradient_accumulation_steps=2')
        assert counters['stats']['unique_graphs'] == 1 and not counters['graph_break'], dict(counters)
        assert counters['aot_autograd']['ok'] >= 2, dict(counters)  # the graph's pieces, one per bucket
    finally:
        torch._dynamo.reset()
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    assert type(run['model']).__name__ == 'DistributedDataParallel'
    assert read_checkpoint(tmp_path / 'out' / 'ckpt_last.pt')['model'].keys() == run['raw_model'].state_dict().keys()


def test_attention_dropout_is_never_ignored_on_any_backend(tmp_path, tiny_corpus, capsys):
    """FlexAttention has no attention dropout: 'auto' on CUDA trains a run with dropout on sdpa and says so in one
    line, an explicit flex refuses with one line naming the fix, and a flex model trained with dropout raises rather
    than skip it (a fine-tune regularised alike on a GPU and a CPU)."""
    from devices import pick_attn_backend
    from model import ModelConfig, Transformer
    assert pick_attn_backend('auto', 'cuda', dropout=0.0) == 'flex'
    assert pick_attn_backend('auto', 'cuda:1', dropout=0.1) == 'sdpa'
    assert 'flex has no attention dropout' in capsys.readouterr().err
    assert pick_attn_backend('auto', 'cpu', dropout=0.1) == 'sdpa'
    assert '--attn_backend=sdpa' in train_error(tmp_path, tiny_corpus, '--attn_backend=flex', '--dropout=0.1')
    model = Transformer(ModelConfig(vocab_size=64, block_size=9, n_layer=1, n_head=2, n_embd=32, dropout=0.1,
                                    attn_backend='flex')).train()
    batch = objectives.Objective('dar').batch(torch.randint(0, 64, (2, 9)), torch.Generator().manual_seed(0))
    with torch.no_grad(), pytest.raises(ValueError, match='no attention dropout'):  # no_grad: flex's CPU forward
        model(**batch)


def test_a_resumed_run_keeps_its_devices_optimizer_kernels(tmp_path, tiny_bytes, monkeypatch):
    """A CPU checkpoint resumed on CUDA: its optimizer state, but CUDA's fused AdamW (load_state_dict restores the
    saving device's options, fused=None). Simulated on the CPU: the resumed run builds AdamW as train.py's CUDA
    path does (fused=True), and the next run back on plain AdamW keeps its own (no fused)."""
    import functools
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--max_iters=2', '--eval_interval=2')
    monkeypatch.setattr(torch.optim, 'AdamW', functools.partial(torch.optim.AdamW, fused=True))
    run = train_here(out, tiny_bytes, '--max_iters=4', '--eval_interval=2', '--init_from=resume')
    assert all(group['fused'] is True for group in run['optimizer'].param_groups)
    assert run['optimizer'].state_dict()['state'].keys() == read_checkpoint(out / 'ckpt_last.pt')['optimizer'][
        'state'].keys() and all(state['step'] == 4 for state in run['optimizer'].state.values())
    monkeypatch.undo()
    run = train_here(out, tiny_bytes, '--max_iters=6', '--eval_interval=2', '--init_from=resume')
    assert all(group['fused'] is None for group in run['optimizer'].param_groups)


def test_mfus_first_window_after_a_start_or_resume_leaves_the_compiling_step_out(tmp_path,
                                                                                 tiny_bytes,
                                                                                 monkeypatch):
    """The first step of a run, and of its resume, compiles (a minute of GPT-2 on a GPU): it is in no window of
    tokens_per_sec / MFU, so a first forward 2 s slower than the rest shows in no line's speed."""
    import model as model_module
    forward, calls = model_module.Transformer.forward, []

    def slow_first_forward(self, *args, **kwargs):
        if not calls:
            time.sleep(2)
        calls.append(1)
        return forward(self, *args, **kwargs)
    monkeypatch.setattr(model_module.Transformer, 'forward', slow_first_forward)
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--max_iters=4', '--log_interval=2', '--eval_interval=4')
    calls.clear()
    train_here(out, tiny_bytes, '--max_iters=8', '--log_interval=2', '--eval_interval=4',
               '--init_from=resume')
    lines = log(out, 'train_loss')
    assert [r['iter'] for r in lines] == [2, 4, 6, 8]
    assert all(4 * 33 / r['tokens_per_sec'] < 1.0 for r in lines), lines  # seconds a step: 1 s would count the 2 s


def test_a_best_checkpoint_that_is_the_last_is_written_once(tmp_path, tiny_bytes, monkeypatch):
    """The best checkpoint, when it is the last, is a hard link to it (atomic: made under a temporary name, then
    renamed): one write of the file, both load; a later save of the last replaces its file, so the best keeps what
    it was; without links (another file system) a copy. train.py logs each save's seconds."""
    (tmp_path / 'saves').mkdir()
    last, best = tmp_path / 'saves' / 'ckpt_last.pt', tmp_path / 'saves' / 'ckpt_best.pt'
    save_checkpoint({'model': {'w': torch.zeros(3)}, 'model_config': {}}, last, best)
    assert os.path.samefile(last, best) and read_checkpoint(best)['model']['w'].sum() == 0
    save_checkpoint({'model': {'w': torch.ones(3)}, 'model_config': {}}, last)  # a later last, not the best
    assert read_checkpoint(best)['model']['w'].sum() == 0 and read_checkpoint(last)['model']['w'].sum() == 3
    save_checkpoint({'model': {'w': torch.full((3,), 2.0)}, 'model_config': {}}, last, best)  # a later best
    assert read_checkpoint(best)['model']['w'].sum() == read_checkpoint(last)['model']['w'].sum() == 6
    monkeypatch.setattr(os, 'link', lambda *args: (_ for _ in ()).throw(OSError('no links here')))
    save_checkpoint({'model': {'w': torch.full((3,), 3.0)}, 'model_config': {}}, last, best)
    assert not os.path.samefile(last, best) and read_checkpoint(best)['model']['w'].sum() == 9
    assert sorted(os.listdir(tmp_path / 'saves')) == ['ckpt_best.pt', 'ckpt_last.pt']  # no temporary left behind
    monkeypatch.undo()
    out = tmp_path / 'out'
    train_here(out, tiny_bytes, '--max_iters=2', '--eval_interval=2')
    assert os.path.samefile(out / 'ckpt_last.pt', out / 'ckpt_best.pt')  # the first evaluation is the best so far
    assert all(record['save_seconds'] >= 0 for record in log(out))

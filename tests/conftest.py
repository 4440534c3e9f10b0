"""Shared test fixtures: tiny corpora and checkpoints in train.py's format, made in seconds."""
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from checkpoint import save_checkpoint
from model import ModelConfig, Transformer
from objectives import Objective

if os.environ.get('PYTEST_XDIST_WORKER'):  # two workers on two cores: one thread each, no oversubscription
    torch.set_num_threads(1)

BOS = 50256
FIXTURES_GLUE = os.path.join(ROOT, 'tests', 'fixtures', 'glue')  # a few rows of every GLUE task, in GLUE's format


# inductor compiles CPU kernels with a C++ compiler: the compiled-path tests say so where there is none
needs_compiler = pytest.mark.skipif(not (shutil.which('g++') or shutil.which('c++')),
                                    reason="inductor compiles CPU kernels with a C++ compiler: install g++")


def pytest_collection_modifyitems(items):
    """Tests marked long first: xdist hands tests out in this order, and a long one started last makes one worker
    run alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker('long') is None)  # a stable sort keeps the rest in order


@pytest.fixture(scope='module')
def one_thread():
    """For modules of tiny ops: a second OpenMP thread only adds barriers, ~20x slower on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def random_tokens(B, S, vocab, seed=0):
    """(B, S) ids: column 0 the conditioning id vocab - 1 (BOS's place), the rest uniform in 0..vocab-2."""
    x = torch.randint(0, vocab - 1, (B, S), generator=torch.Generator().manual_seed(seed))
    x[:, 0] = vocab - 1
    return x


def write_corpus(folder, train_tokens, val_tokens, tokenizer='gpt2'):
    """A prepared corpus as data/text.py writes it: uint16 train.bin / val.bin and meta.json."""
    os.makedirs(folder, exist_ok=True)
    for split, tokens in (('train', train_tokens), ('val', val_tokens)):
        np.asarray(tokens, dtype=np.uint16).tofile(os.path.join(folder, f'{split}.bin'))
    vocab_size, bos = {'gpt2': (50257, BOS), 'bytes': (257, 256)}[tokenizer]
    meta = dict(tokenizer=tokenizer, vocab_size=vocab_size, bos=bos, train_tokens=len(train_tokens),
                val_tokens=len(val_tokens))
    with open(os.path.join(folder, 'meta.json'), 'w') as f:
        json.dump(meta, f)
    return str(folder)


@pytest.fixture
def tiny_corpus(tmp_path):
    """A repeating 'language' over 40 token ids, so a model can learn it in a few steps."""
    rng = np.random.default_rng(0)
    pattern = rng.integers(0, 40, size=50)
    stream = np.concatenate([pattern + rng.integers(0, 2, size=50) for _ in range(200)])
    return write_corpus(tmp_path / 'corpus', stream[:8000], stream[8000:])


@pytest.fixture
def tiny_bytes(tiny_corpus, tmp_path):
    """The tiny corpus's ids (0-40) as a byte corpus: a head 320 wide instead of GPT-2's 50,304, which is most of a
    tiny model's time; for runs whose assertions do not depend on the vocabulary (resume, DDP, signals, ...)."""
    tokens = [np.fromfile(os.path.join(tiny_corpus, f'{split}.bin'), dtype=np.uint16) for split in ('train', 'val')]
    return write_corpus(tmp_path / 'tiny_bytes', *tokens, 'bytes')


@pytest.fixture(scope='session')
def shakespeare_bytes(tmp_path_factory):
    """The real plays as bytes, as data/shakespeare/prepare.py --tokenizer=bytes writes them, prepared once per test
    process in this process (the script's own command line is test_data's); tests only read it."""
    data_dir = tmp_path_factory.mktemp('plays') / 'shakespeare_bytes'
    run_in_process('data/shakespeare/prepare.py', '--tokenizer=bytes', f'--out_dir={data_dir}')
    return data_dir


def make_checkpoint(path, objective='ar', input_kind='tokens', seed=0, train_config=None, **model_kwargs):
    """A random-init model saved exactly as train.py saves one (the eval scripts read these)."""
    torch.manual_seed(seed)
    defaults = dict(n_layer=2, n_head=2, n_embd=32, block_size=33)
    if input_kind == 'patches':
        defaults = dict(n_layer=2, n_head=2, n_embd=32, image_size=28, patch_size=7, channels=1)
    config = ModelConfig(input_kind=input_kind, **{**defaults, **model_kwargs})
    model = Transformer(config)
    train_config = {**dict(objective=objective, two_stream=None, mask_ratio=None, t=2, random_order=False,
                           n_groups=20, segmentation='mixed', bert_replace=False, dataset='tiny',
                           input_kind=input_kind, block_size=config.block_size, image_size=config.image_size,
                           patch_size=config.patch_size, channels=config.channels), **(train_config or {})}
    objective = dict(name=train_config['objective'], **{k: train_config[k] for k in Objective.__dataclass_fields__
                                                        if k != 'name' and k in train_config})  # unchecked, as given
    save_checkpoint({'model': model.state_dict(), 'model_config': asdict(config), 'objective': objective,
                     'config': train_config, 'iter': 0, 'best_val_loss': float('inf')}, path)
    return str(path), model


def run_script(*args, timeout=600, env=None):
    """Run one of the top-level scripts as a user would; returns the CompletedProcess. The timeout is a guard against
    a hang, many times any test's run even on a slow machine: how fast a script runs is bench.py's business."""
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, 'OMP_NUM_THREADS': '1', **(env or {})})


def one_error_line(result, *fragments):
    """A script run that stopped on bad input: exit code 1 and one stderr line `<script>: error: ...` with every
    fragment in it."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1 and ': error: ' in lines[0], result.stderr[-2000:]
    assert all(fragment in lines[0] for fragment in fragments), lines[0]


def run_in_process(script, *args, cwd=ROOT):
    """Run a top-level script to its end in this process: milliseconds instead of a new interpreter, and it sees
    what a test registered (e.g. a new objective). From the working folder cwd (the repository's, as run_script's),
    with the script named by its path from ROOT. Signal handlers are restored afterwards (train.py sets its own)."""
    argv, hook, previous = sys.argv, sys.excepthook, os.getcwd()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)}
    sys.argv = [script, *args]
    os.chdir(cwd)
    try:
        return runpy.run_path(os.path.join(ROOT, script), run_name='__main__')
    finally:
        sys.argv, sys.excepthook = argv, hook
        os.chdir(previous)
        signal.set_wakeup_fd(-1)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def script_error(script, *args):
    """A script run in this process until the UsageError its checks raise: -> the message (the one-line printing
    of these errors is tested with run_script)."""
    with pytest.raises(ValueError) as error:
        run_in_process(script, *args)
    return str(error.value)


def usage_error(script, *args):
    """script_error for a refusal a user sees as one line: a UsageError (one_line_errors prints it as `<script>:
    error: <message>` with exit code 1, which each script's one subprocess test shows), its message one line."""
    from configurator import UsageError
    with pytest.raises(UsageError) as error:
        run_in_process(script, *args)
    message = str(error.value)
    assert '\n' not in message, message
    return message


def one_line_error(call, *keys, error=ValueError):
    """call() raises `error` with a message of one line naming every key (the flag, file, command or
    value the error is about: what a user acts on, not the sentence around it): -> the message."""
    with pytest.raises(error) as excinfo:
        call()
    message = str(excinfo.value)
    assert "\n" not in message and all(key in message for key in keys), message
    return message


def write_curves_record(root, curves, **settings):
    """A data-constrained record as data_constrained.sh leaves it, evaluated every 100 steps: settings.json (these
    settings over small defaults) and runs/SIZE/ARM/SEED/log.jsonl; curves: {(size, arm): {seed: nll array}}."""
    settings = {**dict(train_bytes={'small': 1000, 'full': 100000}, steps=1000, eval_interval=100, bytes_per_step=100,
                       eval_bytes=1000, recipe='--test', floors={'small': {'unigram': 3.3, 'bigram': 2.7},
                                                                 'full': {'unigram': 3.3, 'bigram': 2.5}}), **settings}
    os.makedirs(root, exist_ok=True)
    json.dump(settings, open(os.path.join(root, 'settings.json'), 'w'))
    for (size, arm), by_seed in curves.items():
        for seed, nll in by_seed.items():
            run = os.path.join(root, 'runs', size, arm, str(seed))
            os.makedirs(run)
            with open(os.path.join(run, 'log.jsonl'), 'w') as f:
                f.writelines(json.dumps(dict(iter=100 * (i + 1), val_loss=float(value),
                                             eval_train_loss=float(value) - 1)) + '\n' for i, value in enumerate(nll))


def file_at_commit(tmp_path, commit, path):
    """The file at path as commit holds it, copied under tmp_path. Skipped only where there is no full history to
    read (an exported tarball, a shallow clone); in a full clone, a commit or file that is not there fails the test."""
    shallow = subprocess.run(['git', '-C', ROOT, 'rev-parse', '--is-shallow-repository'], capture_output=True,
                             text=True)
    if shallow.returncode != 0 or shallow.stdout.strip() != 'false':
        pytest.skip(f'no full git history in {ROOT} to read {commit} from')
    shown = subprocess.run(['git', '-C', ROOT, 'show', f'{commit}:{path}'], capture_output=True, text=True)
    assert shown.returncode == 0, f'{commit} holds no {path}: {shown.stderr.strip()}'
    copy = tmp_path / os.path.basename(path)
    copy.write_text(shown.stdout)
    return str(copy)


def assert_record_regenerates(record, report, tmp_path, script):
    """A committed record's tables.md, CSVs and PNGs, redrawn by report from its runs, byte for byte (skipped
    until the record is committed: `bash script` makes it)."""
    if not os.path.exists(os.path.join(record, 'tables.md')):
        pytest.skip(f'{os.path.relpath(record, ROOT)} is not recorded yet: bash {script}')
    report(record, str(tmp_path))
    for name in sorted(os.listdir(record)):
        if name.endswith(('.md', '.csv', '.png')):
            assert (tmp_path / name).read_bytes() == open(os.path.join(record, name), 'rb').read(), name

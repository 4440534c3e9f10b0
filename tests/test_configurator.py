"""configurator.py: values parse as a user types them, ranges hold at their boundaries, and every script takes the
natural values of its 'auto' keys (nanoGPT's --compile=False, --device=cpu) and refuses wrong ones with one line
naming the accepted ones. Scripts run in this process (conftest.script_error): milliseconds per case."""
import math
import os
import subprocess
import sys

import pytest
import torch

from configurator import check_ranges, configure, parse_value
from conftest import FIXTURES_GLUE, ROOT, run_in_process, script_error, usage_error


def test_values_parse_as_typed():
    assert parse_value('0.15') == 0.15 and parse_value('(0.15,0.3)') == (0.15, 0.3)
    assert parse_value('False') is False and parse_value('cuda:1') == 'cuda:1'
    assert parse_value('(nope,)') == ('nope',) and parse_value('(cola, rte)') == ('cola', 'rte')
    assert parse_value('[polarity]') == ('polarity',) and parse_value('shakespeare') == 'shakespeare'


def test_ranges_hold_at_their_boundaries():
    check_ranges({'a': 1, 'b': 0.5, 'c': 1.0, 'd': None, 'e': (4, 8)},
                 {'a': '[1, inf)', 'b': '(0, 1)', 'c': '[0, 1]', 'd': '[1, inf)', 'e': '[4, inf)'})
    for value, interval in [(0, '[1, inf)'), (0.0, '(0, 1)'), (1.0, '(0, 1)'), (1.0001, '[0, 1]'), (-1, '[0, 1]'),
                            (math.inf, '[0, inf)'), ((4, 3), '[4, inf)')]:
        with pytest.raises(ValueError) as error:
            check_ranges({'key': value}, {'key': interval})
        message = str(error.value)  # the key, its range and the value given
        assert all(fragment in message for fragment in ("'key'", interval, repr(value))), message


def test_auto_keys_take_values_of_any_type_and_typed_keys_do_not():
    config = {'compile': 'auto', 'device': 'auto', 'batch_size': 12, 'learning_rate': 1e-3}
    configure(config, ['--compile=False', '--device=cuda:1', '--learning_rate=1'])
    assert config == {'compile': False, 'device': 'cuda:1', 'batch_size': 12, 'learning_rate': 1.0}
    with pytest.raises(ValueError) as error:
        configure(config, ['--batch_size=1.5'])
    message = str(error.value)  # the key, its type and the value given
    assert all(fragment in message for fragment in ("'batch_size'", 'int', '1.5')), message

# -----------------------------------------------------------------------------
# every script, every 'auto' key: natural values accepted, wrong ones refused by name


def script_args(script, tmp_path):
    """Flags that take a script past its device checks to a known later stop: -> (flags, what that
    stop's message names: the command, flag or path that fixes it)."""
    return {
        'train.py': ([f'--dataset={tmp_path / "nowhere"}', f'--out_dir={tmp_path / "out"}'],
                     f'data/prepare.py --input=YOUR_FILES --out_dir={tmp_path / "nowhere"}'),
        'eval_ppl.py': ([], '--ckpt='),
        'eval_vision.py': ([], '--ckpt='),
        'eval_glue.py': ([f'--ckpt={tmp_path / "x.pt"}', f'--glue_dir={tmp_path / "nowhere"}', '--tasks=rte',
                          '--dropout=0'],  # flex has no attention dropout: with the default 0.1 it is refused
                         f'data/glue/prepare.py --tasks=rte --out_dir={tmp_path / "nowhere"}'),
        'bench.py': (['--backends=flex'], '--backends=sdpa'),
    }[script]


SYSTEM_KEYS = {  # script -> its 'auto' keys of device and speed
    'train.py': ('device', 'dtype', 'attn_backend', 'compile'),
    'bench.py': ('device', 'dtype', 'compile'),
    'eval_ppl.py': ('device', 'dtype', 'attn_backend'),
    'eval_vision.py': ('device', 'dtype', 'attn_backend'),
    'eval_glue.py': ('device', 'dtype', 'attn_backend'),
}
NATURAL = {'device': ('cpu', 'auto'), 'dtype': ('float32', 'bfloat16', 'auto'),
           'attn_backend': ('sdpa', 'flex', 'auto'), 'compile': (False, 'auto')}
WRONG = {  # key -> wrong values; the one line names the key, the value and every accepted one
    'device': ['gpu', 0], 'dtype': ['fp16'], 'attn_backend': ['dense'], 'compile': ['yes', 1],
}
ACCEPTED = {'device': ('auto', 'cpu', 'cuda', 'mps'), 'dtype': ('auto', 'float32', 'bfloat16', 'float16'),
            'attn_backend': ('auto', 'sdpa', 'flex'), 'compile': ('True', 'False', 'auto')}
CASES = [(script, key) for script, keys in SYSTEM_KEYS.items() for key in keys]


@pytest.mark.parametrize('script,key', CASES)
def test_natural_values_are_accepted(tmp_path, script, key):
    args, later_stop = script_args(script, tmp_path)
    for value in NATURAL[key]:
        message = script_error(script, *args, f'--{key}={value}', '--progress=False')
        assert later_stop in message, (key, value, message)


@pytest.mark.parametrize('script,key', CASES)
def test_wrong_values_are_refused_naming_the_accepted_ones(tmp_path, script, key):
    args, _ = script_args(script, tmp_path)
    for value in WRONG[key]:
        message = script_error(script, *args, f'--{key}={value}', '--progress=False')
        assert '\n' not in message and message.startswith(key) and f"got {value!r}" in message, message
        assert all(accepted in message for accepted in ACCEPTED[key]), message


@pytest.mark.parametrize('script', sorted(SYSTEM_KEYS))
def test_a_cuda_device_this_machine_lacks_says_what_to_use(tmp_path, script):
    """cuda:<one past the last GPU>: on a machine without CUDA, and on one with it."""
    args, _ = script_args(script, tmp_path)
    missing = torch.cuda.device_count()
    message = script_error(script, *args, f'--device=cuda:{missing}', '--progress=False')
    assert f"'cuda:{missing}'" in message and '--device=cpu' in message, message  # given; to use

# -----------------------------------------------------------------------------
# numeric keys: one line naming the key and its range, before any work


@pytest.mark.parametrize('script,flag,keys', [  # the key and its range
    ('eval_ppl.py', '--batch_size=0', ('batch_size', '[1, inf)')),
    ('eval_ppl.py', '--rows_per_pass=0', ('rows_per_pass', '[1, inf)')),
    ('eval_ppl.py', '--max_tokens=-1', ('max_tokens', '[0, inf)')),
    ('eval_vision.py', '--recon_ratio=1.0', ('recon_ratio', '(0, 1)')),
    ('eval_vision.py', '--layer_decay=0', ('layer_decay', '(0, 1]')),
    ('eval_vision.py', '--epochs=0', ('epochs', '[1, inf)')),
    ('eval_glue.py', '--warmup_frac=1.5', ('warmup_frac', '[0, 1]')),
    ('eval_glue.py', '--dropout=1.0', ('dropout', '[0, 1)')),
    ('eval_glue.py', '--seeds=(0,-1)', ('seeds', '[0, inf)', '(0, -1)')),
    ('eval_glue.py', '--max_len=1', ('max_len', '[2, inf)')),
    ('bench.py', '--steps=0', ('steps', '[1, inf)')),
    ('bench.py', '--warmup=-1', ('warmup', '[0, inf)')),
    ('bench.py', '--seq_lens=(2,)', ('seq_lens', '[4, inf)')),
    ('train.py', '--eval_iters=0', ('eval_iters', '[1, inf)')),
])
def test_out_of_range_values_name_the_key_and_range(tmp_path, script, flag, keys):
    args = [f'--ckpt={tmp_path / "x.pt"}', '--tasks=rte', f'--glue_dir={FIXTURES_GLUE}'] if script == 'eval_glue.py' \
        else []
    message = script_error(script, *args, flag, f'--out_dir={tmp_path / "out"}', '--progress=False')
    assert all(key in message for key in keys), message
    assert not (tmp_path / 'out').exists()

# -----------------------------------------------------------------------------
# every committed config is read by the script it is for, with that script's keys and types


def script_of(name):
    if name.startswith('eval_ppl_'):
        return 'eval_ppl.py'
    if name.startswith(('glue_', 'linprobe_glue')):
        return 'eval_glue.py'
    if name.startswith(('linprobe_', 'finetune_', 'recon_')):
        return 'eval_vision.py'
    return 'train.py'


def script_defaults(script):
    """A script's module-level config globals (its defaults), read without running it."""
    import ast
    tree = ast.parse(open(os.path.join(ROOT, script)).read())
    defaults = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                defaults[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:  # e.g. buckets = DEFAULT_BUCKETS: a None default takes any value
                defaults[node.targets[0].id] = None
    return defaults


def test_every_config_fits_its_script_and_byte_configs_change_only_the_data():
    names = sorted(name for name in os.listdir(os.path.join(ROOT, 'config')) if name.endswith('.py'))
    values = {}
    for name in names:
        defaults = script_defaults(script_of(name))
        config = {key: value for key, value in defaults.items() if key.islower()}
        configure(config, [os.path.join(ROOT, 'config', name)])  # unknown keys or wrong types raise
        values[name] = config
    byte_level = [name for name in names if name.endswith('_shakespeare_bytes.py') and script_of(name) == 'train.py'
                  and not name.startswith('judge_')]  # the judge of sample quality: ar trained longer, its own recipe
    assert len(byte_level) == 10  # ar, dar, mlm15, mlm30, vm, the three two-stream masked ones, mdlm (1s, 2s)
    objective_keys = ('objective', 'mask_ratio', 't', 'two_stream', 'random_order', 'bert_replace')
    for name in byte_level:  # the BPE config of the same objective differs in the data (and the recipe) only
        config = values[name]
        assert config['dataset'] == 'shakespeare_bytes' and config['max_iters'] == 1200
        base = values.get(name.replace('_bytes', ''))
        if base is not None:
            assert all(config[key] == base[key] for key in objective_keys), name
            assert config['out_dir'] == base['out_dir'] + '-bytes'
    fragments = ('gpt2_124m_bench.py', 'shakespeare_bytes.py')  # a model size for bench.py, a recipe to include
    out_dirs = [values[name]['out_dir'] for name in names if script_of(name) == 'train.py' and name not in fragments]
    assert len(set(out_dirs)) == len(out_dirs), out_dirs  # no two training configs write into one out_dir

# -----------------------------------------------------------------------------
# --help: what nanoGPT users type first

@pytest.mark.parametrize('script,key,comment', [
    ('train.py', 'mask_ratio', 'vm: (a, b)'), ('eval_ppl.py', 'bert_future', 'see evals.ppl.prefix_batch'),
    ('eval_glue.py', 'device', 'auto = cuda'), ('eval_vision.py', 'attn_backend', "'flex' on CUDA"),
    ('sample.py', 'top_k', 'likeliest'), ('bench.py', 'jobs', 'attention alone'),
    ('data/prepare.py', 'val_fraction', 'held out for validation'), ('data/pile/prepare.py', 'max_docs', '0 = all'),
    ('data/shakespeare/prepare.py', 'tokenizer', 'bytes'), ('theory.py', 'vm', 'averaged over rho'),
    ('data/glue/prepare.py', 'tasks', 'repeated --tasks='), ('data/fmnist/prepare.py', 'idx_dir', 'fashion-mnist')])
def test_help_lists_every_key_with_its_value_and_comment(capsys, script, key, comment):
    with pytest.raises(SystemExit) as stop:
        run_in_process(script, '--help')
    assert stop.value.code in (0, None)
    out = capsys.readouterr().out
    lines = out.split('keys (--key=value, after any config files):\n')[1].splitlines()
    assert all(line.startswith(('  --', '# ')) for line in lines), out  # one line per key, under its section
    line, = [line for line in lines if line.startswith(f'  --{key}=')]
    assert comment in line and len(out.split('keys (')[0].strip()) > 0  # the script's docstring comes first


def test_help_after_a_config_file_shows_its_values(capsys):
    with pytest.raises(SystemExit):
        run_in_process('train.py', 'config/vm_shakespeare_bytes.py', '-h', '--batch_size=8')
    out = capsys.readouterr().out
    assert "  --objective='vm'" in out and '  --mask_ratio=(0.15, 0.3) ' in out and '  --batch_size=8 ' in out
    assert '# optimizer (AdamW)\n  --learning_rate=0.002' in out


@pytest.mark.parametrize('script', ['train.py', 'eval_ppl.py', 'sample.py'])
def test_help_keeps_a_command_continued_with_a_backslash_on_two_lines(capsys, script):
    """The docstrings show long shell commands over two lines; the string's value joins them, as one unrunnable line
    with the continuation's spaces inside it."""
    source = open(os.path.join(ROOT, script)).read().split('"""')[1].splitlines()
    continued = [(line, following.strip()) for line, following in zip(source, source[1:]) if line.endswith('\\')]
    with pytest.raises(SystemExit):
        run_in_process(script, '--help')
    out = capsys.readouterr().out.splitlines()
    assert continued and all(out[out.index(line) + 1].strip() == following for line, following in continued)


def test_a_config_file_that_does_not_parse_or_raises_is_one_line(tmp_path):
    """A UsageError of one line (printed as train.py's test_an_out_of_range_value_is_one_line_for_the_user shows)."""
    for text, expected in (('n_layer = (\n', ('line 1',)),  # the file, line, what Python said
                           ('batch_size = 8\nn_layer = 1 / 0\n', ('line 2', 'ZeroDivisionError'))):
        path = tmp_path / 'broken.py'
        path.write_text(text)
        message = usage_error('train.py', str(path))
        assert str(path) in message and all(key in message for key in expected), message


def test_a_usage_error_after_torchrun_starts_its_process_group_still_prints(tmp_path, monkeypatch,
                                                                           capsys):
    """torch.distributed wraps sys.excepthook once its group starts, and writes what the hook
    printed only if the hook returns: a hook that exited there left the user with exit code 1 and
    nothing else. From then on a process can fail alone (its own GPU), so every local rank says its
    own line: local rank 1 here, which before the group starts says nothing (the test below). In
    this process, with a group of one: the hook is called as Python calls it on an uncaught
    error."""
    import torch.distributed as dist
    from configurator import UsageError, one_line_errors
    monkeypatch.setattr(sys, 'excepthook', sys.excepthook)  # restored afterwards, wrapper and all
    monkeypatch.setenv('LOCAL_RANK', '1')
    one_line_errors('train.py')
    dist.init_process_group('gloo', init_method=f'file://{tmp_path / "store"}', rank=0,
                            world_size=1)
    try:
        error = UsageError('data/pile/train.bin not found: run `python data/pile/prepare.py` first')
        sys.excepthook(UsageError, error, None)
    finally:
        dist.destroy_process_group()
    assert capsys.readouterr().err.splitlines()[-1] == \
        '[rank0]: train.py: error: data/pile/train.bin not found: run `python data/pile/prepare.py` first'


@pytest.mark.parametrize('local_rank,printed', [(None, True), ('0', True), ('1', False)])
def test_a_usage_error_is_said_once_per_node_under_torchrun(local_rank, printed):
    """Before the process group starts every process checks the same input and fails alike: local rank 0 says it,
    the others only exit with 1 (torchrun's report counts them)."""
    script = ("import sys; sys.path.insert(0, '.')\n"
              "from configurator import UsageError, one_line_errors\n"
              "one_line_errors('train.py')\n"
              "raise UsageError('gradient_accumulation_steps=1 must be a multiple of the 2 processes')\n")
    env = {k: v for k, v in os.environ.items() if k != 'LOCAL_RANK'}
    result = subprocess.run([sys.executable, '-c', script], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**env, **({'LOCAL_RANK': local_rank} if local_rank else {})})
    assert result.returncode == 1
    assert result.stderr == ('train.py: error: gradient_accumulation_steps=1 must be a multiple of the 2 processes\n'
                             if printed else '')


def test_constants_are_not_settings():
    """UPPER_CASE globals (a URL, a list of class names) are a script's constants: no override reaches them, and
    --help does not list them; a one-letter setting such as theory.py's T still is one."""
    config = {'learning_rate': 1e-3, 'GLUE_URL': 'https://example.org', 'T': 2}
    with pytest.raises(ValueError, match="'GLUE_URL'"):
        configure(config, ['--GLUE_URL=https://elsewhere.org'])
    configure(config, ['--T=3', '--learning_rate=2e-3'])
    assert config == {'learning_rate': 2e-3, 'GLUE_URL': 'https://example.org', 'T': 3}

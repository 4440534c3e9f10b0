"""bench.py: a CPU smoke run at a tiny size writes every field, and its numbers obey the accounting they claim."""
import ast
import contextlib
import csv
import io
import json
import math
import os

import pytest

from conftest import ROOT, run_in_process, run_script, script_error, usage_error

# one timed step and no warm-up: no test reads a time, only the accounting around it
TINY = ['--n_layer=1', '--n_head=2', '--n_embd=32', '--block_size=32', '--batch_size=2', '--seq_lens=32',
        '--memory_seq_lens=16', '--warmup=0', '--steps=1', '--progress=False']
VARIANTS = ('ar', 'dar', 'vm2s', 'mlm', 'ar_bytes', 'ar_rope', 'dar_rope', 'vm2s_rope', 'mlm_rope')


@pytest.fixture(scope='module', autouse=True)
def dynamo_limits_back():
    """bench.py sets dynamo's recompile limits for itself; run here, it would leave them set for the tests this
    process runs next."""
    import torch._dynamo
    config = torch._dynamo.config
    saved = config.recompile_limit, config.fail_on_recompile_limit_hit
    yield
    config.recompile_limit, config.fail_on_recompile_limit_hit = saved


@pytest.fixture(scope='module')
def bench(tmp_path_factory, one_thread):
    """One smoke run in this process (on one thread, as run_script's), read by the tests below; what it prints, too."""
    out = tmp_path_factory.mktemp('bench')
    (out / 'bench.md').write_text('an earlier run\n')  # replaced: test_memory_attention_and_targets reads the new one
    with contextlib.redirect_stdout(io.StringIO()) as stdout:
        run_in_process('bench.py', *TINY, f'--out_dir={out}', '--overwrite=True')
    with open(out / 'bench.json') as f:
        return json.load(f), out, stdout.getvalue()


def test_every_run_is_one_row_of_the_table_the_csv_and_the_json(bench):
    """What a reader compares: bench.md's row of each run (printed too), the same numbers in bench.csv and bench.json,
    and the json saying where it ran."""
    result, out, stdout = bench
    assert result['device_type'] == 'cpu' and result['dtype'] == 'float32' and result['compile'] is False
    assert result['torch'] in stdout and result['model']['params'] > 0
    assert result['peak_tflops'] is None  # no CPU peak: MFU is n/a, not a made-up number
    runs = result['runs']
    table = (out / 'bench.md').read_text()
    with open(out / 'bench.csv') as f:
        csv_rows = list(csv.DictReader(f))
    assert len(csv_rows) == len(runs)
    for row, csv_row in zip(runs, csv_rows):
        assert f"| {row['variant']} | {row['backend']} | {row['mode']} | {row['seq_len']} | {row['batch_size']} | " \
            f"{row['ms_per_step']:.2f} | {row['tokens_per_s']:.0f} | {row['peak_mem_mb']:.0f} |" in table
        assert [csv_row[key] for key in ('variant', 'backend', 'mode')] == [row['variant'], row['backend'], row['mode']]
        assert math.isclose(float(csv_row['ms_per_step']), row['ms_per_step'])
        assert row['ms_per_step'] > 0 and row['peak_mem_mb'] > 0 and row['flops_per_step'] > 0
        assert row['mfu'] is None
        assert row['batch_size'] == 64 // row['seq_len']  # the same tokens per step at every length
        assert math.isclose(row['tokens_per_s'], row['batch_size'] * row['seq_len'] / (row['ms_per_step'] / 1e3))
    # CPU: every variant trains through SDPA (flex has no CPU backward) and is timed forward-only on both backends
    keys = {(r['variant'], r['backend'], r['mode'], r['seq_len']) for r in runs}
    expected = {(v, 'sdpa', 'train', 32) for v in VARIANTS} | \
               {(v, b, 'forward', 32) for v in VARIANTS for b in ('sdpa', 'flex')}
    assert keys == expected and len(runs) == len(expected)


def test_ratios_are_against_ar_in_the_same_run(bench):
    result, _, _ = bench
    train = {(r['variant'], r['seq_len']): r for r in result['runs'] if r['mode'] == 'train'}
    # every variant against ar, and each rope variant against the same objective with the learned table
    assert set(result['ratios']) == {f'{v}/ar' for v in VARIANTS if v != 'ar'} | \
        {'dar_rope/dar', 'vm2s_rope/vm2s', 'mlm_rope/mlm'}
    for name, by_length in result['ratios'].items():
        variant, base = name.split('/')
        assert set(by_length) == {'32'}
        expected = train[(variant, 32)]['ms_per_step'] / train[(base, 32)]['ms_per_step']
        assert math.isclose(by_length['32'], expected)
        assert train[(variant, 32)]['rope'] == variant.endswith('_rope')
        if base == 'ar':
            assert math.isclose(train[(variant, 32)]['ratio_to_ar'], expected)


def test_flops_count_attention_by_the_mask(bench):
    """ar at S: the causal mask opens S(S+1)/2 pairs per sequence, not S^2 (SPEC §5); 1 layer, d=32, GELU MLP."""
    result, _, _ = bench
    d, vocab = 32, 50304
    for row in result['runs']:
        if row['variant'] != 'ar':
            continue
        B, S = row['batch_size'], row['seq_len']
        forward = 2 * B * S * 12 * d * d + 4 * d * B * S * (S + 1) / 2 + 2 * B * (S - 1) * vocab * d
        assert math.isclose(row['flops_per_step'], 3 * forward)
    by_key = {(r['variant'], r['mode'], r['seq_len']): r['flops_per_step'] for r in result['runs']}
    assert by_key[('dar', 'train', 32)] > by_key[('ar', 'train', 32)]  # the query stream is extra work


def test_memory_attention_and_targets(bench):
    result, out, stdout = bench
    assert [(m['variant'], m['seq_len']) for m in result['memory']] == [('ar', 16), ('ar', 32), ('dar', 16),
                                                                        ('dar', 32)]
    assert all(m['backend'] == 'sdpa' and m['activation_mb'] > 0 and m['batch_size'] == 2 for m in result['memory'])
    ar16, ar32 = (m['activation_mb'] for m in result['memory'][:2])
    assert math.isclose(result['memory_slopes']['ar/sdpa'], math.log(ar32 / ar16) / math.log(2))
    attention = result['attention']
    assert attention['mode'] == 'forward' and attention['seq_len'] == 32
    # flex against the fastest dense kernel that takes the boolean mask, named: on a CPU, flash and math do
    assert set(attention['sdpa_kernels_ms']) == {'flash', 'math'}
    assert attention['sdpa_ms'] == min(attention['sdpa_kernels_ms'].values()) == \
        attention['sdpa_kernels_ms'][attention['sdpa_kernel']]
    assert math.isclose(attention['speedup'], attention['sdpa_ms'] / attention['flex_ms'])
    targets = {t['name']: t for t in result['targets']}
    assert len(targets) == 8
    rope = targets['rope step / learned-table step (worst objective)']  # a CPU target: the worst of the three
    assert rope['measured'] == max(result['ratios'][k]['32'] for k in ('ar_rope/ar', 'dar_rope/dar', 'vm2s_rope/vm2s',
                                                                        'mlm_rope/mlm'))
    head = targets['byte-level ar step / GPT-2-head ar step']  # a CPU target, measured in this very run
    assert head['measured'] == result['ratios']['ar_bytes/ar']['32'] and head['status'] in ('met', 'missed')
    assert all(t['status'] in ('met', 'missed', 'not measured here') for t in targets.values())
    dar = targets['dar step / ar step']
    assert dar['measured'] == result['ratios']['dar/ar']['32'] and \
        dar['status'] == ('met' if dar['measured'] <= 1.9 else 'missed')
    for name in ('flex / dense-SDPA dar attention fwd+bwd speedup', 'flex dar activation-memory growth exponent in S',
                 'ar MFU', 'dar MFU'):
        assert targets[name]['status'] == 'not measured here'  # GPU-only targets
    table = open(out / 'bench.md').read()
    assert '| variant | backend | mode |' in table and 'not measured here' in table and table in stdout


def test_a_second_run_into_the_out_dir_is_refused(bench, capsys):
    result, out, _ = bench
    message = usage_error('bench.py', *TINY, f'--out_dir={out}')
    keys = (str(out), 'bench.json', 'bench.csv', 'bench.md', '--overwrite=True')
    assert all(key in message for key in keys), message
    assert capsys.readouterr().out == ''  # refused before any timing
    assert json.loads((out / 'bench.json').read_text()) == result


def test_one_job_alone(tmp_path, one_thread):
    """--jobs=(attention,) (the GPU check's P4): the attention timing only, every target it cannot measure said so."""
    run_in_process('bench.py', *TINY, '--jobs=(attention,)', f'--out_dir={tmp_path}')
    result = json.loads((tmp_path / 'bench.json').read_text())
    assert result['runs'] == [] and result['memory'] == [] and result['attention']['seq_len'] == 32
    targets = {t['name']: t for t in result['targets']}
    assert targets['dar step / ar step']['status'] == 'not measured here'
    assert 'flex' in (tmp_path / 'bench.md').read_text()


def test_flex_tiles_are_options_measured_not_assumed(tmp_path, monkeypatch, one_thread):
    """--flex_block / --flex_kernel: the BlockMask's block and the flex kernel's tiles a run timed, in its record."""
    import attention
    for name in ('BLOCK_SIZE', 'KERNEL_OPTIONS'):  # bench.py sets attention.py's tiles: given back
        monkeypatch.setattr(attention, name, getattr(attention, name))
    run_in_process('bench.py', *TINY, '--jobs=(attention,)', '--flex_block=16',
                   "--flex_kernel=(16,16)", f'--out_dir={tmp_path}')
    attention = json.loads((tmp_path / 'bench.json').read_text())['attention']
    assert attention['flex_block'] == [16, 16] and attention['flex_kernel'] == {'BLOCK_M': 16, 'BLOCK_N': 16}
    assert 'BlockMask [16, 16]' in (tmp_path / 'bench.md').read_text()


@pytest.mark.parametrize('on', [True, False])
def test_each_gpu_path_change_is_an_ablation_switch(monkeypatch, tmp_path, on):
    """The MFU table's rows (not measured on a GPU here): --causal_kernel and --chunked_head on (as train.py runs)
    or off (as before them), seen in the kernels and the head each training step runs."""
    import torch
    import model as model_module
    from conftest import run_in_process
    monkeypatch.setattr(torch._dynamo.config, 'recompile_limit', torch._dynamo.config.recompile_limit)
    monkeypatch.setattr(torch._dynamo.config, 'fail_on_recompile_limit_hit', False)
    calls, sdpa, chunked = [], model_module.F.scaled_dot_product_attention, model_module.Transformer.chunked_loss
    monkeypatch.setattr(model_module.F, 'scaled_dot_product_attention', lambda *a, **kw: calls.append(
        'causal' if kw.get('is_causal') else 'mask') or sdpa(*a, **kw))
    monkeypatch.setattr(model_module.Transformer, 'chunked_loss', lambda *a, **kw: calls.append('chunked') or
                        chunked(*a, **kw))
    run_in_process('bench.py', *TINY, '--jobs=(speed,)', '--variants=(ar,)', '--backends=(sdpa,)',
                   f'--causal_kernel={on}', f'--chunked_head={on}', f'--out_dir={tmp_path}')
    assert set(calls) == ({'causal', 'chunked'} if on else {'mask'}), calls


def test_bad_input_is_one_line(monkeypatch):
    proc = run_script('bench.py', '--variants=gpt', '--progress=False')  # printed as one line; the rest in process
    assert proc.returncode == 1 and proc.stderr.strip().count('\n') == 0
    assert 'bench.py: error:' in proc.stderr and 'variants' in proc.stderr
    for flags, word in ((['--jobs=(speed,timing)'], 'jobs'),
                        (['--compile=True', '--device=cpu'], '--compile=True'),
                        (['--n_head=3', '--n_embd=32'], 'n_head'), (['--flex_kernel=(64,)'], 'flex_kernel')):
        assert word in script_error('bench.py', *flags, '--progress=False')
    monkeypatch.setenv('RANK', '0')  # as torchrun sets it: SystemExit(line) prints the line and exits with 1
    with pytest.raises(SystemExit) as stop:
        run_in_process('bench.py', '--progress=False')
    line = stop.value.code
    assert isinstance(line, str) and 'torchrun' in line and '\n' not in line, line


def module_globals(path):
    tree = ast.parse(open(os.path.join(ROOT, path)).read())
    return {target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
            if isinstance(target, ast.Name)}


def test_gpt2_config_serves_bench_and_train(tiny_corpus, tmp_path, capsys, one_thread):
    path = os.path.join(ROOT, 'config', 'gpt2_124m_bench.py')
    values = {}
    exec(open(path).read(), {}, values)
    assert (values['n_layer'], values['n_head'], values['n_embd'], values['block_size']) == (12, 12, 768, 1024)
    assert set(values) <= module_globals('bench.py') & module_globals('train.py')
    # train.py builds the model from it (max_iters=0: no step); GPT-2 124M has 123.59M non-position parameters
    run_in_process('train.py', path, '--max_iters=0', f'--dataset={tiny_corpus}', f'--out_dir={tmp_path}',
                   '--progress=False')
    assert '123.59M parameters' in capsys.readouterr().out

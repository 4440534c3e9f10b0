"""sample.py: every objective's next-token distribution is the one eval_ppl.py scores, long contexts keep the last
tokens that fit, and a seeded run is reproducible, for BPE and byte-level checkpoints."""
import pytest
import torch

from conftest import make_checkpoint, run_in_process, script_error
from checkpoint import load_checkpoint
from evals.ppl import score_windows

pytestmark = pytest.mark.usefixtures('one_thread')  # tiny ops (conftest.one_thread)

# (objective, two_stream, prefix style): one checkpoint of each way a model reads a prefix
READINGS = [('ar', None, 'causal'), ('dar', None, 'groups'), ('mlm', None, 'bert'), ('vm', True, 'masked_two_stream')]


def byte_checkpoint(tmp_path, objective, two_stream, seed=0):
    return make_checkpoint(tmp_path / f'{objective}.pt', objective, seed=seed, tokenizer='bytes', vocab_size=320,
                           block_size=17, train_config=dict(two_stream=two_stream))[0]


@pytest.mark.parametrize('objective,two_stream,style', READINGS)
def test_next_token_distribution_is_the_scored_one(tmp_path, objective, two_stream, style):
    path = byte_checkpoint(tmp_path, objective, two_stream)
    script = run_in_process('sample.py', f'--ckpt={path}', '--max_new_tokens=2', '--prompt=To be')
    assert script['style'] == style
    model, _ = load_checkpoint(path)
    for ids in ([256], [256] + list(b'To be, or'), [256] + list(range(40, 80))):  # the last one is past block_size
        log_probs = torch.log_softmax(script['next_token_logits'](ids), dim=-1)
        context = ids[-15:] if len(ids) > 16 else ids[1:]  # BOS + the last block_size - 2 tokens + the next one
        for token in (10, 101, 255):
            window = torch.tensor([[256] + context + [token]])
            assert torch.allclose(-log_probs[token], score_windows(model, window, style)[0, -1], atol=1e-5)
    if objective == 'ar':  # a causal model's long context is exactly its last block_size - 2 tokens
        long_ids = [256] + list(range(40, 80))
        assert torch.equal(script['next_token_logits'](long_ids), script['next_token_logits']([256] + long_ids[-15:]))


def test_seeded_samples_repeat_and_stay_in_the_vocabulary(tmp_path, capsys):
    path = byte_checkpoint(tmp_path, 'ar', None)
    outputs = []
    for _ in range(2):
        run_in_process('sample.py', f'--ckpt={path}', '--prompt=ROMEO:', '--max_new_tokens=30', '--num_samples=2',
                       '--seed=7', '--top_k=20')
        outputs.append(capsys.readouterr().out)
    samples = outputs[0].split('---------- sample ')[1:]
    assert outputs[0] == outputs[1] and len(samples) == 2
    assert all(sample.split('\n', 1)[1].startswith('ROMEO:') for sample in samples)  # each continues the prompt
    run_in_process('sample.py', f'--ckpt={path}', '--prompt=ROMEO:', '--max_new_tokens=30', '--seed=8')
    assert capsys.readouterr().out != outputs[0]
    # padding rows of the head (257..319) are never drawn, even when the model puts all its mass there
    script = run_in_process('sample.py', f'--ckpt={path}', '--max_new_tokens=1')
    logits = torch.full((320,), -50.0)
    logits[300] = 50.0
    logits[65] = 0.0
    assert {script['sample_next'](logits) for _ in range(20)} == {65}


def test_bad_input_is_one_line(tmp_path):
    assert 'no checkpoint' in script_error('sample.py')
    image, _ = make_checkpoint(tmp_path / 'image.pt', 'vm', input_kind='patches', train_config=dict(two_stream=True))
    assert 'is an image model' in script_error('sample.py', f'--ckpt={image}')
    path = byte_checkpoint(tmp_path, 'ar', None)
    assert "'temperature' must lie in (0, inf)" in script_error('sample.py', f'--ckpt={path}', '--temperature=0.0')
    assert 'bert_future' in script_error('sample.py', f'--ckpt={path}', '--bert_future=later')
    assert 'does not exist' in script_error('sample.py', f'--ckpt={tmp_path / "missing.pt"}')

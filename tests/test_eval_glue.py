"""eval_glue.py and evals/glue.py: encoding and masks, pooling, the schedule, the linear probes against
scikit-learn, the whole pipeline on fixtures of every task (scores re-checked with scikit-learn / scipy), a small
model learning a separable task, torchrun = one process, and one-line errors."""
import csv
import json
import os
import random

import numpy as np
import pytest
import torch

from conftest import FIXTURES_GLUE, ROOT, make_checkpoint, run_in_process, run_script, script_error, usage_error
from data import glue_tasks as gt
from data.text import get_tokenizer
from evals import glue
from schedule import lr_at
from objectives import PAD_GROUP
from objectives import Objective

FIXTURES = FIXTURES_GLUE
QUICK = ['--epochs=1', '--progress=False', '--batch_size=4']


pytestmark = pytest.mark.usefixtures('one_thread')  # in-process runs on one thread, as run_script's (and torchrun's)


def glue_here(*args):
    """eval_glue.py in this process (it runs on one thread here, as run_script's OMP_NUM_THREADS=1): the same run
    without a new interpreter's seconds of imports, where what is tested is not the command line itself."""
    return run_in_process('eval_glue.py', *args)


def read_csv(path):
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


# -----------------------------------------------------------------------------
# encoding: BOS a SEP b, longest-first truncation


def test_join_pair_layout_and_truncation():
    tokenizer = get_tokenizer()
    (a, b), (single, none) = glue.encode_rows(tokenizer, [('Hello world', ' again', 0), ('Hello world', None, 1)])
    assert a == single == [15496, 995] and none is None
    assert glue.join_pair(a, b, 128) == [50256, 15496, 995, glue.SEPARATOR] + b
    assert glue.join_pair(single, None, 128) == [50256, 15496, 995]
    long_a, long_b, short = list(range(100)), list(range(200, 260)), [7, 8, 9]
    for first, second, cap in ((long_a, long_b, 40), (long_a, short, 40), (short, long_b, 40), (long_a, long_b, 31)):
        ids = glue.join_pair(first, second, cap)
        assert len(ids) == cap and ids[0] == 50256
        cut = ids.index(glue.SEPARATOR, 1)
        kept_a, kept_b = ids[1:cut], ids[cut + 1:]
        assert kept_a == first[:len(kept_a)] and kept_b == second[:len(kept_b)]  # cut at the ends only
        if short in (first, second):
            assert short in (kept_a, kept_b)  # the shorter text survives whole
        else:
            assert abs(len(kept_a) - len(kept_b)) <= 1  # both long: an even share
    assert glue.join_pair(long_a, None, 10) == [50256] + long_a[:9]
    with pytest.raises(ValueError, match='max_len=3'):
        glue.join_pair(a, b, 3)

# -----------------------------------------------------------------------------
# masks, padding and pooling


@pytest.mark.parametrize('style', glue.STYLES)
def test_padding_is_invisible_and_style_is_the_pretraining_pattern(tmp_path, style):
    _, model = make_checkpoint(tmp_path / 'c.pt', 'ar')
    model.eval()
    generator = torch.Generator().manual_seed(0)
    sequences = [[50256] + torch.randint(0, 500, (n,), generator=generator).tolist() for n in (3, 9, 6)]
    batch, lengths = glue.pad_batch(sequences, style)
    assert lengths.tolist() == [4, 10, 7]
    real = batch['content_groups'] < PAD_GROUP
    assert (real.sum(dim=1) == lengths).all()
    expected = torch.arange(10) if style == 'causal' else torch.zeros(10, dtype=torch.long)
    assert torch.equal(batch['content_groups'][1], expected)
    with torch.no_grad():
        padded = model.trunk(**batch)
        for row, ids in enumerate(sequences):  # each alone, no padding: the same hidden states
            alone, _ = glue.pad_batch([ids], style)
            assert torch.allclose(model.trunk(**alone)[0], padded[row, :len(ids)], atol=1e-5)
        changed = [ids[:-1] + [ids[-1] + 1] for ids in sequences]  # a different last token
        other = model.trunk(**glue.pad_batch(changed, style)[0])
    first_moved = not torch.allclose(other[:, 0], padded[:, 0], atol=1e-6)
    assert first_moved == (style == 'bidirectional')  # causal: BOS cannot see the end; bidirectional: it can
    last = glue.pool(padded, lengths, 'last')
    assert not torch.allclose(glue.pool(other, lengths, 'last'), last, atol=1e-6)


def test_pool_rows():
    hidden = torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(1))
    lengths = torch.tensor([2, 5, 3])
    assert torch.equal(glue.pool(hidden, lengths, 'first'), hidden[:, 0])
    assert torch.equal(glue.pool(hidden, lengths, 'last'), torch.stack([hidden[0, 1], hidden[1, 4], hidden[2, 2]]))
    mean = torch.stack([hidden[b, :n].mean(dim=0) for b, n in enumerate(lengths.tolist())])
    assert torch.allclose(glue.pool(hidden, lengths, 'mean'), mean, atol=1e-6)
    assert sorted(i for batch in glue.length_batches([5, 1, 3, 3, 2], 2) for i in batch) == [0, 1, 2, 3, 4]


def test_attention_and_pooling_choices():
    attentions = [glue.pretraining_attention(Objective(o)) for o in ('ar', 'dar', 'gvp', 'mlm', 'vm')]
    assert attentions == ['causal'] * 3 + ['bidirectional'] * 2
    assert glue.resolve_pooling('auto', 'causal') == 'last' and glue.resolve_pooling('auto', 'bidirectional') == 'mean'
    assert glue.resolve_pooling('first', 'bidirectional') == 'first'
    with pytest.raises(ValueError, match="pooling='first'.*--pooling=last"):  # given, and the fix
        glue.resolve_pooling('first', 'causal')

# -----------------------------------------------------------------------------
# schedule and linear probes


def test_warmup_then_cosine_to_zero():
    total, peak = 200, 4e-5
    lrs = [lr_at(step, peak, 20, total) for step in range(total)]  # 10% warmup
    assert all(0 < a < b for a, b in zip(lrs[:20], lrs[1:21]))  # linear warmup over 10% of the steps
    assert lrs[20] == pytest.approx(peak) and max(lrs) == pytest.approx(peak)
    assert all(a >= b for a, b in zip(lrs[20:], lrs[21:]))
    assert lrs[110] == pytest.approx(peak / 2)  # cosine: half way through the decay, half the peak
    assert lrs[-1] < 1e-3 * peak


def test_logistic_probe_equals_scikit_learn():
    from sklearn import linear_model
    rng = np.random.default_rng(0)
    n, d, l2 = 300, 6, 1e-2
    x = rng.normal(size=(n, d))
    y = (x @ rng.normal(size=(d, 3)) + rng.normal(size=(n, 3))).argmax(axis=1)
    weight, bias = glue.fit_logistic(torch.tensor(x), torch.tensor(y), 3, l2)
    ours = torch.softmax(torch.tensor(x) @ weight + bias, dim=1).numpy()
    # sklearn minimises C sum CE + |W|^2 / 2, the same optimum as mean CE + l2/2 |W|^2 when C = 1 / (n l2)
    reference = linear_model.LogisticRegression(C=1 / (n * l2), tol=1e-10, max_iter=10000).fit(x, y)
    assert np.abs(ours - reference.predict_proba(x)).max() < 1e-5


def test_least_squares_probe_equals_ridge_and_lstsq():
    from sklearn import linear_model
    rng = np.random.default_rng(1)
    x = rng.normal(size=(80, 5))
    y = x @ rng.normal(size=5) + 0.3 + 0.1 * rng.normal(size=80)
    weight, bias = glue.fit_least_squares(torch.tensor(x), torch.tensor(y), 0.05)
    reference = linear_model.Ridge(alpha=0.05 * 80).fit(x, y)  # Ridge: sum of squares + alpha |w|^2
    assert np.allclose(weight.numpy(), reference.coef_, atol=1e-8)
    assert float(bias) == pytest.approx(reference.intercept_)
    weight, bias = glue.fit_least_squares(torch.tensor(x), torch.tensor(y), 0.0)
    solution = np.linalg.lstsq(np.c_[x, np.ones(80)], y, rcond=None)[0]
    assert np.allclose(np.r_[weight.numpy(), float(bias)], solution, atol=1e-8)

# -----------------------------------------------------------------------------
# the whole pipeline on fixtures in the official layout 


def reference_scores(task, predictions, labels):
    """The task's metrics from scikit-learn / scipy, in percent."""
    from scipy import stats
    from sklearn import metrics as skm
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    reference = {'accuracy': lambda: skm.accuracy_score(labels, predictions),
                 'f1': lambda: skm.f1_score(labels, predictions, zero_division=0),
                 'mcc': lambda: skm.matthews_corrcoef(labels, predictions),
                 'pearson': lambda: stats.pearsonr(predictions, labels)[0],
                 'spearman': lambda: stats.spearmanr(predictions, labels)[0]}
    return {metric: 100 * reference[metric]() for metric in gt.get_task(task).metrics}


def test_every_glue_task_end_to_end_under_torchrun(tmp_path):
    """Two processes (gloo) share the (checkpoint, task, seed) jobs; rank 0 gathers and writes the
    table. Byte-level checkpoints: GPT-2's 50,304-row table was most of a job's time (GPT-2's
    tokens: the separable task below)."""
    ar, _ = make_checkpoint(tmp_path / 'ar.pt', 'ar', tokenizer='bytes', vocab_size=320)
    dar, _ = make_checkpoint(tmp_path / 'dar.pt', 'dar', seed=1, tokenizer='bytes', vocab_size=320)
    out = tmp_path / 'out'
    result = run_script('-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', 'eval_glue.py',
                        f'--ckpt={ar}', f'--ckpt={dar}', f'--glue_dir={FIXTURES}',
                        '--tasks=cola,sst2,mrpc,stsb,qqp,mnli,qnli,rte', '--tasks=wnli', '--seeds=(0,1)',
                        '--save_predictions=True', f'--out_dir={out}', *QUICK)
    assert result.returncode == 0, result.stderr
    rows = read_csv(out / 'glue_finetune.csv')
    runs = json.loads((out / 'glue_finetune.json').read_text())['runs']
    assert [row['checkpoint'] for row in rows] == [ar, dar] and '| GLUE avg |' in (out / 'glue_finetune.md').read_text()
    assert sorted((r['ckpt'], r['task'], r['seed']) for r in runs) == \
        sorted((c, task, seed) for c in (0, 1) for task in gt.TASKS for seed in (0, 1))
    for c, row in enumerate(rows):
        assert row['attention'] == 'causal' and row['pooling'] == 'last'
        main = {}
        for task, spec in gt.TASKS.items():
            for split in spec.dev_splits:
                key = gt.result_key(task, split)
                labels = [label for _, _, label in gt.read_task(FIXTURES, task, split)]
                per_seed = []
                for run in (r for r in runs if r['ckpt'] == c and r['task'] == task):
                    expected = reference_scores(task, run['predictions'][key], labels)
                    for metric, value in expected.items():
                        assert run['results'][key][metric] == pytest.approx(np.nan_to_num(value), abs=1e-6)
                    per_seed.append(run['results'][key])
                for metric in spec.metrics:  # the table holds the median over the two seeds
                    assert float(row[f'{key}_{metric}']) == pytest.approx(np.median([s[metric] for s in per_seed]),
                                                                          abs=1e-4)
                main[key] = float(row[f'{key}_{spec.metrics[0]}'])
        nine = [main[key] for key in gt.GLUE_AVERAGE_KEYS]  # MNLI-m and -mm both count; WNLI does not
        assert float(row['GLUE_avg']) == pytest.approx(np.mean(nine), abs=1e-3)
    # a job's numbers do not depend on which process ran it: one process gives the same
    glue_here(f'--ckpt={dar}', f'--glue_dir={FIXTURES}', '--tasks=mnli,stsb', '--seeds=1',
              f'--out_dir={tmp_path / "alone"}', *QUICK)
    for run in json.loads((tmp_path / 'alone' / 'glue_finetune.json').read_text())['runs']:
        twin, = [r for r in runs if (r['ckpt'], r['task'], r['seed']) == (1, run['task'], 1)]
        assert run['results'] == twin['results']


def test_offline_suite_linear_probe(tmp_path):
    mlm, _ = make_checkpoint(tmp_path / 'mlm.pt', 'mlm')
    glue_here('config/linprobe_glue_offline.py', f'--ckpt={mlm}', f'--glue_dir={os.path.join(FIXTURES, "offline")}',
              '--progress=False', f'--out_dir={tmp_path / "probe"}')
    row, = read_csv(tmp_path / 'probe' / 'glue_linprobe.csv')
    assert row['attention'] == 'bidirectional' and row['pooling'] == 'mean' and row['mode'] == 'linprobe'
    mains = [float(row[f'{task}_{spec.metrics[0]}']) for task, spec in gt.OFFLINE_TASKS.items()]
    assert float(row['offline_avg']) == pytest.approx(np.mean(mains), abs=1e-3)
    assert 'GLUE_avg' not in row


def test_offline_config_is_cpu_sized_and_a_second_run_is_refused(tmp_path, capfd):
    """config/glue_offline.py: the four offline tasks, one seed, 2 epochs, under one progress bar over every
    fine-tuning step (into a pipe: plain lines, no cursor codes; capfd's descriptors are files, as a pipe is). A
    second run into its out_dir stops with one line before any fine-tuning; --overwrite=True replaces the first
    run's tables."""
    ar, _ = make_checkpoint(tmp_path / 'ar.pt', 'ar')
    out = tmp_path / 'out'
    common = ['config/glue_offline.py', f'--ckpt={ar}', f'--glue_dir={os.path.join(FIXTURES, "offline")}',
              '--batch_size=3', f'--out_dir={out}']
    capfd.readouterr()
    glue_here(*common)
    stdout, stderr = capfd.readouterr()
    runs = json.loads((out / 'glue_finetune.json').read_text())['runs']
    assert sorted((r['task'], r['seed']) for r in runs) == sorted((task, 0) for task in gt.OFFLINE_TASKS)
    steps = sum(2 * -(-r['n_train'] // 3) for r in runs)  # 2 epochs of batches of 3
    assert f"4 runs (1 checkpoint(s) x 4 task(s) x 1 seed(s)), {steps} steps of 3 in all" in stdout
    assert '\r' not in stderr and '\x1b' not in stderr
    assert f'finetune: {steps}/{steps} steps' in stderr
    table = (out / 'glue_finetune.md').read_text()
    message = usage_error('eval_glue.py', *common, '--progress=False')
    files = ('glue_finetune.md', 'glue_finetune.csv', 'glue_finetune.json')
    assert all(key in message for key in (str(out), *files, '--overwrite=True')), message
    assert capfd.readouterr().out == ''  # refused before any work
    assert (out / 'glue_finetune.md').read_text() == table
    glue_here(*common, '--progress=False', '--overwrite=True', '--tasks=hedge')
    assert [r['task'] for r in json.loads((out / 'glue_finetune.json').read_text())['runs']] == ['hedge']


def test_results_go_under_out_and_never_into_a_training_run(tmp_path):
    """Every default out_dir (the script's, each config's) lies under out/ as the other evaluations' do; a training
    run's out_dir is refused, --overwrite=True or not, and keeps its files."""
    import ast
    from configurator import read_config
    script = ast.parse(open(os.path.join(ROOT, 'eval_glue.py')).read())
    defaults = [ast.literal_eval(node.value) for node in script.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], 'id', '') == 'out_dir']
    defaults += [read_config(os.path.join(ROOT, 'config', name))['out_dir'] for name in
                 ('glue_sane.py', 'glue_offline.py', 'glue_offline_full.py', 'linprobe_glue_offline.py')]
    assert len(defaults) == 5 and all(out_dir.startswith('out/') for out_dir in defaults), defaults
    run = tmp_path / 'out-ar'
    ar, _ = make_checkpoint(run / 'ckpt_best.pt', 'ar')
    (run / 'log.jsonl').write_text('{}\n')
    for overwrite in ('False', 'True'):
        message = script_error('eval_glue.py', f'--ckpt={ar}', f'--glue_dir={FIXTURES}', '--tasks=rte',
                               '--progress=False', f'--out_dir={run}', f'--overwrite={overwrite}')
        assert all(key in message for key in (str(run), 'log.jsonl', '--out_dir')), message
    assert sorted(os.listdir(run)) == ['ckpt_best.pt', 'log.jsonl']


def test_the_full_offline_recipe_and_what_the_experiments_pass():
    """config/glue_offline_full.py is the sane recipe on the same tasks; every recorded fine-tuning run names its
    epochs, learning rate and seeds, so its numbers never depend on the CPU cut's defaults."""
    from configurator import read_config
    full = read_config(os.path.join(ROOT, 'config', 'glue_offline_full.py'))
    cut = read_config(os.path.join(ROOT, 'config', 'glue_offline.py'))
    assert (full['epochs'], full['learning_rate'], full['seeds']) == (5, 4e-5, (0, 1, 2))
    assert (cut['epochs'], cut['learning_rate'], cut['seeds']) == (2, 1e-3, (0,)) and cut['tasks'] == full['tasks']
    script = open(os.path.join(ROOT, 'experiments', 'reproduce.sh')).read().replace('\\\n', ' ')
    calls = [line for line in script.splitlines() if 'config/glue_offline.py' in line]
    assert len(calls) == 1 and all(flag in calls[0] for flag in ('--epochs=2', '--learning_rate=1e-3', '--seeds=0'))

# -----------------------------------------------------------------------------
# issue test 3: a trivially separable task (one token decides the label) is learnt from a random init


def write_keyword_task(folder):
    rng = random.Random(0)
    filler = 'the a of and to in is was it for on with as at by from this that an be or are'.split()
    for split, n in (('train', 200), ('dev', 100)):
        lines = ['sentence\tlabel']
        for i in range(n):
            words = rng.choices(filler, k=rng.randint(4, 12))
            words.insert(rng.randint(0, len(words)), 'wonderful' if i % 2 else 'dreadful')
            lines.append(f"{' '.join(words)}\t{i % 2}")
        os.makedirs(folder / 'SST-2', exist_ok=True)
        (folder / 'SST-2' / f'{split}.tsv').write_text('\n'.join(lines) + '\n')


def test_separable_task_beats_chance(tmp_path):
    write_keyword_task(tmp_path / 'glue')
    ar, _ = make_checkpoint(tmp_path / 'ar.pt', 'ar')
    mlm, _ = make_checkpoint(tmp_path / 'mlm.pt', 'mlm', seed=1)
    # a byte-level model reads the same rows as UTF-8 bytes (BOS = separator = 256), from its own checkpoint
    byte_level, _ = make_checkpoint(tmp_path / 'bytes.pt', 'ar', seed=2, tokenizer='bytes', vocab_size=320,
                                    block_size=128)
    common = [f'--glue_dir={tmp_path / "glue"}', '--tasks=sst2', '--progress=False', f'--out_dir={tmp_path / "out"}']
    glue_here(f'--ckpt={ar}', f'--ckpt={mlm}', f'--ckpt={byte_level}', *common, '--seeds=0', '--epochs=3',
              '--learning_rate=3e-3')
    glue_here(f'--ckpt={mlm}', *common, '--mode=linprobe')
    accuracies = [float(row['sst2_accuracy']) for row in read_csv(tmp_path / 'out' / 'glue_finetune.csv')]
    accuracies += [float(row['sst2_accuracy']) for row in read_csv(tmp_path / 'out' / 'glue_linprobe.csv')]
    assert len(accuracies) == 4 and min(accuracies) >= 80.0, accuracies  # chance is 50

# -----------------------------------------------------------------------------
# issue test 4: bad input, one clear line each


def test_bad_input_one_line_each(tmp_path):
    ar, _ = make_checkpoint(tmp_path / 'ar.pt', 'ar')
    image, _ = make_checkpoint(tmp_path / 'image.pt', 'mlm', input_kind='patches')
    good_dev = open(os.path.join(FIXTURES, 'SST-2', 'dev.tsv')).read()
    for folder, train in (('stray_tab', 'a fine film\t1\na stray\ttab\t0\n'), ('labels', 'a fine film\t1\nthird\t2\n')):
        (tmp_path / folder / 'SST-2').mkdir(parents=True)
        (tmp_path / folder / 'SST-2' / 'train.tsv').write_text('sentence\tlabel\n' + train)
        (tmp_path / folder / 'SST-2' / 'dev.tsv').write_text(good_dev)
    cases = [
        ([f'--ckpt={ar}', f'--glue_dir={tmp_path / "stray_tab"}', '--tasks=sst2'], ['train.tsv:3']),
        ([f'--ckpt={ar}', f'--glue_dir={tmp_path / "labels"}', '--tasks=sst2'],
         ['train.tsv:3', "'2'"]),
        ([f'--glue_dir={FIXTURES}', '--tasks=rte'], ['--ckpt=']),
        ([f'--ckpt={image}', f'--glue_dir={FIXTURES}', '--tasks=rte'],
         [image, "input_kind='patches'"]),
        ([f'--ckpt={ar}', f'--glue_dir={FIXTURES}', '--tasks=rte', '--pooling=first'], ['--pooling=last']),
        ([f'--ckpt={ar}', f'--glue_dir={FIXTURES}', '--tasks=rte', '--mode=probe'], ["'linprobe'"]),
        ([f'--ckpt={ar}', f'--glue_dir={FIXTURES}', '--tasks=(nope,)'], ["'nope'"]),
        ([f'--ckpt={ar}', f'--glue_dir={FIXTURES}', '--tasks=(rte,nope)'], ["'nope'"]),
        ([f'--ckpt={ar}', f'--glue_dir={FIXTURES}', '--tasks=', '--mode=linprobe'], ['--tasks']),  # not all eight
        (['--ckpt=random:', f'--glue_dir={FIXTURES}', '--tasks=rte'], ['random:<checkpoint>']),
        (['--ckpt=', f'--glue_dir={FIXTURES}', '--tasks=rte'], ['--ckpt=']),
        # a GLUE task where the probing config reads: the command that writes there
        (['config/glue_probing.py', f'--ckpt={ar}', '--tasks=cola'],
         ['prepare.py --tasks=cola --out_dir=', os.path.join('data', 'glue', 'probing')]),
    ]
    for args, fragments in cases:
        message = script_error('eval_glue.py', *args, '--progress=False', f'--out_dir={tmp_path / "out"}')
        assert '\n' not in message and all(fragment in message for fragment in fragments), message
    # as a user sees it: exit code 1 and one line on stderr
    missing = run_script('eval_glue.py', f'--ckpt={ar}', f'--glue_dir={tmp_path / "empty"}', '--tasks=rte',
                         f'--out_dir={tmp_path / "out"}')
    assert missing.returncode == 1, missing.stderr
    line, = missing.stderr.strip().splitlines()
    assert line.startswith('eval_glue.py: error: ') and str(tmp_path / 'empty' / 'RTE') in line
    assert 'prepare.py --tasks=rte' in line, line  # the folder looked for, and its command
    assert not (tmp_path / 'out').exists()  # nothing half-written

# -----------------------------------------------------------------------------
# baselines beside the checkpoints: word counts, and a run's model at initialisation


def test_bag_of_words_counts_and_shared_words():
    from evals.baselines import bag_of_words, word_vocabulary
    rows = [('The film, the END.', None, 1), ("it's a film", None, 0)]
    vocabulary = word_vocabulary(rows, size=3)
    assert vocabulary == {'film': 0, 'the': 1, 'a': 2}  # by count, ties alphabetical; "it's" and 'end' cut
    assert bag_of_words(rows, vocabulary).tolist() == [[1, 2, 0], [1, 0, 1]]
    pairs = [('a film', 'the film', 1)]
    assert bag_of_words(pairs, vocabulary).tolist() == [[2, 1, 1, 1, 0, 0]]  # a + b, then the words both share


def test_bag_of_words_and_random_init_beside_a_checkpoint(tmp_path):
    """The keyword task: word counts separate it; random:<ckpt> is probed like its checkpoint and named so; neither
    baseline is fine-tuned by bag_of_words."""
    write_keyword_task(tmp_path / 'glue')
    ar, _ = make_checkpoint(tmp_path / 'ar.pt', 'ar', train_config=dict(seed=4))
    common = [f'--glue_dir={tmp_path / "glue"}', '--tasks=sst2', '--progress=False', f'--out_dir={tmp_path / "out"}']
    glue_here('--ckpt=bag_of_words', f'--ckpt=random:{ar}', *common, '--mode=linprobe')
    words, random_init = read_csv(tmp_path / 'out' / 'glue_linprobe.csv')
    assert (words['checkpoint'], words['objective']) == ('bag_of_words', 'bag of words')
    assert float(words['sst2_accuracy']) == 100.0  # one word decides the label
    assert random_init['objective'] == 'ar at initialisation' and random_init['attention'] == 'causal'
    message = script_error('eval_glue.py', '--ckpt=bag_of_words', *common)
    assert 'mode=linprobe' in message and 'random:' in message


def test_bag_of_bytes_counts_ngrams_and_sees_word_order(tmp_path):
    """Byte 1- to 3-grams, ties by their bytes; a swap of two words leaves the word counts as they were, and only
    the n-grams across the boundary tell the order: bag_of_bytes separates it, bag_of_words cannot."""
    from evals.baselines import bag_of_bytes, ngram_vocabulary
    vocabulary = ngram_vocabulary([('abab', None, 0)], size=3)
    assert vocabulary == {b'a': 0, b'ab': 1, b'b': 2}  # a, b, ab twice; ba, aba, bab once
    assert bag_of_bytes([('aba', None, 0), ('ab', 'b', 1)], vocabulary).tolist() == [[2, 1, 1], [1, 1, 2]]
    for split, copies in (('train', 8), ('dev', 1)):
        rows = [('alpha beta', '0'), ('beta alpha', '1')] * copies
        os.makedirs(tmp_path / 'bigram_shift', exist_ok=True)
        (tmp_path / 'bigram_shift' / f'{split}.tsv').write_text(
            'sentence\tlabel\n' + ''.join(f'{text}\t{label}\n' for text, label in rows))
    glue_here('--ckpt=bag_of_bytes', '--ckpt=bag_of_words', f'--glue_dir={tmp_path}', '--tasks=bigram_shift',
              '--mode=linprobe', '--progress=False', f'--out_dir={tmp_path / "out"}')
    by_bytes, by_words = read_csv(tmp_path / 'out' / 'glue_linprobe.csv')
    assert by_bytes['objective'] == 'bag of bytes' and float(by_bytes['bigram_shift_accuracy']) == 100.0
    assert float(by_words['bigram_shift_accuracy']) == 50.0

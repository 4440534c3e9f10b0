"""The cue rules of evals/baselines.py (--ckpt=rule:<name>): each reads its cue and nothing else,
fits its threshold on train with each train text scored without its own counts, and runs in
eval_glue.py beside the bags, refused where it cannot answer."""
import csv
import os

import numpy as np
import pytest

from conftest import run_in_process, script_error
from configurator import UsageError
from evals import baselines as bl

pytestmark = pytest.mark.usefixtures('one_thread')  # eval_glue.py in this process, on one thread


def rows_of(texts_and_labels):
    return [(text, None, label) for text, label in texts_and_labels]


def test_capital_after_lowercase_counts_the_old_cue():
    assert bl.capitals_after_lowercase("and so Orsino went to Rome") == 2
    assert bl.capitals_after_lowercase("And so it went. To Rome") == 1  # 'went.' starts lowercase
    assert bl.capitals_after_lowercase("O, I AM THE KING") == 0  # each after a capital
    answers = bl.rule_predictions('capital_after_lowercase', rows_of([("a b", 0)]),
                                  {'dev': rows_of([("and Rome", 1), ("And so", 0)])})
    assert answers['dev'].tolist() == [1, 0]  # no threshold fit: one such word answers 1


def test_words_and_bigrams_the_rules_count():
    words = bl.later_words("Love, sweet love! it's the KING's lord.")
    assert words == ['sweet', 'love', 'the', 'lord']
    assert bl.word_bigrams("The cat, sat.") == [('the', 'cat'), ('cat', 'sat')]


def test_fit_threshold_most_accurate_lowest_of_equals():
    assert bl.fit_threshold(np.array([0., 1, 2, 3]), np.array([0, 0, 1, 1])) == 2
    assert bl.fit_threshold(np.array([0., 1]), np.array([0, 0])) == np.inf  # never 1
    assert bl.fit_threshold(np.array([5., 5]), np.array([1, 1])) == 5


def test_rare_word_counts_untouched_train_texts_each_without_itself():
    untouched = ["So the king came", "So the king went", "So the king came", "So the once went"]
    # 'once' is in one untouched text only: counted without it, as rare as an unseen word
    scores = bl.rarest_word(untouched, untouched, [True] * 4)
    assert scores.tolist() == [-1, -1, -1, 0]
    unseen = bl.rarest_word(["So the queen came", "Yes"], untouched, [False, False])
    assert unseen.tolist() == [0, -np.inf]  # a word unseen; no later word at all
    train = rows_of([(text, 0) for text in untouched[:3]] +
                    [("So the queen came", 1), ("So the duke went", 1)])
    dev = rows_of([("So the earl came", 1), ("So the king came", 0)])
    assert bl.rule_predictions('rare_word', train, {'dev': dev})['dev'].tolist() == [1, 0]


def test_bigram_pmi_sees_a_swap_that_keeps_every_word():
    natural = ["the cat sat on the mat", "the dog sat on the rug", "a cat ran to the mat"] * 4
    swapped = ["the sat cat on the mat", "the dog on sat the rug", "a cat to ran the mat"] * 4
    train = rows_of([(t, 0) for t in natural] + [(t, 1) for t in swapped])
    dev = rows_of([("the dog sat on the mat", 0), ("the dog sat the on mat", 1)])
    assert bl.rule_predictions('bigram_pmi', train, {'dev': dev})['dev'].tolist() == [0, 1]
    # the two hold the same words: the rare-word rule cannot tell them apart
    rare = bl.rule_predictions('rare_word', train, {'dev': dev})['dev']
    assert rare[0] == rare[1]


def test_unknown_rule_named_with_the_ones_there_are():
    with pytest.raises(UsageError, match="capital_after_lowercase, rare_word, bigram_pmi"):
        bl.open_rule('rule:capitals')


def write_task(folder, task, rows):
    os.makedirs(folder / task, exist_ok=True)
    for split, split_rows in (('train', rows), ('dev', rows[:4])):
        (folder / task / f'{split}.tsv').write_text(
            'sentence\tlabel\n' + ''.join(f'{text}\t{label}\n' for text, label in split_rows))


def test_rules_run_in_eval_glue_beside_the_bags(tmp_path):
    """--ckpt=rule:<name> under the linear probe's mode, one row each; refused under fine-tuning
    and on a task that is not one text with labels 0 / 1."""
    rows = [("And so to Rome we went", 1), ("And so we went home", 0)] * 4
    write_task(tmp_path / 'glue', 'line_bigram_shift', rows)
    write_task(tmp_path / 'glue', 'play', [("And so we went home", label) for label in range(4)])
    common = [f'--glue_dir={tmp_path / "glue"}', '--progress=False',
              f'--out_dir={tmp_path / "out"}']
    run_in_process('eval_glue.py', '--ckpt=rule:capital_after_lowercase', '--ckpt=rule:bigram_pmi',
                   '--ckpt=bag_of_bytes', '--tasks=line_bigram_shift', '--mode=linprobe', *common)
    with open(tmp_path / 'out' / 'glue_linprobe.csv', newline='') as f:
        capital, pmi, _ = list(csv.DictReader(f))
    assert capital['objective'] == 'rule capital_after_lowercase'
    assert float(capital['line_bigram_shift_accuracy']) == 100.0  # 'to Rome': a capital after 'to'
    assert pmi['checkpoint'] == 'rule:bigram_pmi'
    rule = ['eval_glue.py', '--ckpt=rule:rare_word']
    assert 'mode=linprobe' in script_error(*rule, '--tasks=line_bigram_shift', *common)
    message = script_error(*rule, '--tasks=play', '--mode=linprobe', *common)
    assert 'play is not' in message and 'leave it out of --tasks' in message
    message = script_error('eval_glue.py', '--ckpt=rule:nope', '--mode=linprobe',
                           '--tasks=line_bigram_shift', *common)
    assert 'one of capital_after_lowercase' in message

# The probing suite (SentEval-style tasks cut from the held-out plays and Wikipedia; python
# data/glue/prepare_probing.py) fine-tuned as config/glue_offline.py fine-tunes the offline suite: 2 epochs at lr 1e-3,
# batch 16 (500 steps on a task's 4,000 train windows), warmup 10% then cosine, dropout 0.1. One seed: a study repeats
# it over pretraining seeds (experiments/probing_pilot.sh passes each run's own).
# $ python eval_glue.py config/glue_probing.py --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt
include('glue_sane.py')
tasks = ('bigram_shift', 'somo', 'play', 'speaker_change', 'verse_prose', 'wiki_bigram_shift', 'wiki_somo')
glue_dir = 'data/glue/probing'
epochs = 2
learning_rate = 1e-3
seeds = (0,)
out_dir = 'out/eval_glue_probing'

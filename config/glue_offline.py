# The offline suite cut to CPU minutes: the four tasks of config/glue_offline_full.py fine-tuned with one seed for
# 2 epochs at lr 1e-3 (834 steps, an eighth of the full recipe's), as experiments/reproduce.sh fine-tunes its
# byte-level 4 x 128 models for Table 2 (Cramming's 4e-5 is set for a 110M model). The sane recipe itself, median
# of 3 seeds: config/glue_offline_full.py.
# $ python eval_glue.py config/glue_offline.py --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt
include('glue_offline_full.py')
epochs = 2
learning_rate = 1e-3
seeds = (0,)
out_dir = 'out/eval_glue_offline'

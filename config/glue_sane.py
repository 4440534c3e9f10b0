# GLUE fine-tuning with Cramming's "sane" recipe (Geiping & Goldstein 2023): the eight tasks of the paper's average,
# dev sets, AdamW lr 4e-5, batch 16, 5 epochs, cosine with 10% warmup, max length 128, no weight decay, median of 3
# seeds.
# data: python data/glue/prepare.py (needs a network)
# $ python eval_glue.py config/glue_sane.py --ckpt=out-ar-pile/ckpt_best.pt --ckpt=out-dar-pile/ckpt_best.pt
mode = 'finetune'
tasks = ('cola', 'sst2', 'mrpc', 'stsb', 'qqp', 'mnli', 'qnli', 'rte')
glue_dir = 'data/glue'
out_dir = 'out/eval_glue'
learning_rate = 4e-5
batch_size = 16
epochs = 5
warmup_frac = 0.1
max_len = 128
weight_decay = 0.0
seeds = (0, 1, 2)

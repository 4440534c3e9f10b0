# Linear probe on the offline suite (Sec. 3.3): frozen features with the pretraining attention pattern, pooled,
# standardised; logistic regression (L-BFGS) or ridge regression (lee_sts). Convex from zero: one run, no seeds.
# $ python eval_glue.py config/linprobe_glue_offline.py --ckpt=out-ar-shakespeare/ckpt_best.pt
mode = 'linprobe'
tasks = ('polarity', 'hedge', 'plagiarism', 'lee_sts')
glue_dir = 'data/glue/offline'
out_dir = 'out/eval_glue_offline'
max_len = 128
probe_l2 = 1e-3
probe_iters = 500

# The judge of experiments/sample_quality.sh: the byte recipe's ar trained twice as long (2400 steps, the cosine
# stretched to match), so its likelihood is nearer the text's than that of any model it judges (the recipe's 1200);
# same data, bytes and window, so it reads their samples as they were trained. The script adds --rope=True, as for
# the models it judges.
include('ar_shakespeare_bytes.py')
max_iters = 2400
lr_decay_iters = 2400
out_dir = 'out-judge-shakespeare-bytes'

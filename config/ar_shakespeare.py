# GPT (one-stream causal) on the embedded Shakespeare corpus: the default demo, ~10 CPU minutes.
# The other *_shakespeare.py configs start from this one and change only the objective.
out_dir = 'out-ar-shakespeare'
dataset = 'shakespeare'
objective = 'ar'
n_layer = 4
n_head = 4
n_embd = 128
block_size = 128        # BOS + 127 GPT-2 tokens
batch_size = 16
max_iters = 600
lr_decay_iters = 600
warmup_iters = 60
learning_rate = 2e-3
min_lr = 2e-4
eval_interval = 100
eval_iters = 10

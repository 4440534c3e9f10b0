# GPT (one-stream causal) on the embedded Shakespeare corpus in GPT-2 BPE, about 10 minutes on 2 CPU cores (most
# of it in the 50304-wide head: the *_shakespeare_bytes.py configs are the fast CPU ones). The other *_shakespeare.py
# configs start from this one and change only the objective.
out_dir = 'out-ar-shakespeare'
dataset = 'shakespeare'
objective = 'ar'
n_layer = 4
n_head = 4
n_embd = 128
block_size = 128        # BOS + 127 GPT-2 tokens
batch_size = 16
max_iters = 500
lr_decay_iters = 500
warmup_iters = 50
learning_rate = 2e-3
min_lr = 2e-4
eval_interval = 100
eval_iters = 10

# The byte-level recipe of every *_shakespeare_bytes.py config: UTF-8 bytes (prepare once: python
# data/shakespeare/prepare.py --tokenizer=bytes), so the output head is 320 wide instead of 50304, and a 4 x 128
# model on one CPU core learns real context in minutes (nanoGPT's shakespeare_char). The objective is each
# config's own; this file sets none (train.py's default is ar).
dataset = 'shakespeare_bytes'
# Rotary positions (RoPE, Su et al. 2021) instead of a learned table: a masked target's input carries no byte, so it
# must find its neighbours by position, and a learned table starts with none; with RoPE every masked arm left the
# unigram plateau within 100-200 steps on every seed, and ar and dar ended lower (experiments/rope-pilot/).
rope = True
n_layer = 4
n_head = 4
n_embd = 128
block_size = 128        # BOS + 127 bytes (about 25 words)
batch_size = 32
max_iters = 1200        # ar then sits far below the bigram floor; masked models only start to use context
lr_decay_iters = 1200
warmup_iters = 100
learning_rate = 2e-3
min_lr = 2e-4
eval_interval = 200
eval_iters = 10

# The byte-level recipe shared by every *_shakespeare_bytes.py config (included after the objective's own config):
# UTF-8 bytes (prepare once: python data/shakespeare/prepare.py --tokenizer=bytes), so the output head is 320 wide
# instead of 50304 and a 4 x 128 model on one CPU core learns real context in minutes (nanoGPT's shakespeare_char).
dataset = 'shakespeare_bytes'
block_size = 128        # BOS + 127 bytes (about 25 words)
batch_size = 32
max_iters = 1200        # ~9 minutes on one core (0.46 s / step with the other core busy); ar then sits far below
lr_decay_iters = 1200   # the bigram floor, masked models only start to use context (results/bytes-curves/)
warmup_iters = 100
learning_rate = 2e-3
min_lr = 2e-4
eval_interval = 200
eval_iters = 10

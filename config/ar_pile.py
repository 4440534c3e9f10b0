# The paper's text setting (Sec. 5, Table 2 / 7): Cramming's recipe on the Pile. 16 layers x 768, 12 heads,
# pre-LN, no biases, gated-GELU MLP, sequence 128, AdamW (0.9, 0.98) wd 0.01, clip 0.5, triangle schedule,
# batch 8192 sequences = 128 per micro-step x 64 micro-steps (spread over the GPUs: 8 GPUs -> 8 each).
# Cramming ramps the batch up to 8192; we train at the full batch from step 0 (say so when comparing).
# Prepare the data first: python data/pile/prepare.py --input='/path/to/pile/*.jsonl.zst'
# Positions: a learned table (rope=False, train.py's default), the absolute positions of the BERT / GPT-2 models the
# paper compares; the paper names no other. The CPU byte recipe uses rotary positions (config/shakespeare_bytes.py).
out_dir = 'out-ar-pile'
dataset = 'pile'
objective = 'ar'
n_layer = 16
n_head = 12
n_embd = 768
mlp = 'glu'
bias = False
block_size = 128
batch_size = 128
gradient_accumulation_steps = 64
max_iters = 100000
lr_decay_iters = 100000
warmup_iters = 0
schedule = 'triangle'
learning_rate = 1e-3
min_lr = 0.0
beta1 = 0.9
beta2 = 0.98
weight_decay = 0.01
grad_clip = 0.5
eval_interval = 2000
eval_iters = 50

# GPT-2 124M (12 layers, 12 heads, 768 wide, 1024 positions): the model size of the MFU targets.
# Only keys that both scripts know, so either can take this file:
#   python bench.py config/gpt2_124m_bench.py     (one GPU: S = 128 / 512 / 1024 timed, 4096 for memory)
#   python train.py config/gpt2_124m_bench.py     (the same model trained with train.py's other defaults)
n_layer = 12
n_head = 12
n_embd = 768
block_size = 1024
batch_size = 16  # 16 x 1024 tokens per step per GPU; bench.py keeps the tokens fixed at shorter lengths
dropout = 0.0
bias = False
mlp = 'gelu'

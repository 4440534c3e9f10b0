# Perplexity by conditioning length (Fig. 3) of byte-level checkpoints on the held-out plays, in bytes
# (prepare once: python data/shakespeare/prepare.py --tokenizer=bytes).
include('eval_ppl_shakespeare.py')
dataset = 'shakespeare_bytes'
# 250 windows spread over the split: one to three minutes per masked checkpoint on a 2-core CPU, where a one-stream
# masked model reads every prefix length in a pass of its own; --max_tokens=0 scores all ~477K bytes (ar + vm: 30 min)
max_tokens = 32000

# Perplexity by conditioning length (Fig. 3) of byte-level checkpoints on the held-out plays, in bytes
# (prepare once: python data/shakespeare/prepare.py --tokenizer=bytes).
include('eval_ppl_shakespeare.py')
dataset = 'shakespeare_bytes'
out_dir = 'out/eval_ppl_shakespeare_bytes'

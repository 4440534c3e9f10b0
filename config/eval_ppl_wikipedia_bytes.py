# Out-of-domain perplexity of byte-level checkpoints on Wikipedia articles
# (prepare once: python data/wikipedia/prepare.py --tokenizer=bytes).
include('eval_ppl_wikipedia.py')
dataset = 'wikipedia_bytes'
out_dir = 'out/eval_ppl_wikipedia_bytes'

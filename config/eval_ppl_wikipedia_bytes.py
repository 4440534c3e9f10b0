# Out-of-domain perplexity of byte-level checkpoints on Wikipedia articles
# (prepare once: python data/wikipedia/prepare.py --tokenizer=bytes).
include('eval_ppl_wikipedia.py')
dataset = 'wikipedia_bytes'
max_tokens = 32000          # as eval_ppl_shakespeare_bytes.py: CPU minutes; --max_tokens=0 scores the whole split

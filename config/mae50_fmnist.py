# MAE-like masked model with 50% of the patches masked (Table 8's middle row).
exec(open('config/ar_fmnist.py').read())
out_dir = 'out-mae50-fmnist'
objective = 'mlm'
mask_ratio = 0.5

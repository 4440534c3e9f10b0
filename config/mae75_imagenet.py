# Table 8, first row: MAE-like masked model, 75% of the patches masked, two-stream (MAE's encoder sees no [MASK]).
include('ar_imagenet.py')
out_dir = 'out-mae75-imagenet'
objective = 'mlm'
mask_ratio = 0.75

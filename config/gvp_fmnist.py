# GVP: random order, mixed-length groups (GVP Sec. 3.2); K must stay below the 16 patches.
include('ar_fmnist.py')
out_dir = 'out-gvp-fmnist'
objective = 'gvp'
n_groups = 6
segmentation = 'mixed'

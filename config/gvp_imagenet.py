# GVP (its Table 1 setting): random order, mixed-length groups, ViT-B on ImageNet-1K.
include('ar_imagenet.py')
out_dir = 'out-gvp-imagenet'
objective = 'gvp'
n_groups = 20
segmentation = 'mixed'

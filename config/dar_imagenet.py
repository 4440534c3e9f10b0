# Table 3 / 9: dar, every one of the next t patches is a target of the prefix (Eq. 3), ViT-B on ImageNet-1K.
include('ar_imagenet.py')
out_dir = 'out-dar-imagenet'
objective = 'dar'
t = 2                       # Table 9 ablates t = 1..4

# Table 8, last row: variable-length masked model (Eq. 5), mask ratio ~ U[0.5, 0.75] per image.
include('ar_imagenet.py')
out_dir = 'out-vm-imagenet'
objective = 'vm'
mask_ratio = (0.5, 0.75)

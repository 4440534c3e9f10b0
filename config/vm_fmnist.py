# variable-length masked model (Eq. 5): mask ratio ~ U[0.5, 0.75] per image (Table 8's last row).
include('ar_fmnist.py')
out_dir = 'out-vm-fmnist'
objective = 'vm'
mask_ratio = (0.5, 0.75)

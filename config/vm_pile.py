# Table 7: variable-length masked LM, ratio ~ U[0.15, 0.30] per sequence (Eq. 5), on the Pile.
include('ar_pile.py')
out_dir = 'out-vm-pile'
objective = 'vm'
mask_ratio = (0.15, 0.30)

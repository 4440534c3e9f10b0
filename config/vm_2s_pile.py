# Variable-length masked LM (Eq. 5) in two-stream form (no [MASK] in the content stream).
include('ar_pile.py')
objective = 'vm'
mask_ratio = (0.15, 0.30)
two_stream = True
out_dir = 'out-vm-2s-pile'

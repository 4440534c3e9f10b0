# Variable-length masked LM (Eq. 5): the mask ratio of each sequence ~ U[0.15, 0.30]. One-stream BERT form.
include('ar_shakespeare.py')
out_dir = 'out-vm-shakespeare'
objective = 'vm'
mask_ratio = (0.15, 0.30)

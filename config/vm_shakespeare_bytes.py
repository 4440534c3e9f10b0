# Variable-length masked LM (Eq. 5): each sequence's mask ratio ~ U[0.15, 0.30]. One-stream BERT form.
include('shakespeare_bytes.py')
objective = 'vm'
mask_ratio = (0.15, 0.30)
out_dir = 'out-vm-shakespeare-bytes'

# Byte level: vm_2s_shakespeare.py's objective with shakespeare_bytes.py's recipe.
include('vm_2s_shakespeare.py')
include('shakespeare_bytes.py')
out_dir = 'out-vm-2s-shakespeare-bytes'

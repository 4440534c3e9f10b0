# Byte level: vm_shakespeare.py's objective with shakespeare_bytes.py's recipe.
include('vm_shakespeare.py')
include('shakespeare_bytes.py')
out_dir = 'out-vm-shakespeare-bytes'

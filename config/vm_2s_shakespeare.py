# Variable-length masked LM (Eq. 5) in two-stream form (no [MASK] in the content stream).
include('vm_shakespeare.py')
out_dir = 'out-vm-2s-shakespeare'
two_stream = True

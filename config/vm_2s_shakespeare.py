# Variable-length masked LM (Eq. 5) in two-stream form (no [MASK] in the content stream).
exec(open('config/vm_shakespeare.py').read())
out_dir = 'out-vm-2s-shakespeare'
two_stream = True

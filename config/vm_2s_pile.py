# Variable-length masked LM (Eq. 5) in two-stream form on the Pile.
include('vm_pile.py')
out_dir = 'out-vm-2s-pile'
two_stream = True

# Variable-length masked LM (Eq. 5) in two-stream form on the Pile.
exec(open('config/vm_pile.py').read())
out_dir = 'out-vm-2s-pile'
two_stream = True

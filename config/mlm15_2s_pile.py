# Masked LM, ratio 0.15, two-stream form (visible = group 0, masked = group 1), on the Pile.
include('mlm15_pile.py')
out_dir = 'out-mlm15-2s-pile'
two_stream = True

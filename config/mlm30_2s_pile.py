# Masked LM, ratio 0.30, two-stream form (visible = group 0, masked = group 1), on the Pile.
include('mlm30_pile.py')
out_dir = 'out-mlm30-2s-pile'
two_stream = True

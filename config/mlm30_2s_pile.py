# Masked LM, ratio 0.30, two-stream form (visible = group 0, masked = group 1), on the Pile.
exec(open('config/mlm30_pile.py').read())
out_dir = 'out-mlm30-2s-pile'
two_stream = True

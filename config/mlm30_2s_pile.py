# Masked LM 0.3 in two-stream form (no [MASK] in the content stream).
include('ar_pile.py')
objective = 'mlm'
mask_ratio = 0.3
two_stream = True
out_dir = 'out-mlm30-2s-pile'

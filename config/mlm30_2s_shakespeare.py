# Masked LM, ratio 0.30, in two-stream form: visible tokens are group 0, masked ones group 1, so no [MASK]
# ever enters the content stream (MAE-LM's fix) and content rows are computed for visible tokens only.
include('mlm30_shakespeare.py')
out_dir = 'out-mlm30-2s-shakespeare'
two_stream = True

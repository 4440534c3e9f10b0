# Masked LM 0.15 in two-stream form: visible tokens are group 0, masked ones group 1, so no [MASK] ever
# enters the content stream (MAE-LM's fix).
include('ar_shakespeare.py')
objective = 'mlm'
mask_ratio = 0.15
two_stream = True
out_dir = 'out-mlm15-2s-shakespeare'

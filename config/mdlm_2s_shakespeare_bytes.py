# Masked diffusion (MDLM) in two-stream form: the query stream predicts the masked bytes from the visible
# ones; no [MASK] ever enters the content stream.
include('shakespeare_bytes.py')
objective = 'mdlm'
two_stream = True
out_dir = 'out-mdlm-2s-shakespeare-bytes'

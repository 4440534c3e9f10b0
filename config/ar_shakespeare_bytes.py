# GPT: one-stream causal, next byte from the prefix.
include('shakespeare_bytes.py')
objective = 'ar'
out_dir = 'out-ar-shakespeare-bytes'

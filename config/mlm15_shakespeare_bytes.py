# BERT-style masked LM, ratio 0.15: one-stream, bidirectional, [MASK] vectors in the input (Table 7).
include('shakespeare_bytes.py')
objective = 'mlm'
mask_ratio = 0.15
out_dir = 'out-mlm15-shakespeare-bytes'

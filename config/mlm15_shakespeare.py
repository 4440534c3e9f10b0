# BERT-style masked LM, mask ratio 0.15: one-stream, bidirectional, [MASK] vectors in the input (Table 7's baseline).
include('ar_shakespeare.py')
out_dir = 'out-mlm15-shakespeare'
objective = 'mlm'
mask_ratio = 0.15

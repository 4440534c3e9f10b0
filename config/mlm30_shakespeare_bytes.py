# BERT-style masked LM, ratio 0.3 (Table 7).
include('shakespeare_bytes.py')
objective = 'mlm'
mask_ratio = 0.3
out_dir = 'out-mlm30-shakespeare-bytes'

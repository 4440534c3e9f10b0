# Table 7: masked LM with ratio 0.15 on the Pile (one-stream BERT form, "a decoder-only Transformer without causal
# mask").
include('ar_pile.py')
out_dir = 'out-mlm15-pile'
objective = 'mlm'
mask_ratio = 0.15

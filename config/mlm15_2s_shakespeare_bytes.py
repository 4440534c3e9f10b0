# Byte level: mlm15_2s_shakespeare.py's objective with shakespeare_bytes.py's recipe.
include('mlm15_2s_shakespeare.py')
include('shakespeare_bytes.py')
out_dir = 'out-mlm15-2s-shakespeare-bytes'

# Byte level: mlm15_shakespeare.py's objective with shakespeare_bytes.py's recipe.
include('mlm15_shakespeare.py')
include('shakespeare_bytes.py')
out_dir = 'out-mlm15-shakespeare-bytes'

# Byte level: mlm30_shakespeare.py's objective with shakespeare_bytes.py's recipe.
include('mlm30_shakespeare.py')
include('shakespeare_bytes.py')
out_dir = 'out-mlm30-shakespeare-bytes'

# Byte level: ar_shakespeare.py's objective with shakespeare_bytes.py's recipe.
include('ar_shakespeare.py')
include('shakespeare_bytes.py')
out_dir = 'out-ar-shakespeare-bytes'

# Byte level: dar_shakespeare.py's objective with shakespeare_bytes.py's recipe.
include('dar_shakespeare.py')
include('shakespeare_bytes.py')
out_dir = 'out-dar-shakespeare-bytes'

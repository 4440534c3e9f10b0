# Diversity-enhanced AR (Eq. 3): a random one of the next t = 2 bytes, as group prediction with two-stream
# attention (Sec. 5.1, App. B.3).
include('shakespeare_bytes.py')
objective = 'dar'
t = 2
out_dir = 'out-dar-shakespeare-bytes'

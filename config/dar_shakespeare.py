# Diversity-enhanced AR (Eq. 3): predict a random one of the next t = 2 tokens, as group prediction with
# two-stream attention (Sec. 5.1, App. B.3).
include('ar_shakespeare.py')
out_dir = 'out-dar-shakespeare'
objective = 'dar'
t = 2

# Table 2: dar (t = 2) against ar on the Pile with the Cramming recipe; GLUE with eval_glue.py afterwards.
include('ar_pile.py')
out_dir = 'out-dar-pile'
objective = 'dar'
t = 2

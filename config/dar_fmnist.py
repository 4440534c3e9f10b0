# dar: diversity-enhanced ar, every one of the next t patches is a target of the prefix (Eq. 3, Sec. 5.1).
include('ar_fmnist.py')
out_dir = 'out-dar-fmnist'
objective = 'dar'
t = 2

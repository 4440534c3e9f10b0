# dar: diversity-enhanced ar, every one of the next t patches is a target of the prefix (Eq. 3, Sec. 5.1).
exec(open('config/ar_fmnist.py').read())
out_dir = 'out-dar-fmnist'
objective = 'dar'
t = 2

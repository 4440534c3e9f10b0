# ar along a random permutation of the patches (XLNet's permutation LM; GVP's random index sequence).
exec(open('config/ar_fmnist.py').read())
out_dir = 'out-ar_random-fmnist'
random_order = True

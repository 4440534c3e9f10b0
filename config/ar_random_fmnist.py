# ar along a random permutation of the patches (XLNet's permutation LM; GVP's random index sequence).
include('ar_fmnist.py')
out_dir = 'out-ar_random-fmnist'
random_order = True

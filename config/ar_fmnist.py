# Fashion-MNIST pretraining in CPU minutes; the other <objective>_fmnist.py configs start from this one.
# ar: next patch in raster order, two-stream (= dar with t = 1: the paper's ar of Tables 3 and 9).
# $ python train.py config/ar_fmnist.py
# then: python eval_vision.py config/linprobe_fmnist.py --ckpt=out-ar-fmnist/ckpt_best.pt (finetune_, recon_ alike)
out_dir = 'out-ar-fmnist'
dataset = 'fmnist'          # python data/fmnist/prepare.py
input_kind = 'patches'
image_size = 28
patch_size = 7              # 16 patches + CLS: a CPU-sized sequence
channels = 1
augment = True              # MAE's random-resized-crop
flip = True                 # clothes mirror fine (digits would not)
norm_pix_loss = False       # plain pixel targets, so reconstructions are scored on the pixels themselves
batch_size = 64
n_layer = 4
n_head = 4
n_embd = 128
learning_rate = 1e-3
weight_decay = 0.05         # MAE
beta2 = 0.95
max_iters = 1000
lr_decay_iters = 1000
warmup_iters = 50
min_lr = 1e-5
grad_clip = 0.0             # MAE does not clip
eval_interval = 250
eval_iters = 10
objective = 'ar'
two_stream = True           # False: the one-stream causal (GPT-style) baseline

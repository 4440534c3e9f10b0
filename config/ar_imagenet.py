# The paper's vision pretraining (Sec. 6.2, Tables 3-5 and 9): ViT-B on ImageNet-1K, patch 16 at 224 px, 200 epochs,
# batch 4096 by accumulation, 10 warmup epochs, AdamW (0.9, 0.95), lr 1.5e-4 x batch / 256 (MAE / GVP; the paper
# says base lr 5e-4 with Adam: --learning_rate=8e-3 for that reading). The other <objective>_imagenet.py start here.
# ar = next patch in raster order, two-stream (= dar with t = 1: the paper's ar row is its t = 1 row of Table 9).
# Data: ImageNet in the ImageFolder layout, data/imagenet/{train,val}/<class>/*.JPEG.
# Positions: MAE's fixed 2-D sine-cosine table, as every image config (rope applies to text only).
# $ torchrun --standalone --nproc_per_node=8 train.py config/ar_imagenet.py
# ViT-S on ImageNet-100 (Table 3, left): --n_layer=12 --n_head=6 --n_embd=384 --dataset=imagefolder:data/imagenet100
#   --max_iters=6186 --lr_decay_iters=6186 --warmup_iters=309   (126,689 images: 30.9 iterations an epoch)
out_dir = 'out-ar-imagenet'
dataset = 'imagefolder:data/imagenet'
input_kind = 'patches'
image_size = 224
patch_size = 16
channels = 3
augment = True              # random-resized-crop, area (0.2, 1)
flip = True
norm_pix_loss = True        # MAE's per-patch normalised pixel targets
# ViT-B
n_layer = 12
n_head = 12
n_embd = 768
bias = True                 # ViT keeps biases
mlp = 'gelu'
dropout = 0.0
# batch 4096 = 128 images x 32 micro-steps, summed over all processes (8 GPUs: 4 micro-steps each)
batch_size = 128
gradient_accumulation_steps = 32
_images_per_epoch = 1_281_167
_iters_per_epoch = _images_per_epoch / (batch_size * gradient_accumulation_steps)  # 312.8
max_iters = round(200 * _iters_per_epoch)        # 62557
lr_decay_iters = max_iters
warmup_iters = round(10 * _iters_per_epoch)      # 3128
learning_rate = 1.5e-4 * 4096 / 256              # 2.4e-3
min_lr = 0.0
weight_decay = 0.05
beta1 = 0.9
beta2 = 0.95
grad_clip = 0.0             # MAE does not clip
schedule = 'cosine'
eval_interval = 1000
eval_iters = 20
objective = 'ar'
two_stream = True           # False: the one-stream causal (GPT-style) baseline

# Linear probe (MAE protocol) of Fashion-MNIST checkpoints: frozen features, BatchNorm without affine + linear.
# $ python eval_vision.py config/linprobe_fmnist.py --ckpt=out-ar-fmnist/ckpt_best.pt --ckpt=out-dar-fmnist/ckpt_best.pt
# Features are computed once (no augmentation), so 90 epochs of the probe take seconds.
task = 'linprobe'
keep_mask = True            # GVP: encode with the pretraining mask (raster order); --keep_mask=False drops it
pooling = 'mean'
epochs = 90
batch_size = 256
learning_rate = 0.1         # MAE's base lr for batch 256 (SGD with momentum here, LARS there)
warmup_epochs = 10
weight_decay = 0.0
out_dir = 'out/eval_vision_fmnist'

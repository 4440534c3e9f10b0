# Fine-tuning of Fashion-MNIST checkpoints: every weight, masks dropped, soft targets (MAE's recipe, CPU-sized).
# $ python eval_vision.py config/finetune_fmnist.py --ckpt=out-ar-fmnist/ckpt_best.pt --ckpt=out-dar-fmnist/ckpt_best.pt
task = 'finetune'
pooling = 'mean'
epochs = 3
batch_size = 128
learning_rate = 2e-3        # peak AdamW lr (MAE: 1e-3 x batch / 256 for ViT-B; a 4-layer model takes more)
warmup_epochs = 1
weight_decay = 0.05
layer_decay = 0.75
label_smoothing = 0.1
mixup_alpha = 0.0           # MAE uses 0.8 (+ cutmix) over 100 epochs; a few CPU epochs learn faster without
augment = False             # random-resized-crop slows a 3-epoch run down more than it regularises it
out_dir = 'out/eval_vision_fmnist'

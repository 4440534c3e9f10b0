# Table 8 on Fashion-MNIST: mask 25% of the patches, fill them one at a time, score pixel L2 and LPIPS.
# $ python eval_vision.py config/recon_fmnist.py --ckpt=out-mae75-fmnist/ckpt_best.pt --ckpt=out-vm-fmnist/ckpt_best.pt
task = 'recon'
recon_ratio = 0.25
recon_order = 'random'
val_subset = 2000           # 0 = all 10000 validation images
grid_images = 8
lpips_net = 'alex'
out_dir = 'out/eval_vision_fmnist'

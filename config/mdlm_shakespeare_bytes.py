# Masked diffusion (MDLM, Sahoo et al. 2024): m ~ U{1..L} masked bytes per sequence, each sequence's loss the
# mean over its own masked bytes, so the training loss estimates the any-order likelihood bound
# (eval_ppl.py --reading=elbo). One-stream, [MASK] inputs.
include('shakespeare_bytes.py')
objective = 'mdlm'
out_dir = 'out-mdlm-shakespeare-bytes'

"""
Position encodings beyond GPT-2's learned table (model.py holds that one): fixed 2-D sine-cosine positions for image
patches (MAE), and rotary positions (RoPE) for text.
"""
import torch

# -----------------------------------------------------------------------------
# image patches: fixed positions on a 2-D grid (data/images.py cuts the images into patches)

def sincos_2d(n_embd, grid):
    """Fixed 2-D sine-cosine position embeddings (MAE); row 0 (the CLS slot) is zero."""
    omega = 1.0 / 10000 ** (torch.arange(n_embd // 4, dtype=torch.float64) / (n_embd // 4))
    ys, xs = torch.meshgrid(torch.arange(grid, dtype=torch.float64), torch.arange(grid, dtype=torch.float64),
                            indexing='ij')
    parts = [torch.sin(a.reshape(-1, 1) * omega) for a in (ys, xs)] + \
            [torch.cos(a.reshape(-1, 1) * omega) for a in (ys, xs)]
    table = torch.cat(parts, dim=1).float()
    return torch.cat([torch.zeros(1, n_embd), table], dim=0)

# -----------------------------------------------------------------------------
# rotary positions (RoPE, Su et al. 2021): q and k of a row are rotated by that row's own position, so a score depends
# on positions only through their difference. A masked target carries no token, only its position; with a learned
# table it must first learn to attend to its neighbours, with RoPE locality is there from the first step.

def rotary_angles(positions, head_size, base=10000.0):
    """(B, R) positions -> (cos, sin), each (B, R, 1, head_size / 2): one angle per row and channel pair."""
    inv_freq = base ** -(torch.arange(0, head_size, 2, device=positions.device, dtype=torch.float32) / head_size)
    angles = positions[..., None, None].float() * inv_freq
    return angles.cos(), angles.sin()

def rotate(x, cos, sin):
    """Rotate channel pairs (i, i + head_size / 2) of x: (B, R, heads, head_size) by the rows' angles."""
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).to(x.dtype)

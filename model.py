"""
One Transformer for every objective in the paper, for text tokens and image patches.

The model never asks which objective it is trained with. objectives.py hands it a batch of *group
ids* and the model turns them into attention masks (App. B.3, Eq. 23-24):
  content stream h:  row i sees content j  iff  group[i] >= group[j]
  query stream g:    row i sees content j  iff  group[i] >  group[j]
Both streams share every weight; keys and values come from the content stream only. Stacking the
query rows under the content rows turns the pair into ONE attention call per layer with one rule,
  row i sees key j  iff  key_group[j] <= row_limit[i],
where row_limit is the content group for content rows and (query group - 1) for query rows (integer
groups). One-stream GPT is content groups 0,1,2,...; one-stream BERT is every group 0. A padding row
carries a group above every real one (objectives.PAD_GROUP): no real row sees it, and it sees every
row, so no attention row is empty.

Shapes: B sequences of S content rows and Q query rows (Q = 0: one stream), R = S + Q rows in all,
P target rows, C = n_embd, nh heads of hs = C / nh channels, D = patch_dim values per image patch.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from attention import create_block_mask, flex_attention
from positions import rotary_angles, rotate, sincos_2d

# -----------------------------------------------------------------------------
# configuration: scripts check it where it enters (config, checkpoint); a ValueError here is a
# caller's bug

@dataclass
class ModelConfig:
    input_kind: str = 'tokens'   # 'tokens' or 'patches' (images)
    tokenizer: str = 'gpt2'      # not read here: what the ids mean (data/text.py)
    vocab_size: int = 50304      # the tokenizer's, padded to a multiple of 64 (50257 -> 50304)
    block_size: int = 128        # longest sequence + conditioning token (images: patches + CLS)
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = False           # Cramming drops biases
    mlp: str = 'gelu'            # 'gelu' (GPT-2) or 'glu' (Cramming's gated GELU)
    image_size: int = 32
    patch_size: int = 4
    channels: int = 1
    norm_pix_loss: bool = False  # MAE: regress per-patch normalised pixels
    attn_backend: str = 'sdpa'   # 'sdpa' (dense bool mask; the reference) or 'flex' (block-sparse)
    rope: bool = False           # text: rotary positions (RoPE) instead of a learned position table

    def __post_init__(self):
        for key, choices in (('input_kind', ('tokens', 'patches')), ('mlp', ('gelu', 'glu')),
                             ('attn_backend', ('sdpa', 'flex'))):
            if getattr(self, key) not in choices:
                raise ValueError(f"{key} must be {' or '.join(map(repr, choices))}, "
                                 f"got {getattr(self, key)!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} is not divisible by n_head={self.n_head}")
        if self.rope and (self.input_kind != 'tokens' or self.n_embd // self.n_head % 2):
            raise ValueError("rope rotates pairs of channels of text tokens' heads: it needs "
                             "input_kind='tokens' (patches keep their 2-D sin-cos table) and an "
                             "even head size (n_embd / n_head)")
        if self.input_kind == 'patches':
            if self.image_size % self.patch_size:
                raise ValueError(f"image_size={self.image_size} is not divisible by "
                                 f"patch_size={self.patch_size}: pick a patch size that divides it")
            if self.n_embd % 4:
                raise ValueError(f"n_embd={self.n_embd} must be divisible by 4 for 2-D sin-cos "
                                 "patch positions")
            self.block_size = (self.image_size // self.patch_size) ** 2 + 1  # the image fixes it

    @property
    def patch_dim(self):
        return self.channels * self.patch_size ** 2

# -----------------------------------------------------------------------------
# masks from group ids

def row_limits(content_groups, query_groups=None):
    """Largest key group each row may see: content rows see <= their group, query rows strictly
    less (Eq. 24). (B, S) and (B, Q) -> (B, R)."""
    if query_groups is None:
        return content_groups
    return torch.cat([content_groups, query_groups - 1], dim=1)

def dense_mask(content_groups, query_groups=None):
    """(B, 1, R, S) boolean mask, True = may attend: the SDPA path, and every test's reference."""
    limits = row_limits(content_groups, query_groups)
    return (content_groups[:, None, :] <= limits[:, :, None])[:, None]

def flex_block_mask(content_groups, query_groups=None):
    """The same rule as a FlexAttention BlockMask (attention.py), one per batch: no R x S tensor."""
    limits = row_limits(content_groups, query_groups).contiguous()
    keys = content_groups.contiguous()

    def mask_mod(b, h, q_idx, kv_idx):
        return keys[b, kv_idx] <= limits[b, q_idx]
    return create_block_mask(mask_mod, *limits.shape, keys.shape[1], keys.device)

def head_rows(vocab_size):
    """Rows per chunk of the chunked head + cross-entropy: ~2^26 logits (256 MiB in float32)."""
    return max(1, 2 ** 26 // vocab_size)

def mean_loss(per_target, valid, per_sequence=False):
    """Per-target losses (B * P,) -> their mean over valid targets, or (per_sequence: MDLM's ELBO,
    every sequence alike) the mean over sequences of each one's own mean."""
    per_target = per_target.view(valid.shape) * valid
    if per_sequence:
        return (per_target.sum(dim=1) / valid.sum(dim=1).clamp(min=1)).mean()
    return per_target.sum() / valid.sum().clamp(min=1)

# -----------------------------------------------------------------------------
# the Transformer block (pre-LN), shared by both streams

class Attention(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x, n_content, mask, is_causal, rotary=None):
        # x: (B, R, C) with R = S + Q: the S = n_content content rows, then the Q query rows
        B, R, C = x.shape
        nh, hs = self.n_head, C // self.n_head
        q, k, v = self.c_attn(x[:, :n_content]).split(C, dim=2)  # each (B, S, C)
        if R > n_content:
            # query rows make only queries (Eq. 23: keys, values come from the content stream), so
            # they take c_attn's first C weight rows, the q projection: (B, Q, C)
            q_bias = None if self.c_attn.bias is None else self.c_attn.bias[:C]
            query_q = F.linear(x[:, n_content:], self.c_attn.weight[:C], q_bias)
            q = torch.cat([q, query_q], dim=1)  # (B, R, C): both streams in one attention call
        q = q.view(B, R, nh, hs)
        k, v = k.view(B, n_content, nh, hs), v.view(B, n_content, nh, hs)
        if rotary is not None:
            # cos, sin: (B, R, 1, hs / 2), by each row's position (a query row: its target's);
            # the keys are the content rows, so they take the first S rows' angles
            cos, sin = rotary
            q, k = rotate(q, cos, sin), rotate(k, cos[:, :n_content], sin[:, :n_content])
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, nh, R or S, hs)
        y = self.attend(q, k, v, mask, is_causal)  # (B, nh, R, hs)
        y = y.transpose(1, 2).contiguous().view(B, R, C)  # the heads side by side again
        return self.resid_dropout(self.c_proj(y))

    def attend(self, q, k, v, mask, is_causal):
        """The kernel the mask names (Transformer.trunk picks it; Eq. 24 in every case):
          None       SDPA's own kernels: causal (is_causal) or no mask (every key visible)
          Tensor     SDPA with the dense (B, 1, R, S) boolean mask
          BlockMask  FlexAttention: only the mask's open tiles are computed"""
        dropout = self.dropout if self.training else 0.0
        if mask is None or isinstance(mask, torch.Tensor):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                                  dropout_p=dropout)
        if dropout:  # one behaviour on every backend (devices.pick_attn_backend)
            raise ValueError("attn_backend='flex' has no attention dropout: train on 'sdpa', "
                             "or with dropout=0")
        return flex_attention(q, k, v, mask)

class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.glu = config.mlp == 'glu'
        hidden = 4 * config.n_embd
        self.c_fc = nn.Linear(config.n_embd, 2 * hidden if self.glu else hidden, bias=config.bias)
        self.c_proj = nn.Linear(hidden, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        x = self.c_fc(x)
        if self.glu:
            gate, value = x.chunk(2, dim=-1)
            x = F.gelu(gate) * value
        else:
            x = F.gelu(x)
        return self.dropout(self.c_proj(x))

class Block(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = Attention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x, n_content, mask, is_causal, rotary=None):
        x = x + self.attn(self.ln_1(x), n_content, mask, is_causal, rotary)
        return x + self.mlp(self.ln_2(x))

# -----------------------------------------------------------------------------
# the model

class Transformer(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.config = config
        d = config.n_embd
        if config.input_kind == 'tokens':
            self.wte = nn.Embedding(config.vocab_size, d)
            self.wpe = None if config.rope else nn.Embedding(config.block_size, d)
            self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight  # weight tying (GPT-2)
        else:
            grid = config.image_size // config.patch_size  # patches per side
            self.patch_embed = nn.Linear(config.patch_dim, d)
            self.cls_emb = nn.Parameter(torch.zeros(d))  # the always-visible slot at position 0
            self.register_buffer('pos_table', sincos_2d(d, grid), persistent=False)
            self.pixel_head = nn.Linear(d, config.patch_dim)
        self.query_emb = nn.Parameter(torch.zeros(d))  # g's input: it knows where, not what
        self.mask_emb = nn.Parameter(torch.zeros(d))   # the [MASK] input of one-stream BERT
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(d, bias=config.bias)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith('c_proj.weight'):  # GPT-2: scale residual projections by depth
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        cls = (self.cls_emb,) if config.input_kind == 'patches' else ()
        for p in (self.query_emb, self.mask_emb) + cls:  # the learned input vectors
            nn.init.normal_(p, mean=0.0, std=0.02)

    def _init_weights(self, module):  # GPT-2's
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if getattr(module, 'bias', None) is not None:
                nn.init.zeros_(module.bias)

    def num_params(self, non_embedding=True):  # nanoGPT's count: without the position table
        return sum(p.numel() for name, p in self.named_parameters()
                   if not (non_embedding and name.startswith('wpe')))

    def optim_groups(self, weight_decay):
        """AdamW groups: decay matrices of linear layers only, never norms, biases or embeddings."""
        decay, no_decay = [], []
        for name, p in self.named_parameters():
            is_matrix = p.dim() >= 2 and not name.startswith(('wte', 'wpe'))
            (decay if is_matrix else no_decay).append(p)
        return [{'params': decay, 'weight_decay': weight_decay},
                {'params': no_decay, 'weight_decay': 0.0}]

    # ---- embeddings

    def position(self, pos):  # added to the inputs; with rope, positions enter in attention instead
        if self.config.input_kind == 'patches':
            return self.pos_table[pos]
        return 0.0 if self.config.rope else self.wpe(pos)

    def embed_content(self, content, content_pos, content_masked=None):
        # scripts check ids, positions and patch sizes where data enters (here: a GPU sync)
        if self.config.input_kind == 'tokens':
            h = self.wte(content)
        else:
            h = self.patch_embed(content)
            h = torch.where((content_pos == 0)[..., None], self.cls_emb.to(h.dtype), h)
        if content_masked is not None:
            h = torch.where(content_masked[..., None], self.mask_emb.to(h.dtype), h)
        return h + self.position(content_pos)

    # ---- the trunk

    def trunk(self, content, content_pos, content_groups, query_pos=None, query_groups=None,
              content_masked=None, causal=False, all_layers=False, all_visible=False):
        """Content rows (and query rows, if any) through every block -> ln_f of all rows, (B, R, C);
        all_layers: a list of them, one per block."""
        x = self.embed_content(content, content_pos, content_masked)  # (B, S, C): the stream h
        n_content = x.shape[1]
        if query_pos is not None:  # the stream g: one learned vector at its target's position
            g = (self.query_emb.to(x.dtype) + self.position(query_pos)).expand(*query_pos.shape, -1)
            x = torch.cat([x, g], dim=1)  # (B, R, C): the query rows under the content rows
        x = self.drop(x)
        rotary = None
        if self.config.rope:  # (cos, sin) of every row's position, each (B, R, 1, hs / 2)
            positions = (content_pos if query_pos is None
                         else torch.cat([content_pos, query_pos], dim=1))
            rotary = rotary_angles(positions, self.config.n_embd // self.config.n_head)
        # the mask, by kernel (Attention.attend). None where SDPA's own kernel says the rule:
        # one-stream GPT, whose groups are its positions (the causal kernel: flash / cuDNN beat
        # flex's BlockMask of the same triangle on a GPU), or all_visible (one-stream BERT, no
        # padding: a mask would only rule out flash)
        is_causal = causal and query_pos is None
        if all_visible or is_causal:
            mask = None
        elif self.config.attn_backend == 'flex':
            mask = flex_block_mask(content_groups, query_groups)  # FlexAttention's BlockMask
        else:
            mask = dense_mask(content_groups, query_groups)  # SDPA's (B, 1, R, S) boolean mask
        layers = []
        for block in self.blocks:
            x = block(x, n_content, mask, is_causal, rotary)
            layers.append(x)
        return [self.ln_f(h) for h in layers] if all_layers else self.ln_f(x)

    def forward(self, content, content_pos, content_groups, query_pos=None, query_groups=None,
                content_masked=None, pred_index=None, targets=None, valid=None, causal=False,
                per_sequence=False, all_visible=False, return_preds=True):
        """A batch of objectives.py -> (predictions (B, P, vocab_size or D) or None, loss or None).
          content         (B, S) token ids, or (B, S, D) patches: the content stream's inputs
          content_pos     (B, S) each content row's position (0: the conditioning token / CLS slot)
          content_groups  (B, S) a content row sees the content rows of groups <= its own
          query_pos       (B, Q) the query rows' positions (two-stream), or None (one-stream)
          query_groups    (B, Q) a query row sees content rows of groups < its own
          content_masked  (B, S) bool: the input is the [MASK] vector (one-stream BERT), or None
          pred_index      (B, P) one-stream: the content row whose output predicts each target
          targets         (B, P) token ids, or (B, P, D) patches; None: no loss
          valid           (B, P) bool: real targets (the rest pad a static width)
          causal          one-stream GPT: groups are positions, so SDPA may use its causal kernel
          all_visible     one-stream BERT, no padding: every group 0, so SDPA may run unmasked
          per_sequence    loss: the mean over sequences of each one's mean (MDLM), else over all
          return_preds    False (training): the loss alone; text's head runs in chunks of rows"""
        h = self.trunk(content, content_pos, content_groups, query_pos, query_groups,
                       content_masked, causal, all_visible=all_visible)  # (B, R, C)
        # the rows the head reads, (B, P, C): the query stream, or one-stream's pred_index rows
        if query_pos is not None:
            out = h[:, content.shape[1]:]
        else:
            out = torch.gather(h, 1, pred_index[..., None].expand(-1, -1, h.shape[-1]))
        # the head and the loss
        is_text = self.config.input_kind == 'tokens'
        if not return_preds and targets is not None and is_text:
            return None, self.chunked_loss(out, targets, valid, per_sequence)
        preds = self.lm_head(out) if is_text else self.pixel_head(out)
        loss = None if targets is None else self.loss(preds, targets, valid, per_sequence)
        return preds, loss

    def loss(self, preds, targets, valid, per_sequence=False):
        """Token cross-entropy or per-patch pixel MSE (MAE-normalised or not), averaged over all
        valid targets, or (per_sequence: MDLM's ELBO, every sequence alike) over each sequence's
        own, then over the sequences."""
        if self.config.input_kind == 'tokens':  # padded rows' targets are any id: ignore_index
            ids = targets.masked_fill(~valid, -100).flatten()
            per_target = F.cross_entropy(preds.float().flatten(0, 1), ids, ignore_index=-100,
                                         reduction='none')
        else:
            if self.config.norm_pix_loss:
                mean, var = targets.mean(dim=-1, keepdim=True), targets.var(dim=-1, keepdim=True)
                targets = (targets - mean) / (var + 1e-6).sqrt()
            per_target = ((preds.float() - targets.float()) ** 2).mean(dim=-1)
        return mean_loss(per_target, valid, per_sequence)

    def chunked_loss(self, out, targets, valid, per_sequence=False):
        """loss(lm_head(out), ...) with no logits of every row at once (a GPT-2 head at 16 x 1024
        is 3.3 GB in float32): the head and cross-entropy run over row chunks, and each chunk's
        logits are recomputed in backward (checkpoint) instead of kept. The same ops per row as
        loss, so the same loss and gradients."""
        def chunk(rows, ids):
            logits = self.lm_head(rows).float()
            return F.cross_entropy(logits, ids, ignore_index=-100, reduction='none')
        rows, ids = out.flatten(0, 1), targets.masked_fill(~valid, -100).flatten()
        n = head_rows(self.config.vocab_size)
        per_target = torch.cat([checkpoint(chunk, r, i, use_reentrant=False)
                                for r, i in zip(rows.split(n), ids.split(n))])
        return mean_loss(per_target, valid, per_sequence)

    @torch.no_grad()
    def features(self, content, content_pos=None, content_groups=None, content_masked=None,
                 all_layers=False):
        """Content-stream hidden states for evaluation: with a batch's pretraining groups, or
        unmasked (None)."""
        B, S = content.shape[:2]
        if content_pos is None:
            content_pos = torch.arange(S, device=content.device).expand(B, S)
        all_visible = content_groups is None
        if all_visible:
            content_groups = torch.zeros(B, S, dtype=torch.long, device=content.device)
        return self.trunk(content, content_pos, content_groups, content_masked=content_masked,
                          all_layers=all_layers, all_visible=all_visible)

# -----------------------------------------------------------------------------
# the cost of one step, read from a batch on the host: FLOPs for MFU (as nanoGPT's estimate_mfu),
# bytes for the scripts' memory check. Attention is counted by the mask's open pairs, not as dense:
# nanoGPT counts a causal mask as dense, which overstates ar's work by ~2x at long sequences and
# says nothing of two-stream masks

def open_pairs(content_groups, query_groups=None):
    """Number of (row, key) pairs the mask opens, per sequence: the work of a mask-aware kernel."""
    limits = row_limits(content_groups, query_groups)
    keys = content_groups.sort(dim=1).values.contiguous()
    return torch.searchsorted(keys, limits.contiguous(), right=True).sum(dim=1)

def step_flops(model, batch):
    """Forward+backward FLOPs of a batch: 2 per weight and row (query rows have no keys or values),
    4 C per open attention pair and layer, the head on target rows; backward twice forward."""
    content_groups, query_groups = batch['content_groups'], batch['query_groups']
    B, n_content = content_groups.shape
    n_query = 0 if query_groups is None else query_groups.shape[1]
    d, layers, block = model.config.n_embd, model.config.n_layer, model.blocks[0]
    mlp = sum(p.numel() for n, p in block.mlp.named_parameters() if n.endswith('weight'))
    content_row = block.attn.c_attn.weight.numel() + block.attn.c_proj.weight.numel() + mlp
    query_row = content_row - 2 * d * d
    is_text = model.config.input_kind == 'tokens'
    head = d * (model.config.vocab_size if is_text else model.config.patch_dim)
    pairs = float(open_pairs(content_groups, query_groups).sum())
    forward = 2 * layers * B * (n_content * content_row + n_query * query_row) \
        + 4 * layers * d * pairs + 2 * B * batch['valid'].shape[1] * head
    return 3 * forward

def step_memory(model, batch, training=True):
    """A lower bound on the bytes one step of `batch` holds in fp32: the weights (with gradients and
    AdamW's two moments when training), 4 activations per row and layer (a block keeps more than 10
    for backward), the dense boolean mask of the sdpa path, and the logits (with their log-softmax
    and gradient; training's text head holds one chunk of rows at a time, chunked_loss). Scripts
    compare it with the free memory (devices.check_memory) before allocating anything, so a block
    size that cannot fit stops with one line."""
    config = model.config
    B, n_content = batch['content'].shape[:2]
    n_query = 0 if batch['query_pos'] is None else batch['query_pos'].shape[1]
    rows, per_row = n_content + n_query, 4 if training else 1
    weights = 4 * sum(p.numel() for p in model.parameters()) * (4 if training else 1)
    activations = 4 * B * rows * config.n_embd * config.n_layer * per_row
    unmasked = batch['causal'] and n_query == 0 or batch['all_visible']
    dense = config.attn_backend == 'sdpa' and not unmasked
    head = config.vocab_size if config.input_kind == 'tokens' else config.patch_dim
    targets = B * batch['valid'].shape[1]
    if training and config.input_kind == 'tokens':
        targets = min(targets, head_rows(config.vocab_size))
    logits = 4 * targets * head * (3 if training else 1)
    return weights + activations + (B * rows * n_content if dense else 0) + logits

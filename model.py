"""
One Transformer for every objective in the paper, for text tokens and image patches.

The model never asks which objective it is trained with. objectives.py hands it a batch of *group ids* and the
model turns them into attention masks (App. B.3, Eq. 23-24):
  content stream h:  row i sees content j  iff  group[i] >= group[j]
  query stream g:    row i sees content j  iff  group[i] >  group[j]
Both streams share every weight; keys and values come from the content stream only. Stacking the query rows
under the content rows turns the pair into ONE attention call per layer with a single rule,
  row i sees key j  iff  key_group[j] <= row_limit[i],
where row_limit is the content group for content rows and (query group - 1) for query rows (integer groups).
One-stream GPT is content groups 0,1,2,...; one-stream BERT is every group 0. A padding row carries a group above
every real one (objectives.PAD_GROUP): no real row sees it, and it sees every row, so no attention row is empty.
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
# configuration: scripts check it where it enters (config, checkpoint); a ValueError here is a caller's bug

@dataclass
class ModelConfig:
    input_kind: str = 'tokens'   # 'tokens' or 'patches' (images)
    tokenizer: str = 'gpt2'      # not read here: what the ids mean (data/text.py), saved with the vocab it sizes
    vocab_size: int = 50304      # the tokenizer's vocabulary padded up to a multiple of 64 (GPT-2: 50257 -> 50304)
    block_size: int = 128        # longest sequence, conditioning token included; patches: always patches + CLS
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
    attn_backend: str = 'sdpa'   # 'sdpa' (dense bool mask; the reference) or 'flex' (block-sparse, CUDA)
    rope: bool = False           # text: rotary positions (RoPE) instead of a learned position table

    def __post_init__(self):
        for key, choices in (('input_kind', ('tokens', 'patches')), ('mlp', ('gelu', 'glu')),
                             ('attn_backend', ('sdpa', 'flex'))):
            if getattr(self, key) not in choices:
                raise ValueError(f"{key} must be {' or '.join(map(repr, choices))}, got {getattr(self, key)!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} is not divisible by n_head={self.n_head}")
        if self.rope and (self.input_kind != 'tokens' or self.n_embd // self.n_head % 2):
            raise ValueError("rope rotates pairs of channels of text tokens' heads: it needs input_kind='tokens' "
                             "(patches keep their 2-D sin-cos table) and an even head size (n_embd / n_head)")
        if self.input_kind == 'patches':
            if self.image_size % self.patch_size:
                raise ValueError(f"image_size={self.image_size} is not divisible by patch_size={self.patch_size}: "
                                 "pick a patch size that divides it")
            if self.n_embd % 4:
                raise ValueError(f"n_embd={self.n_embd} must be divisible by 4 for 2-D sin-cos patch positions")
            self.block_size = (self.image_size // self.patch_size) ** 2 + 1  # the image fixes the length

    @property
    def patch_dim(self):
        return self.channels * self.patch_size ** 2

# -----------------------------------------------------------------------------
# masks from group ids

def row_limits(content_groups, query_groups=None):
    """Largest key group each row may see: content rows see <= their group, query rows strictly less (Eq. 24)."""
    if query_groups is None:
        return content_groups
    return torch.cat([content_groups, query_groups - 1], dim=1)

def dense_mask(content_groups, query_groups=None):
    """(B, 1, rows, keys) boolean mask, True = may attend. The SDPA path and the reference for every test."""
    limits = row_limits(content_groups, query_groups)
    return (content_groups[:, None, :] <= limits[:, :, None])[:, None]

def flex_block_mask(content_groups, query_groups=None):
    """The same rule as a FlexAttention BlockMask (attention.py), one per batch: no S x S tensor exists."""
    limits, keys = row_limits(content_groups, query_groups).contiguous(), content_groups.contiguous()

    def mask_mod(b, h, q_idx, kv_idx):
        return keys[b, kv_idx] <= limits[b, q_idx]
    return create_block_mask(mask_mod, *limits.shape, keys.shape[1], keys.device)

def head_rows(vocab_size):
    """Rows per chunk of the chunked head + cross-entropy: ~2^26 logits (256 MiB in float32) at a time."""
    return max(1, 2 ** 26 // vocab_size)

def mean_loss(per_target, valid, per_sequence=False):
    """Per-target losses (B * P,) -> their mean over valid targets, or (per_sequence: MDLM's ELBO, every sequence
    alike) the mean over sequences of each one's own mean."""
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
        # x: (B, R, C), content rows first, then R - n_content query rows; mask: (B, 1, R, n_content) bool (sdpa),
        # a BlockMask (flex), or None (SDPA unmasked, or its causal kernel if is_causal); rotary: (cos, sin) per row
        B, R, C = x.shape
        q, k, v = self.c_attn(x[:, :n_content]).split(C, dim=2)  # each (B, n_content, C)
        if R > n_content:  # query rows: only their queries (Eq. 23: K and V come from the content stream)
            bias = None if self.c_attn.bias is None else self.c_attn.bias[:C]
            q = torch.cat([q, F.linear(x[:, n_content:], self.c_attn.weight[:C], bias)], dim=1)
        q, k, v = (t.view(B, t.shape[1], self.n_head, C // self.n_head) for t in (q, k, v))
        if rotary is not None:  # query rows by their target's position, keys by their content row's
            cos, sin = rotary
            q, k = rotate(q, cos, sin), rotate(k, cos[:, :n_content], sin[:, :n_content])
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, heads, rows, head size)
        if mask is None or isinstance(mask, torch.Tensor):  # SDPA: its own causal kernel, or the dense boolean mask
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                               dropout_p=self.dropout if self.training else 0.0)
        elif self.training and self.dropout:  # one behaviour on every backend (devices.pick_attn_backend)
            raise ValueError("attn_backend='flex' has no attention dropout: train on 'sdpa', or with dropout=0")
        else:
            y = flex_attention(q, k, v, mask)
        y = y.transpose(1, 2).contiguous().view(B, R, C)  # every row attended over the n_content keys
        return self.resid_dropout(self.c_proj(y))

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
            self.patch_embed = nn.Linear(config.patch_dim, d)
            self.cls_emb = nn.Parameter(torch.zeros(d))  # the always-visible conditioning slot at position 0
            self.register_buffer('pos_table', sincos_2d(d, config.image_size // config.patch_size), persistent=False)
            self.pixel_head = nn.Linear(d, config.patch_dim)
        self.query_emb = nn.Parameter(torch.zeros(d))  # g starts from one learned vector: it knows where, not what
        self.mask_emb = nn.Parameter(torch.zeros(d))   # the [MASK] input of one-stream BERT
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(d, bias=config.bias)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith('c_proj.weight'):  # GPT-2: scale residual projections by depth
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        for p in (self.query_emb, self.mask_emb) + ((self.cls_emb,) if config.input_kind == 'patches' else ()):
            nn.init.normal_(p, mean=0.0, std=0.02)

    def _init_weights(self, module):  # GPT-2's
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if getattr(module, 'bias', None) is not None:
                nn.init.zeros_(module.bias)

    def num_params(self, non_embedding=True):  # nanoGPT's count: the learned position table left out
        return sum(p.numel() for name, p in self.named_parameters() if not (non_embedding and name.startswith('wpe')))

    def optim_groups(self, weight_decay):
        """AdamW groups: decay matrices of linear layers only, never norms, biases or embeddings."""
        decay, no_decay = [], []
        for name, p in self.named_parameters():
            is_matrix = p.dim() >= 2 and not name.startswith(('wte', 'wpe'))
            (decay if is_matrix else no_decay).append(p)
        return [{'params': decay, 'weight_decay': weight_decay}, {'params': no_decay, 'weight_decay': 0.0}]

    # ---- embeddings

    def position(self, pos):  # added to the inputs; with rope, positions enter in attention instead
        if self.config.input_kind == 'patches':
            return self.pos_table[pos]
        return 0.0 if self.config.rope else self.wpe(pos)

    def embed_content(self, content, content_pos, content_masked=None):
        # scripts check token ids, positions and patch sizes where data enters (a check here would sync the GPU)
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
        """Run content rows (and query rows, if any) through every block; returns ln_f of all rows."""
        x = self.embed_content(content, content_pos, content_masked)
        n_content = x.shape[1]
        if query_pos is not None:
            g = (self.query_emb.to(x.dtype) + self.position(query_pos)).expand(*query_pos.shape, -1)
            x = torch.cat([x, g], dim=1)
        x = self.drop(x)
        rotary = None
        if self.config.rope:
            positions = content_pos if query_pos is None else torch.cat([content_pos, query_pos], dim=1)
            rotary = rotary_angles(positions, self.config.n_embd // self.config.n_head)
        # no mask where SDPA's own kernels say the rule, on either backend: all_visible (one-stream BERT, no
        # padding; a mask would only rule out flash), or one-stream GPT, whose groups are its positions (the causal
        # kernel: flash / cuDNN beat flex's BlockMask of the same triangle on a GPU)
        is_causal = causal and query_pos is None
        if all_visible or is_causal:
            mask = None
        elif self.config.attn_backend == 'flex':
            mask = flex_block_mask(content_groups, query_groups)
        else:
            mask = dense_mask(content_groups, query_groups)
        layers = []
        for block in self.blocks:
            x = block(x, n_content, mask, is_causal, rotary)
            layers.append(x)
        return [self.ln_f(h) for h in layers] if all_layers else self.ln_f(x)

    def forward(self, content, content_pos, content_groups, query_pos=None, query_groups=None,
                content_masked=None, pred_index=None, targets=None, valid=None, causal=False, per_sequence=False,
                all_visible=False, return_preds=True):
        """B sequences, R content rows, Q query rows, P target rows (P = Q in two-stream batches), D = patch size.
          content         (B, R) token ids, or (B, R, D) patches: the content stream's inputs
          content_pos     (B, R) the position of each content row (0: the conditioning token / CLS slot)
          content_groups  (B, R) group ids: a content row sees content rows of groups <= its own (padding: above all)
          query_pos       (B, Q) positions of the query rows (two-stream), or None (one-stream)
          query_groups    (B, Q) a query row sees content rows of groups < its own
          content_masked  (B, R) bool: the input is the [MASK] vector (one-stream BERT), or None
          pred_index      (B, P) one-stream: the content row whose output predicts each target (None: two-stream)
          targets         (B, P) token ids, or (B, P, D) patches; None: no loss
          valid           (B, P) bool: real target rows (the rest pad a static width)
          causal          one-stream GPT: content_groups = positions, and SDPA may use its causal kernel
          all_visible     one-stream BERT, no padding: content_groups all 0, so SDPA may run unmasked (flash)
          per_sequence    the loss is the mean over sequences of each one's mean over its targets (else over all)
          return_preds    False (training): the loss alone, text's head and cross-entropy in row chunks (chunked_loss)
        -> (predictions (B, P, vocab or D) or None, loss or None). objectives.py builds these batches."""
        h = self.trunk(content, content_pos, content_groups, query_pos, query_groups, content_masked, causal,
                       all_visible=all_visible)
        if query_pos is not None:
            out = h[:, content.shape[1]:]  # the head reads the query stream
        else:
            out = torch.gather(h, 1, pred_index[..., None].expand(-1, -1, h.shape[-1]))
        if not return_preds and targets is not None and self.config.input_kind == 'tokens':
            return None, self.chunked_loss(out, targets, valid, per_sequence)
        preds = self.lm_head(out) if self.config.input_kind == 'tokens' else self.pixel_head(out)
        if targets is None:
            return preds, None
        return preds, self.loss(preds, targets, valid, per_sequence)

    def loss(self, preds, targets, valid, per_sequence=False):
        """Token cross-entropy or per-patch pixel MSE (MAE-normalised or not), averaged over all valid targets, or
        (per_sequence: MDLM's ELBO, every sequence alike) over each sequence's own, then over the sequences."""
        if self.config.input_kind == 'tokens':  # ignore_index: padded rows' targets are any id, left out as 0
            per_target = F.cross_entropy(preds.float().flatten(0, 1), targets.masked_fill(~valid, -100).flatten(),
                                         ignore_index=-100, reduction='none')
        else:
            if self.config.norm_pix_loss:
                mean, var = targets.mean(dim=-1, keepdim=True), targets.var(dim=-1, keepdim=True)
                targets = (targets - mean) / (var + 1e-6).sqrt()
            per_target = ((preds.float() - targets.float()) ** 2).mean(dim=-1)
        return mean_loss(per_target, valid, per_sequence)

    def chunked_loss(self, out, targets, valid, per_sequence=False):
        """loss(lm_head(out), ...) with no logits of every row at once (a GPT-2 head at 16 x 1024 is 3.3 GB in
        float32): the head and cross-entropy run over row chunks, and each chunk's logits are recomputed in backward
        (checkpoint) instead of kept. The same ops per row as loss, so the same loss and gradients."""
        def chunk(rows, ids):
            return F.cross_entropy(self.lm_head(rows).float(), ids, ignore_index=-100, reduction='none')
        rows, ids, n = out.flatten(0, 1), targets.masked_fill(~valid, -100).flatten(), head_rows(self.config.vocab_size)
        per_target = torch.cat([checkpoint(chunk, r, i, use_reentrant=False)
                                for r, i in zip(rows.split(n), ids.split(n))])
        return mean_loss(per_target, valid, per_sequence)

    @torch.no_grad()
    def features(self, content, content_pos=None, content_groups=None, content_masked=None, all_layers=False):
        """Content-stream hidden states for evaluation: with a batch's pretraining groups, or unmasked (None)."""
        B, S = content.shape[:2]
        if content_pos is None:
            content_pos = torch.arange(S, device=content.device).expand(B, S)
        all_visible = content_groups is None
        if all_visible:
            content_groups = torch.zeros(B, S, dtype=torch.long, device=content.device)
        return self.trunk(content, content_pos, content_groups, content_masked=content_masked, all_layers=all_layers,
                          all_visible=all_visible)

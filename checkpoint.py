"""
Checkpoints that survive a crash: written through output.atomic_write (a temporary file, then a rename), read back
with weights_only=True, with one line naming the fix when one is wrong. Pretrained is how every evaluation script
(eval_ppl, eval_glue, eval_vision, sample, theory) opens one.
"""
import os
from dataclasses import fields

import torch

from configurator import UsageError
from model import ModelConfig, Transformer
from objectives import Objective
from output import atomic_write


# -----------------------------------------------------------------------------
# checkpoints

def save_checkpoint(obj, path):
    atomic_write(path, lambda f: torch.save(obj, f))

def read_checkpoint(path, device='cpu'):
    if not os.path.exists(path):
        raise UsageError(f"checkpoint {path} does not exist: train one with `python train.py config/<name>.py` "
                         "or point --ckpt at an existing file")
    if os.path.isdir(path):
        raise UsageError(f"checkpoint {path} is a folder: point --ckpt at a file in it, e.g. "
                         f"{os.path.join(path, 'ckpt_best.pt')}")
    with open(path, 'rb') as f:
        zipped = f.read(4) == b'PK\x03\x04'  # torch.save writes a zip archive
    if not zipped:
        raise UsageError(f"{path} is not a checkpoint (torch.save writes a zip archive, this file is not one): "
                         "point --ckpt at a ckpt_best.pt or ckpt_last.pt that train.py wrote")
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:
        raise UsageError(f"checkpoint {path} is corrupt or truncated ({type(err).__name__}): "
                         "use the other checkpoint in its out_dir (ckpt_last.pt / ckpt_best.pt) or retrain") from None
    if not isinstance(ckpt, dict) or 'model' not in ckpt or 'model_config' not in ckpt:
        raise UsageError(f"{path} is not a lookaround checkpoint (no 'model' / 'model_config' entries)")
    return ckpt

def model_config_from(ckpt, path, **overrides):
    known = {f.name for f in fields(ModelConfig)}
    unknown = set(ckpt['model_config']) - known
    if unknown:
        raise UsageError(f"{path} has unknown model_config keys {sorted(unknown)}: it was written by another version")
    return ModelConfig(**{**ckpt['model_config'], **overrides})

def load_checkpoint(path, device='cpu', **overrides):
    """-> (model in eval mode, checkpoint dict). overrides: ModelConfig fields, e.g. attn_backend='flex'."""
    ckpt = read_checkpoint(path, device)
    model = Transformer(model_config_from(ckpt, path, **overrides))
    try:
        model.load_state_dict(ckpt['model'])
    except RuntimeError as err:
        first = str(err).strip().splitlines()[0]
        raise UsageError(f"{path} does not fit its own model_config ({first})") from None
    return model.to(device).eval(), ckpt

# -----------------------------------------------------------------------------
# a pretrained checkpoint, as an evaluation script reads it

MODEL_KINDS = {'tokens': ('a text model', 'text'), 'patches': ('an image model', 'image')}  # by input_kind


class Pretrained:
    """A checkpoint train.py wrote, checked where it enters a script: its model settings (a ModelConfig), the
    objective it was pretrained with (the batches, attention and prefix reading it implies) and its training config
    are read at once, so a wrong checkpoint stops before any work; its weights load on demand, one model at a time."""

    def __init__(self, path, input_kind):
        checkpoint = read_checkpoint(path)
        self.path = path
        self.model_config = model_config_from(checkpoint, path)
        self.objective = Objective.from_checkpoint(checkpoint, path)
        self.train_config = checkpoint.get('config', {})
        found = self.model_config.input_kind
        if found != input_kind:
            (found_model, _), (wanted_model, wanted) = MODEL_KINDS[found], MODEL_KINDS[input_kind]
            raise UsageError(f"{path} is {found_model} (input_kind={found!r}), not {wanted_model}: this script "
                             f"reads {wanted} checkpoints only (train.py with input_kind={input_kind!r})")

    def model(self, device='cpu', **overrides):
        """-> the model in eval mode on device; overrides: ModelConfig fields (attn_backend, dropout to fine-tune)."""
        return load_checkpoint(self.path, device, **overrides)[0]

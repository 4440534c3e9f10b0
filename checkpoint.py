"""
Checkpoints that survive a crash: written through output.atomic_write (a temporary file, then a
rename), read back with weights_only=True, with one line naming the fix when one is wrong.
Pretrained is how every evaluation script (eval_ppl, eval_glue, eval_vision, sample, theory) opens
one.
"""
import os
import shutil
from dataclasses import asdict, fields

import torch
import torch.distributed as dist

from configurator import UsageError
from model import ModelConfig, Transformer
from objectives import Objective
from output import atomic_write, claim_out_dir, named_folder


# -----------------------------------------------------------------------------
# checkpoints

def save_checkpoint(obj, path, *same):
    """obj to path, and to each of `same` as the same file: a hard link (a copy where the file
    system has none) made under a temporary name, then renamed over it, so each is atomic, and a
    124M model's 1.5 GB is written once. No save writes into a file, it replaces it: a later save
    to one name leaves the other as it was."""
    atomic_write(path, lambda f: torch.save(obj, f))
    for other in same:
        temporary = f"{other}.{os.getpid()}.tmp"
        try:
            try:
                os.link(path, temporary)
            except OSError:  # no hard links here (or a stale temporary): a copy
                shutil.copyfile(path, temporary)
            os.replace(temporary, other)
        except BaseException:
            if os.path.lexists(temporary):
                os.remove(temporary)
            raise

def read_checkpoint(path, device='cpu'):
    if not str(path).strip():
        raise UsageError("--ckpt= names no checkpoint: point it at a file train.py wrote, e.g. "
                         "--ckpt=out-<name>/ckpt_best.pt")
    if not os.path.exists(path):
        raise UsageError(f"checkpoint {path} does not exist: train one with "
                         "`python train.py config/<name>.py` or point --ckpt at an existing file")
    if os.path.isdir(path):
        raise UsageError(f"checkpoint {path} is a folder: point --ckpt at a file in it, e.g. "
                         f"{os.path.join(path, 'ckpt_best.pt')}")
    with open(path, 'rb') as f:
        zipped = f.read(4) == b'PK\x03\x04'  # torch.save writes a zip archive
    if not zipped:
        raise UsageError(f"{path} is not a checkpoint (torch.save writes a zip archive, this file "
                         "is not one): point --ckpt at a ckpt_best.pt or ckpt_last.pt that "
                         "train.py wrote")
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:
        raise UsageError(f"checkpoint {path} is corrupt or truncated ({type(err).__name__}): "
                         "use the other checkpoint in its out_dir (ckpt_last.pt / ckpt_best.pt) "
                         "or retrain") from None
    if not isinstance(ckpt, dict) or 'model' not in ckpt or 'model_config' not in ckpt:
        raise UsageError(f"{path} is not a lookaround checkpoint "
                         "(no 'model' / 'model_config' entries)")
    return ckpt

def checked_model_config(where='', **settings):
    """A ModelConfig from settings that entered from outside (a config, a checkpoint): a bad one is
    one line."""
    try:
        return ModelConfig(**settings)
    except ValueError as error:  # the model's own checks: model.py never imports the command line
        raise UsageError(f"{where}{error}") from None

def model_config_from(ckpt, path, **overrides):
    known = {f.name for f in fields(ModelConfig)}
    unknown = set(ckpt['model_config']) - known
    if unknown:
        raise UsageError(f"{path} has unknown model_config keys {sorted(unknown)}: "
                         "it was written by another version")
    return checked_model_config(f"{path}: ", **{**ckpt['model_config'], **overrides})

def objective_from(ckpt, path):
    """The objective train.py pretrained with (it saves asdict(Objective)), through the same
    checks as its config."""
    saved = ckpt.get('objective')
    if not (isinstance(saved, dict) and saved.get('name')):
        raise UsageError(f"{path} names no pretraining objective: it was not written by train.py")
    return Objective(**{k: v for k, v in saved.items() if k in Objective.__dataclass_fields__})

def load_checkpoint(path, device='cpu', **overrides):
    """-> (model in eval mode, checkpoint dict). overrides: ModelConfig fields, e.g.
    attn_backend='flex'."""
    ckpt = read_checkpoint(path, device)
    model = Transformer(model_config_from(ckpt, path, **overrides))
    try:
        model.load_state_dict(ckpt['model'])
    except RuntimeError as err:
        first = str(err).strip().splitlines()[0]
        raise UsageError(f"{path} does not fit its own model_config ({first})") from None
    return model.to(device).eval(), ckpt

# -----------------------------------------------------------------------------
# train.py's runs: a new run never touches an old one, and resume continues the run its
# checkpoint records

# what train.py writes
RUN_FILES = ('ckpt_last.pt', 'ckpt_best.pt', 'log.jsonl', 'loss.png', 'loss.csv')

def claim_run(out_dir, init_from, overwrite, master=True):
    """Refuse before anything is read or written (a run stopped before its first evaluation saved
    no checkpoint: it can only start again). With overwrite the old run stays until the new one has
    started. -> the run's file paths"""
    run_files = [os.path.join(named_folder(out_dir), name) for name in RUN_FILES]
    last_path = run_files[0]
    if init_from == 'resume' and not os.path.lexists(last_path):
        raise UsageError(f"{out_dir} holds no ckpt_last.pt to resume (a run killed before its "
                         "first evaluation saved none): start the run with --init_from=scratch" +
                         (" --overwrite=True" if any(map(os.path.lexists, run_files)) else ''))
    # not made yet: a run refused or interrupted before training leaves no empty out_dir (train.py)
    if master:
        claim_out_dir(out_dir, RUN_FILES if init_from == 'scratch' and not overwrite else [],
                      create=False,
                      fix="continue it with --init_from=resume, train into a new --out_dir, or "
                      "pass --overwrite=True to delete it first" if os.path.lexists(last_path) else
                      "it saved no checkpoint to resume: pass --overwrite=True to start it again, "
                      "or a new --out_dir")
    return run_files

def left_behind(run_files):
    """What a run's out_dir holds when a second signal ends it at once, mid-step
    (devices.stop_on_signals)."""
    if os.path.exists(run_files[0]):
        return f"{run_files[0]} is intact: continue with --init_from=resume"
    return "no checkpoint was written yet: start the run again" + \
        (" with --overwrite=True" if any(map(os.path.exists, run_files)) else '')

# only where and how long a run goes, what it shows and the hardware may change on resume; another
# objective, schedule, data or evaluation would silently make a different run
RESUMABLE_CHANGES = ('out_dir', 'init_from', 'overwrite', 'max_iters', 'eval_interval',
                     'log_interval', 'progress', 'device', 'dtype', 'compile', 'attn_backend')
# a step's rows (the optimizer's batch) may be split otherwise, as another process count may need
# (devices.micro_steps), but not change in number
SPLIT = ('batch_size', 'gradient_accumulation_steps')

def rows_per_step(config):
    return config['batch_size'] * config['gradient_accumulation_steps']

def check_resume(checkpoint, path, config, model_config):
    """train.py's config against the run its checkpoint records. -> True if that run already
    reached max_iters"""
    saved, wanted = (asdict(model_config_from(checkpoint, path,
                                              attn_backend=model_config.attn_backend)),
                     asdict(model_config))
    if saved != wanted:
        diff = {k: (v, wanted[k]) for k, v in saved.items() if wanted[k] != v}
        raise UsageError(f"{path} holds another architecture (checkpoint vs config: {diff}): "
                         "resume with the settings it was trained with, or use a new out_dir")
    saved = checkpoint.get('config', {})
    # tuples load as lists
    as_saved = lambda value: list(value) if isinstance(value, tuple) else value  # noqa: E731
    rows = rows_per_step(saved) if set(SPLIT) <= set(saved) else None
    changed = [k for k in config if k in saved and k not in RESUMABLE_CHANGES
               and not (k in SPLIT and rows == rows_per_step(config))
               and as_saved(saved[k]) != as_saved(config[k])]
    if changed:
        split = (f" (batch_size x gradient_accumulation_steps may change if it stays {rows} rows "
                 "a step)" if rows and set(SPLIT) & set(changed) else '')
        raise UsageError(f"{path} was trained with " +
                         ', '.join(f"{k}={saved[k]!r}" for k in changed) +
                         " but this command says " +
                         ', '.join(f"{k}={config[k]!r}" for k in changed) +
                         f": resume with the checkpoint's settings{split}, or start a new run in "
                         "another --out_dir")
    if config['max_iters'] < checkpoint['iter']:
        raise UsageError(f"{path} is at iter {checkpoint['iter']}: "
                         f"max_iters={config['max_iters']} must exceed it to train on")
    return config['max_iters'] == checkpoint['iter']

def gather_generators(stream_states, device):
    """What restore_generators reads, from every process under torchrun (rank 0's checkpoint keeps
    them all): -> (data stream states per process, global generator state per process: CPU, or on
    CUDA the pair (CPU, CUDA))"""
    torch_rng = (torch.get_rng_state() if device == 'cpu'
                 else [torch.get_rng_state(), torch.cuda.get_rng_state(device)])
    if not dist.is_initialized():
        return [stream_states], [torch_rng]
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, (stream_states, torch_rng))
    return [g[0] for g in gathered], [g[1] for g in gathered]

def restore_generators(checkpoint, streams, rank, device, batch_size):
    """The data streams are CPU generators, saved in stream order whatever the process count: each
    process takes its own again (stream = rank * micro-steps + micro_step), so the data is exactly
    the uninterrupted run's on any device and any number of processes that keeps the split of a
    step's rows. Split otherwise (check_resume), the step's rows cannot be those batches: new
    streams, seeded from the checkpoint's first, draw new rows (not the run's first batches again).
    The global generators only drop out: this process's, where the checkpoint has one (a CPU state;
    on CUDA the pair (CPU, CUDA)), the CUDA part only on CUDA; a process it lacks keeps its seed.
    -> '' where the data is the uninterrupted run's, else a line saying it is not"""
    saved, note = [state for states in checkpoint['streams'] for state in states], ''
    # gradient_accumulation_steps
    total = len(streams) * (dist.get_world_size() if dist.is_initialized() else 1)
    if len(saved) == total:
        for generator, state in zip(streams, saved[rank * len(streams):(rank + 1) * len(streams)]):
            generator.set_state(state)
    else:
        first = torch.Generator()
        first.set_state(saved[0])
        # the same on every process
        seeds = torch.randint(2 ** 62, (total,), generator=first).tolist()
        for generator, seed in zip(streams, seeds[rank * len(streams):(rank + 1) * len(streams)]):
            generator.manual_seed(seed)
        note = (f"warning: a step's {total * batch_size} rows come as {total} x "
                f"batch_size={batch_size}, the checkpoint's as {len(saved)} x "
                f"{checkpoint['config'].get('batch_size', '?')}: new data streams draw them, so "
                "the batches differ from the uninterrupted run's (the model, optimizer and "
                "schedule resume exactly)")
    if rank < len(checkpoint['torch_rng']):
        saved_rng = checkpoint['torch_rng'][rank]
        cpu_rng, cuda_rng = (saved_rng, None) if isinstance(saved_rng, torch.Tensor) else saved_rng
        torch.set_rng_state(cpu_rng)
        if device.startswith('cuda') and cuda_rng is not None:
            torch.cuda.set_rng_state(cuda_rng, device)
    return note

# -----------------------------------------------------------------------------
# a pretrained checkpoint, as an evaluation script reads it

# by input_kind
MODEL_KINDS = {'tokens': ('a text model', 'text'), 'patches': ('an image model', 'image')}


class Pretrained:
    """A checkpoint train.py wrote, checked where it enters a script: its model settings (a
    ModelConfig), the objective it was pretrained with (the batches, attention and prefix reading it
    implies) and its training config are read at once, so a wrong checkpoint stops before any work;
    its weights load on demand, one model at a time."""

    def __init__(self, path, input_kind):
        checkpoint = read_checkpoint(path)
        self.path = path
        self.model_config = model_config_from(checkpoint, path)
        self.objective = objective_from(checkpoint, path)
        self.train_config = checkpoint.get('config', {})
        found = self.model_config.input_kind
        if found != input_kind:
            (found_model, _), (wanted_model, wanted) = MODEL_KINDS[found], MODEL_KINDS[input_kind]
            raise UsageError(f"{path} is {found_model} (input_kind={found!r}), not {wanted_model}: "
                             f"this script reads {wanted} checkpoints only (train.py with "
                             f"input_kind={input_kind!r})")

    def model(self, device='cpu', **overrides):
        """-> the model in eval mode on device; overrides: ModelConfig fields (attn_backend, dropout
        to fine-tune)."""
        return load_checkpoint(self.path, device, **overrides)[0]

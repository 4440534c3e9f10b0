"""
Every check a train.py run passes before it touches data, a device or out_dir: a bad setting stops
with one line naming the fix (configurator.UsageError), and a refused run writes nothing.
"""
import os
from typing import NamedTuple

from checkpoint import claim_run
from configurator import UsageError, check_ranges
from devices import check_device, micro_steps, pick_attn_backend, pick_compile
from objectives import Objective
from schedule import check_schedule

# train.py's numeric keys and the intervals they must lie in (configurator.check_ranges)
RANGES = {
    'eval_interval': '[1, inf)', 'log_interval': '[1, inf)', 'eval_iters': '[1, inf)',
    'image_size': '[1, inf)', 'patch_size': '[1, inf)', 'channels': '[1, inf)',
    'batch_size': '[1, inf)', 'block_size': '[2, inf)', 'gradient_accumulation_steps': '[1, inf)',
    'n_layer': '[1, inf)', 'n_head': '[1, inf)', 'n_embd': '[1, inf)', 'dropout': '[0, 1)',
    'learning_rate': '(0, inf)', 'max_iters': '[0, inf)', 'weight_decay': '[0, inf)',
    'beta1': '[0, 1)', 'beta2': '[0, 1)', 'grad_clip': '[0, inf)', 'warmup_iters': '[0, inf)',
    'lr_decay_iters': '[0, inf)', 'min_lr': '[0, inf)', 't': '[1, inf)', 'n_groups': '[1, inf)',
    'seed': '[0, inf)', 'train_tokens': '[0, inf)'}


class Checked(NamedTuple):
    """What the checks resolved, in the order train.py unpacks it."""
    master: bool             # torchrun's rank 0 (or the only process): it speaks and writes for all
    device_type: str         # 'cpu', 'cuda' or 'mps': device='auto' resolved
    attn_backend: str        # 'sdpa' or 'flex': 'auto' resolved
    compile: bool
    world_size: int          # torchrun's processes
    accum: int               # micro-steps of each process per optimizer step
    sequence_length: int     # BOS + tokens, or CLS + patches
    pretraining: Objective   # every objective setting resolved
    scoring: Objective       # what evaluations score: eval_objective's reading, else pretraining
    schedule_warning: str    # '', or a line to print once nothing can refuse the run
    run_files: list          # out_dir's ckpt_last.pt, ckpt_best.pt, log.jsonl, loss.png, loss.csv


def check_training(config):
    """train.py's config (its globals, as a dict), checked before torchrun's process group
    starts: an error is one line per node, not one per process. Reads no data, writes nothing."""
    check_ranges(config, RANGES)
    if config['init_from'] not in ('scratch', 'resume'):
        raise UsageError(f"init_from must be 'scratch' or 'resume', got {config['init_from']!r}")
    if config['bert_replace'] and config['input_kind'] != 'tokens':
        raise UsageError("bert_replace (BERT's 80/10/10 random tokens) needs text: "
                         "set bert_replace=False for images")
    master = int(os.environ.get('RANK', 0)) == 0  # torchrun's group starts after these checks
    device_type = check_device(config['device'], config['dtype']).split(':')[0]
    attn_backend = pick_attn_backend(config['attn_backend'], device_type, config['dropout'])
    compile = pick_compile(config['compile'], device_type)
    world_size, accum = micro_steps(config['gradient_accumulation_steps'], config['batch_size'])
    schedule_warning = check_schedule(config['learning_rate'], config['warmup_iters'],
                                      config['lr_decay_iters'], config['min_lr'],
                                      config['max_iters'], config['schedule'])
    sequence_length = config['block_size'] if config['input_kind'] == 'tokens' else \
        (config['image_size'] // config['patch_size']) ** 2 + 1  # + BOS / CLS
    pretraining = Objective.from_config(config).check(sequence_length)
    scoring = check_scoring(config, pretraining, sequence_length)
    run_files = claim_run(config['out_dir'], config['init_from'], config['overwrite'], master)
    return Checked(master, device_type, attn_backend, compile, world_size, accum, sequence_length,
                   pretraining, scoring, schedule_warning, run_files)


def check_scoring(config, pretraining, sequence_length):
    """eval_objective's reading of the pretrained model ('': the pretraining objective's own
    loss). It must feed the inputs the model trained on: a masked model never saw a causal input,
    nor ar a [MASK]."""
    name = config['eval_objective']
    if not name:
        return pretraining
    scoring = Objective.from_config({**config, 'objective': name, 'mask_ratio': None,
                                     'two_stream': pretraining.two_stream, 'bert_replace': False})
    scoring = scoring.check(sequence_length)
    if scoring.kind.masked != pretraining.kind.masked:
        raise UsageError(f"eval_objective={name!r} reads other inputs than {config['objective']}: "
                         "use 'ar' for ar or dar, 'mdlm' for a masked objective")
    return scoring

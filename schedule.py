"""
The one learning-rate schedule, for pretraining (train.py), fine-tuning and probes (eval_glue.py, eval_vision.py),
and the check of train.py's schedule settings where they enter.
"""
import math

from configurator import UsageError


def lr_at(step, peak, warmup, total, floor=0.0, shape='cosine'):
    """Linear warmup over `warmup` steps, then a half cosine ('cosine') or a straight line ('triangle', Cramming)
    from peak down to floor at step `total`, and floor after it."""
    if step < warmup:
        return peak * (step + 1) / (warmup + 1)
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    decay = 1 - progress if shape == 'triangle' else 0.5 * (1 + math.cos(math.pi * progress))
    return floor + (peak - floor) * decay


def check_schedule(learning_rate, warmup_iters, lr_decay_iters, min_lr, max_iters, schedule):
    """A warm-up past the decay's end would drop from the peak to min_lr in one step: refused. A run that stops early
    is only pointed out (its first leg may be resumed with a larger max_iters, and a smoke run is short on purpose):
    -> that warning, or '', for the caller to print once nothing else can refuse the run."""
    if schedule not in ('cosine', 'triangle'):
        raise UsageError(f"schedule must be 'cosine' or 'triangle', got {schedule!r}")
    if warmup_iters > lr_decay_iters and max_iters > warmup_iters and min_lr < learning_rate:
        raise UsageError(f"warmup_iters={warmup_iters} exceeds lr_decay_iters={lr_decay_iters}: the learning rate "
                         "would fall from its peak to min_lr in one step right after the warm-up: set --lr_decay_iters "
                         "(where the decay ends) above warmup_iters, or lower --warmup_iters")
    lr = lambda step: lr_at(step, learning_rate, warmup_iters, lr_decay_iters, min_lr, schedule)  # noqa: E731
    if 0 < max_iters <= warmup_iters:
        return (f"warning: max_iters={max_iters} <= warmup_iters={warmup_iters}: the run stops inside its warm-up, at "
                f"learning rate {lr(max_iters - 1):.2e} of learning_rate={learning_rate:.2e} (lower --warmup_iters, or "
                "resume with a larger --max_iters)")
    if max_iters < lr_decay_iters:
        return (f"warning: max_iters={max_iters} < lr_decay_iters={lr_decay_iters}: the learning rate stops at "
                f"{lr(max_iters):.2e} and never reaches min_lr={min_lr:.2e} (set --lr_decay_iters={max_iters} to decay "
                "fully)")
    if max_iters > lr_decay_iters and min_lr < learning_rate:  # nanoGPT's flat tail: legal, rarely meant
        return (f"warning: max_iters={max_iters} > lr_decay_iters={lr_decay_iters}: the last "
                f"{max_iters - lr_decay_iters} steps run at min_lr={min_lr:.2e} (set --lr_decay_iters={max_iters} to "
                "decay over the whole run)")
    return ''

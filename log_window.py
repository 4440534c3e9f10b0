"""
The steps one training line of train.py's log.jsonl speaks for: their mean loss, tokens/s and MFU.
Device values are read here only at log steps (and at a signal's stop), so every other step is
queued while the device still runs the one before; under torchrun one all-reduce there makes the
line, and the decision to stop, every process's.
"""
import time

import torch
import torch.distributed as dist


class LogWindow:
    """Losses, FLOPs and seconds of the steps since the last training line. The first step of a
    start or resume compiles, so it stays out of the speed. peak: one accelerator's FLOP/s at the
    run's dtype (devices.peak_flops), None where unknown: then no MFU."""

    def __init__(self, device, tokens_per_step, peak, world_size, ddp):
        self.tokens_per_step, self.peak = tokens_per_step, peak
        self.world_size, self.ddp, self.cuda = world_size, ddp, str(device).startswith('cuda')
        self.loss_sum = torch.zeros((), device=device)  # on the device: adding a loss reads nothing
        self.loss_count, self.flops, self.seconds, self.steps = 0, 0.0, 0.0, 0
        self.first_step = True

    def add(self, loss, flops):
        """One micro-batch: its loss, and its FLOPs as counted on the host batch."""
        self.loss_sum += loss.detach()
        self.loss_count += 1
        self.flops += flops

    def end_step(self, began, log_step, eval_step, signalled):
        """After the optimizer step begun at time.time() = began. Processes must stop at the same
        step: under torchrun they vote at log steps, so a signal stops the run within log_interval
        steps (one process stops after this step).
        -> ((train_loss, speed) of a training line, or None; whether to stop)"""
        if self.first_step:
            self.flops = 0.0
            if self.cuda:
                torch.cuda.synchronize()  # its queued work too: the next step's clock starts clean
        stopping = signalled and not self.ddp
        loss_sum, loss_count, flops = self.loss_sum, self.loss_count, self.flops
        if self.ddp and log_step:  # every process's FLOPs and losses: the line speaks for all
            shared = torch.tensor([float(signalled), flops, loss_count], dtype=torch.float64,
                                  device=loss_sum.device)
            shared = torch.cat([shared, loss_sum.double()[None]])
            dist.all_reduce(shared)
            stop_votes, flops, loss_count, loss_sum = shared.tolist()
            stopping = stop_votes > 0
        if self.cuda and (log_step or eval_step or stopping):
            torch.cuda.synchronize()  # the window's clock includes all the device work queued in it
        if not self.first_step:
            self.seconds += time.time() - began
            self.steps += 1
        self.first_step = False
        if not (log_step or stopping):
            return None, stopping
        train_loss, speed = float(loss_sum) / loss_count, {}
        if self.steps:  # none where the window held the first step alone
            speed['tokens_per_sec'] = self.tokens_per_step * self.steps / self.seconds
            if self.peak:  # all processes' FLOPs over all their peaks
                speed['mfu'] = flops / self.seconds / (self.world_size * self.peak)
        self.loss_sum.zero_()
        self.loss_count, self.flops, self.seconds, self.steps = 0, 0.0, 0.0, 0
        return (train_loss, speed), stopping

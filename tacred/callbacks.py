"""The callback that keeps ``last.ckpt`` current, so that a run killed at any moment resumes exactly."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback


@contextmanager
def _epoch_schedulers_stepped(trainer: Any, pl_module: Any) -> Iterator[None]:
    """Lightning steps epoch-interval lr schedulers only after ``on_train_epoch_end``: step them for the checkpoint
    (so a resumed run has this epoch's decay), then restore them so that Lightning's own step is the one that counts."""
    if not trainer.fit_loop.epoch_loop.batch_progress.is_last_batch:
        yield  # an epoch cut short: Lightning does not step the schedulers either
        return
    configs = [c for c in trainer.lr_scheduler_configs
               if c.interval == "epoch" and (trainer.current_epoch + 1) % c.frequency == 0]
    schedulers = [copy.deepcopy(c.scheduler.state_dict()) for c in configs]
    groups = [[{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups] for opt in trainer.optimizers]
    try:
        for config in configs:
            value = trainer.callback_metrics.get(config.monitor) if config.reduce_on_plateau else None
            if not config.reduce_on_plateau or value is not None:
                pl_module.lr_scheduler_step(config.scheduler, value)
        yield
    finally:
        for config, state in zip(configs, schedulers, strict=True):
            config.scheduler.load_state_dict(state)
        for opt, saved in zip(trainer.optimizers, groups, strict=True):
            for group, values in zip(opt.param_groups, saved, strict=True):
                group.update(values)


class LastCheckpoint(Callback):
    """Writes ``last.ckpt`` at the end of every training epoch (after validation and the lr decay), atomically,
    so a run killed at any moment restarts from a complete file."""

    def __init__(self, dirpath: str | Path) -> None:
        self.path = Path(dirpath) / "last.ckpt"

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        partial = self.path.with_name("last.ckpt.partial")
        with _epoch_schedulers_stepped(trainer, pl_module):
            trainer.save_checkpoint(partial, weights_only=False)  # everything needed to resume
        trainer.strategy.barrier("tacred_last_checkpoint")
        if trainer.is_global_zero:
            os.replace(partial, self.path)

"""The callback that keeps ``last.ckpt`` current, so that a run killed at any moment resumes exactly."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Checkpoint


class LastCheckpoint(Checkpoint):
    """Writes ``last.ckpt`` at the end of every training epoch (after validation and the lr decay), atomically,
    so a run killed at any moment restarts from a complete file.

    A :class:`Checkpoint`, so Lightning calls its ``on_train_epoch_end`` after the module's, where the learning-rate
    rule has just been applied (:meth:`RelationExtractor.on_train_epoch_end`)."""

    def __init__(self, dirpath: str | Path) -> None:
        self.path = Path(dirpath) / "last.ckpt"

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        partial = self.path.with_name("last.ckpt.partial")
        trainer.save_checkpoint(partial, weights_only=False)  # everything needed to resume
        trainer.strategy.barrier("tacred_last_checkpoint")
        if trainer.is_global_zero:
            os.replace(partial, self.path)

"""The callbacks of ``fit`` and ``predict``: ``last.ckpt`` kept current, so that a run killed at any moment resumes
exactly; ``predictions.jsonl`` written from every process's predictions; and Lightning's checkpoint reading routed
through :func:`tacred.checkpoints.read_checkpoint`, so one command reads its checkpoint once."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.callbacks import BasePredictionWriter, Checkpoint
from lightning.pytorch.plugins.io import TorchCheckpointIO

log = logging.getLogger(__name__)


class LastCheckpoint(Checkpoint):
    """Writes ``last.ckpt`` at the end of every training epoch (after validation and the lr decay), atomically,
    so a run killed at any moment restarts from a complete file; with ``every_minutes``, also inside an epoch once
    that many minutes have passed since the last write, so a long epoch (a transformer's) is not lost whole: the
    resumed fit leaves out the batches already trained (:class:`~tacred.training.datamodule.ResumableLoader`).

    A :class:`Checkpoint`, so Lightning calls its ``on_train_epoch_end`` after the module's, where the learning-rate
    rule has just been applied (:meth:`RelationExtractor.on_train_epoch_end`)."""

    def __init__(self, dirpath: str | Path, every_minutes: float | None = None) -> None:
        self.path = Path(dirpath) / "last.ckpt"
        self.every_seconds = None if every_minutes is None else 60.0 * every_minutes
        self._written = time.monotonic()

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._written = time.monotonic()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.every_seconds is None:
            return
        due = time.monotonic() - self._written >= self.every_seconds
        if trainer.world_size > 1:  # every process saves together, as process 0's clock decides
            due = bool(trainer.strategy.broadcast(due, src=0))
        if due and batch_idx + 1 < trainer.num_training_batches:  # the epoch's last batch: its end writes
            self._write(trainer)
            log.info("mid-epoch checkpoint %s: epoch %d, %d of %d batches", self.path, trainer.current_epoch + 1,
                     batch_idx + 1, trainer.num_training_batches)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        self._write(trainer)

    def _write(self, trainer: Any) -> None:
        partial = self.path.with_name("last.ckpt.partial")
        trainer.save_checkpoint(partial, weights_only=False)  # everything needed to resume
        trainer.strategy.barrier("tacred_last_checkpoint")
        if trainer.is_global_zero:
            os.replace(partial, self.path)
        self._written = time.monotonic()


class PredictionFileWriter(BasePredictionWriter):
    """Writes ``predictions.jsonl`` at the end of ``tacred predict`` (:func:`tacred.training.reports.write_predictions`), from
    the batches of every process, gathered in the split's order."""

    def __init__(self) -> None:
        super().__init__(write_interval="batch_and_epoch")
        self._outputs: list[tuple[torch.Tensor, torch.Tensor]] = []

    def on_predict_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._outputs = []

    def write_on_batch_end(self, trainer: Any, pl_module: Any, prediction: Any, batch_indices: Any, batch: Any,
                           batch_idx: int, dataloader_idx: int) -> None:
        self._outputs.append((batch.index.cpu(), prediction))  # prediction: label probabilities (B, L)

    def write_on_epoch_end(self, trainer: Any, pl_module: Any, predictions: Any, batch_indices: Any) -> None:
        from tacred.training.reports import stack_outputs, write_predictions

        outputs, self._outputs = self._outputs, []
        write_predictions(pl_module, *stack_outputs(outputs, len(pl_module.vocab.labels)))


class CheckpointReadOnce(TorchCheckpointIO):
    """Lightning's checkpoint input and output, reading through :func:`tacred.checkpoints.read_checkpoint` (the safe
    loader, on the CPU): inside :func:`tacred.checkpoints.reading_once` the restore gets the contents the command
    read already. Writing is Lightning's own."""

    def load_checkpoint(self, path: Any, map_location: Any = None, weights_only: bool | None = None) -> dict[str, Any]:
        from tacred.checkpoints import read_checkpoint

        return read_checkpoint(path)

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

from tacred.training.resume import RESUME_KEY

log = logging.getLogger(__name__)


class LastCheckpoint(Checkpoint):
    """Writes ``last.ckpt`` at the end of every training epoch (after validation and the lr decay), atomically,
    so a run killed at any moment restarts from a complete file; with ``every_minutes``, also inside an epoch once
    that many minutes have passed since the last write, so a long epoch (a transformer's) is not lost whole: the
    resumed fit leaves out the batches already trained.

    It counts the batches trained in the current epoch itself and writes the count into every checkpoint of the fit
    (:data:`RESUME_KEY`); on resuming it hands the count back to the data module
    (:meth:`~tacred.training.datamodule.TacredDataModule.resume_within`) before the train loader is built.

    A :class:`Checkpoint`, so Lightning calls its ``on_train_epoch_end`` after the module's, where the learning-rate
    rule has just been applied (:meth:`RelationExtractor.on_train_epoch_end`)."""

    def __init__(self, dirpath: str | Path, every_minutes: float | None = None) -> None:
        self.path = Path(dirpath) / "last.ckpt"
        self.every_seconds = None if every_minutes is None else 60.0 * every_minutes
        self._written = time.monotonic()
        self._epoch, self._done = 0, 0  # the epoch being trained and its batches trained so far
        self._resumed: tuple[int, int] | None = None  # (epoch, batches done) of the checkpoint a fit resumes from

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._written = time.monotonic()
        # Lightning goes on with an epoch it resumes inside without calling on_train_epoch_start, so the position
        # starts here: that epoch after the batches its checkpoint had trained
        self._epoch = trainer.current_epoch
        resumed, self._resumed = self._resumed, None
        self._done = resumed[1] if resumed is not None and resumed[0] == self._epoch else 0

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._epoch, self._done = trainer.current_epoch, 0

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self._done += 1  # a Checkpoint: Lightning runs this after every other callback's, so the batch is done
        if self.every_seconds is None:
            return
        due = time.monotonic() - self._written >= self.every_seconds
        if trainer.world_size > 1:  # every process saves together, as process 0's clock decides
            due = bool(trainer.strategy.broadcast(due, src=0))
        if due and self._done < trainer.num_training_batches:  # the epoch's last batch: its end writes
            self._write(trainer)
            log.info("mid-epoch checkpoint %s: epoch %d, %d of %d batches", self.path, self._epoch + 1,
                     self._done, trainer.num_training_batches)

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        checkpoint[RESUME_KEY] = {"epoch": self._epoch, "batches_done": self._done,
                                  "epoch_batches": int(trainer.num_training_batches)}

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        """Called as a fit resumes, before its train loader is built: a checkpoint written inside an epoch resumes
        that epoch after the batches it had trained (one of an epoch's end: the next epoch, whole)."""
        position = checkpoint.get(RESUME_KEY)
        if not isinstance(position, dict):
            return  # written before tacred kept its own position: the fit resumes at the start of an epoch
        epoch, done = int(position["epoch"]), int(position["batches_done"])
        self._resumed = (epoch, done)
        if 0 < done < int(position.get("epoch_batches", done + 1)) and trainer.datamodule is not None:
            trainer.datamodule.resume_within(epoch, done)

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

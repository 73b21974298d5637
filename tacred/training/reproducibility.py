"""The one place where training changes torch's global state for repeatable runs: the global generator reseeded
before every training step, and torch's NaN fill of new tensors turned off under ``deterministic: true``. Both are
restored when the Trainer's run ends (or fails)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback


def step_seed(seed: int, epoch: int, batch_idx: int, rank: int) -> int:
    """The seed of one training step: a mix of the run's seed and the step's place (epoch, batch, process)."""
    return (((seed * 1_000_003 + epoch) * 100_003 + batch_idx) * 7919 + rank) % 2**63


@contextlib.contextmanager
def no_uninitialized_fill() -> Iterator[None]:
    """``torch.use_deterministic_algorithms`` also fills every ``torch.empty`` with NaN (to expose reads of
    uninitialised memory): ~150 fills per training step here, which every kernel then overwrites. Off inside this
    block; the results are the same."""
    before = torch.utils.deterministic.fill_uninitialized_memory
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        yield
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = before


class ReproducibleSteps(Callback):
    """Dropout (and RReLU, word dropout) drawn from a generator reseeded right before each training step, from
    :func:`step_seed` of the seed ``seed_everything`` set (``PL_GLOBAL_SEED``), the epoch, the batch and the process.
    A step's draws then do not depend on what drew from the global generator before it: creating a DataLoader
    iterator draws from it, before the first epoch's hooks in a fresh process but after them in later epochs, so a
    per-epoch seed made a run resumed from ``last.ckpt`` diverge from an uninterrupted one.

    Given by :meth:`RelationExtractor.configure_callbacks`, so every Trainer that runs the model has it. From
    ``setup`` to ``teardown`` (or an exception) the global generators' states are forked (restored after) and, when
    deterministic algorithms are on, :func:`no_uninitialized_fill` applies.
    """

    def __init__(self) -> None:
        self._seed = 0
        self._restore: contextlib.ExitStack | None = None

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._seed = int(os.environ.get("PL_GLOBAL_SEED", 0))
        device = trainer.strategy.root_device  # where the module will run (it is moved there after setup)
        stack = contextlib.ExitStack()
        if device.type == "cpu":
            stack.enter_context(torch.random.fork_rng(devices=[]))
        else:  # torch.manual_seed (below) seeds every device of the type
            count = torch.get_device_module(device.type).device_count()
            stack.enter_context(torch.random.fork_rng(devices=range(count), device_type=device.type))
        if torch.are_deterministic_algorithms_enabled():
            stack.enter_context(no_uninitialized_fill())
        self._restore = stack

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        seed = step_seed(self._seed, trainer.current_epoch, batch_idx, trainer.global_rank)
        if pl_module.device.type == "cpu":
            # the CPU generator alone: torch.manual_seed also queues seeds for every accelerator backend,
            # ~2 ms per step here; the CPU draws are the same
            torch.default_generator.manual_seed(seed)
        else:
            torch.manual_seed(seed)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._restore_state()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._restore_state()

    def _restore_state(self) -> None:
        if self._restore is not None:
            self._restore.close()
            self._restore = None

"""Silence messages of the libraries underneath that a user of ``tacred`` would otherwise see and cannot act on.

Each entry says why it is dropped. Everything else Lightning, torch or LitServe says is still shown; ``tacred``'s own
warnings say what to do. The filters hold while a command runs (:func:`quiet_libraries`) and are removed after.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

# (logged message prefix, why it is not shown)
DROPPED_LOG_MESSAGES = (
    ("💡 Tip: For seamless cloud logging", "an advertisement for another package, printed by every Trainer"),
)
# (warning message regex, why it is not shown)
IGNORED_WARNINGS = (
    (r".*isinstance\(treespec, LeafSpec\)` is deprecated", "inside Lightning (torch 2.10+ deprecation), not our code"),
    (r".*is smaller than the logging interval", "tacred logs per epoch, never per step: the interval does not matter"),
    (r".*LightningCLI's args parameter is intended", "tacred passes its command line on purpose"),
    (r".*You are using a custom batch sampler `BucketBatchSampler` for prediction",
     "tacred's own sampler: in evaluation it yields every example once, never drops a batch (tests check it)"),
    (r"Checkpoint directory .* exists and is not empty",
     "the run's own checkpoints: fit resumes from them or, with --resume never, says it overwrites them"),
    (r"You're resuming from a checkpoint that ended before the epoch ended and your dataloader is not resumable",
     "tacred resumes its train loader itself, from the position it writes into every checkpoint (LastCheckpoint)"),
)
LIGHTNING_LOGGERS = ("lightning.pytorch", "lightning.fabric", "lightning")


class _DropMessages(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not any(message.startswith(prefix) for prefix, _ in DROPPED_LOG_MESSAGES)


@contextlib.contextmanager
def quiet_libraries() -> Iterator[None]:
    """While the block runs: :data:`IGNORED_WARNINGS` ignored, and :data:`DROPPED_LOG_MESSAGES` dropped by
    Lightning's loggers and the handlers Lightning attaches to them. Everything is as before after the block."""
    drop = _DropMessages()
    targets: list[logging.Filterer] = []
    for name in LIGHTNING_LOGGERS:
        logger = logging.getLogger(name)
        targets += [logger, *logger.handlers]
    with warnings.catch_warnings():
        for pattern, _ in IGNORED_WARNINGS:
            warnings.filterwarnings("ignore", message=pattern)
        for target in targets:
            target.addFilter(drop)
        try:
            yield
        finally:
            for target in targets:
                target.removeFilter(drop)


@contextlib.contextmanager
def tacred_log_lines() -> Iterator[None]:
    """``tacred``'s own INFO/WARNING lines on standard error (``WARNING tacred.x: ...``) while a command runs; the
    handler goes with the command, so a command run in-process leaves no handler on a stream that was closed."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("tacred")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)

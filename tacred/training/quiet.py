"""Silence messages of the libraries underneath that a user of ``tacred`` cannot act on.

Each entry says why it is dropped. Everything else Lightning, torch or LitServe says is still shown; ``tacred``'s own
warnings say what to do.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

# (logged message prefix, why it is not shown)
DROPPED_LOG_MESSAGES = (
    ("💡 Tip: For seamless cloud logging", "an advertisement for another package, printed by every Trainer"),
    ("`weights_only` was not set", "Lightning's note on its own checkpoint format; tacred sets what it needs"),
)
# (warning message regex, why it is not shown)
IGNORED_WARNINGS = (
    (r".*isinstance\(treespec, LeafSpec\)` is deprecated", "inside Lightning (torch 2.10+ deprecation), not our code"),
    (r".*is smaller than the logging interval", "tacred logs per epoch, never per step: the interval does not matter"),
    (r".*LightningCLI's args parameter is intended", "tacred passes its command line on purpose"),
    (r".*You are using a custom batch sampler `BucketBatchSampler` for prediction",
     "tacred's own sampler: in evaluation it yields every example once, never drops a batch (tests check it)"),
)


class _DropMessages(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not any(message.startswith(prefix) for prefix, _ in DROPPED_LOG_MESSAGES)


_FILTER = _DropMessages()


def quiet_libraries() -> None:
    """Install the filters (idempotent): on the handlers Lightning attaches to its loggers, and in ``warnings``."""
    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
    for pattern, _ in IGNORED_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)


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

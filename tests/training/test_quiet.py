"""quiet_libraries (tacred/training/quiet.py): the listed library messages are dropped while a command runs, every
other one still shows, and nothing stays installed after the command."""

from __future__ import annotations

import logging
import warnings

import lightning.pytorch  # noqa: F401  (its loggers log INFO, through a handler of their own)

from tacred.training.quiet import quiet_libraries

TIP = "💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](...)"
INTERVAL = "The number of training batches (5) is smaller than the logging interval Trainer(log_every_n_steps=20)."


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_the_listed_messages_are_dropped_inside_the_block_only() -> None:
    lines = Lines()
    lightning = logging.getLogger("lightning.pytorch")
    lightning.addHandler(lines)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with quiet_libraries():
                logging.getLogger("lightning.pytorch.trainer").info(TIP)
                logging.getLogger("lightning.pytorch.trainer").info("GPU available: False, used: False")
                warnings.warn(INTERVAL, UserWarning, stacklevel=1)
                warnings.warn("a warning nobody listed", UserWarning, stacklevel=1)
            assert lines.lines == ["GPU available: False, used: False"]
            assert [str(w.message) for w in caught] == ["a warning nobody listed"]
            logging.getLogger("lightning.pytorch.trainer").info(TIP)
            warnings.warn(INTERVAL, UserWarning, stacklevel=1)
        assert lines.lines[-1] == TIP and str(caught[-1].message) == INTERVAL
        assert not lines.filters and not lightning.filters
    finally:
        lightning.removeHandler(lines)


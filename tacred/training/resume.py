"""What ``tacred fit`` does with a run folder that already holds checkpoints: resume, or refuse, never overwrite
silently (``--resume never`` starts over and says so)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from tacred.checkpoints import read_checkpoint
from tacred.errors import ConfigError

log = logging.getLogger(__name__)

# the checkpoint field where tacred keeps how far a fit's current epoch had trained (written and read back by
# tacred.training.callbacks.LastCheckpoint): {"epoch": 0-based, "batches_done", "epoch_batches"}, batches of one process
RESUME_KEY = "tacred_resume"


def check_run_dir(run_dir: Path) -> None:
    """``--run_dir`` must be a folder or not exist yet."""
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"--run_dir {run_dir}: exists and is not a folder")
    for parent in run_dir.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"--run_dir {run_dir}: {parent} is not a folder")
            break


def resume_checkpoint(checkpoints: Path, mode: str) -> dict[str, Any] | None:
    """The checkpoint ``fit`` continues from (``checkpoints/last.ckpt``), or None for a fresh start.

    ``auto``: resume from ``last.ckpt``; a folder with other checkpoints but no ``last.ckpt`` is refused, since
    a fresh start would overwrite them. ``never``: start over, saying which checkpoints will be overwritten.
    """
    existing = sorted(p.name for p in checkpoints.glob("*.ckpt*")) if checkpoints.is_dir() else []
    if mode == "never":
        if existing:
            log.warning("--resume never: starting over in %s; its checkpoints (%s) will be overwritten",
                        checkpoints, ", ".join(existing))
        return None
    if mode != "auto":
        raise ConfigError(f"--resume {mode!r}: expected 'auto' or 'never'")
    last = checkpoints / "last.ckpt"
    if last.exists():
        checkpoint = read_checkpoint(last)  # a corrupt last.ckpt is an error, not a silent fresh start
        log.info("resuming from %s %s", last, resume_point(checkpoint))
        return checkpoint
    if existing:
        raise ConfigError(f"--run_dir: {checkpoints} holds {', '.join(existing)} but no last.ckpt to resume from; "
                          "pass --resume never to start over (overwriting them) or choose another --run_dir")
    return None


def resume_point(checkpoint: dict[str, Any]) -> str:
    """Where a ``last.ckpt`` stands: after N finished epochs, or inside an epoch after B of its batches (one written
    by ``--checkpoint_minutes``), as :class:`~tacred.training.callbacks.LastCheckpoint` recorded it."""
    epoch = int(checkpoint.get("epoch", -1))
    position = checkpoint.get(RESUME_KEY)
    if isinstance(position, dict):
        done, batches = int(position.get("batches_done", 0)), int(position.get("epoch_batches", 0))
        if 0 < done < batches:
            return f"inside epoch {int(position['epoch']) + 1}, after {done} of its batches"
    return f"after {epoch + 1} finished epoch(s)"

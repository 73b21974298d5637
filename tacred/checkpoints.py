"""Reading checkpoints with clear errors: a missing or corrupt file never turns into a silent fresh start."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used."""


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint on the CPU, raising :class:`CheckpointError` that names the file and the problem."""
    import torch

    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    if path.stat().st_size == 0:
        raise CheckpointError(f"checkpoint is empty (0 bytes), probably cut off while writing: {path}")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 - any failure here means the file is unusable
        raise CheckpointError(f"checkpoint is corrupt or not a PyTorch checkpoint: {path} ({type(err).__name__}: {err})") from err
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        raise CheckpointError(f"{path} is not a Lightning checkpoint (no 'state_dict')")
    return ckpt


def check_checkpoint(path: str | Path) -> None:
    """Raise :class:`CheckpointError` if ``path`` cannot be loaded."""
    read_checkpoint(path)

"""Reading checkpoints safely and with clear errors: a missing or corrupt file never turns into a silent fresh start,
and a checkpoint is unpickled with ``weights_only=True``, so one from a stranger cannot run code."""

from __future__ import annotations

import contextlib
import logging
import pickle
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tacred.errors import TacredError

log = logging.getLogger(__name__)

# where a run folder keeps its checkpoints, in the order they are chosen (the best dev F1 first)
RUN_CHECKPOINTS = ("checkpoints/best.ckpt", "checkpoints/last.ckpt", "best.ckpt", "last.ckpt")


class CheckpointError(TacredError, RuntimeError):
    """A checkpoint that cannot be used."""


def _allow_project_classes() -> None:
    """Allow-list the few non-tensor classes a tacred checkpoint holds (by value, nothing executable)."""
    import torch

    from tacred.models.config import NetworkConfig

    torch.serialization.add_safe_globals([NetworkConfig])


def is_lightning_ckpt_name(ckpt_path: str) -> bool:
    """Lightning's symbolic ``--ckpt_path`` values ("last", "best", "hpc", "registry:...") rather than a file."""
    return ckpt_path in ("last", "best", "hpc") or str(ckpt_path).startswith("registry")


def check_checkpoint_file(path: str | Path) -> Path:
    """The checks that need no torch (so a wrong path is answered before the slow imports): the file exists,
    is a file and is not empty."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    if path.is_dir():
        raise CheckpointError(f"{path}: is a folder, not a checkpoint file")
    if path.stat().st_size == 0:
        raise CheckpointError(f"checkpoint is empty (0 bytes), probably cut off while writing: {path}")
    return path


def resolve_checkpoint(path: str | Path) -> Path:
    """The checkpoint file that ``path`` names: the file itself, or for a run folder its ``checkpoints/best.ckpt``
    (best dev F1), else ``checkpoints/last.ckpt`` (the folder itself may be the ``checkpoints`` folder); the choice
    is logged. Raises :class:`CheckpointError` naming what was looked for."""
    path = Path(path)
    if not path.is_dir():
        return check_checkpoint_file(path)
    for name in RUN_CHECKPOINTS:
        if (path / name).is_file():
            chosen = path / name
            why = "the best dev F1" if chosen.name == "best.ckpt" else "the last epoch; no best.ckpt there"
            log.info("%s is a run folder: loading %s (%s)", path, chosen, why)
            return chosen
    raise CheckpointError(f"{path}: is a folder without a checkpoint (looked for {', '.join(RUN_CHECKPOINTS)})")


RUN_CONFIG = "config.yaml"  # what `tacred fit` writes into its run folder, beside checkpoints/


def run_config(ckpt_path: str | Path) -> Path | None:
    """The ``config.yaml`` of the run folder a checkpoint was saved in (``RUN/checkpoints/X.ckpt`` →
    ``RUN/config.yaml``), written by the same ``tacred fit``; None for a checkpoint outside a run folder."""
    ckpt = Path(ckpt_path)
    found = ckpt.parent.parent / RUN_CONFIG if ckpt.parent.name == "checkpoints" else None
    return found if found is not None and found.is_file() else None


def _pickle_like(path: Path) -> bool:
    """Whether the file starts as ``torch.save`` writes: a zip archive, or a pickle (protocol 2 or later)."""
    with path.open("rb") as f:
        head = f.read(4)
    return head == b"PK\x03\x04" or (len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5)


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint on the CPU, raising :class:`CheckpointError` that names the file and the problem.

    Only tensors, plain Python values and allow-listed project classes are unpickled (``weights_only=True``);
    a checkpoint that would import anything else is refused, not run.
    """
    path = check_checkpoint_file(path)
    if _once is not None:  # inside reading_once(): an unchanged file is read from disk once
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        if key not in _once:
            _once[key] = _read(path)
        return _once[key]
    return _read(path)


_once: dict[tuple[str, int, int], dict[str, Any]] | None = None


@contextlib.contextmanager
def reading_once() -> Iterator[None]:
    """Within the block, :func:`read_checkpoint` reads each checkpoint file from disk once and hands the same
    contents to every later reader (callers never change them): one command reads its ``--ckpt_path`` once for
    its checks, its configuration, its vocabularies and Lightning's restore. The contents are let go after it."""
    global _once
    outer = _once
    _once = {} if outer is None else outer
    try:
        yield
    finally:
        _once = outer


def _read(path: Path) -> dict[str, Any]:
    if not _pickle_like(path):
        raise CheckpointError(f"{path}: not a tacred checkpoint (not a file written by torch.save: a checkpoint is a "
                              "zip archive written by `tacred fit`)")
    import torch

    _allow_project_classes()
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        # torch's message advises loading with weights_only=False, which would run the file's code: not repeated
        found = re.search(r"(?:Unsupported global|unsupported GLOBAL)[^\n]*?([\w.]+\.[\w]+)", str(err))
        if found or "weights_only" in str(err):
            what = found.group(1) if found else "code"
            raise CheckpointError(f"{path}: refused: not a tacred checkpoint (it would import {what}, which a tacred "
                                  "checkpoint never holds; nothing of it was run)") from None
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(f"{path}: not a tacred checkpoint (corrupt, or not written by torch.save: {first})") from None
    except Exception as err:  # noqa: BLE001 - any failure here means the file is unusable
        raise CheckpointError(f"{path}: not a tacred checkpoint (corrupt, or not written by torch.save: "
                              f"{type(err).__name__}: {err})") from err
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        raise CheckpointError(f"{path}: not a tacred checkpoint (a PyTorch file without a 'state_dict')")
    return ckpt


def check_compatible(checkpoint: dict[str, Any], model: Any, path: str | Path) -> None:
    """Raise :class:`CheckpointError` when the checkpoint's weights do not fit ``model`` (other labels,
    vocabulary or architecture), naming the first differing parameter instead of PyTorch's size-mismatch dump."""
    saved_vocab = checkpoint.get("tacred_vocab")
    vocab = getattr(model, "vocab", None)
    if saved_vocab is not None and vocab is not None and list(saved_vocab.get("labels", [])) != vocab.labels.itos:
        theirs, ours = list(saved_vocab.get("labels", [])), vocab.labels.itos
        diff = sorted(set(theirs) ^ set(ours))
        detail = f"differing labels {diff[:5]}" if diff else "the same labels in another order"
        raise CheckpointError(f"{path}: trained with {len(theirs)} labels, this configuration has {len(ours)} "
                              f"({detail}); use the data and labels the checkpoint was trained with")
    state = model.state_dict()
    for name, tensor in checkpoint["state_dict"].items():
        if name in state and tuple(state[name].shape) != tuple(tensor.shape):
            raise CheckpointError(f"{path}: parameter {name} has shape {tuple(tensor.shape)} in the checkpoint but "
                                  f"{tuple(state[name].shape)} in this configuration (another vocabulary or network?)")
    missing = [name for name in state if name not in checkpoint["state_dict"] and not name.endswith("class_weights")]
    if missing:
        raise CheckpointError(f"{path}: the checkpoint has no parameter {missing[0]} (and {len(missing) - 1} more) "
                              f"that this configuration needs (another network?)")


def trained_seconds(ckpt: Mapping[str, Any]) -> float | None:
    """Seconds of training up to this checkpoint, over every leg of a resumed run, as the fit's ``Timer`` callback
    stored them (:class:`tacred.training.cli.TacredCLI` adds one); None for a checkpoint written without one."""
    state = (ckpt.get("callbacks") or {}).get("Timer")  # Lightning's Timer keeps its state under its class name
    seconds = (state.get("time_elapsed") or {}).get("train") if isinstance(state, Mapping) else None
    return None if seconds is None else float(seconds)

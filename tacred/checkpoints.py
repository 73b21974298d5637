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


# Project classes that checkpoints of earlier tacred versions pickled (their hyperparameters held the NetworkConfig
# object; today's hold its fields as a dict). Each is read back by value as a SavedFields, then turned into the dict
# of its fields: the class named in the file is never imported (the checkpoints layer imports nothing above it).
PICKLED_CLASSES = ("tacred.models.config.NetworkConfig",)


class SavedFields:
    """A configuration object pickled by an earlier tacred, read back as its fields (by value: nothing runs)."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def _allow_project_classes() -> None:
    """Allow-list the classes of :data:`PICKLED_CLASSES`, each read as a :class:`SavedFields`."""
    import torch

    torch.serialization.add_safe_globals([(SavedFields, name) for name in PICKLED_CLASSES])


def _fields_as_dicts(ckpt: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint with each :class:`SavedFields` among its hyperparameters turned into the dict of its fields."""
    hparams = ckpt.get("hyper_parameters")
    if isinstance(hparams, dict):
        for key, value in hparams.items():
            if isinstance(value, SavedFields):
                hparams[key] = dict(vars(value))
    return ckpt


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
    return _fields_as_dicts(ckpt)


def trained_seconds(ckpt: Mapping[str, Any]) -> float | None:
    """Seconds of training up to this checkpoint, over every leg of a resumed run, as the fit's ``Timer`` callback
    stored them (:class:`tacred.training.cli.TacredCLI` adds one); None for a checkpoint written without one."""
    state = (ckpt.get("callbacks") or {}).get("Timer")  # Lightning's Timer keeps its state under its class name
    seconds = (state.get("time_elapsed") or {}).get("train") if isinstance(state, Mapping) else None
    return None if seconds is None else float(seconds)

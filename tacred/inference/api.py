"""Loading a trained model for prediction: :func:`open_model`, the one loader that ``tacred.load_model``, ``tacred
extract``, ``tacred serve`` and ``tacred predict --sentences`` share.

``path`` is a checkpoint, a run folder (its ``checkpoints/best.ckpt``, else ``last.ckpt``), a folder written by
``tacred export --format onnx`` (run by ONNX Runtime, without torch) or the name of a model shipped with tacred
(``kbp37``: :mod:`tacred.inference.shipped`); :func:`resolve_model` is the one place that tells them apart. Whatever the backend, the same inputs are
accepted (:mod:`tacred.inference.inputs`), the same :class:`InputError` is raised and the same :class:`Prediction`
objects come back (:mod:`tacred.inference.predictor`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.inference.input_rules import MAX_TOKENS
from tacred.inference.inputs import InputError
from tacred.inference.outputs import Prediction
from tacred.inference.predictor import Predictor

if TYPE_CHECKING:
    from tacred.inference.joint import JointPredictor
    from tacred.inference.onnx_joint import OnnxJointPredictor

__all__ = ["InputError", "ModelSource", "Prediction", "Predictor", "open_model", "resolve_model", "tuned_threshold"]

THRESHOLD_FILE = "threshold.json"  # what `tacred threshold tune` writes beside a checkpoint


def open_model(path: str | Path, device: str = "auto", threshold: float | str | None = None,
               spacy_model: str | None = None, batch_size: int = 50, max_tokens: int | None = MAX_TOKENS,
               ner: str | None = "auto") -> Predictor | JointPredictor | OnnxJointPredictor:
    """The one loader of a trained model, whatever ``path`` names (:func:`resolve_model`): an exported ONNX folder,
    a shipped model's name, a checkpoint or a run folder, read once. A relation classifier comes back as a
    :class:`Predictor`, a joint entity-and-relation checkpoint as a :class:`~tacred.inference.joint.JointPredictor`
    (its exported folder as a :class:`~tacred.inference.onnx_joint.OnnxJointPredictor`).
    The options are :func:`tacred.load_model`'s, which wraps what this gives with raw-text extraction."""
    options = {"spacy_model": spacy_model, "batch_size": batch_size, "max_tokens": max_tokens}
    source = resolve_model(path)
    given = threshold
    threshold = tuned_threshold(source.threshold_folder) if threshold is None else threshold
    if source.kind == "export":
        from tacred.inference.onnx_backend import OnnxRelationModel, export_kind

        if export_kind(source.path) == "joint":
            from tacred.inference.onnx_joint import OnnxJointPredictor

            _joint_ner(ner, source)
            return OnnxJointPredictor(source.path, device=device, threshold=given, **options)
        predictor = OnnxRelationModel(source.path, device=device, threshold=threshold, **options)
        return with_ner(reported(predictor), ner, source.ner_folders)
    from tacred.inference.joint import JointPredictor, is_joint_checkpoint
    from tacred.inference.torch_backend import load_checkpoint_predictor

    checkpoint = model_checkpoint(source)  # read once, whichever model it holds
    if is_joint_checkpoint(checkpoint):
        _joint_ner(ner, source)
        # its dev threshold is in the checkpoint; a given one is a probability, a threshold.json is refused there
        return JointPredictor(checkpoint, source.path, device=device, threshold=given, **options)
    predictor = load_checkpoint_predictor(source.path, device=device, threshold=threshold, checkpoint=checkpoint,
                                          **options)
    return with_ner(reported(predictor), ner, source.ner_folders)


def _joint_ner(ner: str | None, source: ModelSource) -> None:
    """A joint model finds its own entities: no NER to attach."""
    if ner not in (None, "auto", "stock"):
        raise InputError(f"--ner {ner}: {source.path} is a joint model, which finds its own entities")


def model_checkpoint(source: ModelSource) -> dict[str, Any]:
    """The checkpoint contents of a model argument (:func:`resolve_model`), read once: a checkpoint file's, or a
    shipped model's rebuilt from its folder (:func:`tacred.inference.shipped.shipped_checkpoint`). An exported
    folder holds no checkpoint: a :class:`~tacred.checkpoints.CheckpointError` says so (``tacred export`` and
    ``open_model`` share this reading)."""
    from tacred.checkpoints import CheckpointError, read_checkpoint

    if source.kind == "export":
        raise CheckpointError(f"{source.path}: an exported folder (model.onnx), not a checkpoint; give the "
                              "checkpoint, run folder or shipped model it was exported from")
    if source.kind == "shipped":
        from tacred.inference.shipped import shipped_checkpoint

        return shipped_checkpoint(str(source))
    return read_checkpoint(source.path)


@dataclass(frozen=True)
class ModelSource:
    """What a model argument names (:func:`resolve_model`): ``kind`` is ``export`` (an ONNX folder), ``checkpoint``
    (``path`` is the checkpoint file) or ``shipped`` (``path`` is the shipped folder, ``name`` its name)."""

    kind: str
    path: Path
    name: str | None = None

    @property
    def threshold_folder(self) -> Path:
        """Where a tuned ``threshold.json`` goes with the model."""
        return self.path.parent if self.kind == "checkpoint" else self.path

    @property
    def ner_folders(self) -> list[Path]:
        """Where a trained NER saved with the model (``ner/``) is looked for: beside a checkpoint or in its run
        folder, in an exported or shipped folder."""
        return [self.path.parent, self.path.parent.parent] if self.kind == "checkpoint" else [self.path]

    def __str__(self) -> str:
        """What names the model on a command line: the shipped name, else the path."""
        return self.name if self.name is not None else str(self.path)


def resolve_model(path: str | Path) -> ModelSource:
    """The one reading of a model argument (``load_model``'s ``path``, ``--ckpt_path``/``--model`` of ``tacred
    extract``, ``serve`` and ``predict``): an exported folder, a checkpoint or run folder, or, when nothing of that
    name is on disk and it has no folder part or suffix, the name of a shipped model. An unknown name is an
    :class:`~tacred.inference.shipped.UnknownModelError` listing the shipped models; a missing path a
    :class:`~tacred.checkpoints.CheckpointError`."""
    from tacred.checkpoints import resolve_checkpoint
    from tacred.inference.onnx_backend import is_export_folder
    from tacred.inference.shipped import check_model_argument, looks_like_name, shipped_folder

    check_model_argument(path)
    if is_export_folder(path):
        return ModelSource("export", Path(path))
    if not Path(path).exists() and looks_like_name(path):
        return ModelSource("shipped", shipped_folder(str(path)), str(path))
    return ModelSource("checkpoint", resolve_checkpoint(path))


def with_ner(predictor: Predictor, ner: str | None, folders: list[Any]) -> Predictor:
    """``predictor`` with the entity source ``ner`` resolved (see :func:`load_model`; ``auto`` looks for ``ner/`` in
    ``folders``), a trained NER said on the ``tacred`` logger."""
    from tacred.ner.training import model_folder, saved_ner

    if ner in (None, "stock"):
        found = None
    elif ner == "auto":
        found = saved_ner(folders)
    else:
        found = model_folder(ner)
    predictor.ner = None if found is None else str(found)
    if found is not None:
        logging.getLogger("tacred").info("entities from the trained NER %s (--ner stock: spaCy's own)", found)
    return predictor


def tuned_threshold(folder: str | Path) -> str | None:
    """The ``threshold.json`` of a checkpoint's folder or an exported folder, when there is one."""
    path = Path(folder) / THRESHOLD_FILE
    return str(path) if path.is_file() else None


def reported(predictor: Predictor) -> Predictor:
    """``predictor``, its threshold file (when one is used) said on the ``tacred`` logger."""
    if predictor.threshold_source not in (None, "given"):
        from tacred.evaluation.decision import describe_threshold

        logging.getLogger("tacred").info(
            "no-relation threshold %s from %s (a log-margin; threshold=0 predicts the plain argmax)",
            describe_threshold(predictor.threshold), predictor.threshold_source)
    return predictor

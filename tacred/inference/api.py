"""The Python prediction API: ``load_model(path).predict(...)`` on marked strings, OpenNRE-style dicts or TACRED
dicts, and ``.extract(text)`` on plain text.

``path`` is a checkpoint, a run folder (its ``checkpoints/best.ckpt``, else ``last.ckpt``) or a folder written by
``tacred export --format onnx`` (run by ONNX Runtime, without torch). Whatever the backend, the same inputs are
accepted (:mod:`tacred.inference.inputs`), the same :class:`InputError` is raised and the same :class:`Prediction`
objects come back (:mod:`tacred.inference.predictor`).
"""

from __future__ import annotations

from pathlib import Path

from tacred.inference.inputs import InputError
from tacred.inference.outputs import Prediction
from tacred.inference.predictor import Predictor

__all__ = ["InputError", "Prediction", "Predictor", "load_model"]


def load_model(path: str | Path, device: str = "auto", threshold: float | str | None = None,
               spacy_model: str | None = None, batch_size: int = 50, max_tokens: int | None = None) -> Predictor:
    """Load a trained model for prediction: a checkpoint (vocabularies and configuration are inside), a run folder,
    or an exported ONNX folder.

    ``device``: ``auto`` (CUDA when present, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``; one that is absent is a
    :class:`tacred.devices.DeviceError`. ``threshold``: the no-relation threshold (a number or a ``threshold.json``).
    ``max_tokens``: inputs longer than this are an :class:`InputError` (default: no limit).

    >>> m = load_model("runs/demo")                                    # doctest: +SKIP
    >>> m.predict("<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said .")
    """
    from tacred.inference.onnx_backend import OnnxRelationModel, is_export_folder

    options = {"threshold": threshold, "spacy_model": spacy_model, "batch_size": batch_size, "max_tokens": max_tokens}
    if is_export_folder(path):
        return OnnxRelationModel(path, device=device, **options)
    from tacred.checkpoints import resolve_checkpoint

    checkpoint = resolve_checkpoint(path)
    from tacred.inference.torch_backend import load_checkpoint_predictor

    return load_checkpoint_predictor(checkpoint, device=device, **options)

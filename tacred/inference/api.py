"""The Python prediction API: ``load_model(path).predict(...)`` on marked strings, OpenNRE-style dicts or TACRED
dicts, and ``.extract(text)`` on plain text.

``path`` is a checkpoint, a run folder (its ``checkpoints/best.ckpt``, else ``last.ckpt``) or a folder written by
``tacred export --format onnx`` (run by ONNX Runtime, without torch). Whatever the backend, the same inputs are
accepted (:mod:`tacred.inference.inputs`), the same :class:`InputError` is raised and the same :class:`Prediction`
objects come back (:mod:`tacred.inference.predictor`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from tacred.inference.input_rules import MAX_TOKENS
from tacred.inference.inputs import InputError
from tacred.inference.outputs import Prediction
from tacred.inference.predictor import Predictor

__all__ = ["InputError", "Prediction", "Predictor", "load_model", "tuned_threshold"]

THRESHOLD_FILE = "threshold.json"  # what `tacred threshold tune` writes beside a checkpoint


def load_model(path: str | Path, device: str = "auto", threshold: float | str | None = None,
               spacy_model: str | None = None, batch_size: int = 50, max_tokens: int | None = MAX_TOKENS,
               ner: str | None = "auto") -> Predictor:
    """Load a trained model for prediction: a checkpoint (vocabularies and configuration are inside), a run folder,
    or an exported ONNX folder.

    ``device``: ``auto`` (CUDA when present, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``; one that is absent is a
    :class:`tacred.devices.DeviceError`. ``threshold``: the no-relation threshold, a log-margin (a number or a
    ``threshold.json``); by default the ``threshold.json`` beside the checkpoint or in the exported folder when there
    is one (reported on the ``tacred`` logger and in ``.threshold_source``), else none; ``0`` is the plain argmax.
    ``max_tokens``: inputs longer than this are an :class:`InputError` (default 512, as ``tacred serve``; None: no
    limit). ``ner``: where raw text's entities come from: ``auto`` (the trained NER saved with the model,
    ``RUN/ner``, when there is one, else spaCy's own), ``stock`` (spaCy's own) or the folder of a trained NER
    (``tacred ner train``); the one used is ``.ner`` (None: spaCy's own).

    >>> m = load_model("runs/demo")                                    # doctest: +SKIP
    >>> m.predict("<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said .")
    """
    from tacred.inference.onnx_backend import OnnxRelationModel, is_export_folder

    options = {"spacy_model": spacy_model, "batch_size": batch_size, "max_tokens": max_tokens}
    if is_export_folder(path):
        threshold = tuned_threshold(path) if threshold is None else threshold
        return with_ner(reported(OnnxRelationModel(path, device=device, threshold=threshold, **options)), ner,
                        [path])
    from tacred.checkpoints import resolve_checkpoint

    checkpoint = resolve_checkpoint(path)
    from tacred.inference.torch_backend import load_checkpoint_predictor

    threshold = tuned_threshold(checkpoint.parent) if threshold is None else threshold
    predictor = reported(load_checkpoint_predictor(checkpoint, device=device, threshold=threshold, **options))
    return with_ner(predictor, ner, [checkpoint.parent, checkpoint.parent.parent])


def with_ner(predictor: Predictor, ner: str | None, folders: list[Any]) -> Predictor:
    """``predictor`` with the entity source ``ner`` resolved (see :func:`load_model`; ``auto`` looks for ``ner/`` in
    ``folders``), a trained NER said on the ``tacred`` logger."""
    from tacred.data.ner_training import model_folder, saved_ner

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

"""Loading a trained model for prediction: :func:`open_model`, the one loader that ``tacred.load_model``, ``tacred
extract``, ``tacred serve`` and ``tacred predict --sentences`` share.

``path`` is a checkpoint, a run folder (its ``checkpoints/best.ckpt``, else ``last.ckpt``), a folder written by
``tacred export --format onnx`` (run by ONNX Runtime, without torch) or the name of a model shipped with tacred
(``kbp37``: :mod:`tacred.inference.shipped`). One pass, each step once: what the argument names and holds is read
(:func:`tacred.inference.sources.resolve_model`), the device is resolved, and the model is built from what was read.
Whatever the backend, the same inputs are accepted (:mod:`tacred.inference.inputs`), the same :class:`InputError` is
raised and the same :class:`Prediction` objects come back (:mod:`tacred.inference.predictor`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from tacred.checkpoints import CheckpointError
from tacred.data.vocab import Vocabularies
from tacred.devices import model_device, model_precision
from tacred.inference.encoding import build_encoder
from tacred.inference.input_rules import MAX_TOKENS
from tacred.inference.inputs import InputError
from tacred.inference.outputs import Prediction
from tacred.inference.predictor import Predictor
from tacred.inference.sources import (
    PREDICTOR_FILE,
    THRESHOLD_FILE,
    ModelSource,
    model_checkpoint,
    resolve_model,
)
from tacred.ner.training import chosen_ner

if TYPE_CHECKING:
    from tacred.inference.joint import JointPredictor
    from tacred.inference.onnx_joint import OnnxJointPredictor

__all__ = ["THRESHOLD_FILE", "InputError", "ModelSource", "Prediction", "Predictor", "model_checkpoint", "open_model",
           "resolve_model"]


def open_model(path: str | Path, device: str = "auto", threshold: float | str | None = None,
               spacy_model: str | None = None, batch_size: int = 50, max_tokens: int | None = MAX_TOKENS,
               ner: str | None = "auto", precision: str | None = None,
               ) -> Predictor | JointPredictor | OnnxJointPredictor:
    """The one loader of a trained model, whatever ``path`` names: an exported ONNX folder, a shipped model's name, a
    checkpoint or a run folder, read once. A relation classifier comes back as a :class:`Predictor` (its
    ``threshold.json`` used when no ``threshold`` is given, its saved NER when ``ner`` is ``auto``), a joint
    entity-and-relation checkpoint as a :class:`~tacred.inference.joint.JointPredictor` (its exported folder as a
    :class:`~tacred.inference.onnx_joint.OnnxJointPredictor`; its relation threshold is kept with it, a given one is
    a probability). The options are :func:`tacred.load_model`'s, which wraps what this gives with raw-text
    extraction."""
    source = resolve_model(path, read=True)
    kind = source.model_kind
    joint = kind in ("joint", "onnx_joint")
    if joint and ner not in (None, "auto", "stock"):
        raise InputError(f"--ner {ner}: {source} is a joint model, which finds its own entities")
    found_ner = None if joint else chosen_ner(ner, source.ner_folders)
    # an absent device or an unknown precision: an error here
    resolved, providers = model_device(device, onnx=source.kind == "export")
    precision = model_precision(precision, resolved, onnx=source.kind == "export", source=source)
    options = {"spacy_model": spacy_model, "batch_size": batch_size, "max_tokens": max_tokens}
    if kind == "onnx_joint":
        from tacred.inference.onnx_joint import OnnxJointPredictor

        return OnnxJointPredictor(source.path, source.contents[PREDICTOR_FILE], resolved, providers, threshold,
                                  **options)
    if kind == "joint":
        from tacred.inference.joint import JointPredictor

        return JointPredictor(source.contents, source.path, resolved, threshold, precision=precision, **options)
    try:
        vocab = Vocabularies.from_dict(source.saved_vocab)  # once, for the network and the input encoder
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{source}: its vocabularies do not fit this version of tacred ({type(err).__name__}: "
                              f"{err})") from None
    if kind == "onnx":
        from tacred.inference.onnx_backend import OnnxBackend

        backend = OnnxBackend(source.path / "model.onnx", resolved, providers,
                              source.contents[PREDICTOR_FILE].get("output", "probabilities"))
    else:
        from tacred.inference.trained import torch_backend

        backend = torch_backend(source.contents, vocab, source.path, resolved, precision)
    encoder = build_encoder(source.encoder_kind, vocab, str(source))
    threshold = source.tuned_threshold if threshold is None else threshold
    predictor = Predictor(encoder, backend, threshold, **options)
    predictor.ner = None if found_ner is None else str(found_ner)
    predictor.precision = precision
    if found_ner is not None:
        logging.getLogger("tacred").info("entities from the trained NER %s (--ner stock: spaCy's own)", found_ner)
    return predictor

"""The ONNX Runtime backend: an exported folder (``tacred export --format onnx``) predicts with numpy and
onnxruntime alone, neither torch nor Lightning, under the same contract as ``load_model``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from tacred.checkpoints import CheckpointError
from tacred.inference.encoding import build_encoder, default_encoder
from tacred.inference.input_rules import MAX_TOKENS
from tacred.inference.predictor import Predictor

PREDICTOR_FILE = "predictor.json"  # {"format": 1, "encoder": "words", "output": "probabilities"}


def is_export_folder(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / "model.onnx").is_file()


def export_kind(folder: str | Path) -> str:
    """What an exported folder holds: ``joint`` (an entity-and-relation model, whose ``predictor.json`` says so:
    :mod:`tacred.inference.onnx_joint`) or ``relation`` (a relation classifier, read here)."""
    path = Path(folder) / PREDICTOR_FILE
    meta = read_json(path) if path.is_file() else {}
    return "joint" if isinstance(meta, dict) and meta.get("kind") == "joint" else "relation"


class OnnxBackend:
    """Runs ``model.onnx`` on the encoder's arrays with the providers of :func:`tacred.devices.onnx_providers`."""

    def __init__(self, model_path: str | Path, device: str = "auto", output: str = "probabilities") -> None:
        import onnxruntime as ort

        from tacred.devices import onnx_providers

        self.device, providers = onnx_providers(device)
        self.session = ort.InferenceSession(str(model_path), providers=providers)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.output = output

    def probabilities(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run([self.output], {name: arrays[name] for name in self.inputs})[0]


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{path}: cannot be read as JSON ({err})") from None


class OnnxRelationModel(Predictor):
    """A :class:`~tacred.inference.predictor.Predictor` for an exported folder: ``model.onnx``, ``vocab.json`` and
    ``predictor.json`` (the input encoder; folders exported before it existed use the word encoder).

    Args: as :func:`tacred.load_model` (``device``: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``).
    """

    def __init__(self, folder: str | Path, device: str = "auto", threshold: float | str | None = None,
                 spacy_model: str | None = None, batch_size: int = 50, max_tokens: int | None = MAX_TOKENS) -> None:
        folder = Path(folder)
        if not is_export_folder(folder):
            raise CheckpointError(f"{folder}: not an exported model folder (no model.onnx; write one with "
                                  "`tacred export --format onnx`)")
        if export_kind(folder) == "joint":
            raise CheckpointError(f"{folder}: an exported joint entity-and-relation model; load it with "
                                  "tacred.load_model (or tacred.inference.onnx_joint.OnnxJointPredictor)")
        meta = read_json(folder / PREDICTOR_FILE) if (folder / PREDICTOR_FILE).is_file() else {}
        vocab = read_json(folder / "vocab.json")
        encoder = build_encoder(meta.get("encoder") or default_encoder(vocab), {"vocab": vocab}, str(folder))
        backend = OnnxBackend(folder / "model.onnx", device, meta.get("output", "probabilities"))
        super().__init__(encoder, backend, threshold=threshold, spacy_model=spacy_model, batch_size=batch_size,
                         max_tokens=max_tokens)
        self.folder = folder

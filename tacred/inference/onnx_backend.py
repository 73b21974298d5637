"""The ONNX Runtime backend: an exported folder (``tacred export --format onnx``) predicts with numpy and
onnxruntime alone, neither torch nor Lightning, under the same contract as ``load_model``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

PREDICTOR_FILE = "predictor.json"  # {"format": 1, "encoder": "words", "output": "probabilities"}

Providers = list[str | tuple[str, dict[str, str]]]  # ONNX Runtime's execution providers (tacred.devices.model_device)


class OnnxBackend:
    """Runs ``model.onnx`` on the encoder's arrays on ``device`` with its ``providers``
    (:func:`tacred.devices.model_device`)."""

    def __init__(self, model_path: str | Path, device: str, providers: Providers,
                 output: str = "probabilities") -> None:
        import onnxruntime as ort

        self.device = device
        self.session = ort.InferenceSession(str(model_path), providers=providers)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.output = output

    def probabilities(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run([self.output], {name: arrays[name] for name in self.inputs})[0]

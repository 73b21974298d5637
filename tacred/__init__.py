"""tacred: position-aware self-attention (Bilan & Roth, 2018) for sentence-level relation extraction.

``from tacred import load_model`` gives the Python API (:mod:`tacred.extraction.model`: ``m.predict``, ``m.extract``);
it is imported on first use so that ``import tacred`` (and the ``tacred`` command) stays fast.
"""

from typing import Any

__version__ = "0.1.0"
__all__ = ["Model", "Prediction", "Predictor", "load_model"]


def __getattr__(name: str) -> Any:
    if name in ("Model", "load_model"):
        from tacred.extraction import model

        return getattr(model, name)
    if name in __all__:
        from tacred.inference import api

        return getattr(api, name)
    raise AttributeError(f"module 'tacred' has no attribute {name!r}")

"""Training with Lightning: the LightningModule and data module around the plain networks of :mod:`tacred.models`,
the LightningCLI behind ``tacred fit/validate/test/predict``, and what a run folder holds (checkpoints, resuming,
per-epoch rows, progress lines, experiment tracking, test reports).

``from tacred.training import fit, evaluate`` gives the Python entry points (:mod:`tacred.training.api`); they are
imported on first use, so that importing a module of this package does not load Lightning's command line.
"""

from typing import Any

__all__ = ["FitError", "evaluate", "fit"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tacred.training import api

        return getattr(api, name)
    raise AttributeError(f"module 'tacred.training' has no attribute {name!r}")

"""A CSV logger that appends to the run's ``metrics.csv`` when a run resumes (Lightning's deletes it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightning.pytorch.loggers import CSVLogger


class ResumableCSVLogger(CSVLogger):
    """``metrics.csv`` in ``save_dir/version``; an existing file (from before a restart) is kept and extended."""

    @property
    def experiment(self) -> Any:
        if self._experiment is not None:
            return self._experiment
        path = Path(self.log_dir) / "metrics.csv"
        previous = path.read_text(encoding="utf-8") if path.is_file() else None
        experiment = super().experiment  # Lightning's writer removes an existing metrics.csv here
        if previous:
            path.write_text(previous, encoding="utf-8")
            experiment.metrics_keys = previous.splitlines()[0].split(",")
        return experiment

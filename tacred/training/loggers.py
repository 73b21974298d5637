"""A CSV logger with one row per epoch that extends the run's ``metrics.csv`` when a run resumes (Lightning's
writes one row per logging call and deletes an existing file)."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Any

from lightning.pytorch.core.saving import save_hparams_to_yaml
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.utilities import rank_zero_only

from tacred.io import atomic_path, read_csv_rows


def _number(text: str) -> float | int | None:
    if text is None or not str(text).strip():
        return None
    value = float(text)
    return int(value) if value.is_integer() and "." not in str(text) and "e" not in str(text).lower() else value


class EpochRowWriter:
    """``metrics.csv`` with one row per epoch: everything logged for an epoch, plus what was logged without an epoch
    just before it (the learning rate at the epoch's start), merged into that epoch's row. The file is rewritten
    whole (atomically) on every save; an existing file is read first and continued, and an epoch logged again (a
    resumed run repeating an unfinished epoch) replaces its values.

    What :class:`ResumableCSVLogger` hands its ``experiment`` (Lightning's ``ExperimentWriter`` would delete an
    existing ``metrics.csv``): ``log_metrics``, ``log_hparams`` (``hparams.yaml``, as Lightning writes it) and
    ``save``."""

    NAME_METRICS_FILE = "metrics.csv"
    NAME_HPARAMS_FILE = "hparams.yaml"

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.metrics_file_path = os.path.join(log_dir, self.NAME_METRICS_FILE)
        os.makedirs(log_dir, exist_ok=True)
        self.hparams: dict[str, Any] = {}
        self.rows: dict[int, dict[str, Any]] = {}
        self._pending: dict[str, Any] = {}  # logged without an epoch: goes into the next epoch's row
        self._dirty = False
        path = Path(self.metrics_file_path)
        if path.is_file():
            for row in read_csv_rows(path)[1]:  # the rows as written: continued, never reinterpreted
                self._add({k: v for k, v in ((k, _number(v)) for k, v in row.items() if k) if v is not None})
            self._pending = {}
            self._dirty = False

    @property
    def metrics(self) -> list[dict[str, Any]]:
        """The rows by epoch (Lightning's CSV logger counts them for a step it was not given)."""
        return [self.rows[epoch] for epoch in sorted(self.rows)]

    def log_hparams(self, params: dict[str, Any]) -> None:
        self.hparams.update(params)
        save_hparams_to_yaml(os.path.join(self.log_dir, self.NAME_HPARAMS_FILE), self.hparams)

    def _add(self, metrics: dict[str, Any]) -> None:
        if metrics.get("epoch") is None:
            self._pending.update(metrics)
            return
        epoch = int(metrics["epoch"])
        row = self.rows.setdefault(epoch, {})
        step = max(int(row.get("step", 0)), int(metrics.get("step", 0)), int(self._pending.get("step", 0)))
        row.update(self._pending)
        row.update(metrics)
        row.update(epoch=epoch, step=step)
        self._pending = {}
        self._dirty = True

    def log_metrics(self, metrics_dict: dict[str, Any], step: int | None = None) -> None:
        metrics = {k: v.item() if hasattr(v, "item") else v for k, v in metrics_dict.items()}
        metrics["step"] = step if step is not None else len(self.rows)
        self._add(metrics)

    def save(self) -> None:
        if not self._dirty:
            return
        keys = sorted({k for row in self.rows.values() for k in row})
        path = Path(self.metrics_file_path)
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=keys)
            writer.writeheader()
            for epoch in sorted(self.rows):
                writer.writerow({k: _cell(v) for k, v in self.rows[epoch].items()})
        self._dirty = False


def _cell(value: Any) -> Any:
    return value if not isinstance(value, float) or math.isfinite(value) else str(value)


class ResumableCSVLogger(CSVLogger):
    """``metrics.csv`` in ``save_dir/version``, one row per epoch (:class:`EpochRowWriter`); an existing file (from
    before a restart) is kept and extended."""

    _rows: EpochRowWriter | None = None  # created on first use, like CSVLogger's own writer

    @property
    def experiment(self) -> Any:
        if self._rows is None:
            self._rows = EpochRowWriter(self.log_dir)
        return self._rows

    @rank_zero_only
    def finalize(self, status: str) -> None:
        if self._rows is not None:  # nothing logged in this process (e.g. a DDP launcher): nothing to write
            self._rows.save()

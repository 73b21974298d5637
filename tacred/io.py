"""Files the way every part of tacred writes and reads them: atomic writes, JSON and JSON Lines, the prediction
records of ``*predictions*.jsonl`` and the rows of a run's ``metrics.csv``. No torch here: ``tacred score`` uses it.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tacred.errors import TacredError


@contextmanager
def atomic_path(path: str | Path, keep_suffix: bool = False) -> Iterator[Path]:
    """A temporary name beside ``path`` to write to, renamed over ``path`` when the block ends and removed when it
    fails: readers, parallel writers and an interrupted run see the old file or the whole new one, never half.

    ``keep_suffix`` ends the temporary name with ``path``'s suffix (for writers that pick a format by it, such as
    ``savefig`` or ``np.savez``); otherwise it ends in ``.tmp``.
    """
    path = Path(path)
    unique = uuid.uuid4().hex  # unique per writer, also across processes that share a pid namespace
    name = f".{path.stem}.{unique}.tmp{path.suffix}" if keep_suffix else f".{path.name}.{unique}.tmp"
    tmp = path.with_name(name)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def left_as_found(folder: str | Path | None, keep: Callable[[set[Path]], bool] | None = None) -> Iterator[None]:
    """An output folder left as it was found when the block fails (an exception, Ctrl-C): what the block added is
    removed, the folder too when it did not exist, unless ``keep(added)`` says the added paths must stay (a checkpoint
    or a finished chunk that a rerun resumes from). ``folder`` None: nothing to guard."""
    if folder is None:
        yield
        return
    folder = Path(folder)
    before = set(folder.rglob("*")) if folder.is_dir() else None
    top = folder  # the outermost folder the block may create (mkdir with parents)
    while before is None and top.parent != top and not top.parent.exists():
        top = top.parent
    try:
        yield
    except BaseException:
        if folder.is_dir():
            added = set(folder.rglob("*")) - (before or set())
            if keep is None or not keep(added):
                if before is None:
                    shutil.rmtree(top, ignore_errors=True)
                for path in sorted(added, key=lambda p: len(p.parts), reverse=True):
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_json(path: str | Path, data: Any, indent: int | None = 1, ensure_ascii: bool = True,
               newline: bool = True) -> Path:
    """``json.dumps(data)`` (with a final newline unless ``newline=False``) written atomically."""
    return write_text_atomic(path, json.dumps(data, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if newline else ""))


def read_json(path: str | Path, **loads: Any) -> Any:
    """A UTF-8 JSON file tacred wrote itself (``json.JSONDecodeError`` and ``UnicodeDecodeError`` are the caller's);
    ``loads`` goes to ``json.loads`` (e.g. ``object_pairs_hook``). User inputs go through :func:`tacred.errors.read_text`."""
    return json.loads(Path(path).read_text(encoding="utf-8"), **loads)


class JsonLinesError(TacredError, ValueError):
    """A line of a JSON Lines text that is not JSON (``too_deep``: nested beyond Python's recursion limit);
    ``line`` counts from 1, ``msg`` and ``colno`` are json's message and column (``colno`` 0 when too deep),
    ``cause`` the error json raised."""

    def __init__(self, line: int, cause: ValueError | RecursionError) -> None:
        self.too_deep = isinstance(cause, RecursionError)
        self.msg = "nested too deeply" if self.too_deep else getattr(cause, "msg", str(cause))
        self.line, self.colno, self.cause = line, getattr(cause, "colno", 0), cause
        super().__init__(f"line {line}: " + ("JSON nested too deeply" if self.too_deep else f"invalid JSON: {self.msg}"))


def json_line(line: str, number: int = 1) -> Any:
    """The record of one line of JSON Lines (line ``number`` of its text); a line that is not JSON raises
    :class:`JsonLinesError`. The one JSON Lines parser: :func:`jsonl_records` and every reader that goes line by line
    use it."""
    try:
        return json.loads(line)
    except (json.JSONDecodeError, RecursionError) as err:
        raise JsonLinesError(number, err) from None


def jsonl_records(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for every line that is not blank; a line that is not JSON raises
    :class:`JsonLinesError` with its number."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, json_line(line, number)


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> Path:
    """One JSON object per line, written atomically."""
    return write_text_atomic(path, "".join(json.dumps(record) + "\n" for record in records))


def prediction_record(ident: str, labels: Sequence[str], probs: Sequence[float], best: int, *,
                      context: Mapping[str, Any] | None = None, gold: str | None = None,
                      every_label: bool = False) -> dict[str, Any]:
    """One line of a predictions file: ``id``, ``context`` (e.g. subject and object), ``relation``, ``gold`` (when
    known), the ``probability`` of the prediction and, with ``every_label``, every label's ``probabilities``
    (rounded to 6 decimals). ``probs`` is the example's row over ``labels``; ``best`` the predicted label id."""
    row = probs.tolist() if hasattr(probs, "tolist") else [float(p) for p in probs]  # a tensor's or array's row
    record: dict[str, Any] = {"id": ident, **(context or {}), "relation": labels[best]}
    if gold is not None:
        record["gold"] = gold
    record["probability"] = round(row[best], 6)
    if every_label:
        record["probabilities"] = {label: round(p, 6) for label, p in zip(labels, row, strict=True)}
    return record


def read_csv_rows(path: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows of a CSV file such as a run's ``metrics.csv`` (row ``i`` is line ``i + 2``)."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


class MetricsFileError(TacredError, ValueError):
    """A run's ``metrics.csv`` that cannot be read: no ``epoch`` column, or a value that is not a number."""


@dataclass
class EpochMetrics:
    """A run's ``metrics.csv`` by epoch: ``values[column][epoch]`` (0-based epochs; empty and non-finite cells left
    out), the file's ``columns`` and its number of data ``rows``."""

    path: Path
    columns: list[str]
    rows: int
    values: dict[str, dict[int, float]] = field(default_factory=dict)

    def series(self, column: str) -> list[tuple[int, float]]:
        """(epoch, value) of ``column`` in epoch order; empty when the column is absent."""
        return sorted(self.values.get(column, {}).items())


def read_epoch_metrics(path: str | Path, columns: Iterable[str] | None = None) -> EpochMetrics:
    """The one reader of a run's ``metrics.csv`` (every column, or only ``columns``): one row per epoch as tacred's
    CSV logger writes it (:class:`tacred.training.loggers.EpochRowWriter`), or Lightning's layout of one row per
    logged item. A resumed run may log an epoch twice: its later row wins. A row without an epoch (Lightning's
    layout logs the learning rate so) belongs to the epoch it was logged at the start of: the number of epochs
    whose last step lies before its step. Raises :class:`MetricsFileError` naming the file, line and column."""
    path = Path(path)
    header, rows = read_csv_rows(path)
    if "epoch" not in header:
        raise MetricsFileError(f"{path}: expected a CSV with an 'epoch' column (Lightning's CSV logger)")
    wanted = [c for c in header if c not in ("epoch", "step")] if columns is None else \
        [c for c in columns if c in header]

    def number(row: dict[str, str], line: int, key: str) -> float | None:
        text = (row.get(key) or "").strip()
        try:
            value = float(text) if text else None
        except ValueError:
            raise MetricsFileError(f"{path}, line {line}: {key}={text!r} is not a number") from None
        return value if value is not None and math.isfinite(value) else None

    numbered = [(line, row, number(row, line, "epoch"), number(row, line, "step"))
                for line, row in enumerate(rows, start=2)]
    end_step: dict[int, float] = {}  # epoch -> its last logged step
    for _, _, epoch, step in numbered:
        if epoch is not None:
            end_step[int(epoch)] = max(end_step.get(int(epoch), -1), step or 0)
    out = EpochMetrics(path, header, len(rows), {c: {} for c in wanted})
    for line, row, epoch, step in numbered:
        at = int(epoch) if epoch is not None else sum(1 for s in end_step.values() if s < (step or 0))
        for key in wanted:
            value = number(row, line, key)
            if value is not None:
                out.values[key][at] = value
    return out


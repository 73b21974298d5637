"""Reading the mention files `tacred extract` writes (JSON Lines or Parquet shards, a folder or files): each record
checked field by field and flattened to one row, an error naming the file, the line (or row) and the field."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tacred.errors import TacredError
from tacred.io import JsonLinesError, json_line

MENTION_SUFFIXES = (".jsonl", ".parquet")
# the one *.jsonl of an extraction folder that holds no mentions (its other files, extract.json, summary.json and
# done/*.json, are not *.jsonl): the documents skipped
NOT_MENTIONS = ("bad.jsonl",)
MANIFEST = "extract.json"  # an extraction folder's record of its run: with it, a folder without shards found nothing
ARGUMENT_FIELDS = (("text", str), ("start", int), ("end", int), ("type", str))


class MentionFileError(TacredError):
    """A mention file that cannot be read, or a record in it without a field the knowledge base needs."""


def mention_files(paths: Iterable[str | Path]) -> list[Path]:
    """The mention files named by ``paths``: files as given, and in each folder (recursively) every ``*.jsonl`` and
    ``*.parquet`` that is not one of an extraction's other files (:data:`NOT_MENTIONS`), sorted by name. An
    extraction folder (with its :data:`MANIFEST`) that found no relation has none; any other folder without one is
    an error."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MENTION_SUFFIXES
                            and p.name not in NOT_MENTIONS and not p.name.startswith("."))
            if not inside and not (path / MANIFEST).is_file():
                raise MentionFileError(f"{path}: no mention files (*.jsonl, *.parquet) in this folder")
            found += inside
        elif path.is_file():
            if path.suffix not in MENTION_SUFFIXES:
                raise MentionFileError(f"{path}: not a mention file (expected .jsonl or .parquet)")
            found.append(path)
        else:
            raise MentionFileError(f"{path}: no such file or folder")
    return list(dict.fromkeys(found))


def read_mention_file(path: Path) -> Iterator[dict[str, Any]]:
    """The flattened, checked rows of one JSON Lines or Parquet mention file (:func:`mention_row`)."""
    for where, record in _records(path):
        yield mention_row(record, where)


def mention_rows(paths: Iterable[str | Path]) -> Iterator[dict[str, Any]]:
    """The flattened, checked rows of every mention file ``paths`` name (:func:`mention_files`), each with ``where``:
    how an error about it names its file and record."""
    for path in mention_files(paths):
        for n, row in enumerate(read_mention_file(path), start=1):
            yield {**row, "where": f"{path}, record {n}"}


def read_mention_records(path: Path) -> Iterator[dict[str, Any]]:
    """The mentions of one JSON Lines or Parquet mention file as `tacred extract` wrote them (nested ``subject`` and
    ``object``, ``evidence`` as a JSON value), each checked as :func:`mention_row` checks it."""
    for where, record in _records(path):
        mention_row(record, where)
        yield record


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) of every mention record of a file, ``where`` naming the file and its line or row: the one
    reader of both formats."""
    if path.suffix == ".parquet":
        yield from _parquet_records(path)
        return
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            where = f"{path}, line {number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise MentionFileError(f"{where}: not UTF-8 text (byte {raw[err.start:err.start + 1]!r})") from None
            if not line.strip():
                continue
            try:
                record = json_line(line, number)
            except JsonLinesError as err:
                raise MentionFileError(f"{where}: not a JSON object ({getattr(err.cause, 'msg', err.cause)})") from None
            yield where, record


def _parquet_records(path: Path) -> Iterator[tuple[str, Any]]:
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path)
    except Exception as err:  # noqa: BLE001 - pyarrow raises several types for a file that is not Parquet
        raise MentionFileError(f"{path}: not a Parquet file ({err})") from None
    row = 0
    for batch in table.iter_batches(batch_size=4096):
        for record in batch.to_pylist():
            row += 1
            where = f"{path}, row {row}"
            evidence = record.get("evidence")
            if isinstance(evidence, str):  # Parquet shards keep the evidence as JSON text (its shape varies)
                try:
                    record["evidence"] = json.loads(evidence)
                except ValueError:
                    raise MentionFileError(f"{where}: 'evidence' is not JSON text") from None
            yield where, record


def mention_row(record: Any, where: str) -> dict[str, Any]:
    """One mention record (``doc_id``, ``sentence``, ``sentence_text``, ``subject`` and ``object`` with ``text``,
    ``start``, ``end``, ``type``, ``relation``, ``probability``, ``evidence``) as a flat row; ``evidence`` (any
    JSON value, or missing) is kept as JSON text."""
    if not isinstance(record, dict):
        raise MentionFileError(f"{where}: expected a JSON object, found {type(record).__name__}")

    def field(container: dict, name: str, kind: type | tuple[type, ...], label: str) -> Any:
        if name not in container:
            raise MentionFileError(f"{where}: no {label!r} field")
        value = container[name]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise MentionFileError(f"{where}: {label!r} must be {_kind(kind)}, found {json.dumps(value)[:80]}")
        return value

    doc_id = field(record, "doc_id", (str, int), "doc_id")
    row: dict[str, Any] = {
        "doc_id": str(doc_id),
        "sentence": field(record, "sentence", int, "sentence"),
        "sentence_text": field(record, "sentence_text", str, "sentence_text"),
    }
    for role in ("subject", "object"):
        argument = field(record, role, dict, role)
        for name, kind in ARGUMENT_FIELDS:
            row[f"{role}_{name}" if name != "text" else role] = field(argument, name, kind, f"{role}.{name}")
        if not 0 <= row[f"{role}_start"] < row[f"{role}_end"]:
            raise MentionFileError(f"{where}: {role} offsets [{row[f'{role}_start']}, {row[f'{role}_end']}) "
                                   "are not a span (0 <= start < end)")
    row["relation"] = field(record, "relation", str, "relation")
    probability = field(record, "probability", (int, float), "probability")
    if not 0.0 <= probability <= 1.0:
        raise MentionFileError(f"{where}: 'probability' must lie in [0, 1], found {probability}")
    row["probability"] = float(probability)
    row["evidence"] = json.dumps(record.get("evidence"), ensure_ascii=False, sort_keys=True)
    return row


def _kind(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", dict: "an object"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)

"""Documents read lazily from text files, folders, JSON Lines, Parquet or standard input; what cannot be read as
text (undecodable bytes, binary data, an over-long text, a malformed record) comes out as a :class:`BadDocument`
with its reason instead of ending the run."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacred.errors import TacredError
from tacred.inference.input_rules import MAX_CHARACTERS
from tacred.io import JsonLinesError, json_line

JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet", ".pq")
FORMATS = ("auto", "text", "lines", "jsonl", "parquet")
PARQUET_BATCH = 1024  # rows read from a Parquet file at a time


@dataclass(frozen=True)
class Document:
    """One text to extract from, with the id its mentions carry."""

    id: str
    text: str


@dataclass(frozen=True)
class BadDocument:
    """A document that could not be read as text: its id, where it came from and why."""

    id: str
    source: str
    reason: str


class InputFormatError(TacredError, ValueError):
    """A source that cannot be read at all (missing file, unknown format, a Parquet file without the columns)."""


def checked_text(raw: bytes, ident: str, source: str, max_chars: int) -> Document | BadDocument:
    """Bytes as a document's text, or why they are not one."""
    nul = raw.find(b"\x00")
    if nul >= 0:
        return BadDocument(ident, source, f"binary data (a NUL byte at offset {nul})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return BadDocument(ident, source, f"not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start})")
    return _checked(text, ident, source, max_chars)


def _checked(text: str, ident: str, source: str, max_chars: int) -> Document | BadDocument:
    if len(text) > max_chars:
        return BadDocument(ident, source, f"{len(text):,} characters, more than the limit of {max_chars:,} "
                                          "(--max_chars)")
    controls = sum(1 for c in text[:4096] if c < " " and c not in "\t\n\r\f\v")
    if controls > 0.1 * min(len(text), 4096):
        return BadDocument(ident, source, f"binary data ({controls} control characters in its first "
                                          f"{min(len(text), 4096)})")
    return Document(ident, text.removeprefix("\ufeff"))


def _lines(stream: Iterable[bytes], name: str, max_chars: int) -> Iterator[Document | BadDocument]:
    """One document per non-blank line, id ``NAME:LINE`` (counted from 1)."""
    for n, raw in enumerate(stream, start=1):
        if raw.strip():
            yield line_document(raw, n, name, max_chars)


def line_document(raw: bytes, n: int, name: str, max_chars: int) -> Document | BadDocument:
    """Non-blank line ``n`` of a text file as a document, id ``NAME:LINE``."""
    return checked_text(raw.rstrip(b"\r\n"), f"{name}:{n}", f"{name}, line {n}", max_chars)


def _jsonl(stream: Iterable[bytes], name: str, max_chars: int, text_column: str,
           id_column: str) -> Iterator[Document | BadDocument]:
    """One document per JSON object line (see :func:`jsonl_document`)."""
    for n, raw in enumerate(stream, start=1):
        if raw.strip():
            yield jsonl_document(raw, n, name, max_chars, text_column, id_column)


def jsonl_document(raw: bytes, n: int, name: str, max_chars: int, text_column: str,
                   id_column: str) -> Document | BadDocument:
    """Non-blank line ``n`` of a JSON Lines file: ``text_column`` its text, ``id_column`` its id (default
    ``NAME:LINE``)."""
    where, ident = f"{name}, line {n}", f"{name}:{n}"
    try:
        record = json_line(raw.decode("utf-8"), n)
    except (UnicodeDecodeError, JsonLinesError) as err:
        cause = err.cause if isinstance(err, JsonLinesError) else err
        return BadDocument(ident, where, f"not a JSON line ({type(cause).__name__}: {str(cause)[:120]})")
    if not isinstance(record, dict):
        return BadDocument(ident, where, f"a JSON {type(record).__name__}, not an object")
    if record.get(id_column) is not None:
        ident = str(record[id_column])
    text = record.get(text_column)
    if not isinstance(text, str):
        found = "no" if text_column not in record else f"a {type(text).__name__} as its"
        return BadDocument(ident, where, f"{found} {text_column!r} string")
    if "\x00" in text:
        return BadDocument(ident, where, "binary data (a NUL character)")
    return _checked(text, ident, where, max_chars)


def _parquet(path: Path, max_chars: int, text_column: str, id_column: str) -> Iterator[Document | BadDocument]:
    yield from parquet_documents(path, str(path), max_chars, text_column, id_column)


def parquet_documents(source: Any, name: str, max_chars: int, text_column: str,
                      id_column: str) -> Iterator[Document | BadDocument]:
    """One document per row of the Parquet file ``source`` (a path or an open file), read in batches; rows without
    an id get ``NAME:ROW`` (counted from 0)."""
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(source)
    except Exception as err:  # noqa: BLE001 - pyarrow raises several types for a file that is not Parquet
        raise InputFormatError(f"{name}: not a Parquet file ({type(err).__name__}: {err})") from None
    columns = set(table.schema_arrow.names)
    if text_column not in columns:
        raise InputFormatError(f"{name}: no column {text_column!r} (it has {', '.join(sorted(columns))}; "
                               "--text_column names it)")
    wanted = [text_column] + ([id_column] if id_column in columns else [])
    row = 0
    for batch in table.iter_batches(batch_size=PARQUET_BATCH, columns=wanted):
        texts = batch.column(text_column).to_pylist()
        ids = batch.column(id_column).to_pylist() if id_column in columns else [None] * len(texts)
        for text, ident in zip(texts, ids, strict=True):
            ident = f"{name}:{row}" if ident is None else str(ident)
            where = f"{name}, row {row}"
            row += 1
            if not isinstance(text, str):
                yield BadDocument(ident, where, f"its {text_column!r} is {'null' if text is None else 'not a string'}")
            elif "\x00" in text:
                yield BadDocument(ident, where, "binary data (a NUL character)")
            else:
                yield _checked(text, ident, where, max_chars)


def format_of(path: Path, fmt: str, lines: bool = False) -> str:
    """How a file is read: ``fmt`` unless it is ``auto``, else by suffix (``lines``: text files by line)."""
    if fmt != "auto":
        return fmt
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    return "lines" if lines else "text"


def _file(path: Path, fmt: str, lines: bool, max_chars: int, text_column: str,
          id_column: str) -> Iterator[Document | BadDocument]:
    kind = format_of(path, fmt, lines)
    if kind == "parquet":
        yield from _parquet(path, max_chars, text_column, id_column)
        return
    with path.open("rb") as stream:
        if kind == "jsonl":
            yield from _jsonl(stream, str(path), max_chars, text_column, id_column)
        elif kind == "lines":
            yield from _lines(stream, str(path), max_chars)
        else:
            yield file_document(stream, path.stat().st_size, str(path), max_chars)


def file_document(stream: Any, size: int, name: str, max_chars: int) -> Document | BadDocument:
    """A whole text file of ``size`` bytes as one document (id ``NAME``); one with more bytes than ``max_chars``
    characters can take is not read."""
    if size > 4 * max_chars:
        return BadDocument(name, name, f"{size:,} bytes, more than {max_chars:,} characters can take (--max_chars)")
    return checked_text(stream.read(), name, name, max_chars)


def folder_files(source: Path) -> list[Path]:
    """A folder's files, sorted, recursively (hidden files and folders left out)."""
    found = [p for p in source.rglob("*") if p.is_file()
             and not any(part.startswith(".") for part in p.relative_to(source).parts)]
    return sorted(found, key=lambda p: p.relative_to(source).as_posix())


def _stdin_bytes() -> Iterable[bytes]:
    """Standard input's lines as bytes (a replaced ``sys.stdin`` may be text only)."""
    buffer = getattr(sys.stdin, "buffer", None)
    return buffer if buffer is not None else (line.encode("utf-8") for line in sys.stdin)


def read_documents(sources: Iterable[str | Path], *, text_column: str = "text", id_column: str = "id",
                   fmt: str = "auto", lines: bool = False, max_chars: int = MAX_CHARACTERS,
                   stdin: Iterable[bytes] | None = None) -> Iterator[Document | BadDocument]:
    """The documents of every source in order, lazily. A source is a file (by suffix: ``.jsonl``/``.ndjson`` JSON
    Lines, ``.parquet`` Parquet, anything else one text document per file; ``lines``: one document per line of a
    text file), a folder of such files (sorted, recursive) or ``-`` for standard input (one document per line, or
    JSON Lines with ``fmt="jsonl"``, read as it comes). ``fmt`` forces one format for every file."""
    if fmt not in FORMATS:
        raise InputFormatError(f"unknown input format {fmt!r} (one of {', '.join(FORMATS)})")
    return _unique_ids(_read(sources, text_column, id_column, fmt, lines, max_chars, stdin))


def _unique_ids(items: Iterable[Document | BadDocument]) -> Iterator[Document | BadDocument]:
    """The documents with a later one whose id repeats an earlier document's skipped and reported: a mention names
    its document by id alone, so two documents under one id could not be told apart in the output."""
    seen: set[str] = set()
    for item in items:
        if isinstance(item, Document) and item.id in seen:
            yield BadDocument(item.id, f"{len(item.text):,} characters",
                              f"its id {item.id!r} repeats an earlier document's (each document needs its own id)")
            continue
        seen.add(item.id)
        yield item


def _read(sources: Iterable[str | Path], text_column: str, id_column: str, fmt: str, lines: bool, max_chars: int,
          stdin: Iterable[bytes] | None) -> Iterator[Document | BadDocument]:
    for source in sources:
        if str(source) == "-":
            stream = stdin if stdin is not None else _stdin_bytes()
            if fmt == "jsonl":
                yield from _jsonl(stream, "<stdin>", max_chars, text_column, id_column)
            elif fmt == "parquet":
                raise InputFormatError("standard input cannot be Parquet (give the file)")
            else:
                yield from _lines(stream, "<stdin>", max_chars)
            continue
        path = Path(source)
        if path.is_dir():
            for file in folder_files(path):
                yield from _file(file, fmt, lines, max_chars, text_column, id_column)
        elif path.is_file():
            yield from _file(path, fmt, lines, max_chars, text_column, id_column)
        else:
            raise InputFormatError(f"{path}: no such file or folder")


def check_sources(sources: Iterable[str | Path]) -> None:
    """Fail before any work when a source does not exist."""
    for source in sources:
        if str(source) != "-" and not Path(source).exists():
            raise InputFormatError(f"{source}: no such file or folder")

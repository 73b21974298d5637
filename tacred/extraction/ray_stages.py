"""The three stages of the Ray Data pipeline of ``tacred extract --engine ray``: a Ray Data reader that turns each
input file into blocks of ``chunk_size`` documents (one row per block, checked as the local engine checks them), the
callable class of ``map_batches`` whose actors each load the model and spaCy once, and a Ray Data writer that puts
each block's mentions and its record into the output folder. Imported on the cluster's workers as well as the driver.

A block is named by its file's number among the sources and its place in the file: block ``b`` of file ``f`` holds
the file's documents ``b * chunk_size`` onwards (bad ones included) and becomes ``parts/part-F-B.*`` and
``done/part-F-B.json`` (eight digits each), so the names sort in input order.
"""

from __future__ import annotations

import io
import json
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import ray
from ray.data.block import Block, BlockAccessor
from ray.data.datasource import Datasink, FileBasedDatasource

from tacred.extraction.documents import (
    BadDocument,
    Document,
    file_document,
    jsonl_document,
    line_document,
    parquet_documents,
)
from tacred.extraction.output import chunk_result, write_chunk
from tacred.extraction.postprocess import DocumentResult
from tacred.extraction.runner import DocumentExtractor, ExtractorSettings

ACTORS_LOG = "actors.log"  # one JSON line per actor of the pool: its node, process and model load time
_DOCUMENT = pa.struct([("id", pa.string()), ("text", pa.string()), ("source", pa.string()), ("reason", pa.string())])
BLOCK_SCHEMA = pa.schema([("file", pa.int64()), ("block", pa.int64()), ("documents", pa.list_(_DOCUMENT))])
RESULT_SCHEMA = pa.schema([("file", pa.int64()), ("block", pa.int64()), ("result", pa.string())])


def block_name(file: int, block: int) -> str:
    return f"part-{file:08d}-{block:08d}"


def block_key(name: str) -> tuple[int, int] | None:
    """``(file, block)`` of a record or shard name that :func:`block_name` made, else None."""
    parts = name.removeprefix("part-").split("-")
    if len(parts) == 2 and all(len(p) == 8 and p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


@dataclass(frozen=True)
class SourceFile:
    """One input file: its number among the sources, the name its documents' ids and reasons carry (the path as
    the local engine names it) and how it is read (``text``, ``lines``, ``jsonl`` or ``parquet``)."""

    index: int
    name: str
    kind: str


class _Raw(io.RawIOBase):
    """An Arrow file as a raw Python stream, so that :class:`io.BufferedReader` can cut it into lines."""

    def __init__(self, file: Any) -> None:
        self.file = file

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.file.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


_FETCHED: dict[str, Any] = {}


def _fetched(ref: Any, build: Callable[[Any], Any]) -> Any:
    """``build(ray.get(ref))``, once per worker process (a read task reads many files)."""
    if ref.hex() not in _FETCHED:
        _FETCHED[ref.hex()] = build(ray.get(ref))
    return _FETCHED[ref.hex()]


def _by_file(keys: Any) -> dict[int, set[int]]:
    """Finished blocks by file, from the (N,) int64 keys ``file << 32 | block``."""
    found: dict[int, set[int]] = {}
    for key in keys.tolist():
        found.setdefault(key >> 32, set()).add(key & 0xFFFFFFFF)
    return found


class DocumentBlocks(FileBasedDatasource):
    """A Ray Data reader of the sources: each read task streams its files and yields one row per block of documents
    that is not done yet (``done``: the ``(file, block)`` keys of finished blocks, an object in Ray's store). Lines
    of finished blocks are counted, not parsed. A record that cannot be read is a :class:`BadDocument` in its block,
    as in a local run; a file that cannot be read at all (a Parquet file without the text column) ends the run."""

    def __init__(self, files: dict[str, SourceFile], *, chunk_size: int, max_chars: int, text_column: str,
                 id_column: str, done: Any) -> None:
        super().__init__(list(files))
        # in Ray's object store, not in every read task: a corpus may have millions of files
        self.files, self.chunk_size, self.max_chars = ray.put(files), chunk_size, max_chars
        self.text_column, self.id_column, self.done = text_column, id_column, done

    def _open_input_source(self, filesystem: Any, path: str, **open_args: Any) -> Any:
        return filesystem.open_input_file(path)  # random access: Parquet, and a text file's size before reading it

    def _read_stream(self, f: Any, path: str) -> Iterator[Block]:
        files, finished = _fetched(self.files, dict), _fetched(self.done, _by_file)
        source = files.get(path) or files[os.path.abspath(path)]
        finished = finished.get(source.index, set())
        for block, items in self._blocks(f, source, finished):
            rows = [{"id": d.id, "text": d.text, "source": None, "reason": None} if isinstance(d, Document)
                    else {"id": d.id, "text": None, "source": d.source, "reason": d.reason} for d in items]
            yield pa.Table.from_pylist([{"file": source.index, "block": block, "documents": rows}],
                                       schema=BLOCK_SCHEMA)

    def _blocks(self, f: Any, source: SourceFile,
                finished: set[int]) -> Iterator[tuple[int, list[Document | BadDocument]]]:
        size = self.chunk_size
        if source.kind == "text":
            if 0 not in finished:
                yield 0, [file_document(f, f.size(), source.name, self.max_chars)]
            return
        if source.kind == "parquet":
            documents = parquet_documents(f, source.name, self.max_chars, self.text_column, self.id_column)
            batch: list[Document | BadDocument] = []
            for position, doc in enumerate(documents):
                block = position // size
                if block not in finished:
                    batch.append(doc)
                if (position + 1) % size == 0 and batch:
                    yield block, batch
                    batch = []
            if batch:
                yield block, batch
            return
        batch, count = [], 0
        for n, raw in enumerate(io.BufferedReader(_Raw(f), 1 << 20), start=1):
            if not raw.strip():
                continue
            block, count = count // size, count + 1
            if block not in finished:  # a finished block's lines are counted, not parsed
                batch.append(line_document(raw, n, source.name, self.max_chars) if source.kind == "lines" else
                             jsonl_document(raw, n, source.name, self.max_chars, self.text_column, self.id_column))
            if count % size == 0 and batch:
                yield block, batch
                batch = []
        if batch:
            yield block, batch


class ChunkExtractor:
    """The callable class of ``map_batches``: each actor builds one :class:`DocumentExtractor` (the model and spaCy)
    when it starts, notes that load in ``actors.log``, and extracts one block per call."""

    def __init__(self, settings: dict[str, Any], folder: str) -> None:
        started = time.monotonic()
        self.extractor = DocumentExtractor(ExtractorSettings(**settings))
        line = {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(), "pid": os.getpid(),
                "actor": ray.get_runtime_context().get_actor_id(), "load_s": round(time.monotonic() - started, 3),
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        fd = os.open(Path(folder) / ACTORS_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())  # one write: lines of actors never interleave
        finally:
            os.close(fd)

    def __call__(self, batch: pa.Table) -> pa.Table:
        out = []
        for row in batch.to_pylist():
            items = [Document(d["id"], d["text"]) if d["reason"] is None else BadDocument(d["id"], d["source"],
                                                                                          d["reason"])
                     for d in row["documents"]]
            docs = [item for item in items if isinstance(item, Document)]
            done = chunk_result(row["block"], items, self.extractor.process_many(docs) if docs else [])
            result = {"results": [asdict(r) for r in done.results], "bad": [asdict(b) for b in done.bad]}
            out.append({"file": row["file"], "block": row["block"], "result": json.dumps(result, ensure_ascii=False)})
        return pa.Table.from_pylist(out, schema=RESULT_SCHEMA)


class MentionShards(Datasink[int]):
    """A Ray Data writer into the output folder (which every node sees): each block's mentions to
    ``parts/part-F-B.{jsonl,parquet}`` and then its record ``done/part-F-B.json``, each written to a temporary name
    and renamed, so a block written twice (a retried task) is the same file, and a block is done only once whole."""

    def __init__(self, folder: str, fmt: str) -> None:
        self.folder, self.fmt = folder, fmt

    def write(self, blocks: Iterable[Block], ctx: Any) -> int:
        from tacred.extraction.output import ChunkResult

        written = 0
        for block in blocks:
            for row in BlockAccessor.for_block(block).iter_rows(public_row_format=False):
                result = json.loads(row["result"])
                done = ChunkResult(int(row["block"]), [DocumentResult(**r) for r in result["results"]],
                                   [BadDocument(**b) for b in result["bad"]])
                write_chunk(Path(self.folder), self.fmt, block_name(int(row["file"]), int(row["block"])), done)
                written += 1
        return written

    def get_name(self) -> str:
        return "MentionShards"

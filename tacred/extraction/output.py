"""Where mentions go: standard output as JSON Lines, or a folder of shards (JSON Lines or Parquet) that a run can
resume. Documents are numbered by their place in the input and cut into chunks of a fixed size; chunk ``k``'s
mentions go to ``parts/part-k.*`` and then, atomically, a record that it is done (``done/part-k.json``: its
documents, counts and bad documents). A rerun skips the chunks that are done, so an interrupted run's output equals
an uninterrupted one's; ``bad.jsonl`` and ``summary.json`` are written from the records when every chunk is done."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tacred.errors import TacredError
from tacred.extraction.documents import BadDocument, Document
from tacred.extraction.mention_files import MANIFEST, read_mention_records
from tacred.extraction.postprocess import DocumentResult
from tacred.io import write_text_atomic

SHARD_FORMATS = ("jsonl", "parquet")


class OutputFolderError(TacredError, ValueError):
    """An --output folder that holds something other than this command's output."""


@dataclass(frozen=True)
class Chunk:
    """Documents ``index * size`` to ``index * size + len(items) - 1`` of the input (bad ones included)."""

    index: int
    items: list[Document | BadDocument]


def chunked(items: Iterable[Document | BadDocument], size: int, skip: set[int] = frozenset()) -> Iterator[Chunk]:
    """The input cut into chunks of ``size`` documents, leaving out the chunks numbered in ``skip`` (read past)."""
    batch: list[Document | BadDocument] = []
    index = 0
    for item in items:
        batch.append(item)
        if len(batch) == size:
            if index not in skip:
                yield Chunk(index, batch)
            batch, index = [], index + 1
    if batch and index not in skip:
        yield Chunk(index, batch)


@dataclass
class ChunkResult:
    """A chunk done: one result per document read, and the documents skipped with their reasons."""

    index: int
    results: list[DocumentResult]
    bad: list[BadDocument]

    @property
    def mentions(self) -> Iterator[dict[str, Any]]:
        for result in self.results:
            yield from result.mentions


@dataclass
class Totals:
    """What a run did: documents extracted from, their sentences and candidate pairs, relations, documents skipped."""

    documents: int = 0
    sentences: int = 0
    pairs: int = 0
    relations: int = 0
    skipped: int = 0
    bad: list[dict[str, str]] = field(default_factory=list)

    def add(self, done: ChunkResult) -> None:
        self.documents += len(done.results)
        self.sentences += sum(r.sentences for r in done.results)
        self.pairs += sum(r.pairs for r in done.results)
        self.relations += sum(len(r.mentions) for r in done.results)
        self.skipped += len(done.bad)
        self.bad.extend(asdict(b) for b in done.bad)

    def summary(self) -> dict[str, int]:
        return {"documents": self.documents, "sentences": self.sentences, "pairs": self.pairs,
                "relations": self.relations, "skipped": self.skipped}

    def line(self) -> str:
        return (f"{self.documents:,} document(s), {self.sentences:,} sentence(s), {self.pairs:,} candidate pair(s), "
                f"{self.relations:,} relation(s); {self.skipped:,} document(s) skipped")


def chunk_result(index: int, items: list[Document | BadDocument], results: list[DocumentResult]) -> ChunkResult:
    """A chunk's results with the documents that failed moved to the skipped ones (in input order)."""
    bad = [item for item in items if isinstance(item, BadDocument)]
    docs = {item.id: item for item in items if isinstance(item, Document)}
    good = []
    for result in results:
        if result.error is None:
            good.append(result)
        else:
            bad.append(BadDocument(result.doc_id, _source(docs.get(result.doc_id)), result.error))
    return ChunkResult(index, good, bad)


def _source(doc: Document | None) -> str:
    return "" if doc is None else f"{len(doc.text):,} characters"


class StdoutSink:
    """Mentions as JSON Lines on standard output, as each chunk is done; skipped documents on standard error."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.totals = Totals()

    def done_chunks(self) -> set[int]:
        return set()

    def write(self, done: ChunkResult) -> None:
        for mention in done.mentions:
            self.out.write(json.dumps(mention, ensure_ascii=False) + "\n")
        self.out.flush()
        for bad in done.bad:
            self.err.write(f"tacred extract: skipped {bad.id} ({bad.source}): {bad.reason}\n")
        self.totals.add(done)

    def finish(self) -> Totals:
        return self.totals


class ShardSink:
    """A resumable folder of shards (see the module docstring). ``manifest``: what the command is (sources and
    options); a folder written by a different command is refused."""

    def __init__(self, folder: str | Path, fmt: str, manifest: dict[str, Any]) -> None:
        if fmt not in SHARD_FORMATS:
            raise OutputFolderError(f"--format {fmt!r}: one of {', '.join(SHARD_FORMATS)}")
        self.folder, self.fmt = Path(folder), fmt
        self.parts, self.done = self.folder / "parts", self.folder / "done"
        written = self.folder / MANIFEST
        if self.folder.exists() and not self.folder.is_dir():
            raise OutputFolderError(f"{self.folder}: not a folder (--output names the folder to write shards to)")
        manifest = {"format": 1, **manifest}
        if written.is_file():
            before = json.loads(written.read_text(encoding="utf-8"))
            if before != manifest:
                differ = sorted(k for k in set(before) | set(manifest) if before.get(k) != manifest.get(k))
                raise OutputFolderError(f"{self.folder} holds the output of another extract command (it differs in "
                                        f"{', '.join(differ)}); give a new --output folder or the same command")
        elif self.folder.exists() and any(self.folder.iterdir()):
            raise OutputFolderError(f"{self.folder}: not empty and not an extract output folder (no {MANIFEST})")
        self.parts.mkdir(parents=True, exist_ok=True)
        self.done.mkdir(exist_ok=True)
        if not written.is_file():
            write_text_atomic(written, json.dumps(manifest, indent=1, sort_keys=True))
        for folder in (self.parts, self.done):  # what a killed run was writing
            for stray in folder.glob(".part-*.tmp*"):
                stray.unlink()

    def done_chunks(self) -> set[int]:
        """The chunks a previous run of this command finished."""
        return {int(p.stem.removeprefix("part-")) for p in self.done.glob("part-*.json")}

    def write(self, done: ChunkResult) -> None:
        write_chunk(self.folder, self.fmt, f"part-{done.index:08d}", done)

    def finish(self) -> Totals:
        """Totals over every finished chunk; ``bad.jsonl`` and ``summary.json`` written from them."""
        totals = Totals()
        for path in sorted(self.done.glob("part-*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            totals.documents += len(record["documents"])
            for key in ("sentences", "pairs", "relations"):
                setattr(totals, key, getattr(totals, key) + record[key])
            totals.skipped += len(record["bad"])
            totals.bad.extend(record["bad"])
        write_text_atomic(self.folder / "bad.jsonl", "".join(json.dumps(b, ensure_ascii=False) + "\n"
                                                             for b in totals.bad))
        write_text_atomic(self.folder / "summary.json", json.dumps(totals.summary(), indent=1) + "\n")
        return totals


def write_chunk(folder: Path, fmt: str, name: str, done: ChunkResult) -> None:
    """A finished chunk into an output folder: its mentions to ``parts/NAME.FMT`` (none: no file), then the record
    ``done/NAME.json``, each atomically (the Ray engine's writers call this too, under their own names)."""
    mentions = list(done.mentions)
    if mentions:
        shard = folder / "parts" / f"{name}.{fmt}"
        if fmt == "parquet":
            from tacred.extraction.parquet_shards import write_parquet_shard

            write_parquet_shard(shard, mentions)
        else:
            write_text_atomic(shard, "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in mentions))
    record = {"documents": [r.doc_id for r in done.results], "sentences": sum(r.sentences for r in done.results),
              "pairs": sum(r.pairs for r in done.results), "relations": len(mentions),
              "bad": [asdict(b) for b in done.bad]}
    write_text_atomic(folder / "done" / f"{name}.json", json.dumps(record, ensure_ascii=False))


def read_mentions(folder: str | Path) -> Iterator[dict[str, Any]]:
    """Every mention of an output folder, in document order (shard by shard), as written and checked
    (:func:`tacred.extraction.mention_files.read_mention_records`)."""
    for shard in sorted((Path(folder) / "parts").glob("part-*.*")):
        if shard.suffix in (".parquet", ".jsonl"):
            yield from read_mention_records(shard)

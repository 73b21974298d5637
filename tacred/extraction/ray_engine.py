"""``tacred extract --engine ray``: the same chunks as :mod:`tacred.extraction.runner`, extracted by a pool of Ray
Data actors (each loads the model and spaCy once) on this machine or on a cluster, and handed to the same sink.

The driver reads the sources and cuts them into the chunks a local run would make (chunk ``k`` holds documents
``k * chunk_size`` onwards); windows of chunks become Ray datasets of one row per chunk, and ``map_batches`` with a
callable class extracts each row on an actor. Ray re-runs a chunk whose actor or node died; the driver hands each
chunk to the sink once, in input order, and the sink writes it under its chunk number, atomically. So a chunk done
twice (a retried task, a resumed run) overwrites its shard with the same content, and no document is missing or
written twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from typing import Any

from tacred.extraction.documents import BadDocument, Document
from tacred.extraction.output import Chunk, ChunkResult, Totals, chunk_result, chunked
from tacred.extraction.pipeline import DocumentExtractor, DocumentResult, ExtractorSettings
from tacred.extraction.progress import Progress

WINDOW_CHUNKS = 256  # chunks per Ray dataset: the input the driver holds at once (256 x 64 documents by default)


class RayEngineError(RuntimeError):
    """Ray is missing, or no Ray cluster answers at the address given."""


class ChunkExtractor:
    """The callable class of ``map_batches``: one :class:`DocumentExtractor` per actor, one chunk per call."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.extractor = DocumentExtractor(ExtractorSettings(**settings))

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        results = []
        for payload in batch["documents"]:
            docs = [Document(ident, text) for ident, text in json.loads(payload)]
            done = self.extractor.process_many(docs) if docs else []
            results.append(json.dumps([asdict(r) for r in done], ensure_ascii=False))
        return {"index": [int(i) for i in batch["index"]], "results": results}


def _windows(chunks: Iterable[Chunk], size: int) -> Iterator[list[Chunk]]:
    window: list[Chunk] = []
    for chunk in chunks:
        window.append(chunk)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window


def connect(address: str | None) -> int:
    """Join the Ray cluster at ``address`` (None: start Ray on this machine); the cluster's CPUs."""
    try:
        import ray
    except ImportError as err:
        raise RayEngineError(f"Ray is not installed ({err}); pip install 'tacred[ray]'") from None
    if not ray.is_initialized():
        if address is not None:
            _check_reachable(address)
        options: dict[str, Any] = {"logging_level": "WARNING", "log_to_driver": False}
        if address is None:
            options["include_dashboard"] = False
        try:
            ray.init(address=address, **options)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise RayEngineError(f"no Ray cluster at {address!r}: {err}") from None
    import logging

    import ray.data

    logging.getLogger("ray.data").setLevel(logging.ERROR)  # one line per dataset run; failures raise
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    return int(ray.cluster_resources().get("CPU", 1))


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """A ``HOST:PORT`` address that nothing answers at is an error now (Ray itself would retry for minutes)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", or a form Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        raise RayEngineError(f"no Ray cluster answers at {address} ({err.strerror or err}); start one with "
                             "`ray start --head` or give its head's HOST:PORT") from None


def run_on_ray(settings: ExtractorSettings, documents: Iterable[Document | BadDocument], sink: Any,
               chunk_size: int, progress: Progress, address: str | None = None, actors: int | None = None,
               window: int = WINDOW_CHUNKS) -> Totals:
    """Extract every chunk the sink has not done on Ray (``actors`` actors of one CPU each; default one per CPU of
    the cluster) and return the sink's totals."""
    cpus = connect(address)  # first: a missing Ray is one clear error, not an import failure
    import ray
    from ray.data import ActorPoolStrategy

    actors = actors or max(1, cpus)
    plain = asdict(settings) | {"num_threads": settings.num_threads or 1}

    def hand_on(done: ChunkResult) -> None:
        sink.write(done)
        progress.update(len(done.results) + len(done.bad), sum(r.sentences for r in done.results))

    try:
        for chunks in _windows(chunked(documents, chunk_size, sink.done_chunks()), window):
            rows = [{"index": c.index, "documents": json.dumps([[d.id, d.text] for d in c.items
                                                                if isinstance(d, Document)], ensure_ascii=False)}
                    for c in chunks]
            dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
                ChunkExtractor, fn_constructor_kwargs={"settings": plain}, batch_size=1, batch_format="numpy",
                compute=ActorPoolStrategy(size=min(actors, len(rows))), num_cpus=1)
            # Ray Data's actors restart and their tasks are retried without limit: a chunk lost with its node is
            # extracted again on another actor
            _in_order(chunks, dataset.iter_rows(), hand_on)
    finally:
        progress.close()
    return sink.finish()


def _in_order(chunks: list[Chunk], rows: Iterable[dict[str, Any]], hand_on: Callable[[ChunkResult], None]) -> None:
    """Hand each chunk's result on in input order as the rows come (in any order), each chunk once."""
    waiting = {c.index: c for c in chunks}
    finished: dict[int, ChunkResult] = {}
    order = iter(c.index for c in chunks)
    next_index = next(order, None)
    for row in rows:
        index = int(row["index"])
        if index not in waiting:  # a chunk already handed on (Ray gives each block once; this makes sure)
            continue
        results = [DocumentResult(**r) for r in json.loads(row["results"])]
        finished[index] = chunk_result(index, waiting.pop(index).items, results)
        while next_index in finished:
            hand_on(finished.pop(next_index))
            next_index = next(order, None)
    if waiting:
        raise RayEngineError(f"Ray returned no result for chunk(s) {sorted(waiting)[:10]}")

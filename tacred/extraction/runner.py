"""A whole extraction: documents cut into chunks, each chunk extracted (in this process or by ``workers`` processes,
each with its own model and spaCy) and handed to the sink in input order, so the output does not depend on the
number of workers."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Protocol

from tacred.extraction.documents import BadDocument, Document
from tacred.extraction.output import Chunk, ChunkResult, Totals, chunk_result, chunked
from tacred.extraction.pipeline import DocumentExtractor, ExtractorSettings
from tacred.extraction.progress import Progress

CHUNK_SIZE = 64  # documents per chunk (one shard and one record of finished documents)


class Sink(Protocol):
    def done_chunks(self) -> set[int]: ...

    def write(self, done: ChunkResult) -> None: ...

    def finish(self) -> Totals: ...


def extract_chunk(extractor: DocumentExtractor, chunk: Chunk) -> ChunkResult:
    """One chunk extracted: its documents processed (in batches), its bad documents passed on."""
    docs = [item for item in chunk.items if isinstance(item, Document)]
    return chunk_result(chunk.index, chunk.items, extractor.process_many(docs) if docs else [])


_worker: DocumentExtractor | None = None


def _start_worker(settings: ExtractorSettings) -> None:
    global _worker
    _worker = DocumentExtractor(settings, warn=False)  # the parent said it already, if the model holds no signatures


def _worker_chunk(chunk: Chunk) -> ChunkResult:
    assert _worker is not None, "the worker's initializer builds the extractor"
    return extract_chunk(_worker, chunk)


def worker_threads(workers: int, num_threads: int | None) -> int:
    """Torch threads per worker: ``num_threads`` when given, else the machine's cores shared out."""
    return num_threads or max(1, (os.cpu_count() or 1) // workers)


def run_extraction(settings: ExtractorSettings, documents: Iterable[Document | BadDocument], sink: Sink,
                   workers: int = 1, chunk_size: int = CHUNK_SIZE, progress: Progress | None = None,
                   extractor: DocumentExtractor | None = None) -> Totals:
    """Extract every document the sink has not done yet and return the sink's totals. ``extractor``: one already
    built (one worker only)."""
    if workers < 1 or chunk_size < 1:
        raise ValueError(f"workers and chunk_size must be at least 1, got {workers} and {chunk_size}")
    progress = progress or Progress(stream=open(os.devnull, "w"))  # noqa: SIM115 - closed with the process
    chunks = chunked(documents, chunk_size, sink.done_chunks())

    def hand_on(done: ChunkResult) -> None:
        sink.write(done)
        progress.update(len(done.results) + len(done.bad), sum(r.sentences for r in done.results))

    if workers > 1:
        _in_parallel(settings, chunks, workers, hand_on)
    else:
        extractor = extractor or DocumentExtractor(settings)
        for chunk in chunks:
            hand_on(extract_chunk(extractor, chunk))
    progress.close()
    return sink.finish()


def _in_parallel(settings: ExtractorSettings, chunks: Iterable[Chunk], workers: int, hand_on: Callable[[ChunkResult], None]) -> None:
    """Chunks spread over ``workers`` spawned processes, at most two per worker in flight (the input is read as it
    is needed), results handed on in input order."""
    import multiprocessing
    from dataclasses import replace

    settings = replace(settings, num_threads=worker_threads(workers, settings.num_threads))
    pending: deque[Future[ChunkResult]] = deque()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                             initargs=(settings,)) as pool:
        try:
            for chunk in chunks:
                pending.append(pool.submit(_worker_chunk, chunk))
                while len(pending) >= 2 * workers:
                    hand_on(pending.popleft().result())
            while pending:
                hand_on(pending.popleft().result())
        except BaseException:
            for future in pending:
                future.cancel()
            raise

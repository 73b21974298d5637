"""A whole extraction: :class:`DocumentExtractor` holds a model and its :class:`~tacred.extraction.pipeline.Extraction`
(``tacred extract``, ``POST /extract``, each relation a mention record with offsets into its document); the documents
are cut into chunks, each chunk extracted (in this process or by ``workers`` processes, each with its own model and
spaCy) and handed to the sink in input order, so the output does not depend on the number of workers."""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from tacred.devices import keep_freed_memory
from tacred.extraction.documents import BadDocument, Document
from tacred.extraction.output import Chunk, ChunkResult, Totals, chunk_result, chunked
from tacred.extraction.pipeline import Extraction
from tacred.extraction.postprocess import DocumentResult
from tacred.extraction.progress import Progress
from tacred.inference.input_rules import MAX_CHARACTERS, MAX_PAIRS, MAX_TOKENS

log = logging.getLogger(__name__)

CHUNK_SIZE = 64  # documents per chunk (one shard and one record of finished documents)
SPACY_BATCH = 16  # documents per nlp.pipe batch


@dataclass(frozen=True)
class ExtractorSettings:
    """Everything a :class:`DocumentExtractor` is built from: plain values, so a worker process can build its own."""

    ckpt_path: str
    device: str = "cpu"
    threshold: float | str | None = None
    spacy_model: str | None = None
    batch_size: int = 50
    max_tokens: int | None = MAX_TOKENS
    max_pairs: int = MAX_PAIRS
    signatures: bool = True
    num_threads: int | None = None
    max_chars: int = MAX_CHARACTERS
    ner: str | None = "auto"  # the entity source: auto (the run's trained NER, else spaCy's), stock, or a folder
    one_sentence: bool = False  # each document one sentence (text already split): no sentence splitting
    precision: str | None = None  # 32 or bf16 for the model and its trained NER; None: each as saved


class DocumentExtractor:
    """The model and its extraction, loaded once; :meth:`process` a document, :meth:`process_many` a batch of them.
    Pickles as its settings alone (a worker process loads its own model). ``warn``: say it when the model holds no
    relation signatures (a worker leaves that to its parent)."""

    def __init__(self, settings: ExtractorSettings, warn: bool = True) -> None:
        from tacred.inference.api import open_model

        self.settings = settings
        keep_freed_memory()
        if settings.num_threads:
            import torch

            torch.set_num_threads(settings.num_threads)
        self.predictor = open_model(settings.ckpt_path, device=settings.device, threshold=settings.threshold,
                                    spacy_model=settings.spacy_model, batch_size=settings.batch_size,
                                    max_tokens=settings.max_tokens, ner=settings.ner, precision=settings.precision)
        self.extraction = Extraction(self.predictor, settings.spacy_model, settings.max_chars, settings.one_sentence,
                                     settings.max_pairs, settings.signatures, warn)

    @property
    def nlp(self) -> Any:
        return self.extraction.nlp

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["settings"])  # type: ignore[misc]

    def process(self, doc: Document) -> DocumentResult:
        return self.process_many([doc])[0]

    def process_many(self, docs: Sequence[Document]) -> list[DocumentResult]:
        """One result per document, in order. A batch that fails is done again one document at a time, so an
        error is the result of the one document that caused it and never ends the run."""
        try:
            return self._batch(docs)
        except Exception as err:  # noqa: BLE001 - one bad document must not end the run
            if len(docs) == 1:
                log.warning("%s: %s: %s", docs[0].id, type(err).__name__, err)
                return [DocumentResult(docs[0].id, error=f"{type(err).__name__}: {str(err)[:300]}")]
        return [result for doc in docs for result in self.process_many([doc])]

    def _batch(self, docs: Sequence[Document]) -> list[DocumentResult]:
        found = self.extraction([d.text for d in docs], [d.id for d in docs], SPACY_BATCH)
        return [DocumentResult.of_text(doc.id, doc.text, text) for doc, text in zip(docs, found, strict=True)]


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

"""The work on one document: spaCy splits it into sentences and finds the candidate arguments, the model decides
every candidate pair (:func:`tacred.inference.extract.relations_in_docs`), and each relation becomes a mention
record with offsets into the document."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from tacred.extraction.documents import MAX_CHARS, Document

if TYPE_CHECKING:
    from spacy.tokens import Doc

    from tacred.inference.extract import Relation

log = logging.getLogger(__name__)

SPACY_BATCH = 16  # documents per nlp.pipe batch


@dataclass(frozen=True)
class ExtractorSettings:
    """Everything a :class:`DocumentExtractor` is built from: plain values, so a worker process can build its own."""

    ckpt_path: str
    device: str = "cpu"
    threshold: float | str | None = None
    spacy_model: str | None = None
    batch_size: int = 50
    max_tokens: int | None = 512
    max_pairs: int = 100
    signatures: bool = True
    num_threads: int | None = None
    max_chars: int = MAX_CHARS
    ner: str | None = "auto"  # the entity source: auto (the run's trained NER, else spaCy's), stock, or a folder


@dataclass
class DocumentResult:
    """What one document gave: its sentences, the candidate pairs asked, the mentions decided (JSON-ready dicts,
    see :func:`mention_record`), or the error that stopped it (then nothing else)."""

    doc_id: str
    sentences: int = 0
    pairs: int = 0
    mentions: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def mention_record(doc_id: str, text: str, sentence: tuple[int, int], relation: Relation) -> dict[str, Any]:
    """One relation as the record that extraction writes (offsets into the document, end-exclusive)."""
    return {
        "doc_id": doc_id, "sentence": relation.sentence, "sentence_text": text[sentence[0]:sentence[1]],
        "subject": asdict(relation.subject), "object": asdict(relation.object),
        "relation": relation.relation, "probability": round(float(relation.probability), 6),
        "evidence": relation.evidence,
    }


class DocumentExtractor:
    """The model and spaCy, loaded once; :meth:`process` a document, :meth:`process_many` a batch of them. Pickles
    as its settings alone (a worker process loads its own model)."""

    def __init__(self, settings: ExtractorSettings) -> None:
        from tacred.inference.api import load_model
        from tacred.inference.extract import text_pipeline

        self.settings = settings
        if settings.num_threads:
            import torch

            torch.set_num_threads(settings.num_threads)
        self.predictor = load_model(settings.ckpt_path, device=settings.device, threshold=settings.threshold,
                                    spacy_model=settings.spacy_model, batch_size=settings.batch_size,
                                    max_tokens=settings.max_tokens, ner=settings.ner)
        self.nlp = text_pipeline(self.predictor, settings.spacy_model, settings.max_chars)

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
        from tacred.inference.extract import relations_in_docs

        parsed: list[Doc] = list(self.nlp.pipe([d.text for d in docs], batch_size=SPACY_BATCH))
        found = relations_in_docs(self.predictor, parsed, [d.id for d in docs], self.settings.max_pairs,
                                  self.settings.signatures)
        out = []
        for doc, text in zip(docs, found, strict=True):
            mentions = [mention_record(doc.id, doc.text, text.sentences[r.sentence], r) for r in text.relations]
            out.append(DocumentResult(doc.id, len(text.sentences), text.pairs, mentions))
        return out

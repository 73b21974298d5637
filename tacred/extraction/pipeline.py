"""The work on one document: spaCy splits it into sentences and finds the candidate arguments, the model decides
every candidate pair (:func:`tacred.extraction.relations.relations_in_docs`), and each relation becomes a mention
record with offsets into the document (:func:`tacred.extraction.answers.mention_record`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tacred.devices import keep_freed_memory
from tacred.extraction.answers import DocumentResult
from tacred.extraction.documents import Document
from tacred.inference.input_rules import MAX_CHARACTERS, MAX_PAIRS, MAX_TOKENS

if TYPE_CHECKING:
    from spacy.tokens import Doc

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
    max_tokens: int | None = MAX_TOKENS
    max_pairs: int = MAX_PAIRS
    signatures: bool = True
    num_threads: int | None = None
    max_chars: int = MAX_CHARACTERS
    ner: str | None = "auto"  # the entity source: auto (the run's trained NER, else spaCy's), stock, or a folder
    one_sentence: bool = False  # each document one sentence (text already split): no sentence splitting


class DocumentExtractor:
    """The model and spaCy, loaded once; :meth:`process` a document, :meth:`process_many` a batch of them. Pickles
    as its settings alone (a worker process loads its own model)."""

    def __init__(self, settings: ExtractorSettings) -> None:
        from tacred.extraction.relations import text_pipeline
        from tacred.inference.api import load_model

        self.settings = settings
        keep_freed_memory()
        if settings.num_threads:
            import torch

            torch.set_num_threads(settings.num_threads)
        self.predictor = load_model(settings.ckpt_path, device=settings.device, threshold=settings.threshold,
                                    spacy_model=settings.spacy_model, batch_size=settings.batch_size,
                                    max_tokens=settings.max_tokens, ner=settings.ner)
        self.joint = getattr(self.predictor, "kind", None) == "joint"  # entities and relations from one model
        if self.joint:
            from tacred.extraction.joint_text import word_pipeline

            self.nlp = word_pipeline(settings.spacy_model, settings.max_chars, settings.one_sentence)
        else:
            self.nlp = text_pipeline(self.predictor, settings.spacy_model, settings.max_chars, settings.one_sentence)

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
        from tacred.extraction.relations import relations_in_docs

        parsed: list[Doc] = list(self.nlp.pipe([d.text for d in docs], batch_size=SPACY_BATCH))
        if self.joint:
            from tacred.extraction.joint_text import joint_relations_in_docs

            texts = joint_relations_in_docs(self.predictor, parsed, [d.id for d in docs])
            return [DocumentResult.of_text(doc.id, doc.text, t.found) for doc, t in zip(docs, texts, strict=True)]
        found = relations_in_docs(self.predictor, parsed, [d.id for d in docs], self.settings.max_pairs,
                                  self.settings.signatures)
        return [DocumentResult.of_text(doc.id, doc.text, text) for doc, text in zip(docs, found, strict=True)]

"""Raw text through a model in three steps, as Hugging Face pipelines split them: :mod:`preprocess
<tacred.extraction.preprocess>` (spaCy's sentences and words, the entities, the candidate pairs under the relation
signatures, the limits), :mod:`forward <tacred.extraction.forward>` (the model's probabilities, whatever the model:
word tables a sentence, transformers a pair, or a joint model's one pass a sentence) and :mod:`postprocess
<tacred.extraction.postprocess>` (decisions and answers). :class:`Extraction` runs them for one model (``m.extract``);
:class:`DocumentExtractor` holds the model and its extraction for a corpus (``tacred extract``, ``POST /extract``),
each relation a mention record with offsets into its document."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tacred.devices import keep_freed_memory
from tacred.extraction.documents import Document
from tacred.extraction.forward import joint_candidates, pair_probabilities
from tacred.extraction.postprocess import DocumentResult, TextRelations, joint_relations, pair_relations
from tacred.extraction.preprocess import Preprocessor, text_pipeline
from tacred.inference.input_rules import MAX_CHARACTERS, MAX_PAIRS, MAX_TOKENS

if TYPE_CHECKING:
    from spacy.tokens import Doc

log = logging.getLogger(__name__)

SPACY_BATCH = 16  # documents per nlp.pipe batch


class Extraction:
    """One model's raw-text extraction: its spaCy pipeline (:func:`~tacred.extraction.preprocess.text_pipeline`),
    then preprocess → forward → postprocess. ``model``: what :func:`tacred.inference.api.open_model` gives;
    ``one_sentence``: each text is one sentence (text already split); ``signatures``: filter by the model's relation
    signatures; ``warn``: say it when the model holds none."""

    def __init__(self, model: Any, spacy_model: str | None = None, max_chars: int = MAX_CHARACTERS,
                 one_sentence: bool = False, max_pairs: int = MAX_PAIRS, signatures: bool = True,
                 warn: bool = True) -> None:
        self.model = model
        self.joint = getattr(model, "kind", None) == "joint"  # entities and relations from one model
        self.preprocess = Preprocessor(model, max_pairs, signatures, warn)
        self.nlp = text_pipeline(model, spacy_model, max_chars, one_sentence,
                                 nominals=not self.joint and self.preprocess.rule.nominals)

    def __call__(self, texts: Iterable[str], names: Sequence[str], batch_size: int | None = None,
                 ) -> list[TextRelations]:
        """What each text gave (``names``: how warnings name each text); ``batch_size``: texts a spaCy batch."""
        return self.docs(self.nlp.pipe(texts, batch_size=batch_size), names)

    def docs(self, docs: Iterable[Doc], names: Sequence[str]) -> list[TextRelations]:
        """What each spaCy doc (made by :attr:`nlp`) gave: its relations, sentences and pairs asked, in order."""
        prepared = self.preprocess(docs, names)
        if self.joint:
            return joint_relations(prepared, joint_candidates(self.model, prepared, names), self.model.threshold)
        return pair_relations(prepared, pair_probabilities(self.model, prepared), self.model.labels,
                              self.model.encoder.no_relation, self.model.threshold)


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
                                    max_tokens=settings.max_tokens, ner=settings.ner)
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

"""Raw text through a model in three steps, as Hugging Face pipelines split them: :mod:`preprocess
<tacred.extraction.preprocess>` (spaCy's sentences and words, the entities, the candidate pairs under the relation
signatures, the limits), :mod:`forward <tacred.extraction.forward>` (the model's probabilities, whatever the model:
word tables a sentence, transformers a pair, or a joint model's one pass a sentence) and :mod:`postprocess
<tacred.extraction.postprocess>` (decisions and answers). :class:`Extraction` runs them for one model (``m.extract``,
and :class:`~tacred.extraction.runner.DocumentExtractor` for a corpus)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tacred.extraction.forward import joint_candidates, pair_probabilities
from tacred.extraction.postprocess import TextRelations, joint_relations, pair_relations
from tacred.extraction.preprocess import Preprocessor
from tacred.inference.input_rules import MAX_CHARACTERS, MAX_PAIRS

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc


class Extraction:
    """One model's raw-text extraction: preprocess (its spaCy pipeline, :attr:`nlp`, then sentences and pairs) →
    forward → postprocess. ``model``: what :func:`tacred.inference.api.open_model` gives;
    ``one_sentence``: each text is one sentence (text already split); ``signatures``: filter by the model's relation
    signatures; ``warn``: say it when the model holds none."""

    def __init__(self, model: Any, spacy_model: str | None = None, max_chars: int = MAX_CHARACTERS,
                 one_sentence: bool = False, max_pairs: int = MAX_PAIRS, signatures: bool = True,
                 warn: bool = True) -> None:
        self.model = model
        self.joint = getattr(model, "kind", None) == "joint"  # entities and relations from one model
        self.preprocess = Preprocessor(model, spacy_model, max_chars, one_sentence, max_pairs, signatures, warn)

    @property
    def nlp(self) -> Language:
        """The spaCy pipeline the texts go through (the preprocess step's own)."""
        return self.preprocess.nlp

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

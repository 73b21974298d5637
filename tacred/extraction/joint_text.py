"""Raw text through a joint entity-and-relation model: spaCy (its tokenizer and the rule-based sentencizer, or one
sentence a text) only cuts sentences and words; the model finds entities and relations in one pass a sentence
(:meth:`tacred.inference.joint.JointPredictor.read`); each relation comes back as the pipeline's :class:`Relation`,
with character offsets, so the records ``tacred extract`` writes are the same as for a per-pair model."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tacred.extraction.answers import Mention, Relation, TextRelations

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

log = logging.getLogger(__name__)

# what spaCy's English pipelines hold beyond the tokenizer: none of it is needed to cut sentences and words
NOT_NEEDED = ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner", "senter", "morphologizer"]


class JointReader(Protocol):
    """What extraction asks of a joint model (:class:`tacred.inference.joint.JointPredictor`)."""

    spacy_model: str | None

    def encode(self, words: Sequence[str]) -> Any: ...

    def read_encoded(self, encoded: Sequence[Any]) -> list[Any]: ...


def word_pipeline(spacy_model: str | None, max_chars: int, one_sentence: bool = False) -> Language:
    """spaCy's tokenizer with sentence boundaries from the rule-based sentencizer (``one_sentence``: each text one
    sentence), loaded once per process by :func:`tacred.text.spacy_pipeline.load_spacy`."""
    from tacred.extraction.relations import _TextSteps
    from tacred.text.spacy_pipeline import load_spacy

    nlp = load_spacy(spacy_model or None, NOT_NEEDED, _TextSteps(None, one_sentence))
    nlp.max_length = max(nlp.max_length, max_chars + 1)
    return nlp


@dataclass
class JointText:
    """What one text gave: its relations (and sentences) as the pipeline gives them, and every entity found, in
    character offsets, with its sentence."""

    found: TextRelations
    entities: list[tuple[int, Mention, float]]  # (sentence, mention, probability)


def joint_relations_in_docs(predictor: JointReader, docs: Iterable[Doc], names: Sequence[str]) -> list[JointText]:
    """For each spaCy doc, the entities and relations the joint model finds in its sentences (preprocess: the
    sentences' words; forward: one pass a sentence; postprocess: character offsets and records)."""
    texts: list[JointText] = []
    asked: list[Any] = []  # each sentence tokenised once (word pieces), as the model reads it
    owners: list[tuple[int, int, list[tuple[int, int]], str]] = []  # (text, sentence, words' offsets, its text)
    for n, doc in enumerate(docs):
        sentences = []
        for k, sent in enumerate(doc.sents):
            sentences.append((sent.start_char, sent.end_char))
            words = [t for t in sent if not t.is_space and t.text.strip()]
            if not words:
                continue
            encoded = predictor.encode([t.text for t in words])
            if encoded is None:
                log.warning("%s: sentence %d (%d words) is skipped: longer than the model reads", names[n], k,
                            len(words))
                continue
            asked.append(encoded)
            owners.append((n, k, [(t.idx, t.idx + len(t.text)) for t in words], doc.text))
        texts.append(JointText(TextRelations([], sentences, 0), []))
    for (n, k, offsets, text), result in zip(owners, predictor.read_encoded(asked), strict=True):
        mentions = []
        for e in result.entities:
            start, end = offsets[e.start][0], offsets[e.end - 1][1]
            mentions.append(Mention(text[start:end], start, end, e.type))
            texts[n].entities.append((k, mentions[-1], e.probability))
        texts[n].found.pairs += len(result.entities) * (len(result.entities) - 1)
        for r in result.relations:
            texts[n].found.relations.append(Relation(r.relation, r.probability, mentions[r.head], mentions[r.tail], k))
    for t in texts:
        t.found.relations.sort(key=lambda r: (r.sentence, r.subject.start, r.object.start))
    return texts


def extract_texts(predictor: JointReader, texts: list[str], one_sentence: bool = False) -> list[list[Relation]]:
    """Each text's relations (``load_model(...).extract`` of a joint model)."""
    from tacred.inference.input_rules import MAX_CHARACTERS

    nlp = word_pipeline(predictor.spacy_model, MAX_CHARACTERS, one_sentence)
    found = joint_relations_in_docs(predictor, nlp.pipe(texts), [f"text {n}" for n in range(len(texts))])
    return [t.found.relations for t in found]

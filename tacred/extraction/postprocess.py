"""Extraction's last step: the model's probabilities → the relations reported, and what extraction answers: a
relation found in plain text between two mentions (``m.extract``; the mentions are preprocessing's), what one text
gave, and the one record of a relation that ``tacred extract`` writes and ``POST /extract`` answers.

Per-pair models: directed labels' two orders are combined into one fact, then the no-relation rule of
:mod:`tacred.evaluation.decision` decides each pair, and a label that the pair's types rule out (the labels
:mod:`tacred.extraction.preprocess` allowed it) is not reported. Directed labels (``Cause-Effect(e1,e2)`` /
``(e2,e1)``, as SemEval and KBP37 write them) name the direction by the arguments' places in the sentence (``e1`` the
first, as training data writes the subject), so a model trained on them is asked about an unordered pair of mentions
``a`` (first in the text) and ``b`` in both orders: (subject ``a``, object ``b``) and (``b``, ``a``). Both answers are
read in the first order's frame (``R(e1,e2)`` asked of (``b``, ``a``) means ``R(b, a)``, which the first order calls
``R(e2,e1)``) and averaged: p(fact) = (p(L | a, b) + p(mirror(L) | b, a)) / 2, where the mirror swaps ``(e1,e2)`` and
``(e2,e1)`` (a label without a mirror in the set gets no probability from the second order). One fact per pair is
reported as ``R(subject, object)`` with the arguments in the relation's own order.

Joint models: each entity pair's most likely relation where it reaches the model's threshold
(:func:`tacred.inference.joint.best_relations`), its entities' word spans turned into character offsets.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tacred.evaluation.decision import decide
from tacred.extraction.preprocess import Mention, Pair, Prepared
from tacred.relation_types.schema import split_direction


# -- what extraction answers ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Relation:
    """A relation found in plain text between a subject and an object mention, in sentence ``sentence`` (counted
    from 0) of its text. ``evidence``: for directed labels, the label and probability read in each order of the pair
    and how they were combined (None for a model asked in one order)."""

    relation: str
    probability: float
    subject: Mention
    object: Mention
    sentence: int = 0
    evidence: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TextRelations:
    """What one text gave: its relations, its sentences' character spans and how many candidate pairs were asked;
    for a joint model also every entity it found: (sentence, mention, probability)."""

    relations: list[Relation]
    sentences: list[tuple[int, int]]
    pairs: int = 0
    entities: list[tuple[int, Mention, float]] = field(default_factory=list)


def mention_record(doc_id: str, text: str, sentence: tuple[int, int], relation: Relation) -> dict[str, Any]:
    """One relation as the record that extraction writes (offsets into the document, end-exclusive); its Parquet
    schema is :mod:`tacred.extraction.parquet_shards`, and :mod:`tacred.extraction.mention_files` reads it back."""
    return {
        "doc_id": doc_id, "sentence": relation.sentence, "sentence_text": text[sentence[0]:sentence[1]],
        "subject": asdict(relation.subject), "object": asdict(relation.object),
        "relation": relation.relation, "probability": round(float(relation.probability), 6),
        "evidence": relation.evidence,
    }


@dataclass
class DocumentResult:
    """What one document gave: its sentences, the candidate pairs asked, the mentions decided (JSON-ready dicts,
    see :func:`mention_record`), or the error that stopped it (then nothing else)."""

    doc_id: str
    sentences: int = 0
    pairs: int = 0
    mentions: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    @classmethod
    def of_text(cls, doc_id: str, text: str, found: TextRelations) -> DocumentResult:
        """A document's result from what its text gave: each relation as its :func:`mention_record`."""
        mentions = [mention_record(doc_id, text, found.sentences[r.sentence], r) for r in found.relations]
        return cls(doc_id, len(found.sentences), found.pairs, mentions)

    def answer(self) -> dict[str, Any]:
        """The answer of ``POST /extract`` for a document that was extracted (``error`` is None)."""
        return {"id": self.doc_id, "sentences": self.sentences, "pairs": self.pairs, "mentions": self.mentions}


# -- directed labels ------------------------------------------------------------------------------------------------
def mirror(label: str) -> str:
    """The label of the same relation in the other direction (the label itself when it has none)."""
    base, args = split_direction(label)
    if args is None:
        return label
    return f"{base}({'e2,e1' if args == 'e1,e2' else 'e1,e2'})"


@dataclass(frozen=True)
class DirectedLabels:
    """A directed label set: each label's mirror (its index; -1 when the set lacks it)."""

    labels: tuple[str, ...]
    mirror_index: np.ndarray  # (L,)

    @classmethod
    def from_labels(cls, labels: Sequence[str]) -> DirectedLabels:
        index = {label: i for i, label in enumerate(labels)}
        return cls(tuple(labels), np.array([index.get(mirror(label), -1) for label in labels], dtype=np.int64))

    def combine(self, forward: np.ndarray, backward: np.ndarray) -> np.ndarray:
        """(N, L) probabilities in the forward order's frame from both orders' (N, L) probabilities (the mean)."""
        mirrored = np.where(self.mirror_index >= 0, backward[:, np.clip(self.mirror_index, 0, None)], 0.0)  # (N, L)
        return (forward + mirrored) / 2

    def fact(self, label: str) -> tuple[str, bool]:
        """The relation a forward-frame label reports and whether its subject is the pair's first mention."""
        base, args = split_direction(label)
        return base, args != "e2,e1"


# -- the step itself ------------------------------------------------------------------------------------------------
def decided_relations(probs: np.ndarray, pairs: Sequence[Pair], labels: Sequence[str], no_relation: str,
                      threshold: float | np.ndarray | None, both_orders: bool) -> Iterator[tuple[int, Relation]]:
    """The relations decided among the candidate pairs, each with its text's number. ``probs``: the pairs' (N, L)
    probabilities, or (2N, L) in pairs of orders with ``both_orders`` (each pair asked as (first, second), then
    (second, first)); ``threshold``: the no-relation threshold (None: the argmax). A decided label outside the
    pair's ``allowed`` labels (its types' signatures) is not reported."""
    labels = list(labels)
    if both_orders:
        directed = DirectedLabels.from_labels(labels)
        forward, backward = probs[0::2], probs[1::2]
        probs = directed.combine(forward, backward)
    decided = decide(probs, labels.index(no_relation), threshold).tolist()
    for row, (pair, best) in enumerate(zip(pairs, decided, strict=True)):
        label = labels[best]
        if label == no_relation or label not in pair.allowed:
            continue
        a, b = pair.first.mention, pair.second.mention
        relation, evidence, subject, obj = label, None, a, b
        if both_orders:
            relation, first_is_subject = directed.fact(label)
            subject, obj = (a, b) if first_is_subject else (b, a)
            mirrored = int(directed.mirror_index[best])
            evidence = {"combined": "mean", "orders": [
                {"subject": a.text, "object": b.text, "label": label, "probability": float(forward[row, best])},
                {"subject": b.text, "object": a.text, "label": labels[mirrored] if mirrored >= 0 else None,
                 "probability": float(backward[row, mirrored]) if mirrored >= 0 else 0.0}]}
        yield pair.text, Relation(relation, float(probs[row, best]), subject, obj, pair.sentence, evidence)


def pair_relations(prepared: Prepared, probs: np.ndarray, labels: Sequence[str], no_relation: str,
                   threshold: float | np.ndarray | None) -> list[TextRelations]:
    """Each text's relations among its candidate pairs (``probs``: :func:`tacred.extraction.forward.pair_probabilities`'s)."""
    texts = _texts(prepared)
    if prepared.pairs:
        for n, relation in decided_relations(probs, prepared.pairs, labels, no_relation, threshold,
                                             prepared.both_orders):
            texts[n].relations.append(relation)
    return _sorted(texts)


def joint_relations(prepared: Prepared, found: Sequence[tuple[Any, Any] | None],
                    threshold: float) -> list[TextRelations]:
    """Each text's entities and relations from a joint model's sentences (``found``: for each of
    ``prepared.sentences``, its (entities, candidates) or None where the model could not read it)."""
    from tacred.inference.joint import best_relations

    texts = _texts(prepared)
    for sentence, result in zip(prepared.sentences, found, strict=True):
        if result is None:
            continue
        entities, candidates = result
        text, offsets = texts[sentence.text], sentence.offsets
        mentions = []
        for e in entities:
            start, end = offsets[e.start][0], offsets[e.end - 1][1]
            mentions.append(Mention(prepared.docs[sentence.text][start:end], start, end, e.type))
            text.entities.append((sentence.index, mentions[-1], e.probability))
        text.pairs += len(entities) * (len(entities) - 1)
        for r in best_relations(candidates, threshold):
            text.relations.append(Relation(r.relation, r.probability, mentions[r.head], mentions[r.tail],
                                           sentence.index))
    return _sorted(texts)


def _texts(prepared: Prepared) -> list[TextRelations]:
    """Each text's result, still without relations: its sentences and how many pairs were asked."""
    return [TextRelations([], spans, asked) for spans, asked in zip(prepared.spans, prepared.asked, strict=True)]


def _sorted(texts: list[TextRelations]) -> list[TextRelations]:
    for text in texts:
        text.relations.sort(key=lambda r: (r.sentence, r.subject.start, r.object.start))
    return texts

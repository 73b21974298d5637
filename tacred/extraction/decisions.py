"""Probabilities of candidate pairs → the relations reported: directed labels' two orders combined into one fact,
the no-relation rule of :mod:`tacred.evaluation.decision`, and the relation signatures' last word.

Directed labels (``Cause-Effect(e1,e2)`` / ``(e2,e1)``, as SemEval and KBP37 write them) name the direction by the
arguments' places in the sentence (``e1`` the first, as training data writes the subject), so a model trained on them
is asked about an unordered pair of mentions ``a`` (first in the text) and ``b`` in both orders: (subject ``a``,
object ``b``) and (``b``, ``a``). Both answers are read in the first order's frame (``R(e1,e2)`` asked of (``b``,
``a``) means ``R(b, a)``, which the first order calls ``R(e2,e1)``) and averaged: p(fact) = (p(L | a, b) +
p(mirror(L) | b, a)) / 2, where the mirror swaps ``(e1,e2)`` and ``(e2,e1)`` (a label without a mirror in the set gets
no probability from the second order). The usual no-relation rule then decides one fact per pair, reported as
``R(subject, object)`` with the arguments in the relation's own order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from tacred.evaluation.decision import decide
from tacred.extraction.answers import Mention, Relation
from tacred.extraction.signature_filter import SignatureFilter
from tacred.relation_types.schema import (
    split_direction,  # defined with the schema, which reads directed labels too
)


def mirror(label: str) -> str:
    """The label of the same relation in the other direction (the label itself when it has none)."""
    base, args = split_direction(label)
    if args is None:
        return label
    return f"{base}({'e2,e1' if args == 'e1,e2' else 'e1,e2'})"


def is_directed(labels: Sequence[str]) -> bool:
    """Whether the label set writes direction into its labels."""
    return any(split_direction(label)[1] is not None for label in labels)


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


def decided_relations(probs: np.ndarray, owners: Sequence[tuple[int, int, Mention, Mention]], labels: Sequence[str],
                      no_relation: str, threshold: float | np.ndarray | None, both_orders: bool,
                      types: SignatureFilter) -> Iterator[tuple[int, Relation]]:
    """The relations decided among the candidate pairs, each with its text's number. ``owners``: each pair's (text,
    sentence, first mention, second mention); ``probs``: their (N, L) probabilities, or (2N, L) in pairs of orders
    with ``both_orders`` (each pair asked as (first, second), then (second, first)); ``threshold``: the no-relation
    threshold (None: the argmax); ``types``: the relation signatures, which drop a decided relation that its
    arguments' types rule out."""
    labels = list(labels)
    if both_orders:
        directed = DirectedLabels.from_labels(labels)
        forward, backward = probs[0::2], probs[1::2]
        probs = directed.combine(forward, backward)
    decided = decide(probs, labels.index(no_relation), threshold).tolist()
    for row, ((n, k, a, b), best) in enumerate(zip(owners, decided, strict=True)):
        label = labels[best]
        if label == no_relation:
            continue
        relation, evidence = label, None
        subject, obj = a, b
        if both_orders:
            relation, first_is_subject = directed.fact(label)
            subject, obj = (a, b) if first_is_subject else (b, a)
            mirrored = int(directed.mirror_index[best])
            evidence = {"combined": "mean", "orders": [
                {"subject": a.text, "object": b.text, "label": label, "probability": float(forward[row, best])},
                {"subject": b.text, "object": a.text, "label": labels[mirrored] if mirrored >= 0 else None,
                 "probability": float(backward[row, mirrored]) if mirrored >= 0 else 0.0}]}
            if not types.fact_fits(relation, subject.type, obj.type):
                continue
        elif not types.takes(label, subject.type, obj.type):
            continue
        yield n, Relation(relation, float(probs[row, best]), subject, obj, k, evidence)

"""Directed labels (``Cause-Effect(e1,e2)`` / ``(e2,e1)``, as SemEval and KBP37 write them) resolved into facts.

Such a label set names the direction by the arguments' places in the sentence (``e1`` the first, as training data
writes the subject), so a model trained on it is asked about an unordered pair of mentions ``a`` (first in the text)
and ``b`` in both orders: (subject ``a``, object ``b``) and (``b``, ``a``). Both answers are read in the first order's
frame (``R(e1,e2)`` asked of (``b``, ``a``) means ``R(b, a)``, which the first order calls ``R(e2,e1)``) and averaged:
p(fact) = (p(L | a, b) + p(mirror(L) | b, a)) / 2, where the mirror swaps ``(e1,e2)`` and ``(e2,e1)`` (a label
without a mirror in the set gets no probability from the second order). The usual no-relation rule then decides
one fact per pair, reported as ``R(subject, object)`` with the arguments in the relation's own order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tacred.data.schema import split_direction  # defined with the schema, which reads directed labels too


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

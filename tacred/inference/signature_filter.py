"""Relation signatures applied to extraction: candidate pairs that no relation takes are not predicted, and a
decided relation whose (subject type, object type) its training data never had is not reported."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from tacred.data.signatures import Signatures
from tacred.inference.directions import split_direction

log = logging.getLogger(__name__)

NO_SIGNATURES = ("the model holds no relation signatures (its checkpoint was written before tacred learned them): "
                 "extracted relations are not filtered by their arguments' types")
_warned = False


class SignatureFilter:
    """Which labels a (subject type, object type) pair may take. Inactive (everything allowed) when switched off or
    when the model holds no signatures (said once per process)."""

    def __init__(self, signatures: Signatures | None, labels: Sequence[str], no_relation: str,
                 enabled: bool = True) -> None:
        global _warned
        self.active = enabled and signatures is not None
        if enabled and signatures is None and not _warned:
            log.warning(NO_SIGNATURES)
            _warned = True
        self.no_relation = no_relation
        self.allowed = signatures.coarsened() if signatures is not None else {}
        self.labels = [label for label in labels if label != no_relation]
        # the facts' own signatures: R(e1,e2)'s pairs as they are, R(e2,e1)'s with the arguments swapped
        self.facts: dict[str, set[tuple[str, str]]] = {}
        for label, pairs in self.allowed.items():
            base, args = split_direction(label)
            self.facts.setdefault(base, set()).update((o, s) if args == "e2,e1" else (s, o) for s, o in pairs)

    def takes(self, label: str, subject_type: str, object_type: str) -> bool:
        """Whether ``label``, asked of (subject, object) in this order, fits their types."""
        return not self.active or label == self.no_relation or (subject_type, object_type) in self.allowed.get(label, ())

    def fact_fits(self, relation: str, subject_type: str, object_type: str) -> bool:
        """Whether a resolved fact ``relation(subject, object)`` (arguments in the relation's order) fits."""
        return not self.active or (subject_type, object_type) in self.facts.get(relation, ())

    def pair_possible(self, first_type: str, second_type: str, both_orders: bool) -> bool:
        """Whether some relation takes the pair (in either order when ``both_orders``)."""
        if not self.active:
            return True
        if any(self.takes(label, first_type, second_type) for label in self.labels):
            return True
        return both_orders and any(self.takes(label, second_type, first_type) for label in self.labels)

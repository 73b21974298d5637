"""Relation signatures applied to extraction: candidate pairs that no relation takes are not predicted, and a
decided relation whose (subject type, object type) its signature does not allow (:mod:`tacred.relation_types.signatures`: the
label set's schema, else the pairs learned with support) is not reported."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from tacred.relation_types.schema import split_direction
from tacred.relation_types.signatures import Signatures

log = logging.getLogger(__name__)

NO_SIGNATURES = ("the model holds no relation signatures (its checkpoint was written before tacred learned them): "
                 "extracted relations outside the TAC KBP schema ({}) are not filtered by their arguments' types")
_warned = False


class SignatureFilter:
    """Which labels a (subject type, object type) pair may take. Inactive (everything allowed) when switched off. A
    model that holds no signatures (an older checkpoint) gets the schema's where its labels have one; its other
    labels take every pair (said once per process)."""

    def __init__(self, signatures: Signatures | None, labels: Sequence[str], no_relation: str,
                 enabled: bool = True) -> None:
        global _warned
        self.active = enabled
        self.no_relation = no_relation
        self.labels = [label for label in labels if label != no_relation]
        if signatures is None:
            signatures = Signatures.from_schema(labels, no_relation)
            self.open = {label for label in self.labels if label not in signatures.pairs}
            if enabled and self.open and not _warned:
                log.warning(NO_SIGNATURES.format(", ".join(sorted(self.open)[:4]) + (", ..." if len(self.open) > 4 else "")))
                _warned = True
        else:
            self.open = set()
        self._possible: dict[tuple[str, str, bool], bool] = {}  # pair_possible's answers, by its arguments
        self.allowed = signatures.coarsened()
        # the facts' own signatures: R(e1,e2)'s pairs as they are, R(e2,e1)'s with the arguments swapped
        self.facts: dict[str, set[tuple[str, str]]] = {}
        self.open_facts = {split_direction(label)[0] for label in self.open}
        for label, pairs in self.allowed.items():
            base, args = split_direction(label)
            self.facts.setdefault(base, set()).update((o, s) if args == "e2,e1" else (s, o) for s, o in pairs)

    def takes(self, label: str, subject_type: str, object_type: str) -> bool:
        """Whether ``label``, asked of (subject, object) in this order, fits their types."""
        return (not self.active or label == self.no_relation or label in self.open
                or (subject_type, object_type) in self.allowed.get(label, ()))

    def fact_fits(self, relation: str, subject_type: str, object_type: str) -> bool:
        """Whether a resolved fact ``relation(subject, object)`` (arguments in the relation's order) fits."""
        return (not self.active or relation in self.open_facts
                or (subject_type, object_type) in self.facts.get(relation, ()))

    def pair_possible(self, first_type: str, second_type: str, both_orders: bool) -> bool:
        """Whether some relation takes the pair (in either order when ``both_orders``): asked of every candidate pair,
        so each answer is kept (a handful of types make a handful of questions)."""
        if not self.active:
            return True
        key = (first_type, second_type, both_orders)
        known = self._possible.get(key)
        if known is None:
            known = any(self.takes(label, first_type, second_type) for label in self.labels) or (
                both_orders and any(self.takes(label, second_type, first_type) for label in self.labels))
            self._possible[key] = known
        return known

"""Relation signatures: the (subject type, object type) pairs each relation takes in the training data, stored with
the vocabularies in every checkpoint so that extraction can refuse type-impossible relations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Training data's fine entity types → the coarser types that spaCy's entities map to (tacred.data.spacy_pipeline):
# a signature learned on TACRED's CITY objects must accept the LOCATION entities that plain text yields.
COARSE_TYPES: dict[str, str] = {
    "CITY": "LOCATION", "COUNTRY": "LOCATION", "STATE_OR_PROVINCE": "LOCATION", "DURATION": "DATE",
    "RELIGION": "NATIONALITY", "IDEOLOGY": "NATIONALITY", "SET": "DATE",
}


def coarse(entity_type: str) -> str:
    """The type that plain-text extraction gives an entity of this training-data type."""
    return COARSE_TYPES.get(entity_type, entity_type)


@dataclass(frozen=True)
class Signatures:
    """For each relation label, the (subject type, object type) pairs seen with it in training, both as written
    there and coarsened (:func:`coarse`); the no-relation label has none (it takes every pair)."""

    pairs: Mapping[str, frozenset[tuple[str, str]]]

    @classmethod
    def learn(cls, examples: Iterable[Any], no_relation: str) -> Signatures:
        """From training examples (anything with ``relation``, ``subj_type`` and ``obj_type``)."""
        found: dict[str, set[tuple[str, str]]] = {}
        for ex in examples:
            if ex.relation != no_relation:
                found.setdefault(ex.relation, set()).add((ex.subj_type, ex.obj_type))
        return cls({label: frozenset(pairs) for label, pairs in found.items()})

    def to_dict(self) -> dict[str, list[list[str]]]:
        return {label: sorted([list(p) for p in pairs]) for label, pairs in sorted(self.pairs.items())}

    @classmethod
    def from_dict(cls, data: Mapping[str, Sequence[Sequence[str]]]) -> Signatures:
        return cls({str(label): frozenset((str(s), str(o)) for s, o in pairs) for label, pairs in data.items()})

    def coarsened(self) -> dict[str, frozenset[tuple[str, str]]]:
        """Each label's pairs in the types that plain-text extraction gives (:data:`COARSE_TYPES`)."""
        return {label: frozenset((coarse(s), coarse(o)) for s, o in pairs) for label, pairs in self.pairs.items()}

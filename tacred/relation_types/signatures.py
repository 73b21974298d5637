"""Relation signatures: the (subject type, object type) pairs each relation may take, stored with the vocabularies in
every checkpoint so that extraction can refuse type-impossible relations.

Where the label set has a schema (TACRED's and KBP37's ``per:``/``org:`` relations, :mod:`tacred.relation_types.schema`), the
schema decides, whatever the training data's types say. Elsewhere (SemEval, CoNLL04, a custom label set) a type pair
is learned from the training split only with real support: at least :data:`MIN_EXAMPLES` training examples and at
least :data:`MIN_SHARE` of the relation's examples (a directed relation's two labels pooled, the pair read in the
relation's own order), so that a few mistyped arguments do not open a relation to every type.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tacred.relation_types.schema import SPACY_NAMES, schema_pairs, spacy_name, split_direction

MIN_EXAMPLES = 5
MIN_SHARE = 0.10
FORMAT = 2  # 1: {label: [[subject type, object type], ...]}, every pair seen in training (tacred before 2026-11)

# Training data's fine entity types → the coarser types that spaCy's entities map to: a signature learned on
# TACRED's CITY objects must accept the LOCATION entities that plain text yields.
COARSE_TYPES: dict[str, str] = SPACY_NAMES

Pair = tuple[str, str]


def coarse(entity_type: str) -> str:
    """The type that plain-text extraction gives an entity of this training-data type."""
    return spacy_name(entity_type)


def _fact(label: str, pair: Pair) -> tuple[str, Pair]:
    """A label's relation and a pair read in the relation's order (``R(e2,e1)`` writes the relation's object first)."""
    relation, args = split_direction(label)
    return relation, ((pair[1], pair[0]) if args == "e2,e1" else pair)


def supported(counts: Mapping[str, Mapping[Pair, int]]) -> dict[str, frozenset[Pair]]:
    """The pairs of each label that pass the support rule (module docstring), from its training counts."""
    facts: dict[str, Counter[Pair]] = {}
    for label, pairs in counts.items():
        for pair, n in pairs.items():
            relation, fact = _fact(label, pair)
            facts.setdefault(relation, Counter())[fact] += n
    kept = {relation: {p for p, n in c.items() if n >= MIN_EXAMPLES and n >= MIN_SHARE * sum(c.values())}
            for relation, c in facts.items()}
    out = {}
    for label in counts:
        relation, args = split_direction(label)
        out[label] = frozenset((o, s) if args == "e2,e1" else (s, o) for s, o in kept[relation])
    return out


@dataclass(frozen=True)
class Signatures:
    """For each relation label, the (subject type, object type) pairs it may take (in the order training data writes
    its arguments), where they come from (``sources``: ``schema``, ``learned``, or ``seen`` for the every-pair-seen
    signatures of older checkpoints) and the training counts behind them (``support``; empty where not known). The
    no-relation label has none (it takes every pair).

    ``open``: labels that take every pair; only a model that stores no signatures has them (:meth:`from_schema`: the
    labels the schema does not know), and such stand-ins are not ``stored`` (a vocabulary does not write them).
    ``plain_text``: each label's pairs as written and in the types that plain-text extraction gives
    (:data:`COARSE_TYPES`), built with the signatures."""

    pairs: Mapping[str, frozenset[Pair]]
    sources: Mapping[str, str] = field(default_factory=dict)
    support: Mapping[str, Mapping[Pair, int]] = field(default_factory=dict)
    open: frozenset[str] = frozenset()
    stored: bool = True
    plain_text: Mapping[str, frozenset[Pair]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plain_text", {label: pairs | {(coarse(s), coarse(o)) for s, o in pairs}
                                                for label, pairs in self.pairs.items()})

    @classmethod
    def learn(cls, examples: Iterable[Any], no_relation: str, labels: Sequence[str] = ()) -> Signatures:
        """From training examples (anything with ``relation``, ``subj_type`` and ``obj_type``) and the label set
        (``labels``: a relation without training examples still gets its schema)."""
        counts: dict[str, Counter[Pair]] = {}
        for ex in examples:
            if ex.relation != no_relation:
                counts.setdefault(ex.relation, Counter())[(ex.subj_type, ex.obj_type)] += 1
        learned = supported(counts)
        pairs, sources = {}, {}
        for label in sorted(set(counts) | {label for label in labels if label != no_relation}):
            schema = schema_pairs(label)
            pairs[label], sources[label] = (schema, "schema") if schema is not None else (learned.get(label, frozenset()),
                                                                                           "learned")
        return cls(pairs, sources, {label: dict(c) for label, c in counts.items()})

    @classmethod
    def from_schema(cls, labels: Sequence[str], no_relation: str) -> Signatures:
        """What stands in for a model that stores no signatures (its vocabulary was written before tacred learned
        them): the schema's signatures of the labels that have one, the other labels open."""
        found = {label: schema_pairs(label) for label in labels if label != no_relation}
        pairs = {label: p for label, p in found.items() if p is not None}
        return cls(pairs, dict.fromkeys(pairs, "schema"), open=frozenset(found) - frozenset(pairs), stored=False)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "rule": {"min_examples": MIN_EXAMPLES, "min_share": MIN_SHARE},
                "labels": {label: {"source": self.sources.get(label, "learned"), "pairs": sorted(map(list, pairs)),
                                   "support": sorted([s, o, n] for (s, o), n in self.support.get(label, {}).items())}
                           for label, pairs in sorted(self.pairs.items())}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Signatures:
        """Read :meth:`to_dict`'s form, or the first form (every pair seen in training), where the schema now decides
        the labels it holds and the rest keep the pairs seen (their counts were not kept, so the support rule cannot
        be applied)."""
        if data.get("format") == FORMAT:
            labels = data["labels"]
            return cls({str(k): frozenset((str(s), str(o)) for s, o in v["pairs"]) for k, v in labels.items()},
                       {str(k): str(v["source"]) for k, v in labels.items()},
                       {str(k): {(str(s), str(o)): int(n) for s, o, n in v["support"]} for k, v in labels.items()
                        if v["support"]})
        if "format" in data:
            raise ValueError(f"relation signatures of format {data['format']!r}; this tacred reads formats 1 and {FORMAT}")
        pairs, sources = {}, {}
        for label, seen in data.items():
            schema = schema_pairs(str(label))
            pairs[str(label)] = schema if schema is not None else frozenset((str(s), str(o)) for s, o in seen)
            sources[str(label)] = "schema" if schema is not None else "seen"
        return cls(pairs, sources)

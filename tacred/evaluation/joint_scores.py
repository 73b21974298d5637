"""Scores of a joint entity-and-relation model on sentences in SpERT's layout, as the field scores it: NER micro
P/R/F1 over (span, type); relations strict (both spans, both types and the relation right, direction counting) and
by boundaries (types ignored), micro and macro (the mean of each relation type's P, R and F1, over the types the
model knows); and the sweep that chooses the relation threshold on dev."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tacred.evaluation.end_to_end import set_scores
from tacred.evaluation.scoring import prf

Entity = tuple[int, int, str]  # (start word, end word exclusive, type)
Triple = tuple[Entity, Entity, str]  # (head, tail, relation)
THRESHOLDS = tuple(round(0.05 * k, 2) for k in range(1, 20))  # the relation thresholds the dev sweep tries


@dataclass
class SentenceFacts:
    """One sentence's entities and relations (gold, or found); ``candidates``: each scored pair's triple for every
    relation type and its probability, which the threshold decides."""

    entities: set[Entity] = field(default_factory=set)
    relations: set[Triple] = field(default_factory=set)
    candidates: list[tuple[Triple, float]] = field(default_factory=list)


def relations_at(sentence: SentenceFacts, threshold: float) -> set[Triple]:
    """The relations a threshold keeps: each pair's most likely relation when its probability reaches it."""
    best: dict[tuple[Entity, Entity], tuple[float, str]] = {}
    for (head, tail, rel), p in sentence.candidates:
        if p >= threshold and p > best.get((head, tail), (-1.0, ""))[0]:
            best[(head, tail)] = (p, rel)
    return {(h, t, rel) for (h, t), (_, rel) in best.items()}


def choose_threshold(gold: Sequence[SentenceFacts], found: Sequence[SentenceFacts],
                     min_precision: float | None = None) -> tuple[float, float]:
    """The relation threshold of :data:`THRESHOLDS` with the best strict micro-F1 (or, with ``min_precision``, the
    best recall among those whose precision reaches it; the highest threshold when none does), and that F1."""
    counts = np.zeros((len(THRESHOLDS), 3))
    for g, f in zip(gold, found, strict=True):
        for k, threshold in enumerate(THRESHOLDS):
            kept = relations_at(f, threshold)
            counts[k] += (len(kept & g.relations), len(kept), len(g.relations))
    p, r, f1 = prf(counts[:, 0], counts[:, 1], counts[:, 2], empty_precision=0.0)
    if min_precision is None:
        k = int(np.argmax(f1))
    else:
        ok = np.flatnonzero(p >= min_precision)
        k = int(ok[np.argmax(r[ok])]) if len(ok) else len(THRESHOLDS) - 1
    return THRESHOLDS[k], float(f1[k])


def joint_scores(gold: Sequence[SentenceFacts], found: Sequence[SentenceFacts], entity_types: Sequence[str],
                 relation_types: Sequence[str]) -> dict[str, dict]:
    """NER, strict and boundaries relation scores (micro, macro, per type), in percent, of ``found`` (whose
    ``relations`` are decided already) against ``gold``, sentence by sentence."""
    def keyed(items: Sequence[SentenceFacts], what: str) -> dict[str, set]:
        return {str(i): getattr(s, what) for i, s in enumerate(items)}

    def bare(triples: dict[str, set]) -> dict[str, set]:
        return {k: {(h[:2], t[:2], rel) for h, t, rel in v} for k, v in triples.items()}

    gold_rel, found_rel = keyed(gold, "relations"), keyed(found, "relations")
    return {
        "entities": set_scores(keyed(gold, "entities"), keyed(found, "entities"), entity_types, lambda e: e[2]),
        "strict": set_scores(gold_rel, found_rel, relation_types, lambda t: t[2]),
        "boundaries": set_scores(bare(gold_rel), bare(found_rel), relation_types, lambda t: t[2]),
    }

"""Relations from plain text: spaCy finds the candidate arguments, every candidate pair is predicted, and the pairs
decided as a relation come back with character offsets.

Candidates depend on the model's labels. A TACRED-style model (every relation named ``per:…`` or ``org:…``) gets
subjects among the named entities of type PERSON (if it has ``per:`` relations) or ORGANIZATION (``org:``) and
objects among the entities of the types it knows (from its ``OBJ-<TYPE>`` words, else its NER tags). Any other model
(SemEval-style: relations between nominals) gets every ordered pair of nominals: named entities and the head nouns of
noun phrases. Pairs stay within a sentence; at most ``max_pairs`` per text, the closest together first.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from tacred.data.spacy_pipeline import NOMINAL, map_ner, map_pos
from tacred.inference.inputs import InputError

if TYPE_CHECKING:
    from spacy.tokens import Span

    from tacred.inference.predictor import Predictor

log = logging.getLogger(__name__)

SUBJECT_TYPES = {"per:": "PERSON", "org:": "ORGANIZATION"}


@dataclass(frozen=True)
class Mention:
    """An argument in the text: its words, character offsets (end-exclusive) and type."""

    text: str
    start: int
    end: int
    type: str


@dataclass(frozen=True)
class Relation:
    """A relation found in plain text between a subject and an object mention."""

    relation: str
    probability: float
    subject: Mention
    object: Mention

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairRule:
    """Which mentions may be subjects and objects (None: nominal pairs, any mention either way)."""

    subject_types: frozenset[str] | None
    object_types: frozenset[str] | None


def pair_rule(labels: Sequence[str], no_relation: str, known_types: set[str] | None) -> PairRule:
    """TACRED-style typed pairs when every relation is ``per:``/``org:``; nominal pairs otherwise."""
    relations = [label for label in labels if label != no_relation]
    prefixes = {label[:4] for label in relations}
    if relations and prefixes <= set(SUBJECT_TYPES):
        objects = frozenset(known_types) if known_types else None
        return PairRule(frozenset(SUBJECT_TYPES[p] for p in prefixes), objects)
    return PairRule(None, None)


@dataclass(frozen=True)
class _Candidate:
    first: int  # token index (among the sentence's kept tokens), inclusive
    last: int
    mention: Mention


def _mentions(sent: Span, kept: dict[int, int], nominals: bool) -> list[_Candidate]:
    """The named entities of a sentence (and, for nominal pairs, the head nouns of its noun phrases)."""
    out, covered = [], set()
    for ent in sent.ents:
        tokens = [kept[t.i] for t in ent if t.i in kept]
        if tokens:
            out.append(_Candidate(tokens[0], tokens[-1], Mention(ent.text, ent.start_char, ent.end_char,
                                                                 map_ner(ent.label_))))
            covered.update(t.i for t in ent)
    if nominals and sent.doc.has_annotation("DEP"):
        for chunk in sent.noun_chunks:
            root = chunk.root
            if root.i in kept and root.i not in covered and root.pos_ in ("NOUN", "PROPN"):
                out.append(_Candidate(kept[root.i], kept[root.i],
                                      Mention(root.text, root.idx, root.idx + len(root.text), NOMINAL)))
    return sorted(out, key=lambda c: c.first)


def _pairs(mentions: list[_Candidate], rule: PairRule) -> list[tuple[_Candidate, _Candidate]]:
    pairs = []
    for s in mentions:
        if rule.subject_types is not None and s.mention.type not in rule.subject_types:
            continue
        for o in mentions:
            if o is s or not (o.last < s.first or s.last < o.first):
                continue
            if rule.subject_types is not None and rule.object_types is not None and o.mention.type not in rule.object_types:
                continue
            pairs.append((s, o))
    return pairs


def extract_relations(predictor: Predictor, texts: list[str], max_pairs: int = 100,
                      names: Sequence[str] | None = None) -> list[list[Relation]]:
    """For each text, the relations found in it (see the module docstring), in the order of their subjects.
    ``names``: how warnings name each text (default ``text N``, counted from 0)."""
    if max_pairs < 1:
        raise InputError(f"max_pairs must be at least 1, got {max_pairs}")
    rule = pair_rule(predictor.labels, predictor.encoder.no_relation, getattr(predictor.encoder, "object_types", None))
    examples: list[dict[str, Any]] = []
    owners: list[tuple[int, Mention, Mention]] = []
    names = names or [f"text {n}" for n in range(len(texts))]
    for n, doc in enumerate(predictor.nlp.pipe(texts)):
        found = []
        for sent in doc.sents:
            kept_tokens = [t for t in sent if not t.is_space and t.text.strip()]
            if predictor.max_tokens is not None and len(kept_tokens) > predictor.max_tokens:
                log.warning("%s: a sentence of %d tokens is skipped (more than the limit of %d)", names[n],
                            len(kept_tokens), predictor.max_tokens)
                continue
            kept = {t.i: k for k, t in enumerate(kept_tokens)}
            for s, o in _pairs(_mentions(sent, kept, rule.subject_types is None), rule):
                found.append((abs(s.first - o.first), kept_tokens, s, o))
        if len(found) > max_pairs:
            log.warning("%s: %d candidate pairs; the %d closest together are predicted (max_pairs)", names[n],
                        len(found), max_pairs)
            found = sorted(found, key=lambda f: f[0])[:max_pairs]
        for _, tokens, s, o in found:
            examples.append({
                "id": f"{n}", "token": [t.text for t in tokens], "stanford_pos": [map_pos(t.tag_) for t in tokens],
                "stanford_ner": [map_ner(t.ent_type_) for t in tokens], "relation": predictor.encoder.no_relation,
                "subj_start": s.first, "subj_end": s.last, "obj_start": o.first, "obj_end": o.last,
                "subj_type": s.mention.type, "obj_type": o.mention.type,
            })
            owners.append((n, s.mention, o.mention))
    results: list[list[Relation]] = [[] for _ in texts]
    for (n, subj, obj), pred in zip(owners, predictor.predict_examples(examples), strict=True):
        if pred.relation != predictor.encoder.no_relation:
            results[n].append(Relation(pred.relation, pred.probability, subj, obj))
    for found_relations in results:
        found_relations.sort(key=lambda r: (r.subject.start, r.object.start))
    return results

"""Candidate pairs in a spaCy sentence: which mentions a model may pair (:class:`PairRule`, from its labels), the
mentions themselves (named entities, and the head nouns of noun phrases for nominal pairs), the ordered pairs that
the relation signatures leave, and the TACRED dict of one pair as a model reads it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tacred.extraction.answers import Mention
from tacred.extraction.decisions import is_directed
from tacred.extraction.signature_filter import SignatureFilter
from tacred.text.spacy_pipeline import NOMINAL, map_ner, map_pos

if TYPE_CHECKING:
    from spacy.tokens import Span

SUBJECT_TYPES = {"per:": "PERSON", "org:": "ORGANIZATION"}


@dataclass(frozen=True)
class PairRule:
    """Which mentions may be subjects and objects (None: any mention either way); ``nominals``: head nouns of noun
    phrases are mentions too; ``both_orders``: each unordered pair is asked in both orders (directed labels)."""

    subject_types: frozenset[str] | None
    object_types: frozenset[str] | None
    nominals: bool = False
    both_orders: bool = False


def pair_rule(labels: Sequence[str], no_relation: str, known_types: set[str] | None) -> PairRule:
    """TACRED-style typed pairs when every relation is ``per:``/``org:``; nominal pairs otherwise; unordered pairs
    asked both ways when the labels carry their direction."""
    relations = [label for label in labels if label != no_relation]
    prefixes = {label[:4] for label in relations}
    typed = bool(relations) and prefixes <= set(SUBJECT_TYPES)
    if is_directed(relations):
        return PairRule(None, None, nominals=not typed, both_orders=True)
    if typed:
        objects = frozenset(known_types) if known_types else None
        return PairRule(frozenset(SUBJECT_TYPES[p] for p in prefixes), objects)
    return PairRule(None, None, nominals=True)


@dataclass(frozen=True)
class Candidate:
    """A mention of a sentence and its tokens' span among the sentence's kept tokens (inclusive)."""

    first: int
    last: int
    mention: Mention


def sentence_mentions(sent: Span, kept: dict[int, int], nominals: bool) -> list[Candidate]:
    """The named entities of a sentence (and, for nominal pairs, the head nouns of its noun phrases); ``kept``: the
    doc's token index → the index among the sentence's kept tokens."""
    out, covered = [], set()
    for ent in sent.ents:
        tokens = [kept[t.i] for t in ent if t.i in kept]
        if tokens:
            out.append(Candidate(tokens[0], tokens[-1], Mention(ent.text, ent.start_char, ent.end_char,
                                                                map_ner(ent.label_))))
            covered.update(t.i for t in ent)
    if nominals and sent.doc.has_annotation("DEP"):
        for chunk in sent.noun_chunks:
            root = chunk.root
            if root.i in kept and root.i not in covered and root.pos_ in ("NOUN", "PROPN"):
                out.append(Candidate(kept[root.i], kept[root.i],
                                     Mention(root.text, root.idx, root.idx + len(root.text), NOMINAL)))
    return sorted(out, key=lambda c: c.first)


def candidate_pairs(mentions: list[Candidate], rule: PairRule,
                    types: SignatureFilter) -> list[tuple[Candidate, Candidate]]:
    """Ordered (subject, object) pairs; with ``both_orders``, each unordered pair once, the first in the text first."""
    pairs = []
    for i, s in enumerate(mentions):
        if rule.subject_types is not None and s.mention.type not in rule.subject_types:
            continue
        for j, o in enumerate(mentions):
            if o is s or not (o.last < s.first or s.last < o.first) or (rule.both_orders and j < i):
                continue
            if rule.subject_types is not None and rule.object_types is not None and o.mention.type not in rule.object_types:
                continue
            if types.pair_possible(s.mention.type, o.mention.type, rule.both_orders):
                pairs.append((s, o))
    return pairs


def sentence_features(tokens: list[Any]) -> dict[str, list[str]]:
    """A sentence's words, POS and NER tags, computed once for all its pairs."""
    return {"token": [t.text for t in tokens], "stanford_pos": [map_pos(t.tag_) for t in tokens],
            "stanford_ner": [map_ner(t.ent_type_) for t in tokens]}


def pair_example(features: dict[str, list[str]], s: Candidate, o: Candidate, no_relation: str) -> dict[str, Any]:
    """The TACRED dict of the pair (subject ``s``, object ``o``) of a sentence with ``features``."""
    return {**features, "relation": no_relation, "subj_start": s.first, "subj_end": s.last, "obj_start": o.first,
            "obj_end": o.last, "subj_type": s.mention.type, "obj_type": o.mention.type}

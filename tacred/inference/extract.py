"""Relations from plain text: spaCy finds the candidate arguments, every candidate pair is predicted, and the pairs
decided as a relation come back with character offsets.

Candidates depend on the model's labels. A TACRED-style model (every relation named ``per:…`` or ``org:…``) gets
subjects among the named entities of type PERSON (if it has ``per:`` relations) or ORGANIZATION (``org:``) and
objects among the entities of the types it knows (from its ``OBJ-<TYPE>`` words, else its NER tags). Any other model
(SemEval-style: relations between nominals) gets every ordered pair of nominals: named entities and the head nouns of
noun phrases. A model whose labels carry their direction (``R(e1,e2)``/``R(e2,e1)``) gets each unordered pair once,
asked in both orders (:mod:`tacred.inference.directions`); KBP37-style ones (``per:``/``org:`` with directions) pair
named entities only. Relation signatures (:mod:`tacred.inference.signature_filter`: the TAC KBP schema where the
labels have one, else pairs learned with support) drop pairs and relations that the arguments' types rule out. Pairs stay within a sentence; at most ``max_pairs`` per text, the closest first.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tacred.data.spacy_pipeline import NOMINAL, map_ner, map_pos
from tacred.evaluation.decision import decide
from tacred.inference.directions import DirectedLabels, is_directed
from tacred.inference.inputs import InputError
from tacred.inference.signature_filter import SignatureFilter

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span

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


def _pairs(mentions: list[_Candidate], rule: PairRule, types: SignatureFilter) -> list[tuple[_Candidate, _Candidate]]:
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


@dataclass
class TextRelations:
    """What one text gave: its relations, its sentences' character spans and how many candidate pairs were asked."""

    relations: list[Relation]
    sentences: list[tuple[int, int]]
    pairs: int = 0


def _sentence_features(tokens: list[Any]) -> dict[str, list[str]]:
    """A sentence's words, POS and NER tags, computed once for all its pairs."""
    return {"token": [t.text for t in tokens], "stanford_pos": [map_pos(t.tag_) for t in tokens],
            "stanford_ner": [map_ner(t.ent_type_) for t in tokens]}


def _example(features: dict[str, list[str]], s: _Candidate, o: _Candidate, no_relation: str) -> dict[str, Any]:
    return {**features, "relation": no_relation, "subj_start": s.first, "subj_end": s.last, "obj_start": o.first,
            "obj_end": o.last, "subj_type": s.mention.type, "obj_type": o.mention.type}


def _sentence_probabilities(predictor: Predictor, by_sentence: dict[tuple[int, int], tuple[dict[str, list[str]], list[
        tuple[int, _Candidate, _Candidate]]]], both_orders: bool) -> np.ndarray:
    """The probabilities of every candidate pair, in the rows of its owner (both orders: (2N, L), in pairs of
    orders), from arrays built per sentence (:meth:`Predictor.pair_probabilities`)."""
    from tacred.inference.sentence_pairs import SentenceEncoder

    encode = SentenceEncoder(predictor.encoder.vocab)
    sentences, rows = [], []
    for features, pairs in by_sentence.values():
        asked = [(s, o) for _, s, o in pairs] + ([(o, s) for _, s, o in pairs] if both_orders else [])
        spans = np.array([[s.first, s.last, o.first, o.last] for s, o in asked], dtype=np.int64)
        sentences.append(encode(features["token"], features["stanford_pos"], features["stanford_ner"], spans,
                                [s.mention.type for s, _ in asked], [o.mention.type for _, o in asked]))
        owners = np.array([row for row, _, _ in pairs], dtype=np.int64)
        rows.append(np.concatenate([2 * owners, 2 * owners + 1]) if both_orders else owners)
    found = predictor.pair_probabilities(sentences)
    probs = np.empty_like(found)
    probs[np.concatenate(rows)] = found
    return probs


def text_pipeline(predictor: Predictor, spacy_model: str | None, max_chars: int) -> Language:
    """The spaCy pipeline that relations in plain text need and no more (``m.extract``, ``tacred extract``, the
    server's ``/extract``): sentence boundaries (the rule-based sentencizer unless nominal pairs need the parser),
    entities (spaCy's own, or the trained NER of ``predictor.ner`` in its place), and the tagger when the model reads
    POS tags; texts up to ``max_chars`` characters."""
    import spacy

    from tacred.data.spacy_pipeline import DEFAULT_MODELS, SpacyModelError

    rule = pair_rule(predictor.labels, predictor.encoder.no_relation, None)
    name = spacy_model or next((m for m in DEFAULT_MODELS if spacy.util.is_package(m)), None)
    if name is None:
        predictor.nlp  # noqa: B018 - raises the loader's error, which says how to install a model
        raise SpacyModelError("no spaCy model")
    exclude = ["lemmatizer"]
    if not rule.nominals:
        exclude += ["parser", "attribute_ruler"]
        if predictor.encoder.kind != "words":  # the transformer reads no POS tags
            exclude += ["tagger", "tok2vec"]
    ner = getattr(predictor, "ner", None)  # the entity source: a trained NER folder, or spaCy's own (None)
    key = (name, tuple(exclude), ner)
    if key not in _TEXT_PIPELINES:  # loaded once per process and kind (a worker process loads its own)
        try:
            nlp = spacy.load(name, exclude=exclude)
        except OSError as err:
            raise SpacyModelError(f"spaCy model '{name}' cannot be loaded ({err}); install it or pass --spacy_model") from err
        if ner is not None:
            from tacred.data.ner_training import with_trained_ner

            nlp = with_trained_ner(nlp, ner)
        if "parser" not in nlp.pipe_names:
            nlp.add_pipe("sentencizer", first=True)
        _TEXT_PIPELINES[key] = nlp
    nlp = _TEXT_PIPELINES[key]
    nlp.max_length = max(nlp.max_length, max_chars + 1)
    return nlp


_TEXT_PIPELINES: dict[tuple[str, tuple[str, ...], str | None], Language] = {}


def relations_in_docs(predictor: Predictor, docs: Iterable[Doc], names: Sequence[str], max_pairs: int = 100,
                      signatures: bool = True) -> list[TextRelations]:
    """For each spaCy doc, the relations found in it (see the module docstring), ordered by sentence, subject and
    object; ``names``: how warnings name each text. ``signatures``: filter by the model's relation signatures."""
    if max_pairs < 1:
        raise InputError(f"max_pairs must be at least 1, got {max_pairs}")
    no_relation = predictor.encoder.no_relation
    labels = predictor.labels
    rule = pair_rule(labels, no_relation, getattr(predictor.encoder, "object_types", None))
    vocab = getattr(predictor.encoder, "vocab", None)
    types = SignatureFilter(getattr(vocab, "signatures", None), labels, no_relation, signatures)
    results: list[TextRelations] = []
    examples: list[dict[str, Any]] = []
    owners: list[tuple[int, int, Mention, Mention]] = []
    # the word-vocabulary models get their pairs as arrays built per sentence (tacred.inference.sentence_pairs)
    by_sentence: dict[tuple[int, int], tuple[dict[str, list[str]], list[tuple[int, _Candidate, _Candidate]]]] | None = (
        {} if getattr(predictor, "encodes_sentences", False) else None)
    for n, doc in enumerate(docs):
        found, sentences = [], []
        for k, sent in enumerate(doc.sents):
            sentences.append((sent.start_char, sent.end_char))
            kept_tokens = [t for t in sent if not t.is_space and t.text.strip()]
            if predictor.max_tokens is not None and len(kept_tokens) > predictor.max_tokens:
                log.warning("%s: a sentence of %d tokens is skipped (more than the limit of %d)", names[n],
                            len(kept_tokens), predictor.max_tokens)
                continue
            kept = {t.i: i for i, t in enumerate(kept_tokens)}
            pairs = _pairs(_mentions(sent, kept, rule.nominals), rule, types)
            features = _sentence_features(kept_tokens) if pairs else {}
            found.extend((abs(s.first - o.first), k, features, s, o) for s, o in pairs)
        if len(found) > max_pairs:
            log.warning("%s: %d candidate pairs; the %d closest together are predicted (max_pairs)", names[n],
                        len(found), max_pairs)
            found = sorted(found, key=lambda f: f[0])[:max_pairs]
        for _, k, features, s, o in found:
            if by_sentence is not None:  # arrays per sentence: no dict per pair
                by_sentence.setdefault((n, k), (features, []))[1].append((len(owners), s, o))
            else:
                examples.append(_example(features, s, o, no_relation))
                if rule.both_orders:
                    examples.append(_example(features, o, s, no_relation))
            owners.append((n, k, s.mention, o.mention))
        results.append(TextRelations([], sentences, len(found)))
    if not owners:
        return results
    if by_sentence is not None:
        probs = _sentence_probabilities(predictor, by_sentence, rule.both_orders)
    else:
        probs = predictor.probabilities(examples)  # (N, L), or (2N, L) in pairs of orders
    if rule.both_orders:
        directed = DirectedLabels.from_labels(labels)
        forward, backward = probs[0::2], probs[1::2]
        probs = directed.combine(forward, backward)
    decided = decide(probs, labels.index(no_relation), predictor.threshold).tolist()
    for row, ((n, k, a, b), best) in enumerate(zip(owners, decided, strict=True)):
        label = labels[best]
        if label == no_relation:
            continue
        relation, evidence = label, None
        subject, obj = a, b
        if rule.both_orders:
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
        results[n].relations.append(Relation(relation, float(probs[row, best]), subject, obj, k, evidence))
    for text in results:
        text.relations.sort(key=lambda r: (r.sentence, r.subject.start, r.object.start))
    return results


def extract_relations(predictor: Predictor, texts: list[str], max_pairs: int = 100,
                      names: Sequence[str] | None = None, signatures: bool = True) -> list[list[Relation]]:
    """For each text, the relations found in it (see the module docstring), by sentence and subject.
    ``names``: how warnings name each text (default ``text N``, counted from 0)."""
    if max_pairs < 1:
        raise InputError(f"max_pairs must be at least 1, got {max_pairs}")
    names = names or [f"text {n}" for n in range(len(texts))]
    found = relations_in_docs(predictor, predictor.text_nlp.pipe(texts), names, max_pairs, signatures)
    return [text.relations for text in found]


"""Extraction's first step: raw text → what a model is asked. spaCy cuts sentences and words (and, for a model that
classifies given pairs, finds the entities and tags); each sentence within the limits becomes a :class:`Sentence`,
and for a per-pair model its candidate pairs: which mentions a model may pair (:func:`~tacred.relation_types.schema.pair_rule`, from its labels),
the mentions themselves (named entities, and the head nouns of noun phrases for nominal pairs), and the ordered
pairs that the relation signatures leave, at most ``max_pairs`` a text, the closest first.

The relation signatures (:mod:`tacred.relation_types.signatures`: the label set's schema, else the pairs learned
with support) are applied here, once: a pair that no relation takes is not asked, and each pair asked carries the
labels its arguments' types allow, which :mod:`tacred.extraction.postprocess` keeps to.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tacred.inference.input_rules import MAX_CHARACTERS, MAX_PAIRS, InputError
from tacred.relation_types.schema import PairRule, pair_rule, split_direction
from tacred.relation_types.signatures import Signatures
from tacred.text.spacy_pipeline import NOMINAL, load_spacy, map_ner, map_pos

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span

log = logging.getLogger(__name__)

ONE_SENTENCE = "tacred_one_sentence"  # the spaCy component that makes each text one sentence
# what spaCy's English pipelines hold beyond the tokenizer: none of it is needed to cut sentences and words
NOT_NEEDED = ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner", "senter", "morphologizer"]
NO_SIGNATURES = ("the model holds no relation signatures (its checkpoint was written before tacred learned them): "
                 "extracted relations outside the TAC KBP schema ({}) are not filtered by their arguments' types")


# -- the spaCy pipeline ---------------------------------------------------------------------------------------------
def _one_sentence(doc: Doc) -> Doc:
    """Each text one sentence: its first token starts it, no other token starts one (a parser after it keeps that)."""
    for token in doc:
        token.is_sent_start = token.i == 0
    return doc


@dataclass(frozen=True)
class TextSteps:
    """What the raw-text pipeline adds to a freshly loaded spaCy pipeline (hashable: part of the loader's cache key):
    the trained NER of the folder ``ner`` in place of spaCy's own (at ``precision``; None: as trained), and the
    sentence boundaries: each text one sentence (``one_sentence``: text already split), else the sentencizer where no
    parser splits sentences."""

    ner: str | None  # the entity source: a trained NER folder, or spaCy's own (None)
    one_sentence: bool = False
    precision: str | None = None

    def __call__(self, nlp: Language) -> Language:
        from spacy.language import Language

        if self.ner is not None:
            from tacred.ner.training import with_trained_ner

            nlp = with_trained_ner(nlp, self.ner, self.precision)
        if self.one_sentence:
            if ONE_SENTENCE not in Language.factories:
                Language.component(ONE_SENTENCE, func=_one_sentence)
            nlp.add_pipe(ONE_SENTENCE, first=True)
        elif "parser" not in nlp.pipe_names:
            nlp.add_pipe("sentencizer", first=True)
        return nlp


# -- which pairs are asked ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mention:
    """An argument in the text: its words, character offsets (end-exclusive) and type."""

    text: str
    start: int
    end: int
    type: str


class SignatureFilter:
    """Which labels a (subject type, object type) pair may take, by a model's ``signatures``. Inactive (everything
    allowed) when switched off. A model that holds no signatures (an older checkpoint) has the schema's where its
    labels have one, and its other labels take every pair (:meth:`Signatures.from_schema`; said when the filter is
    built with ``warn``)."""

    def __init__(self, signatures: Signatures, labels: Sequence[str], no_relation: str,
                 enabled: bool = True, warn: bool = True) -> None:
        self.active = enabled
        self.no_relation = no_relation
        self.all_labels = list(labels)
        self.labels = [label for label in labels if label != no_relation]
        self.open = set(signatures.open)
        if enabled and self.open and warn:
            log.warning(NO_SIGNATURES.format(", ".join(sorted(self.open)[:4]) + (", ..." if len(self.open) > 4 else "")))
        self._possible: dict[tuple[str, str, bool], bool] = {}  # pair_possible's answers, by its arguments
        self._allowed: dict[tuple[str, str, bool], frozenset[str]] = {}  # allowed_labels' answers
        self.allowed = signatures.plain_text
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

    def allowed_labels(self, first_type: str, second_type: str, both_orders: bool) -> frozenset[str]:
        """The labels that a pair (first, second) may be decided as, read in the first order's frame: ``takes`` for
        a pair asked in one order; with ``both_orders``, the labels whose fact (``R(e2,e1)`` swaps the arguments)
        fits the types."""
        key = (first_type, second_type, both_orders)
        known = self._allowed.get(key)
        if known is None:
            if not both_orders:
                known = frozenset(label for label in self.all_labels if self.takes(label, first_type, second_type))
            else:
                found = set()
                for label in self.all_labels:
                    relation, args = split_direction(label)
                    subject, obj = (second_type, first_type) if args == "e2,e1" else (first_type, second_type)
                    if self.fact_fits(relation, subject, obj):
                        found.add(label)
                known = frozenset(found)
            self._allowed[key] = known
        return known


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


# -- the step itself ------------------------------------------------------------------------------------------------
@dataclass
class Pair:
    """A candidate pair asked of the model: its text and sentence (and that sentence's features), its two mentions
    (the first in the text first when both orders are asked) and the labels their types allow."""

    text: int
    sentence: int
    features: dict[str, list[str]]
    first: Candidate
    second: Candidate
    allowed: frozenset[str]


@dataclass
class Sentence:
    """A sentence the model reads: its text and place in it, its words (spaCy tokens without whitespace) with their
    character offsets, and, for a per-pair model, its features and the rows of its pairs in :attr:`Prepared.pairs`."""

    text: int
    index: int
    words: list[str]
    offsets: list[tuple[int, int]]
    features: dict[str, list[str]] = field(default_factory=dict)
    pairs: list[int] = field(default_factory=list)


@dataclass
class Prepared:
    """What a :class:`Preprocessor` gives: each text's sentences (character spans) and how many pairs it asks, the
    sentences to read and the candidate pairs (none for a joint model, which finds its own)."""

    spans: list[list[tuple[int, int]]]
    asked: list[int]
    sentences: list[Sentence]
    pairs: list[Pair]
    both_orders: bool = False
    docs: list[str] = field(default_factory=list)  # each text itself, whose characters the mentions take


class Preprocessor:
    """Sentences and candidate pairs of raw texts for one model, with what it needs built once: the relation
    signatures' filter, the pair rule (:func:`~tacred.relation_types.schema.pair_rule`) and the spaCy pipeline
    (:attr:`nlp`) that relations in plain text need and no more, loaded once per process and kind by
    :func:`tacred.text.spacy_pipeline.load_spacy` (a worker process loads its own): sentence boundaries (the
    rule-based sentencizer unless nominal pairs need the parser; ``one_sentence``: none, each text is one sentence)
    and words; for a model of given pairs also the entities (spaCy's own, or the trained NER of ``model.ner`` in its
    place) and the tagger when it reads POS tags (a joint model finds its own entities: the tokenizer alone); texts
    up to ``max_chars`` characters. ``signatures``: filter by the model's relation signatures; ``warn``: say when
    the model holds none."""

    def __init__(self, model: Any, spacy_model: str | None = None, max_chars: int = MAX_CHARACTERS,
                 one_sentence: bool = False, max_pairs: int = MAX_PAIRS, signatures: bool = True,
                 warn: bool = True) -> None:
        if max_pairs < 1:
            raise InputError(f"max_pairs must be at least 1, got {max_pairs}")
        self.max_pairs = max_pairs
        self.max_tokens = model.max_tokens
        self.joint = getattr(model, "kind", None) == "joint"
        if self.joint:
            exclude, steps = NOT_NEEDED, TextSteps(None, one_sentence)
        else:
            no_relation = model.encoder.no_relation
            self.types = SignatureFilter(model.encoder.vocab.signatures, model.labels, no_relation, signatures, warn)
            self.rule = pair_rule(model.labels, no_relation, getattr(model.encoder, "object_types", None))
            exclude = ["lemmatizer"]
            if not self.rule.nominals:  # nominal pairs' noun phrases come from the parser
                exclude += ["parser", "attribute_ruler"]
                if model.encoder.kind != "words":  # the transformer reads no POS tags
                    exclude += ["tagger", "tok2vec"]
            ner = getattr(model, "ner", None)
            steps = TextSteps(ner, one_sentence, None if ner is None else getattr(model, "precision", None))
        self.nlp = load_spacy(spacy_model or None, exclude, steps)
        self.nlp.max_length = max(self.nlp.max_length, max_chars + 1)

    def __call__(self, docs: Iterable[Doc], names: Sequence[str]) -> Prepared:
        """The sentences and pairs of ``docs`` (``names``: how warnings name each text)."""
        prepared = Prepared([], [], [], [], False if self.joint else self.rule.both_orders)
        for n, doc in enumerate(docs):
            prepared.docs.append(doc.text)
            spans, found = [], []
            for k, sent in enumerate(doc.sents):
                spans.append((sent.start_char, sent.end_char))
                kept_tokens = [t for t in sent if not t.is_space and t.text.strip()]
                if self.joint:
                    if kept_tokens:
                        prepared.sentences.append(self._sentence(n, k, kept_tokens))
                    continue
                if self.max_tokens is not None and len(kept_tokens) > self.max_tokens:
                    log.warning("%s: a sentence of %d tokens is skipped (more than the limit of %d)", names[n],
                                len(kept_tokens), self.max_tokens)
                    continue
                kept = {t.i: i for i, t in enumerate(kept_tokens)}
                pairs = candidate_pairs(sentence_mentions(sent, kept, self.rule.nominals), self.rule, self.types)
                if pairs:
                    sentence = self._sentence(n, k, kept_tokens, sentence_features(kept_tokens))
                    found.extend((abs(s.first - o.first), sentence, s, o) for s, o in pairs)
            if len(found) > self.max_pairs:
                log.warning("%s: %d candidate pairs; the %d closest together are predicted (max_pairs)", names[n],
                            len(found), self.max_pairs)
                found = sorted(found, key=lambda f: f[0])[:self.max_pairs]
            for _, sentence, s, o in found:
                if not sentence.pairs:
                    prepared.sentences.append(sentence)
                sentence.pairs.append(len(prepared.pairs))
                allowed = self.types.allowed_labels(s.mention.type, o.mention.type, self.rule.both_orders)
                prepared.pairs.append(Pair(n, sentence.index, sentence.features, s, o, allowed))
            prepared.spans.append(spans)
            prepared.asked.append(len(found))
        return prepared

    @staticmethod
    def _sentence(n: int, k: int, tokens: list[Any], features: dict[str, list[str]] | None = None) -> Sentence:
        return Sentence(n, k, [t.text for t in tokens], [(t.idx, t.idx + len(t.text)) for t in tokens],
                        features or {})

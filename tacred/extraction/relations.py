"""Relations from plain text: spaCy finds the candidate arguments, every candidate pair is predicted, and the pairs
decided as a relation come back with character offsets (``m.extract``, ``tacred extract``, ``POST /extract``).

Candidates depend on the model's labels (:mod:`tacred.extraction.candidates`). A TACRED-style model (every relation
named ``per:…`` or ``org:…``) gets subjects among the named entities of type PERSON (if it has ``per:`` relations) or
ORGANIZATION (``org:``) and objects among the entities of the types it knows (from its ``OBJ-<TYPE>`` words, else its
NER tags). Any other model (SemEval-style: relations between nominals) gets every ordered pair of nominals: named
entities and the head nouns of noun phrases. A model whose labels carry their direction (``R(e1,e2)``/``R(e2,e1)``)
gets each unordered pair once, asked in both orders (:mod:`tacred.extraction.decisions`); KBP37-style ones
(``per:``/``org:`` with directions) pair named entities only. Relation signatures
(:mod:`tacred.extraction.signature_filter`: the TAC KBP schema where the labels have one, else pairs learned with
support) drop pairs and relations that the arguments' types rule out. Pairs stay within a sentence; at most
``max_pairs`` per text, the closest first.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tacred.extraction.answers import Mention, Relation, TextRelations
from tacred.extraction.candidates import (
    Candidate,
    candidate_pairs,
    pair_example,
    pair_rule,
    sentence_features,
    sentence_mentions,
)
from tacred.extraction.decisions import decided_relations
from tacred.extraction.signature_filter import SignatureFilter
from tacred.inference.input_rules import MAX_PAIRS, InputError

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

    from tacred.inference.predictor import Predictor

log = logging.getLogger(__name__)

# the candidate pairs of each sentence, by (text, sentence): the sentence's features and its pairs, each with its row
PairsBySentence = dict[tuple[int, int], tuple[dict[str, list[str]], list[tuple[int, Candidate, Candidate]]]]


ONE_SENTENCE = "tacred_one_sentence"  # the spaCy component that makes each text one sentence


def _one_sentence(doc: Doc) -> Doc:
    """Each text one sentence: its first token starts it, no other token starts one (a parser after it keeps that)."""
    for token in doc:
        token.is_sent_start = token.i == 0
    return doc


@dataclass(frozen=True)
class _TextSteps:
    """What the raw-text pipeline adds to a freshly loaded spaCy pipeline (hashable: part of the loader's cache key):
    the trained NER of the folder ``ner`` in place of spaCy's own, and the sentence boundaries: each text one
    sentence (``one_sentence``: text already split), else the sentencizer where no parser splits sentences."""

    ner: str | None  # the entity source: a trained NER folder, or spaCy's own (None)
    one_sentence: bool = False

    def __call__(self, nlp: Language) -> Language:
        from spacy.language import Language

        if self.ner is not None:
            from tacred.ner.training import with_trained_ner

            nlp = with_trained_ner(nlp, self.ner)
        if self.one_sentence:
            if ONE_SENTENCE not in Language.factories:
                Language.component(ONE_SENTENCE, func=_one_sentence)
            nlp.add_pipe(ONE_SENTENCE, first=True)
        elif "parser" not in nlp.pipe_names:
            nlp.add_pipe("sentencizer", first=True)
        return nlp


def text_pipeline(predictor: Predictor, spacy_model: str | None, max_chars: int,
                  one_sentence: bool = False) -> Language:
    """The spaCy pipeline that relations in plain text need and no more (``m.extract``, ``tacred extract``, the
    server's ``/extract``): sentence boundaries (the rule-based sentencizer unless nominal pairs need the parser;
    ``one_sentence``: none, each text is one sentence),
    entities (spaCy's own, or the trained NER of ``predictor.ner`` in its place), and the tagger when the model reads
    POS tags; texts up to ``max_chars`` characters. Loaded once per process and kind by
    :func:`tacred.text.spacy_pipeline.load_spacy` (a worker process loads its own)."""
    from tacred.text.spacy_pipeline import load_spacy

    rule = pair_rule(predictor.labels, predictor.encoder.no_relation, None)
    exclude = ["lemmatizer"]
    if not rule.nominals:
        exclude += ["parser", "attribute_ruler"]
        if predictor.encoder.kind != "words":  # the transformer reads no POS tags
            exclude += ["tagger", "tok2vec"]
    nlp = load_spacy(spacy_model or None, exclude, _TextSteps(getattr(predictor, "ner", None), one_sentence))
    nlp.max_length = max(nlp.max_length, max_chars + 1)
    return nlp


def _sentence_probabilities(predictor: Predictor, by_sentence: PairsBySentence, both_orders: bool) -> np.ndarray:
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


def relations_in_docs(predictor: Predictor, docs: Iterable[Doc], names: Sequence[str], max_pairs: int = MAX_PAIRS,
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
    by_sentence: PairsBySentence | None = {} if getattr(predictor, "encodes_sentences", False) else None
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
            pairs = candidate_pairs(sentence_mentions(sent, kept, rule.nominals), rule, types)
            features = sentence_features(kept_tokens) if pairs else {}
            found.extend((abs(s.first - o.first), k, features, s, o) for s, o in pairs)
        if len(found) > max_pairs:
            log.warning("%s: %d candidate pairs; the %d closest together are predicted (max_pairs)", names[n],
                        len(found), max_pairs)
            found = sorted(found, key=lambda f: f[0])[:max_pairs]
        for _, k, features, s, o in found:
            if by_sentence is not None:  # arrays per sentence: no dict per pair
                by_sentence.setdefault((n, k), (features, []))[1].append((len(owners), s, o))
            else:
                examples.append(pair_example(features, s, o, no_relation))
                if rule.both_orders:
                    examples.append(pair_example(features, o, s, no_relation))
            owners.append((n, k, s.mention, o.mention))
        results.append(TextRelations([], sentences, len(found)))
    if not owners:
        return results
    if by_sentence is not None:
        probs = _sentence_probabilities(predictor, by_sentence, rule.both_orders)
    else:
        probs = predictor.probabilities(examples)  # (N, L), or (2N, L) in pairs of orders
    for n, relation in decided_relations(probs, owners, labels, no_relation, predictor.threshold, rule.both_orders,
                                         types):
        results[n].relations.append(relation)
    for text in results:
        text.relations.sort(key=lambda r: (r.sentence, r.subject.start, r.object.start))
    return results


def extract_relations(predictor: Predictor, texts: list[str], max_pairs: int = MAX_PAIRS,
                      names: Sequence[str] | None = None, signatures: bool = True,
                      one_sentence: bool = False) -> list[list[Relation]]:
    """For each text, the relations found in it (see the module docstring), by sentence and subject.
    ``names``: how warnings name each text (default ``text N``, counted from 0); ``one_sentence``: each text is one
    sentence."""
    if max_pairs < 1:
        raise InputError(f"max_pairs must be at least 1, got {max_pairs}")
    names = names or [f"text {n}" for n in range(len(texts))]
    nlp = predictor.text_pipeline(one_sentence)
    found = relations_in_docs(predictor, nlp.pipe(texts), names, max_pairs, signatures)
    return [text.relations for text in found]

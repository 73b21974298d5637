"""Extraction's middle step: the sentences :mod:`tacred.extraction.preprocess` prepared → the model's probabilities,
whatever the model. Three kinds read a batch of sentences differently:

- a word-vocabulary network (the paper's, and the LSTM) reads each sentence's candidate pairs as arrays built once a
  sentence (:class:`tacred.data.features.SentenceEncoder`), batched whole sentences at a time, scored
  from one shared pass a sentence where the backend allows it (:meth:`Predictor.pair_probabilities`);
- a per-pair model (a transformer with typed markers, or a lemma vocabulary) reads each pair as its own TACRED
  dict (:meth:`Predictor.probabilities`);
- a joint model reads each sentence once, as word pieces, and gives its entities and every ordered pair of them
  with each relation's probability (:meth:`JointPredictor.candidates`).

:mod:`tacred.extraction.postprocess` decides on what comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from tacred.extraction.preprocess import Prepared, pair_example

log = logging.getLogger(__name__)


def reads_sentence_arrays(model: Any) -> bool:
    """Whether candidate pairs go to the model as arrays per sentence: a word-vocabulary model whose words are the
    tokens (lemma vocabularies take the per-pair dicts, which carry lemmas)."""
    vocab = getattr(model.encoder, "vocab", None)
    return model.encoder.kind == "words" and vocab is not None and not vocab.use_lemmas


def pair_probabilities(model: Any, prepared: Prepared) -> np.ndarray:
    """The probabilities of every candidate pair of ``prepared``, in its rows: (N, L), or (2N, L) in pairs of orders
    when both orders are asked."""
    if not prepared.pairs:
        return np.zeros((0, len(model.labels)), dtype=np.float32)
    if reads_sentence_arrays(model):
        return _by_sentence(model, prepared)
    no_relation = model.encoder.no_relation
    examples = []
    for pair in prepared.pairs:
        examples.append(pair_example(pair.features, pair.first, pair.second, no_relation))
        if prepared.both_orders:
            examples.append(pair_example(pair.features, pair.second, pair.first, no_relation))
    return model.probabilities(examples)


def _by_sentence(model: Any, prepared: Prepared) -> np.ndarray:
    """:func:`pair_probabilities` from arrays built per sentence."""
    from tacred.data.features import SentenceEncoder

    encode = SentenceEncoder(model.encoder.vocab)
    sentences, rows = [], []
    for sentence in prepared.sentences:
        pairs = [prepared.pairs[row] for row in sentence.pairs]
        asked = [(p.first, p.second) for p in pairs]
        if prepared.both_orders:
            asked += [(p.second, p.first) for p in pairs]
        spans = np.array([[s.first, s.last, o.first, o.last] for s, o in asked], dtype=np.int64)
        f = sentence.features
        sentences.append(encode(f["token"], f["stanford_pos"], f["stanford_ner"], spans,
                                [s.mention.type for s, _ in asked], [o.mention.type for _, o in asked]))
        owners = np.array(sentence.pairs, dtype=np.int64)
        rows.append(np.concatenate([2 * owners, 2 * owners + 1]) if prepared.both_orders else owners)
    found = model.pair_probabilities(sentences)
    probs = np.empty_like(found)
    probs[np.concatenate(rows)] = found
    return probs


def joint_candidates(model: Any, prepared: Prepared, names: Sequence[str]) -> list[tuple[Any, Any] | None]:
    """For each sentence of ``prepared``, a joint model's entities and its candidates (every ordered pair of them
    with each relation's probability), or None for a sentence it cannot read whole (over ``max_tokens`` words or the
    encoder's word pieces: left out with a warning; ``names``: how warnings name each text)."""
    asked, places = [], []
    for i, sentence in enumerate(prepared.sentences):
        encoded = model.encode(sentence.words)
        if encoded is None:
            log.warning("%s: sentence %d (%d words) is skipped: longer than the model reads", names[sentence.text],
                        sentence.index, len(sentence.words))
            continue
        asked.append(encoded)
        places.append(i)
    found: list[tuple[Any, Any] | None] = [None] * len(prepared.sentences)
    for i, result in zip(places, model.candidates(asked), strict=True):
        found[i] = result
    return found

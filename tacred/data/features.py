"""Examples → id arrays, padding and length-sorted batches with numpy alone: what training (through
:class:`tacred.data.batching.EncodedSplit`), prediction without torch (ONNX Runtime) and extraction (a sentence's
candidate pairs at once, :mod:`tacred.inference.sentence_pairs`) share, so all encode alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from tacred.data.examples import Example
from tacred.data.vocab import Vocabularies
from tacred.errors import TacredError

# the id arrays of one example, in the order of the network's inputs (ONNX input names: FEATURE_INPUTS)
FEATURES = ("words", "pos", "ner", "subj", "obj")
FEATURE_INPUTS = {"words": "words", "pos": "pos", "ner": "ner", "subj": "subj_positions", "obj": "obj_positions"}
# the named arrays a word-vocabulary network takes (and its ONNX graph's input names), in order
WORD_INPUTS = (*FEATURE_INPUTS.values(), "pad_mask")


class LemmaMissing(TacredError, ValueError):
    """An example without lemmas for a vocabulary of lemmas."""


@dataclass
class SentenceArrays:
    """One sentence: ``words``/``pos``/``ner`` (T,) ids (no entity masks); its P pairs: ``pair_words`` (P, T) (the
    entity masks written over the spans under masking), ``subj``/``obj`` (P, T) binned relative positions."""

    words: np.ndarray
    pos: np.ndarray
    ner: np.ndarray
    pair_words: np.ndarray
    subj: np.ndarray
    obj: np.ndarray

    def __len__(self) -> int:
        return len(self.pair_words)


def binned_positions(starts: np.ndarray, ends: np.ndarray, n: int) -> np.ndarray:
    """(P, n): each token's distance to the span [start, end] (0 inside), binned sign(d)·bit_length(|d|) as
    :func:`tacred.data.examples.log_bin`."""
    index, bins = _index_and_bins(n)
    rel = np.minimum(index - starts[:, None], 0) + np.maximum(index - ends[:, None], 0)  # (P, n), in (-n, n)
    return bins[rel + n]


@lru_cache(maxsize=1024)
def _index_and_bins(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``arange(n)`` and the table ``bins[d + n] = log_bin(d)`` for -n <= d <= n (read-only: they are shared)."""
    bits = np.array([d.bit_length() for d in range(n + 1)], dtype=np.int64)
    return _read_only(np.arange(n)), _read_only(np.concatenate([-bits[:0:-1], bits]))


class SentenceEncoder:
    """A sentence's tokens, tags and candidate spans → :class:`SentenceArrays` under a model's vocabularies: the one
    computation of the word features (:class:`FeatureEncoder` encodes an example as a sentence with one pair).
    ``tests/data/test_features.py`` checks one pair against a plain per-example encoding,
    ``tests/inference/test_sentence_pairs.py`` a sentence's many pairs against one pair at a time."""

    def __init__(self, vocab: Vocabularies) -> None:
        self.vocab = vocab
        self._masks: dict[str, int] = {}

    def __call__(self, words: Sequence[str], pos: Sequence[str], ner: Sequence[str], spans: np.ndarray,
                 subj_types: Sequence[str], obj_types: Sequence[str]) -> SentenceArrays:
        """``words``: the tokens (lemmas for a vocabulary of lemmas); ``spans`` (P, 4): subject start and end, object
        start and end (inclusive token indices); the arguments' types, one per pair."""
        ids = self.ids(words, pos, ner)
        return SentenceArrays(*ids, *self.pairs(ids[0], spans, subj_types, obj_types))

    def ids(self, words: Sequence[str], pos: Sequence[str], ner: Sequence[str]) -> tuple[np.ndarray, ...]:
        """The sentence's word, POS and NER ids (T,), read-only (its pairs share them)."""
        vocab = self.vocab
        if vocab.lowercase:
            words = [w.lower() for w in words]
        return (_read_only(vocab.words.encode(words)), _read_only(vocab.pos.encode(pos)),
                _read_only(vocab.ner.encode(ner)))

    def pairs(self, words: np.ndarray, spans: np.ndarray, subj_types: Sequence[str],
              obj_types: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pairs' ``pair_words``, ``subj`` and ``obj`` (P, T) over the sentence's word ids ``words`` (T,)."""
        n = len(words)
        spans = np.asarray(spans, dtype=np.int64).reshape(-1, 4).T  # (4, P)
        if not self.vocab.entity_masking:  # a copy per pair, but one shared row for a single pair
            pair_words = np.ascontiguousarray(np.broadcast_to(words, (spans.shape[1], n)))
        else:  # the object's mask written last, over the subject's where the spans overlap
            pair_words = np.repeat(words[None, :], spans.shape[1], axis=0)
            index = _index_and_bins(n)[0]
            for (first, last), role, types in (((0, 1), "SUBJ", subj_types), ((2, 3), "OBJ", obj_types)):
                masks = np.array([self._mask(f"{role}-{t}") for t in types], dtype=np.int64)
                inside = (index >= spans[first, :, None]) & (index <= spans[last, :, None])  # (P, T)
                np.copyto(pair_words, masks[:, None], where=inside)
        return pair_words, binned_positions(spans[0], spans[1], n), binned_positions(spans[2], spans[3], n)

    def _mask(self, word: str) -> int:
        found = self._masks.get(word)
        if found is None:
            found = self._masks[word] = self.vocab.words.id(word)
        return found


class FeatureEncoder:
    """The word features of one example at a time (:class:`SentenceEncoder`'s, the example a sentence with one pair),
    with the word, POS and NER ids of the last sentence seen kept: extraction asks every candidate pair of a sentence
    in a row, and TACRED's files hold several pairs of one sentence together."""

    def __init__(self, vocab: Vocabularies) -> None:
        self.vocab = vocab
        self.sentences = SentenceEncoder(vocab)
        self._key: tuple[Any, ...] | None = None
        self._ids: tuple[np.ndarray, ...] = (EMPTY, EMPTY, EMPTY)

    def __call__(self, ex: Example) -> dict[str, np.ndarray]:
        vocab = self.vocab
        if vocab.use_lemmas and ex.lemmas is None:
            raise LemmaMissing(f"example {ex.id!r} has no lemmas but the vocabulary uses lemmas")
        key = (ex.lemmas if vocab.use_lemmas else ex.tokens, ex.pos, ex.ner)
        if key != self._key:
            self._ids = self.sentences.ids(*key)
            self._key = key
        words, pos, ner = self._ids
        spans = np.array([[ex.subj_start, ex.subj_end, ex.obj_start, ex.obj_end]], dtype=np.int64)
        pair_words, subj, obj = self.sentences.pairs(words, spans, (ex.subj_type,), (ex.obj_type,))
        return {"words": pair_words[0], "pos": pos, "ner": ner, "subj": subj[0], "obj": obj[0]}


def _read_only(ids: Sequence[int] | np.ndarray) -> np.ndarray:
    array = np.asarray(ids, dtype=np.int64)
    array.flags.writeable = False
    return array


EMPTY = _read_only([])


def pad_features(rows: Sequence[dict[str, np.ndarray]], lengths: np.ndarray,
                 indices: Sequence[int]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The examples at ``indices`` padded to the longest of them: ``FEATURES`` arrays (B, T) of int64 (0 at padding)
    and the padding mask (B, T), True at padding."""
    size = len(indices)
    width = int(lengths[list(indices)].max())
    arrays = {k: np.zeros((size, width), dtype=np.int64) for k in FEATURES}
    pad = np.ones((size, width), dtype=bool)
    for row, i in enumerate(indices):
        n = lengths[i]
        for key, array in arrays.items():
            array[row, :n] = rows[i][key]
        pad[row, :n] = False
    return arrays, pad


def length_batches(lengths: Sequence[int] | np.ndarray, batch_size: int) -> list[list[int]]:
    """Evaluation batches: indices sorted by (length, index), cut every ``batch_size`` (little padding)."""
    lengths = np.asarray(lengths)
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]

"""Examples → id arrays, padding and length-sorted batches with numpy alone: what training (through
:class:`tacred.data.batching.EncodedSplit`) and prediction without torch (ONNX Runtime) share, so both encode alike."""

from __future__ import annotations

from collections.abc import Sequence
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


class FeatureEncoder:
    """:func:`encode_example` for many examples, with what a sentence's examples share done once: the word, POS and
    NER ids of the last sentence seen are kept (extraction asks every candidate pair of a sentence in a row, and
    TACRED's files hold several pairs of one sentence together), entity masking writes the mask words' ids over
    the spans, and the binned positions come from one table (``tests/data/test_features.py`` checks the arrays
    against a plain per-example encoding)."""

    def __init__(self, vocab: Vocabularies) -> None:
        self.vocab = vocab
        self._key: tuple[Any, ...] | None = None
        self._shared: tuple[np.ndarray, np.ndarray, np.ndarray] = (EMPTY, EMPTY, EMPTY)
        self._bins = np.zeros(1, dtype=np.int64)  # _bins[d] = log_bin(d) for d >= 0

    def __call__(self, ex: Example) -> dict[str, np.ndarray]:
        vocab = self.vocab
        if vocab.use_lemmas and ex.lemmas is None:
            raise LemmaMissing(f"example {ex.id!r} has no lemmas but the vocabulary uses lemmas")
        key = (ex.lemmas if vocab.use_lemmas else ex.tokens, ex.pos, ex.ner)
        if key != self._key:
            words = tuple(w.lower() for w in key[0]) if vocab.lowercase else key[0]
            self._shared = (_read_only(vocab.words.encode(words)), _read_only(vocab.pos.encode(ex.pos)),
                            _read_only(vocab.ner.encode(ex.ner)))  # shared by the sentence's examples
            self._key = key
        words, pos, ner = self._shared
        if vocab.entity_masking:
            words = words.copy()
            words[ex.subj_start : ex.subj_end + 1] = vocab.words.id(f"SUBJ-{ex.subj_type}")
            words[ex.obj_start : ex.obj_end + 1] = vocab.words.id(f"OBJ-{ex.obj_type}")
        n = len(ex)
        return {"words": words, "pos": pos, "ner": ner, "subj": self._binned(ex.subj_start, ex.subj_end, n),
                "obj": self._binned(ex.obj_start, ex.obj_end, n)}

    def _binned(self, start: int, end: int, n: int) -> np.ndarray:
        """``log_bin`` of :func:`relative_positions`, as arrays."""
        index = np.arange(n, dtype=np.int64)
        rel = np.where(index < start, index - start, np.where(index > end, index - end, 0))
        reach = int(np.abs(rel).max(initial=0))
        if reach >= len(self._bins):
            self._bins = np.array([d.bit_length() for d in range(max(reach + 1, 2 * len(self._bins)))], dtype=np.int64)
        return np.sign(rel) * self._bins[np.abs(rel)]


def _read_only(ids: list[int]) -> np.ndarray:
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

"""Encoders of inputs: TACRED dicts → the arrays a network takes, batched. Which encoder a model needs is part of
its checkpoint or export (``encoder`` in ``tacred_predictor``/``predictor.json``; ``words`` when absent).

An encoder has ``kind`` (its registry name), ``labels`` (the network's output order) and ``no_relation``, and
``encode(examples) -> Encoded``; ``Encoded.batches(batch_size)`` yields ``(indices, arrays)`` with ``arrays`` named
as the network's inputs (the ONNX graph's input names). Both backends (torch, ONNX Runtime) only run the network on
those arrays, so a new kind of model (another tokenisation, other inputs) adds an encoder here and a network, and
reuses input reading, batching order, the no-relation decision and the prediction objects unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tacred.constants import PAD, UNK
from tacred.data.examples import Example
from tacred.data.features import (
    FEATURE_INPUTS,
    WORD_INPUTS,
    FeatureEncoder,
    LemmaMissing,
    length_batches,
    pad_features,
)
from tacred.data.markers import MARKED_INPUTS
from tacred.data.vocab import Vocabularies
from tacred.inference.inputs import InputError

MAX_CELLS = 50 * 256 * 256  # 50 sentences of 256 tokens: ~200 MB more for the paper's network


@dataclass
class Encoded:
    """Encoded examples: per example its arrays, its length, and the padding rule for a batch of them."""

    rows: list[dict[str, np.ndarray]]
    lengths: np.ndarray
    pad: Callable[[list[dict[str, np.ndarray]], np.ndarray, Sequence[int]], dict[str, np.ndarray]]

    def __len__(self) -> int:
        return len(self.rows)

    def batches(self, batch_size: int, max_cells: int = MAX_CELLS) -> Iterator[tuple[list[int], dict[str, np.ndarray]]]:
        """Batches of similar length (sorted by length, then position: the order of ``tacred test``), each cut further
        until batch × length² is at most ``max_cells``: self-attention's memory grows with the square of the length,
        so long inputs go through a few at a time (batches of sentences up to 256 tokens are never cut)."""
        for indices in length_batches(self.lengths, batch_size):
            width = int(self.lengths[indices].max())
            step = max(1, min(len(indices), max_cells // (width * width)))
            for start in range(0, len(indices), step):
                part = indices[start : start + step]
                yield part, self.pad(self.rows, self.lengths, part)


class InputEncoder(Protocol):
    kind: str
    labels: list[str]
    no_relation: str
    object_types: set[str] | None  # entity types the model knows as objects (plain-text extraction); None: any

    def known_types(self, role: str) -> set[str] | None: ...  # the input contract's types per role; None: any

    def encode(self, examples: Sequence[Mapping[str, Any]]) -> Encoded: ...


def _pad_words(rows: list[dict[str, np.ndarray]], lengths: np.ndarray, indices: Sequence[int]) -> dict[str, np.ndarray]:
    arrays, pad = pad_features(rows, lengths, indices)
    return {**{FEATURE_INPUTS[k]: v for k, v in arrays.items()}, "pad_mask": pad}


class WordEncoder:
    """The word-vocabulary models (the paper's network, PA-LSTM): word, POS and NER ids and relative positions,
    as :class:`tacred.data.batching.EncodedSplit` encodes them for training and ``tacred test``."""

    kind = "words"
    inputs = WORD_INPUTS

    def __init__(self, vocab: Vocabularies) -> None:
        self.vocab = vocab
        self.labels = list(vocab.labels.itos)
        self.no_relation = vocab.no_relation

    def known_types(self, role: str) -> set[str] | None:
        """The entity types the model reads for ``role`` (``subject``, ``object``): its ``SUBJ-<TYPE>`` or
        ``OBJ-<TYPE>`` words under entity masking, where another type would be an unknown word; None where the input
        carries no type (no masking; the transformer's markers spell the type out as words): any type is accepted."""
        prefix = {"subject": "SUBJ-", "object": "OBJ-"}[role]
        return {w[len(prefix):] for w in self.vocab.words.itos if w.startswith(prefix)} or None

    @property
    def object_types(self) -> set[str] | None:
        """The entity types the model saw as objects: its ``OBJ-<TYPE>`` words (entity masking), else its NER tags."""
        return self.known_types("object") or {t for t in self.vocab.ner.itos if t not in ("O", PAD, UNK)} or None

    def encode(self, examples: Sequence[Mapping[str, Any]]) -> Encoded:
        rows = []
        encode = FeatureEncoder(self.vocab)
        for i, raw in enumerate(examples):
            ex = Example.from_dict({**raw, "relation": self.no_relation}, i)
            try:
                rows.append(encode(ex))
            except LemmaMissing as err:
                raise InputError(f"input {i}: {err} (give each input a 'lemma' list)") from None
        lengths = np.array([len(r["words"]) for r in rows], dtype=np.int64)
        return Encoded(rows, lengths, _pad_words)


class MarkedEncoder(WordEncoder):
    """The transformer encoder's inputs (:mod:`tacred.data.markers`): sub-word ids with typed entity markers and the
    positions of the two opening markers; POS and NER tags play no part. Needs the ``tokenizers`` library, not torch."""

    kind = "typed_markers"
    inputs = MARKED_INPUTS

    def __init__(self, vocab: Vocabularies) -> None:
        from tacred.data.markers import TypedMarkers

        super().__init__(vocab)
        if vocab.tokenizer is None:
            raise ValueError("its vocabularies hold no tokenizer")
        self.markers = TypedMarkers(vocab.tokenizer)

    def known_types(self, role: str) -> set[str] | None:
        """None: the markers spell a type out in words (``@ * person * ...``), which the tokenizer reads whatever
        they are."""
        return None

    def encode(self, examples: Sequence[Mapping[str, Any]]) -> Encoded:
        from tacred.data.examples import DataFormatError

        items = [Example.from_dict({**raw, "relation": self.no_relation}, i) for i, raw in enumerate(examples)]
        try:
            ids, subj, obj = self.markers.encode(items, "input")
        except DataFormatError as err:
            raise InputError(str(err)) from None
        from tacred.data.markers import pad_marked

        pad_id = self.markers.pad_id
        return Encoded([{"input_ids": t} for t in ids], np.array([len(t) for t in ids], dtype=np.int64),
                       lambda rows, lengths, indices: pad_marked(ids, subj, obj, indices, pad_id))


# encoder kind (a checkpoint's or export folder's metadata names it) -> the encoder, built from the model's vocabularies
ENCODERS: dict[str, Callable[[Vocabularies], InputEncoder]] = {"words": WordEncoder, "typed_markers": MarkedEncoder}


def encoder_kind(meta: Mapping[str, Any] | None, vocab: Mapping[str, Any]) -> str:
    """The input encoder a model's metadata names (``predictor.json``, a checkpoint's ``tacred_predictor``); for a
    model whose metadata names none, the transformer's when its vocabularies hold a tokenizer, else ``words``."""
    return (meta or {}).get("encoder") or ("typed_markers" if vocab.get("tokenizer") else "words")


def build_encoder(kind: str, vocab: Vocabularies, source: str) -> InputEncoder:
    """The encoder ``kind`` (from a checkpoint's or export's metadata) for the model's vocabularies; ``source``
    names the model in messages."""
    from tacred.checkpoints import CheckpointError

    if kind not in ENCODERS:
        raise CheckpointError(f"{source}: needs the input encoder {kind!r}, which this version of tacred does not "
                              f"have (it has {', '.join(ENCODERS)})")
    try:
        return ENCODERS[kind](vocab)
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{source}: its {kind!r} encoder cannot be rebuilt ({type(err).__name__}: {err})") from None

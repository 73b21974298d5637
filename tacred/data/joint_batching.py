"""Sentences for the joint entity-and-relation model: words → word pieces of a pretrained tokenizer (once a
sentence, never cut), each word's shape (the case the uncased encoders lose), and padded batches whose span grid
(every start word × every width up to the model's widest) and gold pairs the network reads in one pass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tacred.datasets.spert_layout import JointSentence, JointTypes, SpertLayoutError

if TYPE_CHECKING:  # torch is imported where batches are made: the ONNX export encodes sentences without it
    import torch

# word shapes: what case and digits an uncased encoder cannot see (0 pads)
SHAPES = ("pad", "lower", "title", "upper", "mixed", "digit", "other")
NO_ENTITY = 0  # span label 0: no entity; entity type k is label k + 1
IGNORED = -100  # a span-grid cell past the sentence's end
JOINT_KEY = "tacred_joint"  # what a joint checkpoint keeps of its data: types, tokenizer, widest span, threshold


def word_shape(word: str) -> int:
    """The shape id of a word (:data:`SHAPES`)."""
    letters = [c for c in word if c.isalpha()]
    if not letters:
        return SHAPES.index("digit") if any(c.isdigit() for c in word) else SHAPES.index("other")
    if all(c.islower() for c in letters):
        return SHAPES.index("lower")
    if all(c.isupper() for c in letters):
        return SHAPES.index("upper") if len(letters) > 1 else SHAPES.index("title")
    if letters[0].isupper() and all(c.islower() for c in letters[1:]):
        return SHAPES.index("title")
    return SHAPES.index("mixed")


@dataclass(frozen=True)
class EncodedSentence:
    """One sentence as the network reads it: word pieces with special tokens, each piece's word (-1 for special
    ones), each piece's word shape, and the gold entities and relations (type ids)."""

    input_ids: np.ndarray  # (T,)
    piece_words: np.ndarray  # (T,)
    shapes: np.ndarray  # (T,)
    words: int
    entities: tuple[tuple[int, int, int], ...]  # (start word, end word exclusive, entity type id)
    relations: tuple[tuple[int, int, int], ...]  # (head entity, tail entity, relation type id)


class WordPieces:
    """A pretrained model's fast tokenizer (its ``tokenizer.json`` as :func:`tacred.data.markers.tokenizer_spec`
    keeps it) over pre-split words; a word the tokenizer drops (a lone control character) reads as its unknown
    piece, so every word has at least one piece."""

    def __init__(self, spec: dict) -> None:
        from tacred.data.markers import _tokenizer

        self.spec = spec
        self.tokenizer = _tokenizer(spec["tokenizer_json"])
        self.max_length = int(spec["max_length"])
        unk = self.tokenizer.token_to_id("[UNK]")
        if unk is None:
            unk = self.tokenizer.token_to_id("<unk>")
        self.unk_id = int(unk if unk is not None else spec["pad_id"])

    def encode(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(piece ids, each piece's word index or -1)."""
        enc = self.tokenizer.encode(list(words), is_pretokenized=True)
        owners = [-1 if w is None else w for w in enc.word_ids]
        if len(set(owners) - {-1}) == len(words):
            return np.asarray(enc.ids, dtype=np.int64), np.asarray(owners, dtype=np.int64)
        # some word has no piece: rebuild in word order, the unknown piece standing for each such word
        firsts = [k for k, o in enumerate(owners) if o >= 0]
        head = list(enc.ids[:firsts[0]]) if firsts else list(enc.ids[:1])
        tail = list(enc.ids[firsts[-1] + 1:]) if firsts else list(enc.ids[1:])
        by_word: dict[int, list[int]] = {}
        for piece, owner in zip(enc.ids, owners, strict=True):
            if owner >= 0:
                by_word.setdefault(owner, []).append(piece)
        ids, owners = list(head), [-1] * len(head)
        for w in range(len(words)):
            got = by_word.get(w) or [self.unk_id]
            ids += got
            owners += [w] * len(got)
        ids += tail
        owners += [-1] * len(tail)
        return np.asarray(ids, dtype=np.int64), np.asarray(owners, dtype=np.int64)


def encode_words(words: Sequence[str], pieces: WordPieces,
                 entities: tuple[tuple[int, int, int], ...] = (),
                 relations: tuple[tuple[int, int, int], ...] = ()) -> EncodedSentence:
    """A sentence's words (and gold facts, as type ids) as the network's arrays; not checked against the limit."""
    ids, owners = pieces.encode(words)
    shape_of = np.array([word_shape(w) for w in words], dtype=np.int64)
    shapes = np.where(owners >= 0, shape_of[np.maximum(owners, 0)], 0)
    return EncodedSentence(ids, owners, shapes, len(words), entities, relations)


def encode_sentence(sentence: JointSentence, pieces: WordPieces, types: JointTypes, where: str = "") -> EncodedSentence:
    """One sentence's arrays; a sentence longer than the encoder reads is an error naming it (never cut)."""
    entity_id = {t: k for k, t in enumerate(types.entities)}
    relation_id = {t: k for k, t in enumerate(types.relations)}
    encoded = encode_words(sentence.tokens, pieces,
                           tuple((e.start, e.end, entity_id[e.type]) for e in sentence.entities),
                           tuple((h, t, relation_id[kind]) for kind, h, t in sentence.relations))
    if len(encoded.input_ids) > pieces.max_length:
        raise SpertLayoutError(f"{where}, sentence {sentence.index}: {len(encoded.input_ids)} word pieces, more than "
                               f"the {pieces.max_length} the encoder reads ({len(sentence.tokens)} words); split it")
    return encoded


@dataclass
class JointBatch:
    """Padded sentences (B of them, T pieces, W words) and their gold labels.

    ``span_labels`` (B, M, W): the label of the span of width ``m + 1`` starting at word ``w`` (0: none, k + 1:
    entity type k, -100: past the sentence's end). ``pairs`` (P, 5): (sentence, head start, head end exclusive,
    tail start, tail end) of every ordered pair of gold entities, ``pair_types`` (P, 2) their entity types and
    ``pair_labels`` (P, R) their relations (one-hot, all zero for a pair without one)."""

    input_ids: torch.Tensor  # (B, T)
    pad_mask: torch.Tensor  # (B, T) True at padding
    piece_words: torch.Tensor  # (B, T) word index of each piece, -1 for special pieces and padding
    shapes: torch.Tensor  # (B, T)
    word_counts: torch.Tensor  # (B,)
    span_labels: torch.Tensor  # (B, M, W)
    pairs: torch.Tensor  # (P, 5)
    pair_types: torch.Tensor  # (P, 2)
    pair_labels: torch.Tensor  # (P, R)
    index: torch.Tensor  # (B,) the sentences' positions in their split
    gold: list[EncodedSentence]  # the sentences themselves: their gold entities and relations, for scoring

    def to(self, device: torch.device | str) -> JointBatch:
        import torch

        moved = [getattr(self, f) for f in self.__dataclass_fields__]
        return JointBatch(*(v.to(device) if isinstance(v, torch.Tensor) else v for v in moved))

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def piece_arrays(sentences: Sequence[EncodedSentence], pad_id: int, min_words: int = 0) -> dict[str, np.ndarray]:
    """The padded word pieces of a batch, as the encoder pass takes them (numpy: the ONNX export's inputs too):
    ``input_ids``, ``pad_mask`` (True at padding), ``piece_words`` (-1 for special pieces and padding), ``shapes``
    (B, T), ``word_counts`` (B,) and ``present`` (B, W): True at each sentence's words, W the longest sentence's
    words or ``min_words``, whichever is more."""
    b = len(sentences)
    t = max(len(s.input_ids) for s in sentences)
    counts = np.array([s.words for s in sentences], dtype=np.int64)
    arrays = {"input_ids": np.full((b, t), pad_id, dtype=np.int64), "pad_mask": np.ones((b, t), dtype=bool),
              "piece_words": np.full((b, t), -1, dtype=np.int64), "shapes": np.zeros((b, t), dtype=np.int64)}
    for i, s in enumerate(sentences):
        n = len(s.input_ids)
        arrays["input_ids"][i, :n], arrays["piece_words"][i, :n] = s.input_ids, s.piece_words
        arrays["shapes"][i, :n], arrays["pad_mask"][i, :n] = s.shapes, False
    w = max(int(counts.max()), min_words)
    return arrays | {"word_counts": counts, "present": np.arange(w)[None, :] < counts[:, None]}


def collate(sentences: Sequence[EncodedSentence], indices: Sequence[int], max_width: int, relations: int,
            pad_id: int) -> JointBatch:
    """One batch of encoded sentences, padded to the longest."""
    import torch

    arrays = piece_arrays(sentences, pad_id)
    w = arrays["present"].shape[1]
    span_labels = np.full((len(sentences), max_width, w), IGNORED, dtype=np.int64)
    pairs, pair_types, pair_labels = [], [], []
    for i, s in enumerate(sentences):
        for m in range(max_width):
            span_labels[i, m, :max(0, s.words - m)] = NO_ENTITY
        for start, end, kind in s.entities:
            if end - start <= max_width:
                span_labels[i, end - start - 1, start] = kind + 1
        gold = {(h, tl): r for h, tl, r in s.relations}
        for h, head in enumerate(s.entities):
            for tl, tail in enumerate(s.entities):
                if h != tl:
                    pairs.append((i, head[0], head[1], tail[0], tail[1]))
                    pair_types.append((head[2], tail[2]))
                    row = np.zeros(relations, dtype=np.float32)
                    if (h, tl) in gold:
                        row[gold[(h, tl)]] = 1.0
                    pair_labels.append(row)
    return JointBatch(
        *(torch.from_numpy(arrays[name]) for name in ("input_ids", "pad_mask", "piece_words", "shapes", "word_counts")),
        torch.from_numpy(span_labels),
        torch.tensor(pairs, dtype=torch.long).reshape(-1, 5), torch.tensor(pair_types, dtype=torch.long).reshape(-1, 2),
        torch.from_numpy(np.stack(pair_labels)) if pair_labels else torch.zeros((0, relations)),
        torch.tensor(list(indices), dtype=torch.long), list(sentences))


class JointSplit:
    """A split's encoded sentences as a map-style dataset of indices, collated into :class:`JointBatch`es."""

    def __init__(self, sentences: Sequence[EncodedSentence], max_width: int, relations: int, pad_id: int) -> None:
        self.sentences = list(sentences)
        self.max_width, self.relations, self.pad_id = max_width, relations, pad_id
        self.lengths = np.array([len(s.input_ids) for s in self.sentences], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, i: int) -> int:
        return i

    def collate(self, indices: Sequence[int]) -> JointBatch:
        return collate([self.sentences[i] for i in indices], indices, self.max_width, self.relations, self.pad_id)

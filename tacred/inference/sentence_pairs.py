"""Candidate pairs as arrays built per sentence, for the word-vocabulary networks: a sentence's ids once and its pairs'
(P, T) arrays (:class:`tacred.data.features.SentenceEncoder`, the encoding of every pair), with no per-pair dict or
:class:`~tacred.data.examples.Example`. Batches keep every pair of a sentence together, so the torch backend scores
them from one shared pass (:mod:`tacred.models.pair_scoring`); another backend gets the pairs' plain arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from tacred.data.examples import Example
from tacred.data.features import SentenceArrays, SentenceEncoder
from tacred.data.vocab import Vocabularies

__all__ = ["PAIR_TOKENS", "SENTENCE_PAIR_INPUTS", "pad_sentences", "pair_arrays", "sentence_batches",
           "sentences_of_examples"]

PAIR_TOKENS = 50 * 64  # token rows of a batch's pairs: 50 pairs of 64 tokens (~26 MB of rows for the 300-d network)
# the arrays of a batch of sentences and their pairs (the fields of tacred.models.pair_scoring.SentencePairs)
SENTENCE_PAIR_INPUTS = ("words", "pos", "ner", "pad_mask", "sentence", "pair_words", "subj_positions", "obj_positions")


def sentences_of_examples(vocab: Vocabularies, examples: Sequence[Mapping[str, Any]]
                          ) -> tuple[list[SentenceArrays], np.ndarray]:
    """TACRED dicts (any file in TACRED's format) grouped by sentence (equal tokens, tags and lemmas): the
    sentences' arrays, and for each example its row among the sentences' pairs (sentence by sentence, in order)."""
    groups: dict[tuple[Any, ...], list[tuple[int, Example]]] = {}
    for i, raw in enumerate(examples):
        ex = Example.from_dict({**raw, "relation": vocab.no_relation}, i)
        words = ex.lemmas if vocab.use_lemmas else ex.tokens
        if words is None:
            raise ValueError(f"example {i} ({ex.id!r}) has no lemmas but the vocabulary uses lemmas")
        groups.setdefault((tuple(words), tuple(ex.pos), tuple(ex.ner)), []).append((i, ex))
    encode = SentenceEncoder(vocab)
    sentences, rows = [], np.zeros(len(examples), dtype=np.int64)
    done = 0
    for (words, pos, ner), members in groups.items():
        spans = np.array([[ex.subj_start, ex.subj_end, ex.obj_start, ex.obj_end] for _, ex in members])
        sentences.append(encode(words, pos, ner, spans, [ex.subj_type for _, ex in members],
                                [ex.obj_type for _, ex in members]))
        for k, (i, _) in enumerate(members):
            rows[i] = done + k
        done += len(members)
    return sentences, rows


def sentence_batches(sentences: Sequence[SentenceArrays], max_pairs: int, max_cells: int,
                     max_tokens: int = PAIR_TOKENS) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Batches of whole sentences of similar length (sorted by length, then position) with about ``max_pairs``
    pairs, cut before pairs × length² passes ``max_cells`` (the attention's memory) or pairs × length passes
    ``max_tokens`` (the pairs' token rows: about 8 KB each for the 300-d network): ``(rows, arrays)``, ``rows`` the
    batch's pairs among all (sentence by sentence, in order), ``arrays`` named as :data:`SENTENCE_PAIR_INPUTS` and
    padded to the batch's longest sentence. A sentence alone may pass ``max_pairs``; one whose pairs alone pass
    ``max_cells`` or ``max_tokens`` (long, with many pairs) comes in batches of its own, a part of its pairs each."""
    lengths = [len(s.words) for s in sentences]
    starts = np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64)
    order = sorted(range(len(sentences)), key=lambda i: (lengths[i], i))

    def done(members: list[int]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        rows = np.concatenate([np.arange(starts[j], starts[j + 1]) for j in members])
        return rows, pad_sentences([sentences[j] for j in members])

    batch: list[int] = []
    pairs = 0
    for i in order:
        count, cells = len(sentences[i]), lengths[i] ** 2
        if count == 0:
            continue
        if count * cells > max_cells or count * lengths[i] > max_tokens:  # too many pairs for one batch: parts
            if batch:
                yield done(batch)
                batch, pairs = [], 0
            step = max(1, min(max_cells // cells, max_tokens // lengths[i]))
            for first in range(0, count, step):
                part = _pairs_part(sentences[i], first, first + step)
                yield np.arange(starts[i] + first, starts[i] + first + len(part)), pad_sentences([part])
            continue
        grown = pairs + count
        if batch and (pairs >= max_pairs or grown * cells > max_cells or grown * lengths[i] > max_tokens):
            yield done(batch)
            batch, grown = [], count
        batch.append(i)
        pairs = grown
    if batch:
        yield done(batch)


def _pairs_part(sentence: SentenceArrays, start: int, end: int) -> SentenceArrays:
    return SentenceArrays(sentence.words, sentence.pos, sentence.ner, sentence.pair_words[start:end],
                          sentence.subj[start:end], sentence.obj[start:end])


def pad_sentences(sentences: Sequence[SentenceArrays]) -> dict[str, np.ndarray]:
    """The arrays of :data:`SENTENCE_PAIR_INPUTS` for some sentences, padded to the longest (0 at padding)."""
    width = max(len(s.words) for s in sentences)
    total = sum(len(s) for s in sentences)
    out = {k: np.zeros((len(sentences), width), dtype=np.int64) for k in ("words", "pos", "ner")}
    out["pad_mask"] = np.ones((len(sentences), width), dtype=bool)
    for k in ("pair_words", "subj_positions", "obj_positions"):
        out[k] = np.zeros((total, width), dtype=np.int64)
    out["sentence"] = np.repeat(np.arange(len(sentences), dtype=np.int64), [len(s) for s in sentences])
    row = 0
    for i, s in enumerate(sentences):
        n, p = len(s.words), len(s)
        out["words"][i, :n], out["pos"][i, :n], out["ner"][i, :n] = s.words, s.pos, s.ner
        out["pad_mask"][i, :n] = False
        out["pair_words"][row:row + p, :n] = s.pair_words
        out["subj_positions"][row:row + p, :n] = s.subj
        out["obj_positions"][row:row + p, :n] = s.obj
        row += p
    return out


def pair_arrays(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A batch of :func:`pad_sentences` as the plain per-pair arrays of a word-vocabulary network
    (:data:`tacred.data.features.WORD_INPUTS`): each sentence's ids repeated for its pairs."""
    s = arrays["sentence"]
    return {"words": arrays["pair_words"], "pos": arrays["pos"][s], "ner": arrays["ner"][s],
            "subj_positions": arrays["subj_positions"], "obj_positions": arrays["obj_positions"],
            "pad_mask": arrays["pad_mask"][s]}

"""The joint model's decoding between its two steps, with numpy alone: span probabilities → each sentence's entities
→ every ordered pair of them, and the pairs' relation probabilities handed back per sentence. The PyTorch model
(:func:`tacred.models.joint.find`) and its ONNX export (:mod:`tacred.inference.onnx_joint`) share this code, so both
find the same entities from the same probabilities."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

Found = tuple[int, int, int, float]  # (start word, end word exclusive, entity type id, probability)


@dataclass
class SentenceFound:
    """What the model finds in one sentence: its entities, and for every ordered pair of them (head and tail
    indices into ``entities``) the probability of each relation type (P, R), which a threshold decides."""

    entities: list[Found]
    pairs: list[tuple[int, int]]
    probs: Any  # (P, R): a numpy array, or a torch tensor on the CPU


def span_entities(probs: np.ndarray, word_counts: np.ndarray) -> list[list[Found]]:
    """Each sentence's entities: every span whose most likely label is an entity type (overlapping spans are kept,
    as SpERT keeps them), ordered by start and end. probs (B, M, W, E + 1): the label probabilities of the span of
    width m + 1 starting at word w (label 0: none); word_counts (B,)."""
    best, label = probs.max(axis=-1), probs.argmax(axis=-1)  # (B, M, W)
    b, m, w = label.shape
    widths = np.arange(1, m + 1)[None, :, None]
    starts = np.arange(w)[None, None, :]
    valid = starts + widths <= np.asarray(word_counts)[:, None, None]  # (B, M, W)
    rows, ms, ws = np.nonzero((label > 0) & valid)  # row-major: by sentence, width, start
    found: list[list[Found]] = [[] for _ in range(b)]
    for r, mm, ww, kind, p in zip(rows.tolist(), ms.tolist(), ws.tolist(), (label[rows, ms, ws] - 1).tolist(),
                                  best[rows, ms, ws].tolist(), strict=True):
        found[r].append((ww, ww + mm + 1, kind, p))
    for entities in found:
        entities.sort()
    return found


def entity_pairs(entities: list[list[Found]]) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, int]]]:
    """Every ordered pair of each sentence's entities: pairs (P, 5) as (sentence, head start, head end, tail start,
    tail end) in words, their entity types (P, 2), and each pair's (sentence, head, tail) entity indices."""
    pairs, types, owners = [], [], []
    for s, found in enumerate(entities):
        for h, head in enumerate(found):
            for t, tail in enumerate(found):
                if h != t:
                    pairs.append((s, head[0], head[1], tail[0], tail[1]))
                    types.append((head[2], tail[2]))
                    owners.append((s, h, t))
    return (np.array(pairs, dtype=np.int64).reshape(-1, 5), np.array(types, dtype=np.int64).reshape(-1, 2),
            owners)


def by_sentence(entities: list[list[Found]], owners: list[tuple[int, int, int]], probs: Any) -> list[SentenceFound]:
    """The pairs' relation probabilities (P, R; rows in ``owners``' order) handed back to their sentences."""
    found = [SentenceFound(ents, [], probs[:0]) for ents in entities]
    rows: list[list[int]] = [[] for _ in entities]
    for k, (row, h, t) in enumerate(owners):
        found[row].pairs.append((h, t))
        rows[row].append(k)
    for f, r in zip(found, rows, strict=True):
        if r:
            f.probs = probs[r]
    return found

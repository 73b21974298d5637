"""The joint model's decoding with numpy alone (what the PyTorch model and its ONNX export share): the entities of
span probabilities, their ordered pairs, and the pairs' probabilities handed back to their sentences."""

from __future__ import annotations

import numpy as np

from tacred.models.joint_decoding import by_sentence, entity_pairs, span_entities


def spans(b: int, m: int, w: int, e: int) -> np.ndarray:
    """Span probabilities where every span is most likely none (label 0)."""
    probs = np.zeros((b, m, w, e + 1), dtype=np.float32)
    probs[..., 0] = 0.9
    return probs


def test_entities_are_the_spans_whose_best_label_is_a_type_inside_the_sentence() -> None:
    probs = spans(2, 2, 4, 2)
    probs[0, 1, 2, 2] = 0.95  # sentence 0: words [2, 4), type 1
    probs[0, 0, 0, 1] = 0.91  # sentence 0: word 0, type 0
    probs[1, 1, 2, 1] = 0.99  # sentence 1 has 3 words: [2, 4) runs past its end
    probs[1, 0, 1, 2] = 0.97  # sentence 1: word 1, type 1
    found = span_entities(probs, np.array([4, 3]))
    assert found == [[(0, 1, 0, np.float32(0.91).item()), (2, 4, 1, np.float32(0.95).item())],
                     [(1, 2, 1, np.float32(0.97).item())]]


def test_pairs_are_every_ordered_pair_of_a_sentence_and_come_back_to_it() -> None:
    entities = [[(0, 1, 0, 0.9), (2, 4, 1, 0.8)], [], [(1, 2, 1, 0.7)]]
    pairs, types, owners = entity_pairs(entities)
    assert pairs.tolist() == [[0, 0, 1, 2, 4], [0, 2, 4, 0, 1]] and types.tolist() == [[0, 1], [1, 0]]
    assert owners == [(0, 0, 1), (0, 1, 0)] and pairs.dtype == np.int64
    probs = np.array([[0.1, 0.2], [0.3, 0.4]], dtype=np.float32)
    found = by_sentence(entities, owners, probs)
    assert found[0].pairs == [(0, 1), (1, 0)] and found[0].probs.tolist() == probs.tolist()
    assert found[1].probs.shape == (0, 2) and found[2].pairs == [] and found[2].probs.shape == (0, 2)
    empty_pairs, empty_types, _ = entity_pairs([[], []])
    assert empty_pairs.shape == (0, 5) and empty_types.shape == (0, 2)

"""An exported joint entity-and-relation model run by ONNX Runtime, with numpy alone (no torch): ``model.onnx``
gives every span's label probabilities and each word's vector from one encoder pass, the entities are decoded as the
PyTorch model decodes them (:mod:`tacred.models.joint_decoding`), and ``relations.onnx`` scores every ordered pair
of them. ``tacred export`` writes such a folder from a joint checkpoint (:mod:`tacred.inference.joint_export`).

The folder's ``predictor.json``: ``{"format": 1, "kind": "joint", "types": {"entities": [...], "relations":
[...]}, "max_width": M, "threshold": t, "tokenizer": {"pad_id", "max_length", "name"}, "allowed": {relation:
[[head type, tail type], ...]}}`` (``allowed``: the type pairs each relation may take; others get probability 0);
the tokenizer itself is ``tokenizer.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tacred.checkpoints import CheckpointError
from tacred.data.joint_batching import EncodedSentence, piece_arrays
from tacred.inference.input_rules import MAX_TOKENS
from tacred.inference.joint import JointReader
from tacred.inference.onnx_backend import PREDICTOR_FILE, Providers
from tacred.models.joint_decoding import Found, SentenceFound, by_sentence, entity_pairs, span_entities

SPAN_INPUTS = ("input_ids", "pad_mask", "piece_words", "shapes", "present")  # model.onnx's inputs
SPAN_OUTPUTS = ("span_probabilities", "words")  # (B, M, W, E + 1) and (B, W, H)
RELATION_INPUTS = ("words", "pairs", "pair_types")  # relations.onnx's: (B, W, H), (P, 5), (P, 2)
RELATION_OUTPUT = "relation_probabilities"  # (P, R): each relation's sigmoid, before the allowed types
RELATIONS_GRAPH = "relations.onnx"
TOKENIZER_FILE = "tokenizer.json"


def allowed_array(allowed: dict[str, Any], entities: Sequence[str], relations: Sequence[str]) -> np.ndarray:
    """``predictor.json``'s ``allowed`` as a (E, E, R) array of booleans: [h, t, r] is True when relation r may
    hold from an entity of type h to one of type t."""
    out = np.zeros((len(entities), len(entities), len(relations)), dtype=bool)
    for r, relation in enumerate(relations):
        for head, tail in allowed.get(relation, []):
            out[entities.index(head), entities.index(tail), r] = True
    return out


def allowed_names(allowed: np.ndarray, entities: Sequence[str], relations: Sequence[str]) -> dict[str, list]:
    """The inverse of :func:`allowed_array`: each relation's allowed (head type, tail type) pairs, by name."""
    return {relation: [[entities[h], entities[t]] for h, t in zip(*np.nonzero(allowed[:, :, r]), strict=True)]
            for r, relation in enumerate(relations)}


class OnnxJointPredictor(JointReader):
    """An exported joint folder loaded for prediction (:func:`tacred.load_model` returns one for such a folder):
    the interface of :class:`~tacred.inference.joint.JointPredictor`, and its results to float32's precision.
    Made by :func:`tacred.inference.api.open_model`, which reads ``meta`` (``predictor.json``) and resolves the
    ``device`` and its ``providers``; ``threshold``: the relation threshold, a probability (None: the dev threshold
    kept in ``predictor.json``); the other options are :class:`~tacred.inference.joint.JointReader`'s.
    """

    def __init__(self, folder: Path, meta: dict[str, Any], device: str, providers: Providers,
                 threshold: float | str | None = None, spacy_model: str | None = None, batch_size: int = 32,
                 max_tokens: int | None = MAX_TOKENS) -> None:
        import onnxruntime as ort

        missing = [name for name in ("model.onnx", RELATIONS_GRAPH, TOKENIZER_FILE) if not (folder / name).is_file()]
        if missing:
            raise CheckpointError(f"{folder}: not a whole exported joint model (no {', '.join(missing)}); write one "
                                  "with `tacred export --ckpt_path JOINT_RUN --out DIR`")
        self.folder, self.device = folder, device
        self.spans = ort.InferenceSession(str(folder / "model.onnx"), providers=providers)
        self.relations = ort.InferenceSession(str(folder / RELATIONS_GRAPH), providers=providers)
        try:
            tokenizer = meta["tokenizer"] | {"tokenizer_json": (folder / TOKENIZER_FILE).read_text(encoding="utf-8")}
            saved = {"types": meta["types"], "tokenizer": tokenizer, "max_width": meta["max_width"],
                     "threshold": meta["threshold"]}
            self.allowed = allowed_array(meta["allowed"], meta["types"]["entities"], meta["types"]["relations"])
            super().__init__(saved, folder, threshold, spacy_model, batch_size, max_tokens,
                             kept_in=str(folder / PREDICTOR_FILE))
        except (KeyError, TypeError, ValueError) as err:
            raise CheckpointError(f"{folder / PREDICTOR_FILE}: not a joint model's description "
                                  f"({type(err).__name__}: {err})") from None

    def encoder_pass(self, sentences: Sequence[EncodedSentence]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``model.onnx`` over a batch: span probabilities (B, M, W, E + 1), word vectors (B, W, H) and the word
        counts (B,); W is at least ``max_width`` (the graph's span loop was traced that wide)."""
        arrays = piece_arrays(sentences, self.pad_id, min_words=self.max_width)
        spans, words = self.spans.run(list(SPAN_OUTPUTS), {name: arrays[name] for name in SPAN_INPUTS})
        return spans, words, arrays["word_counts"]

    def relation_probabilities(self, words: np.ndarray, pairs: np.ndarray, pair_types: np.ndarray) -> np.ndarray:
        """``relations.onnx`` over a batch's entity pairs (:func:`~tacred.models.joint_decoding.entity_pairs`):
        (P, R), the relations their types rule out set to 0."""
        if not len(pairs):
            return np.zeros((0, len(self.types.relations)), dtype=np.float32)
        probs = self.relations.run([RELATION_OUTPUT], {"words": words, "pairs": pairs, "pair_types": pair_types})[0]
        return probs * self.allowed[pair_types[:, 0], pair_types[:, 1]]

    def find(self, sentences: list[EncodedSentence], given: list[list[Found]] | None) -> list[SentenceFound]:
        return self.decode(*self.encoder_pass(sentences), given)

    def decode(self, spans: np.ndarray, words: np.ndarray, counts: np.ndarray,
               given: list[list[Found]] | None = None) -> list[SentenceFound]:
        """A batch's entities from :meth:`encoder_pass`'s span probabilities (or the ``given`` ones), and every
        ordered pair of them scored by ``relations.onnx``."""
        entities = span_entities(spans, counts) if given is None else given
        pairs, pair_types, owners = entity_pairs(entities)
        return by_sentence(entities, owners, self.relation_probabilities(words, pairs, pair_types))

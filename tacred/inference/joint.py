"""A trained joint entity-and-relation model for prediction, without Lightning: sentences as words in, each
sentence's entities and relations out, from one encoder pass a sentence (:func:`tacred.models.joint.find`). The
checkpoint holds everything it needs: the encoder's configuration and weights, the types, the tokenizer, the widest
span and the relation threshold chosen on dev. :class:`JointReader` is what a predictor does around its network,
without torch (an exported folder's :class:`~tacred.inference.onnx_joint.OnnxJointPredictor` shares it);
:class:`JointPredictor` runs the checkpoint's network with PyTorch."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacred.data.joint_batching import JOINT_KEY, EncodedSentence, WordPieces, collate, encode_words
from tacred.datasets.spert_layout import JointTypes
from tacred.devices import autocast
from tacred.inference.input_rules import MAX_TOKENS, InputError, check_max_tokens
from tacred.models.joint_decoding import Found, SentenceFound


@dataclass(frozen=True)
class FoundEntity:
    start: int  # word index, inclusive
    end: int  # word index, exclusive
    type: str
    probability: float


@dataclass(frozen=True)
class FoundRelation:
    head: int  # index into the sentence's entities
    tail: int
    relation: str
    probability: float


@dataclass(frozen=True)
class SentenceResult:
    entities: list[FoundEntity]
    relations: list[FoundRelation]


def best_relations(candidates: Sequence[tuple[int, int, str, float]], threshold: float) -> list[FoundRelation]:
    """The relations a joint model reports among a sentence's candidates ((head, tail, relation, probability)): each
    entity pair's most likely relation where it reaches ``threshold``, by pair."""
    best: dict[tuple[int, int], tuple[float, str]] = {}
    for h, t, rel, p in candidates:
        if p >= threshold and p > best.get((h, t), (-1.0, ""))[0]:
            best[(h, t)] = (p, rel)
    return [FoundRelation(h, t, rel, p) for (h, t), (p, rel) in sorted(best.items())]


class JointReader(ABC):
    """What every joint predictor shares, whatever runs its network: the types, the tokenizer, the threshold, and
    sentences of words → batches of similar length → each sentence's entities and scored pairs. A subclass gives
    :meth:`find` (a batch's encoder pass, entities and pair probabilities): :class:`JointPredictor` with PyTorch,
    :class:`~tacred.inference.onnx_joint.OnnxJointPredictor` with ONNX Runtime.

    ``saved``: what a joint checkpoint keeps of its data (``types``, ``tokenizer``, ``max_width``, ``threshold``).
    ``threshold``: the relation threshold (a probability); None: the one chosen on dev, kept with the model.
    ``batch_size``: sentences a forward pass. ``max_tokens``: the most words a sentence may have (longer ones are
    left out of extraction with a warning; None: no limit beyond the encoder's own)."""

    kind = "joint"
    ner: str | None = None  # entities come from the model itself
    device = "cpu"
    precision: str | None = None  # float32 (ONNX Runtime runs the export as written)

    def __init__(self, saved: dict[str, Any], path: str | Path, threshold: float | str | None = None,
                 spacy_model: str | None = None, batch_size: int = 32, max_tokens: int | None = MAX_TOKENS,
                 kept_in: str = "checkpoint") -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.path = str(path)
        self.types = JointTypes.from_dict(saved["types"])
        self.pieces = WordPieces(saved["tokenizer"])
        self.max_width = int(saved["max_width"])
        if threshold is None:
            self.threshold, self.threshold_source = float(saved.get("threshold", 0.5)), kept_in
        else:
            try:
                self.threshold = float(threshold)  # a threshold.json (the relation models') is no number: refused
            except ValueError:
                raise InputError(f"threshold {threshold!r}: a joint model's relation threshold is a probability "
                                 "in (0, 1)") from None
            if not 0 < self.threshold < 1:
                raise InputError(f"threshold {threshold!r}: a joint model's relation threshold is a probability "
                                 "in (0, 1)")
            self.threshold_source = "given"
        self.spacy_model = spacy_model
        self.batch_size = batch_size
        self.max_tokens = check_max_tokens(max_tokens)

    @property
    def labels(self) -> list[str]:
        return list(self.types.relations)

    @property
    def pad_id(self) -> int:
        return int(self.pieces.spec["pad_id"])

    def encode(self, words: Sequence[str]) -> EncodedSentence | None:
        """A sentence's arrays, or None when it cannot be read whole (over ``max_tokens`` words or the encoder's
        word pieces): extraction tokenises each sentence once, here, and skips those."""
        if not words or (self.max_tokens is not None and len(words) > self.max_tokens):
            return None
        encoded = encode_words(words, self.pieces)
        return encoded if len(encoded.input_ids) <= self.pieces.max_length else None

    def read(self, sentences: Sequence[Sequence[str]]) -> list[SentenceResult]:
        """Each sentence's entities (word spans) and relations, in order; sentences go through the encoder in
        batches of similar length. A sentence over the encoder's length is an :class:`InputError`."""
        return self.read_encoded(self._encoded(sentences))

    def read_encoded(self, encoded: Sequence[EncodedSentence]) -> list[SentenceResult]:
        """:meth:`read` of sentences :meth:`encode` gave: each pair's most likely relation where it reaches the
        threshold."""
        return [SentenceResult(entities, best_relations(candidates, self.threshold))
                for entities, candidates in self.candidates(encoded)]

    def read_candidates(self, sentences: Sequence[Sequence[str]],
                        entities: Sequence[Sequence[tuple[int, int, str]]] | None = None,
                        ) -> list[tuple[list[FoundEntity], list[tuple[int, int, str, float]]]]:
        """Each sentence's entities and every ordered pair of them with each relation's probability (head and tail
        index the entities), before any threshold; ``entities``: score the pairs of these (start, end, type) instead
        of the ones the model finds (the relation step alone)."""
        given = None if entities is None else [
            [(s, e, self.types.entities.index(kind), 1.0) for s, e, kind in sent] for sent in entities]
        return self.candidates(self._encoded(sentences), given)

    def _encoded(self, sentences: Sequence[Sequence[str]]) -> list[EncodedSentence]:
        encoded = []
        for k, words in enumerate(sentences):
            if not words:
                raise InputError(f"sentence {k} has no words")
            encoded.append(encode_words(words, self.pieces))
            if len(encoded[-1].input_ids) > self.pieces.max_length:
                raise InputError(f"sentence {k}: {len(encoded[-1].input_ids)} word pieces, more than the "
                                 f"{self.pieces.max_length} the encoder reads")
        return encoded

    def candidates(self, encoded: Sequence[EncodedSentence], given: list[list[Any]] | None = None,
                   ) -> list[tuple[list[FoundEntity], list[tuple[int, int, str, float]]]]:
        """Each encoded sentence's entities and every ordered pair of them with each relation's probability (the
        model's forward step; ``given``: score the pairs of these entities instead), sentences in batches of similar
        length."""
        results: list[Any] = [None] * len(encoded)
        for chunk in self.batches(encoded):
            found = self.find([encoded[i] for i in chunk], None if given is None else [given[i] for i in chunk])
            for i, f in zip(chunk, found, strict=True):
                ents = [FoundEntity(s, e, self.types.entities[k], float(p)) for s, e, k, p in f.entities]
                candidates = [(h, t, rel, float(p)) for (h, t), row in zip(f.pairs, f.probs.tolist(), strict=True)
                              for rel, p in zip(self.types.relations, row, strict=True)]
                results[i] = (ents, candidates)
        return results

    def batches(self, encoded: Sequence[EncodedSentence]) -> list[list[int]]:
        """The positions of ``encoded`` in batches of ``batch_size``, by length (fewer padded pieces)."""
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].input_ids))
        return [order[at:at + self.batch_size] for at in range(0, len(order), self.batch_size)]

    @abstractmethod
    def find(self, sentences: list[EncodedSentence], given: list[list[Found]] | None) -> list[SentenceFound]:
        """One batch's entities (or the ``given`` ones) and the relation probabilities of every ordered pair."""

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        raise InputError(f"{self.path} is a joint entity-and-relation model: it reads raw text (.extract(text), "
                         "tacred extract), not marked pairs")

    def describe(self) -> dict[str, Any]:
        return {"kind": "joint", "entity_types": list(self.types.entities), "relations": list(self.types.relations),
                "max_width": self.max_width, "threshold": self.threshold}


class JointPredictor(JointReader):
    """A joint checkpoint loaded for prediction with PyTorch (:func:`tacred.load_model` returns one for such a
    checkpoint): its read ``checkpoint`` contents, ``path`` (which names it), the torch ``device`` it runs on
    (resolved: ``cpu``, ``cuda``, ``cuda:N``), the ``precision`` it runs at (:data:`tacred.devices.PRECISIONS`; None:
    float32) and :class:`JointReader`'s options."""

    def __init__(self, checkpoint: dict[str, Any], path: str | Path, device: str = "cpu",
                 threshold: float | str | None = None, spacy_model: str | None = None, batch_size: int = 32,
                 max_tokens: int | None = MAX_TOKENS, precision: str | None = None) -> None:
        import torch

        from tacred.models.joint import JointNetwork, build_encoder

        super().__init__(checkpoint[JOINT_KEY], path, threshold, spacy_model, batch_size, max_tokens)
        self.device = device
        self.precision = precision
        hp = checkpoint.get("hyper_parameters") or {}
        encoder, _ = build_encoder(None, hp["transformer_config"])
        self.net = JointNetwork(encoder, len(self.types.entities), len(self.types.relations), self.max_width,
                                hp.get("width_dim", 25), hp.get("type_dim", 25), hp.get("hidden", 512),
                                hp.get("dropout", 0.1), hp.get("shapes", True),
                                torch.as_tensor(checkpoint["state_dict"]["net.allowed"]))
        state = {k[len("net."):]: v for k, v in checkpoint["state_dict"].items() if k.startswith("net.")}
        self.net.load_state_dict(state)
        self.net.eval().to(self.device)

    def find(self, sentences: list[EncodedSentence], given: list[list[Found]] | None) -> list[SentenceFound]:
        from tacred.models.joint import find

        batch = collate(sentences, range(len(sentences)), self.max_width, len(self.types.relations), self.pad_id)
        with autocast(self.device, self.precision):
            return find(self.net, batch.to(self.device), given)

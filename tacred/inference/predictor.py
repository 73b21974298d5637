"""The predictor contract: one class for every backend. Inputs are read (:mod:`tacred.inference.inputs`), encoded
(:mod:`tacred.inference.encoding`), run through a backend and turned into :class:`Prediction` objects
(:mod:`tacred.inference.outputs`); a backend only runs the network.

A backend has ``device`` (``cpu``, ``cuda``, ``cuda:N``) and ``probabilities(arrays) -> (B, L) float array`` for one
batch of the encoder's arrays. :class:`tacred.inference.trained.TorchBackend` runs a checkpoint's network with torch,
:mod:`tacred.inference.onnx_backend` an exported ``model.onnx`` with ONNX Runtime (no torch).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tacred.inference.encoding import InputEncoder
from tacred.inference.input_rules import MAX_TOKENS, check_max_tokens
from tacred.inference.inputs import InputError, InputReader, as_items
from tacred.inference.outputs import Prediction, predictions

if TYPE_CHECKING:
    from spacy.language import Language

    from tacred.data.features import SentenceArrays


class Backend(Protocol):
    device: str

    def probabilities(self, arrays: dict[str, np.ndarray]) -> np.ndarray: ...


class Predictor:
    """A trained model ready to predict (see :mod:`tacred.inference.inputs` for the accepted inputs).

    Args:
        encoder: turns TACRED dicts into the network's arrays (chosen by the checkpoint's or export's metadata).
        backend: runs the network on a batch of arrays.
        threshold: the no-relation threshold of :mod:`tacred.evaluation.decision` (a log-margin: a number or a
            ``threshold.json``, whose per-relation thresholds become an (L,) array), or None (the argmax).
        spacy_model: spaCy pipeline for marked strings and raw text (default: the first installed English model).
        batch_size: examples per forward pass.
        max_tokens: the most tokens an input may have (default 512, as ``tacred serve``; None: no limit).
    """

    ner: str | None = None  # a trained NER folder for raw text's entities (set by load_model), None: spaCy's own
    precision: str | None = None  # asked of the model and its trained NER (set by load_model), None: each as saved

    def __init__(self, encoder: InputEncoder, backend: Backend, threshold: float | str | None = None,
                 spacy_model: str | None = None, batch_size: int = 50, max_tokens: int | None = MAX_TOKENS) -> None:
        from tacred.evaluation.decision import describe_threshold, label_thresholds, load_threshold

        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.encoder = encoder
        self.backend = backend
        self.threshold_source = threshold_source(threshold)
        loaded = None if threshold is None else load_threshold(threshold)
        self.threshold = label_thresholds(loaded, list(encoder.labels), encoder.no_relation, threshold)
        if self.threshold_source not in (None, "given"):  # a threshold file is said on the tacred logger
            logging.getLogger("tacred").info(
                "no-relation threshold %s from %s (a log-margin; threshold=0 predicts the plain argmax)",
                describe_threshold(self.threshold), self.threshold_source)
        self.spacy_model = spacy_model
        self.batch_size = batch_size
        self.max_tokens = check_max_tokens(max_tokens)

    @property
    def labels(self) -> list[str]:
        return list(self.encoder.labels)

    @property
    def device(self) -> str:
        return self.backend.device

    # -- public -----------------------------------------------------------------------------------
    def predict(self, inputs: Any) -> Prediction | list[Prediction]:
        """One :class:`Prediction` for one input, a list for a list of inputs (a batch)."""
        items, single = as_items(inputs)
        found = self.predict_examples(self.to_examples(items))
        return found[0] if single else found

    def infer(self, item: Any) -> tuple[str, float]:
        """OpenNRE's ``model.infer(item)``: ``(relation, probability)`` for one input."""
        pred = self.predict(item)
        if isinstance(pred, list):
            raise InputError("infer takes one input; use predict for a list")
        return pred.relation, pred.probability

    def probabilities(self, examples: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Label probabilities (N, L) for TACRED dicts, in input order."""
        encoded = self.encoder.encode(examples)
        probs = np.zeros((len(encoded), len(self.labels)), dtype=np.float32)
        for indices, arrays in encoded.batches(self.batch_size):
            probs[indices] = self.backend.probabilities(arrays)
        return probs

    def pair_probabilities(self, sentences: Sequence[SentenceArrays]) -> np.ndarray:
        """Label probabilities (P, L) of the candidate pairs of sentences encoded per sentence
        (:mod:`tacred.inference.sentence_pairs`; word-vocabulary models), sentence by sentence in order. A batch holds
        whole sentences: a backend with ``pair_probabilities`` (torch) scores a sentence's pairs from one shared
        pass, any other gets the pairs' plain arrays."""
        from tacred.inference.encoding import MAX_CELLS
        from tacred.inference.sentence_pairs import pair_arrays, sentence_batches

        probs = np.zeros((sum(len(s) for s in sentences), len(self.labels)), dtype=np.float32)
        shared = getattr(self.backend, "pair_probabilities", None)
        for rows, arrays in sentence_batches(sentences, self.batch_size, MAX_CELLS):
            probs[rows] = shared(arrays) if shared is not None else self.backend.probabilities(pair_arrays(arrays))
        return probs

    def predict_examples(self, examples: Sequence[Mapping[str, Any]]) -> list[Prediction]:
        """Predictions for TACRED dicts (already validated, e.g. by :meth:`to_examples`)."""
        if not examples:
            return []
        return predictions(examples, self.probabilities(examples), self.labels, self.encoder.no_relation,
                           self.threshold)

    def to_examples(self, items: Sequence[Any]) -> list[dict[str, Any]]:
        """Validated TACRED dicts for a list of inputs; raises :class:`InputError` naming the first bad item."""
        return self._reader().read(items)

    def to_examples_each(self, items: Sequence[Any]) -> list[dict[str, Any] | InputError]:
        """For each input, its validated TACRED dict or the :class:`InputError` naming it (a bad input spoils no
        other)."""
        return self._reader().read_each(items)

    def _reader(self) -> InputReader:
        """The input contract of this model (the entity types it reads, when it reads them)."""
        known = getattr(self.encoder, "known_types", lambda role: None)
        return InputReader(self.encoder.no_relation, self.spacy_pipeline, self.max_tokens, known("subject"),
                           known("object"))

    def spacy_pipeline(self) -> Language:
        """The spaCy pipeline that tokenises and tags marked strings, loaded on first use (the loader's cache)."""
        from tacred.text.spacy_pipeline import load_spacy

        return load_spacy(self.spacy_model)


def threshold_source(threshold: float | str | None) -> str | None:
    """Where a threshold came from: the path of its ``threshold.json``, ``"given"`` for a number (also one written
    as text), None without a threshold."""
    if threshold is None:
        return None
    try:
        float(threshold)
    except (TypeError, ValueError):
        return str(threshold)
    return "given"

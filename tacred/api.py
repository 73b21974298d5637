"""The Python prediction API: ``load_model(ckpt).predict(...)`` on marked strings, OpenNRE-style dicts or TACRED dicts.

Accepted inputs (one, or a list of them for a batch):

- a marked string ``"<subj>Bill Gates</subj> founded <obj>Microsoft</obj> ."`` (or ``{"text": "..."}``);
- character offsets ``{"text": "...", "subj": [start, end], "obj": [start, end]}`` (end-exclusive), or OpenNRE's
  ``{"text": "...", "h": {"pos": [start, end]}, "t": {"pos": [start, end]}}``;
- OpenNRE tokens ``{"token": [...], "h": {"pos": [start, end]}, "t": {"pos": [start, end]}}`` (end-exclusive token
  indices; optional ``h.type``/``t.type``);
- a TACRED dict (``token``, ``subj_start`` …, ``stanford_pos``, ``stanford_ner``; ``relation`` optional).

Raw text and untagged tokens go through spaCy, loaded on first need; TACRED dicts never load it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from spacy.language import Language

    from tacred.models.module import RelationExtractor
    from tacred.models.trained import TrainedNetwork


class InputError(ValueError):
    """An input the model cannot read; the message names the item and the problem."""


@dataclass(frozen=True)
class Prediction:
    """The model's answer for one input: the decided label, its probability and every label's probability."""

    relation: str
    probability: float
    probabilities: dict[str, float]
    subject: str
    object: str
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pair(value: Any, what: str) -> tuple[int, int]:
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise InputError(f"{what} must be [start, end] (two integers), found {value!r}")
    return int(value[0]), int(value[1])


def _entity(item: Mapping[str, Any], key: str) -> tuple[tuple[int, int], str | None]:
    """OpenNRE's ``h``/``t``: ``{"pos": [start, end], "type": optional}``."""
    value = item.get(key)
    if not isinstance(value, Mapping) or "pos" not in value:
        raise InputError(f"'{key}' must be an object with 'pos': [start, end], found {value!r}")
    etype = value.get("type")
    if etype is not None and (not isinstance(etype, str) or not etype.strip()):
        raise InputError(f"'{key}.type' must be a non-empty string, found {etype!r}")
    return _pair(value["pos"], f"'{key}.pos'"), etype


class _Pending:
    """Inputs on their way to TACRED dicts: those that need spaCy are collected and annotated together."""

    def __init__(self) -> None:
        self.examples: list[dict[str, Any] | None] = []
        self.texts: list[tuple[int, Any, str | None, str]] = []  # (slot, Marked, id, where)
        self.words: list[tuple[int, list[str], tuple[int, int], tuple[int, int], tuple[str | None, str | None], str | None]] = []


class Predictor:
    """A trained model ready to predict (see the module docstring for the accepted inputs).

    Args:
        model: a :class:`~tacred.models.trained.TrainedNetwork` (what :func:`load_model` gives; no Lightning) or a
            :class:`~tacred.models.module.RelationExtractor`; put in eval mode.
        threshold: the no-relation threshold of :mod:`tacred.threshold` (a number or a ``threshold.json``), or None.
        spacy_model: spaCy pipeline for raw text (default: the first installed English model).
        batch_size: examples per forward pass.
    """

    def __init__(self, model: TrainedNetwork | RelationExtractor, threshold: float | str | None = None,
                 spacy_model: str | None = None, batch_size: int = 50) -> None:
        from tacred.threshold import load_threshold

        self.model = model.eval()
        self.threshold = None if threshold is None else load_threshold(threshold)
        self.spacy_model = spacy_model
        self.batch_size = batch_size
        self._nlp: Language | None = None

    @property
    def labels(self) -> list[str]:
        return list(self.model.vocab.labels.itos)

    @property
    def nlp(self) -> Language:
        """The spaCy pipeline, loaded on first use."""
        if self._nlp is None:
            from tacred.data.spacy_pipeline import load_spacy

            self._nlp = load_spacy(self.spacy_model)
        return self._nlp

    # -- public -----------------------------------------------------------------------------------
    def predict(self, inputs: Any) -> Prediction | list[Prediction]:
        """One :class:`Prediction` for one input, a list for a list of inputs (a batch)."""
        single = isinstance(inputs, (str, Mapping))
        items = [inputs] if single else inputs
        if not isinstance(items, Sequence) or isinstance(items, (bytes, bytearray)):
            raise InputError(f"expected a string, a dict or a list of them, found {type(inputs).__name__}")
        predictions = self.predict_examples(self.to_examples(items))
        return predictions[0] if single else predictions

    def infer(self, item: Any) -> tuple[str, float]:
        """OpenNRE's ``model.infer(item)``: ``(relation, probability)`` for one input."""
        pred = self.predict(item)
        if isinstance(pred, list):
            raise InputError("infer takes one input; use predict for a list")
        return pred.relation, pred.probability

    def probabilities(self, examples: Sequence[Mapping[str, Any]]) -> torch.Tensor:
        """Label probabilities (N, L) for TACRED dicts, in input order."""
        from tacred.data.batching import encode_split
        from tacred.data.examples import DataFormatError, Example
        from tacred.errors import LabelError

        try:
            data = encode_split([Example.from_dict(ex, i) for i, ex in enumerate(examples)], self.model.vocab,
                                source="input")
        except (LabelError, DataFormatError) as err:  # a label the model lacks; too long for a transformer
            raise InputError(str(err)) from err
        return self.model.split_probabilities(data, self.batch_size)

    def predict_examples(self, examples: Sequence[Mapping[str, Any]]) -> list[Prediction]:
        """Predictions for TACRED dicts (already validated, e.g. by :meth:`to_examples`)."""
        from tacred.threshold import apply_threshold

        if not examples:
            return []
        probs = self.probabilities(examples)
        decided = apply_threshold(probs, self.model.vocab.no_relation_id, self.threshold).tolist()
        labels = self.labels
        out = []
        for ex, row, best in zip(examples, probs.tolist(), decided, strict=True):
            out.append(Prediction(
                relation=labels[best], probability=row[best],
                probabilities=dict(zip(labels, row, strict=True)),
                subject=" ".join(ex["token"][ex["subj_start"]:ex["subj_end"] + 1]),
                object=" ".join(ex["token"][ex["obj_start"]:ex["obj_end"] + 1]),
                id=None if ex.get("id") is None else str(ex["id"]),
            ))
        return out

    def to_examples(self, items: Sequence[Any]) -> list[dict[str, Any]]:
        """Validated TACRED dicts for a list of inputs; raises :class:`InputError` naming the first bad item."""
        pending = _Pending()
        for i, item in enumerate(items):
            where = f"input {i}" if len(items) > 1 else "input"
            pending.examples.append(None)
            try:
                self._read(item, i, pending)
            except InputError as err:
                raise InputError(f"{where}: {err}") from err
        self._annotate(pending)
        return [ex for ex in pending.examples if ex is not None]

    # -- reading one input ------------------------------------------------------------------------
    def _read(self, item: Any, slot: int, pending: _Pending) -> None:
        from tacred.data.annotate import MarkerError, parse_markers, parse_offsets

        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, Mapping):
            raise InputError(f"expected a string or an object, found {type(item).__name__}")
        ex_id = item.get("id")
        if ex_id is not None and (isinstance(ex_id, bool) or not isinstance(ex_id, (str, int))):
            raise InputError(f"'id' must be a string or an integer, found {ex_id!r}")
        ex_id = None if ex_id is None else str(ex_id)
        try:
            if "subj_start" in item:
                pending.examples[slot] = self._tacred(item, slot)
            elif "token" in item:
                pending.words.append(self._tokens(item, slot))
            elif "text" in item and ("h" in item or "t" in item):
                text = item["text"]
                if not isinstance(text, str) or not text.strip():
                    raise InputError(f"'text' must be a non-empty string, found {text!r}")
                (h, htype), (t, ttype) = _entity(item, "h"), _entity(item, "t")
                record = {"text": text, "subj": list(h), "obj": list(t), "subj_type": htype, "obj_type": ttype}
                marked, _, _ = parse_offsets({k: v for k, v in record.items() if v is not None})
                pending.texts.append((slot, marked, ex_id, "text"))
            elif "text" in item and ("subj" in item or "obj" in item):
                marked, _, _ = parse_offsets({k: v for k, v in item.items() if k != "relation"})
                pending.texts.append((slot, marked, ex_id, "text"))
            elif "text" in item:
                text = item["text"]
                if not isinstance(text, str) or not text.strip():
                    raise InputError(f"'text' must be a non-empty string, found {text!r}")
                pending.texts.append((slot, parse_markers(text), ex_id, "text"))
            else:
                raise InputError("expected 'text' (a marked sentence or offsets), 'token' with 'h'/'t' (OpenNRE), "
                                 f"or a TACRED example; found the keys {sorted(item)}")
        except MarkerError as err:
            raise InputError(str(err)) from err

    def _tacred(self, item: Mapping[str, Any], slot: int) -> dict[str, Any]:
        from tacred.data.examples import check_example

        example = dict(item)
        example["relation"] = self.model.vocab.no_relation  # a gold label, if any, plays no part in predicting
        problem = check_example(example)
        if problem:
            raise InputError(problem)
        example.setdefault("id", f"#{slot}")
        return example

    def _tokens(self, item: Mapping[str, Any], slot: int) -> tuple:
        tokens = item["token"]
        if not isinstance(tokens, list) or not tokens:
            raise InputError(f"'token' must be a non-empty list of strings, found {tokens!r}")
        for k, tok in enumerate(tokens):
            if not isinstance(tok, str) or not tok.strip():
                raise InputError(f"'token' has an empty or non-string token at position {k}: {tok!r}")
        (h, htype), (t, ttype) = _entity(item, "h"), _entity(item, "t")
        spans = []
        for key, (start, end) in (("h", h), ("t", t)):
            if not 0 <= start < end <= len(tokens):
                raise InputError(f"'{key}.pos' [{start}, {end}) does not fit {len(tokens)} tokens "
                                 "(token indices, end-exclusive)")
            spans.append((start, end - 1))
        if spans[0][0] <= spans[1][1] and spans[1][0] <= spans[0][1]:
            raise InputError(f"'h.pos' {list(h)} and 't.pos' {list(t)} overlap")
        ex_id = item.get("id")
        return slot, list(tokens), spans[0], spans[1], (htype, ttype), None if ex_id is None else str(ex_id)

    def _annotate(self, pending: _Pending) -> None:
        """Tag the inputs that need spaCy (all at once) and fill their slots."""
        from tacred.data.spacy_pipeline import SpanError, annotate_words, tacred_example, tokenize_with_spans

        no_rel = self.model.vocab.no_relation
        if pending.texts:
            tokenized = []
            for slot, marked, _, _ in pending.texts:
                try:
                    tokenized.append(tokenize_with_spans(self.nlp, marked.text, [marked.subj, marked.obj]))
                except SpanError as err:
                    raise InputError(f"input {slot}: {err}") from err
            annotations = annotate_words((t.words for t in tokenized), self.nlp, (t.spaces for t in tokenized))
            for (slot, marked, ex_id, _), tok, ann in zip(pending.texts, tokenized, annotations, strict=True):
                pending.examples[slot] = tacred_example(ex_id or f"#{slot}", ann, tok.spans[0], tok.spans[1], no_rel,
                                                        marked.subj_type, marked.obj_type)
        if pending.words:
            annotations = annotate_words((w for _, w, *_ in pending.words), self.nlp)
            for (slot, _, subj, obj, (stype, otype), ex_id), ann in zip(pending.words, annotations, strict=True):
                pending.examples[slot] = tacred_example(ex_id or f"#{slot}", ann, subj, obj, no_rel, stype, otype)


def load_model(ckpt_path: str | Path, device: str = "cpu", threshold: float | str | None = None,
               spacy_model: str | None = None, batch_size: int = 50) -> Predictor:
    """Load a trained model from its checkpoint (vocabularies and configuration included) for prediction.

    >>> m = load_model("runs/demo/checkpoints/best.ckpt")          # doctest: +SKIP
    >>> m.predict("<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said .")
    """
    from tacred.models.trained import TrainedNetwork

    return Predictor(TrainedNetwork.from_checkpoint(ckpt_path, map_location=device), threshold=threshold,
                     spacy_model=spacy_model, batch_size=batch_size)

"""Every accepted input form → a validated TACRED dict (tokens, spans, types, POS and NER tags).

Accepted inputs (one, or a list of them for a batch):

- a marked string ``"<subj>Bill Gates</subj> founded <obj>Microsoft</obj> ."`` (or ``{"text": "..."}``);
- character offsets ``{"text": "...", "subj": [start, end], "obj": [start, end]}`` (end-exclusive), or OpenNRE's
  ``{"text": "...", "h": {"pos": [start, end]}, "t": {"pos": [start, end]}}``;
- OpenNRE tokens ``{"token": [...], "h": {"pos": [start, end]}, "t": {"pos": [start, end]}}`` (end-exclusive token
  indices; optional ``h.type``/``t.type``);
- a TACRED dict (``token``, ``subj_start`` …, ``stanford_pos``, ``stanford_ner``; ``relation`` optional).

Every form is held to the same contract (:mod:`tacred.inference.input_rules`): spans at word boundaries, entity
types the model knows, at most ``max_tokens`` tokens and 1,000,000 characters. Raw text and untagged tokens go
through spaCy (``nlp``, loaded by the caller on first need); TACRED dicts never do. Nothing here depends on the model
kind or on torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any

from tacred.inference.input_rules import (
    InputError,
    check_characters,
    check_entity_type,
    check_max_tokens,
    check_token_count,
    check_word_boundaries,
)

if TYPE_CHECKING:
    from spacy.language import Language

    from tacred.datasets.annotate import Marked

__all__ = ["InputError", "InputReader", "as_items", "check_marked"]


def as_items(inputs: Any) -> tuple[list[Any], bool]:
    """The list of inputs and whether one input (not a list) was given."""
    single = isinstance(inputs, (str, Mapping))
    items = [inputs] if single else inputs
    if not isinstance(items, Sequence) or isinstance(items, (bytes, bytearray)):
        raise InputError(f"expected a string, a dict or a list of them, found {type(inputs).__name__}")
    return list(items), single


def check_marked(marked: Marked) -> None:
    """The checks of a marked sentence or offsets record that need neither spaCy nor the model (``tacred predict``
    runs them on every line before loading either): its length in characters and spans at word boundaries."""
    check_characters(marked.text)
    check_word_boundaries(marked.text, marked.subj, "subject")
    check_word_boundaries(marked.text, marked.obj, "object")


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


def _text(item: Mapping[str, Any]) -> str:
    text = item["text"]
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"'text' must be a non-empty string, found {text!r}")
    return text


class InputReader:
    """Reads inputs into TACRED dicts; those that need spaCy are collected and annotated together.

    Args:
        no_relation: the model's no-relation label, which every example read carries as its relation (predicting never
            reads a gold label).
        nlp: a function that returns the spaCy pipeline, called only when an input needs it.
        max_tokens: the most tokens an input may have (None: no limit); longer inputs are an :class:`InputError`,
            found before spaCy runs where the text alone shows it (spaCy never makes fewer tokens than there are
            whitespace-separated words).
        subject_types, object_types: the entity types the model knows in each role (None: any); a type given with
            an input must be one of them.
    """

    def __init__(self, no_relation: str, nlp: Callable[[], Language], max_tokens: int | None = None,
                 subject_types: Set[str] | None = None, object_types: Set[str] | None = None) -> None:
        self.no_relation = no_relation
        self.nlp = nlp
        self.max_tokens = check_max_tokens(max_tokens)
        self.known = {"subject": subject_types, "object": object_types}

    def read(self, items: Sequence[Any]) -> list[dict[str, Any]]:
        """Validated TACRED dicts for a list of inputs; raises :class:`InputError` naming the first bad item."""
        return self._read_all(items, collect=False)  # type: ignore[return-value] # nothing collected: all dicts

    def read_each(self, items: Sequence[Any]) -> list[dict[str, Any] | InputError]:
        """For each input, in order, its TACRED dict or the :class:`InputError` that names it: a bad input spoils
        no other (a server's answer to a list has an entry per input)."""
        return self._read_all(items, collect=True)

    def _read_all(self, items: Sequence[Any], collect: bool) -> list[dict[str, Any] | InputError]:
        self._examples: list[dict[str, Any] | None] = [None] * len(items)
        self._errors: dict[int, InputError] = {}
        self._collect = collect
        self._texts: list[tuple[int, Any, str | None]] = []  # (slot, Marked, id)
        self._words: list[tuple[int, list[str], tuple[int, int], tuple[int, int], tuple[str | None, str | None],
                                str | None]] = []
        for i, item in enumerate(items):
            try:
                self._read(item, i)
            except InputError as err:
                self._fail(i, len(items), err)
        self._annotate(len(items))
        return [self._errors[i] if i in self._errors else ex for i, ex in enumerate(self._examples)
                if ex is not None or i in self._errors]

    def _fail(self, slot: int, count: int, err: Exception) -> None:
        """The error of input ``slot``, named by its position: kept (``read_each``) or raised (``read``)."""
        named = InputError(f"{self._where(slot, count)}: {err}", slot, str(err))
        if not self._collect:
            raise named from err
        self._errors[slot] = named

    @staticmethod
    def _where(slot: int, count: int) -> str:
        return f"input {slot}" if count > 1 else "input"

    def _check_length(self, count: int, exact: bool = True) -> None:
        check_token_count(count, self.max_tokens, exact)

    def _check_types(self, subject_type: str | None, object_type: str | None) -> None:
        check_entity_type(subject_type, "subject", self.known["subject"])
        check_entity_type(object_type, "object", self.known["object"])

    def _check_text(self, marked: Marked) -> None:
        check_marked(marked)
        self._check_types(marked.subj_type, marked.obj_type)
        self._check_length(len(marked.text.split()), exact=False)

    # -- one input --------------------------------------------------------------------------------
    def _read(self, item: Any, slot: int) -> None:
        from tacred.datasets.annotate import MarkerError, parse_markers, parse_offsets

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
                self._examples[slot] = self._tacred(item, slot)
            elif "token" in item:
                self._words.append(self._tokens(item, slot, ex_id))
            elif "text" in item and ("h" in item or "t" in item):
                text = _text(item)
                (h, htype), (t, ttype) = _entity(item, "h"), _entity(item, "t")
                record = {"text": text, "subj": list(h), "obj": list(t), "subj_type": htype, "obj_type": ttype}
                marked, _, _ = parse_offsets({k: v for k, v in record.items() if v is not None})
                self._check_text(marked)
                self._texts.append((slot, marked, ex_id))
            elif "text" in item and ("subj" in item or "obj" in item):
                marked, _, _ = parse_offsets({k: v for k, v in item.items() if k != "relation"})
                self._check_text(marked)
                self._texts.append((slot, marked, ex_id))
            elif "text" in item:
                marked = parse_markers(_text(item))
                self._check_text(marked)
                self._texts.append((slot, marked, ex_id))
            else:
                raise InputError("expected 'text' (a marked sentence or offsets), 'token' with 'h'/'t' (OpenNRE), "
                                 f"or a TACRED example; found the keys {sorted(item)}")
        except MarkerError as err:
            raise InputError(str(err)) from err

    def _tacred(self, item: Mapping[str, Any], slot: int) -> dict[str, Any]:
        from tacred.data.examples import check_example

        example = dict(item)
        example["relation"] = self.no_relation  # a gold label, if any, plays no part in predicting
        problem = check_example(example)
        if problem:
            raise InputError(problem)
        self._check_types(example["subj_type"], example["obj_type"])
        self._check_length(len(example["token"]))
        example.setdefault("id", f"#{slot}")
        return example

    def _tokens(self, item: Mapping[str, Any], slot: int, ex_id: str | None) -> tuple:
        tokens = item["token"]
        if not isinstance(tokens, list) or not tokens:
            raise InputError(f"'token' must be a non-empty list of strings, found {tokens!r}")
        for k, tok in enumerate(tokens):
            if not isinstance(tok, str) or not tok.strip():
                raise InputError(f"'token' has an empty or non-string token at position {k}: {tok!r}")
        self._check_length(len(tokens))
        (h, htype), (t, ttype) = _entity(item, "h"), _entity(item, "t")
        self._check_types(htype, ttype)
        spans = []
        for key, (start, end) in (("h", h), ("t", t)):
            if not 0 <= start < end <= len(tokens):
                raise InputError(f"'{key}.pos' [{start}, {end}) does not fit {len(tokens)} tokens "
                                 "(token indices, end-exclusive)")
            spans.append((start, end - 1))
        if spans[0][0] <= spans[1][1] and spans[1][0] <= spans[0][1]:
            raise InputError(f"'h.pos' {list(h)} and 't.pos' {list(t)} overlap")
        return slot, list(tokens), spans[0], spans[1], (htype, ttype), ex_id

    # -- spaCy, once for all inputs that need it ------------------------------------------------------
    def _annotate(self, count: int) -> None:
        from tacred.text.spacy_pipeline import SpanError, annotate_words, tacred_example, tokenize_with_spans

        if self._texts:
            nlp = self.nlp()
            kept, tokenized = [], []
            for entry in self._texts:
                slot, marked, _ = entry
                try:
                    tokens = tokenize_with_spans(nlp, marked.text, [marked.subj, marked.obj])
                    self._check_length(len(tokens.words))
                except (SpanError, InputError) as err:
                    self._fail(slot, count, err)
                    continue
                kept.append(entry)
                tokenized.append(tokens)
            annotations = annotate_words((t.words for t in tokenized), nlp, (t.spaces for t in tokenized))
            for (slot, marked, ex_id), tok, ann in zip(kept, tokenized, annotations, strict=True):
                self._examples[slot] = tacred_example(ex_id or f"#{slot}", ann, tok.spans[0], tok.spans[1],
                                                      self.no_relation, marked.subj_type, marked.obj_type)
        if self._words:
            annotations = annotate_words((w for _, w, *_ in self._words), self.nlp())
            for (slot, _, subj, obj, (stype, otype), ex_id), ann in zip(self._words, annotations, strict=True):
                self._examples[slot] = tacred_example(ex_id or f"#{slot}", ann, subj, obj, self.no_relation,
                                                      stype, otype)

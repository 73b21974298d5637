"""Raw sentences with a marked subject and object → TACRED JSON dicts, tokenised and tagged by spaCy.

Marked lines: ``<subj>Bill Gates</subj> founded <obj>Microsoft</obj> .``; a type may be given as
``<subj:PERSON>…</subj>``; ``<e1>``/``<e2>`` are synonyms of ``<subj>``/``<obj>``. Offsets: JSON Lines
``{"text": ..., "subj": [start, end], "obj": [start, end]}`` (end-exclusive character offsets).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tacred.constants import NO_RELATION
from tacred.errors import TacredError
from tacred.io import JsonLinesError, json_line
from tacred.text.spacy_pipeline import (
    SpanError,
    TokenizedText,
    annotate_words,
    given_or_default,
    tacred_example,
    tokenize_with_spans,
)

if TYPE_CHECKING:
    from spacy.language import Language

MARKER = re.compile(r"<(/?)(subj|obj|e1|e2)(?::([^<>]*))?>")
_ROLE = {"subj": "subject", "e1": "subject", "obj": "object", "e2": "object"}
_OFFSET_KEYS = {"text", "subj", "obj", "id", "subj_type", "obj_type", "relation"}


class MarkerError(TacredError, ValueError):
    """A sentence whose ``<subj>``/``<obj>`` markers are missing, repeated, nested or empty."""


class AnnotationError(TacredError, ValueError):
    """An input line that cannot be annotated; names the source, the 1-based line and the problem."""

    def __init__(self, source: str, line: int, problem: str) -> None:
        super().__init__(f"{source}, line {line}: {problem}")
        self.source = source
        self.line = line
        self.problem = problem


@dataclass(frozen=True)
class Marked:
    """A sentence without its markers; spans are end-exclusive character offsets into ``text``."""

    text: str
    subj: tuple[int, int]
    obj: tuple[int, int]
    subj_type: str | None = None
    obj_type: str | None = None


def parse_markers(line: str) -> Marked:
    """Remove the subject/object markers from ``line`` and return the clean text with both spans."""
    pieces: list[str] = []
    length = 0  # characters of clean text so far
    last = 0
    open_tag: tuple[str, int, str | None] | None = None  # name, start, type
    found: dict[str, tuple[int, int, str | None]] = {}
    for m in MARKER.finditer(line):
        pieces.append(line[last:m.start()])
        length += m.start() - last
        last = m.end()
        closing, name, etype = m.group(1) == "/", m.group(2), m.group(3)
        role = _ROLE[name]
        if closing:
            if etype is not None:
                raise MarkerError(f"closing marker {m.group(0)} cannot carry a type")
            if open_tag is None:
                raise MarkerError(f"</{name}> has no opening <{name}>")
            if open_tag[0] != name:
                raise MarkerError(f"</{name}> closes <{open_tag[0]}>")
            found[role] = (open_tag[1], length, open_tag[2])
            open_tag = None
            continue
        if open_tag is not None:
            raise MarkerError(f"<{name}> opens inside <{open_tag[0]}> (markers cannot be nested)")
        if role in found:
            raise MarkerError(f"the {role} is marked more than once (second marker {m.group(0)})")
        if etype is not None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", etype):
            raise MarkerError(f"marker {m.group(0)} has an invalid type {etype!r} (letters, digits, _)")
        open_tag = (name, length, etype)
    pieces.append(line[last:])
    if open_tag is not None:
        raise MarkerError(f"<{open_tag[0]}> is never closed")
    text = "".join(pieces)
    for role, example in (("subject", "<subj>…</subj> or <e1>…</e1>"), ("object", "<obj>…</obj> or <e2>…</e2>")):
        if role not in found:
            raise MarkerError(f"no {role} marker ({example})")
        start, end, _ = found[role]
        if not text[start:end].strip():
            raise MarkerError(f"the {role} span is empty")
    (s1, e1, t1), (s2, e2, t2) = found["subject"], found["object"]
    return Marked(text, (s1, e1), (s2, e2), t1, t2)


def _annotate(
    pending: list[tuple[int, str, Marked, str]], nlp: Language | None, source: str, batch_size: int
) -> list[dict[str, Any]]:
    """Tokenise, tag and convert ``(line, id, marked, relation)`` entries."""
    nlp = given_or_default(nlp)
    tokenized: list[TokenizedText] = []
    for line_no, _, marked, _ in pending:
        try:
            tokenized.append(tokenize_with_spans(nlp, marked.text, [marked.subj, marked.obj]))
        except SpanError as err:
            raise AnnotationError(source, line_no, str(err)) from err
    annotations = annotate_words(
        (t.words for t in tokenized), nlp, (t.spaces for t in tokenized), batch_size=batch_size
    )
    return [
        tacred_example(ex_id, ann, tok.spans[0], tok.spans[1], relation, marked.subj_type, marked.obj_type)
        for (_, ex_id, marked, relation), tok, ann in zip(pending, tokenized, annotations, strict=True)
    ]


def annotate_marked(
    lines: Iterable[str], nlp: Language | None = None, source: str = "<stdin>", batch_size: int = 256
) -> list[dict[str, Any]]:
    """TACRED dicts (relation ``no_relation``, id ``line-<n>``) for marked lines; blank lines are skipped."""
    pending = []
    for n, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        try:
            pending.append((n, f"line-{n}", parse_markers(line), NO_RELATION))
        except MarkerError as err:
            raise AnnotationError(source, n, str(err)) from err
    return _annotate(pending, nlp, source, batch_size)


def _span(record: Mapping[str, Any], key: str, text: str) -> tuple[int, int]:
    value = record.get(key)
    if (
        not isinstance(value, (list, tuple)) or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise MarkerError(f"'{key}' must be [start, end] (two integers), found {value!r}")
    start, end = value
    if not 0 <= start < end <= len(text):
        raise MarkerError(f"'{key}' [{start}, {end}) does not fit the text ({len(text)} characters)")
    if not text[start:end].strip():
        raise MarkerError(f"'{key}' [{start}, {end}) covers only whitespace")
    return start, end


def offsets_line(line: str, number: int = 1) -> Any:
    """The JSON record of one line of an offsets file; a line that is not JSON is a :class:`MarkerError`."""
    try:
        return json_line(line, number)
    except JsonLinesError as err:
        raise MarkerError("JSON nested too deeply" if err.too_deep
                          else f"invalid JSON ({err.msg} at column {err.colno})") from err


def parse_offsets(record: Any) -> tuple[Marked, str | None, str]:
    """Validate one offsets record; return its :class:`Marked` form, optional id and relation."""
    if not isinstance(record, Mapping):
        raise MarkerError(f"expected a JSON object, found {type(record).__name__}")
    unknown = sorted(set(record) - _OFFSET_KEYS)
    if unknown:
        raise MarkerError(f"unknown field(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_OFFSET_KEYS))})")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise MarkerError(f"'text' must be a non-empty string, found {text!r}")
    subj, obj = _span(record, "subj", text), _span(record, "obj", text)
    if subj[0] < obj[1] and obj[0] < subj[1]:
        raise MarkerError(f"'subj' {list(subj)} and 'obj' {list(obj)} overlap")
    types = []
    for key in ("subj_type", "obj_type", "relation"):
        value = record.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise MarkerError(f"'{key}' must be a non-empty string, found {value!r}")
        types.append(value)
    ex_id = record.get("id")
    if ex_id is not None and (isinstance(ex_id, bool) or not isinstance(ex_id, (str, int))):
        raise MarkerError(f"'id' must be a string or an integer, found {ex_id!r}")
    marked = Marked(text, subj, obj, types[0], types[1])
    return marked, None if ex_id is None else str(ex_id), types[2] or NO_RELATION


def annotate_offsets(
    records: Iterable[str | Mapping[str, Any]],
    nlp: Language | None = None,
    source: str = "<stdin>",
    batch_size: int = 256,
) -> list[dict[str, Any]]:
    """TACRED dicts for JSON Lines (strings, blank ones skipped) or already parsed records.

    Optional fields: ``id`` (default ``line-<n>``), ``subj_type``/``obj_type`` (default: the span's
    NER or NOMINAL) and ``relation`` (default ``no_relation``).
    """
    pending = []
    for n, record in enumerate(records, start=1):
        try:
            if isinstance(record, str):
                if not record.strip():
                    continue
                record = offsets_line(record, n)
            marked, ex_id, relation = parse_offsets(record)
        except MarkerError as err:
            raise AnnotationError(source, n, str(err)) from err
        pending.append((n, ex_id or f"line-{n}", marked, relation))
    first: dict[str, int] = {}
    for n, ex_id, _, _ in pending:
        if ex_id in first:
            raise AnnotationError(source, n, f"id {ex_id!r} repeats the id of line {first[ex_id]}; ids must be unique")
        first[ex_id] = n
    return _annotate(pending, nlp, source, batch_size)

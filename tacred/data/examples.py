"""TACRED JSON / JSON Lines → validated :class:`Example` objects."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacred.errors import TacredError, read_text
from tacred.io import JsonLinesError, jsonl_records

log = logging.getLogger(__name__)

_INT_FIELDS = ("subj_start", "subj_end", "obj_start", "obj_end")
_STR_FIELDS = ("relation", "subj_type", "obj_type")
_LIST_FIELDS = ("token", "stanford_pos", "stanford_ner")
REQUIRED_FIELDS = ("token", *_INT_FIELDS, *_STR_FIELDS, "stanford_pos", "stanford_ner")


class DataFormatError(TacredError, ValueError):
    """An example (or a whole file) that does not follow the TACRED format."""


@dataclass(frozen=True)
class Example:
    """One relation mention: a sentence with a subject span and an object span (inclusive ends)."""

    id: str
    tokens: tuple[str, ...]
    subj_start: int
    subj_end: int
    obj_start: int
    obj_end: int
    subj_type: str
    obj_type: str
    pos: tuple[str, ...]
    ner: tuple[str, ...]
    relation: str
    lemmas: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def from_dict(cls, raw: dict[str, Any], index: int = 0) -> Example:
        """Build from an already validated TACRED dict (see :func:`check_example`)."""
        return cls(
            id=str(raw.get("id") if raw.get("id") is not None else f"#{index}"),
            tokens=tuple(raw["token"]),
            subj_start=raw["subj_start"],
            subj_end=raw["subj_end"],
            obj_start=raw["obj_start"],
            obj_end=raw["obj_end"],
            subj_type=raw["subj_type"],
            obj_type=raw["obj_type"],
            pos=tuple(raw["stanford_pos"]),
            ner=tuple(raw["stanford_ner"]),
            relation=raw["relation"],
            lemmas=tuple(raw["lemma"]) if raw.get("lemma") is not None else None,
        )


def check_example(raw: Any) -> str | None:
    """Return what is wrong with one raw example, or None when it is valid."""
    if not isinstance(raw, dict):
        return f"expected a JSON object, found {type(raw).__name__}"
    missing = [k for k in REQUIRED_FIELDS if raw.get(k) is None]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    for key in _LIST_FIELDS:
        if not isinstance(raw[key], list):
            return f"field '{key}' must be a list, found {type(raw[key]).__name__}"
    tokens = raw["token"]
    if not tokens:
        return "field 'token' is empty"
    for i, tok in enumerate(tokens):
        if not isinstance(tok, str) or not tok.strip():
            return f"field 'token' has an empty or non-string token at position {i}: {tok!r}"
    for key in ("stanford_pos", "stanford_ner"):
        if len(raw[key]) != len(tokens):
            return f"field '{key}' has {len(raw[key])} tags but 'token' has {len(tokens)} tokens"
        if not all(isinstance(t, str) for t in raw[key]):
            return f"field '{key}' must hold strings"
    for key in _INT_FIELDS:
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int):
            return f"field '{key}' must be an integer, found {value!r}"
    for prefix in ("subj", "obj"):
        start, end = raw[f"{prefix}_start"], raw[f"{prefix}_end"]
        if not 0 <= start <= end < len(tokens):
            return (f"span {prefix}_start={start}, {prefix}_end={end} does not satisfy "
                    f"0 <= start <= end < {len(tokens)} (sentence length)")
    for key in _STR_FIELDS:
        if not isinstance(raw[key], str) or not raw[key].strip():
            return f"field '{key}' must be a non-empty string, found {raw[key]!r}"
    ident = raw.get("id")
    if ident is not None and (not isinstance(ident, str) or not ident.strip()):
        return f"field 'id' must be a non-empty string, found {ident!r}"
    lemmas = raw.get("lemma")
    if lemmas is not None and (not isinstance(lemmas, list) or len(lemmas) != len(tokens)):
        return "field 'lemma' must be a list as long as 'token'"
    return None


@dataclass
class LoadResult:
    """Examples of one file and the invalid ones that were skipped (only in lenient mode)."""

    path: Path
    examples: list[Example]
    skipped: list[tuple[int, str, str]]  # (index, id, reason)


def check_data_file(path: str | Path) -> Path:
    """What can be told of a data file without reading its examples (commands run it before Lightning loads): it
    exists and is not empty, and is neither one JSON object nor something else than JSON."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    if path.stat().st_size == 0:
        raise DataFormatError(f"{path}: the file is empty (expected a JSON list of examples or JSON Lines)")
    first = _first_character(path)
    if first == "{":
        _refuse_one_object(path)
    elif first != "[":
        _read_json_plain(path)  # a line that is not JSON: an error naming it
    return path


_EXAMPLE_KEYS = {"id", "token", "relation", "subj_start", "subj_end", "obj_start", "obj_end"}


def _refuse_one_object(path: Path) -> None:
    """A file that is one JSON object other than an example (``{"data": [...]}``) holds no list of examples (the
    parse of a JSON Lines file stops at its second line: only its first example is parsed here)."""
    try:
        whole = json.loads(read_text(path, "data file"))
    except json.JSONDecodeError:
        return
    if isinstance(whole, dict) and not _EXAMPLE_KEYS & whole.keys():
        keys = ", ".join(repr(k) for k in list(whole)[:5]) + (", ..." if len(whole) > 5 else "") or "none"
        raise DataFormatError(f"{path}: holds a JSON object (keys {keys}), not a list of examples: the file must hold a "
                              "JSON list of TACRED examples, or JSON Lines with one example per line")


def _first_character(path: Path) -> str:
    """The first character that is not white space (or a byte-order mark), '' for a blank file."""
    with open(path, "rb") as f:
        while chunk := f.read(65536):
            text = chunk.lstrip(b" \t\r\n\xef\xbb\xbf")
            if text:
                return chr(text[0])
    return ""


def _shared_strings(record: dict[str, Any]) -> dict[str, Any]:
    """The strings of an example's token, tag and lemma lists interned as it is parsed (json's ``object_hook``), so
    that each word and tag is held once however often it occurs: KBP37's train and dev splits took 114 MiB as
    parsed, one string object per token, POS tag and NER tag. Values keep their types; only equal strings merge."""
    for key in (*_LIST_FIELDS, "lemma"):
        values = record.get(key)
        if type(values) is list:
            record[key] = [sys.intern(v) if type(v) is str else v for v in values]
    return record


def _read_json_plain(path: Path) -> list[Any]:
    text = read_text(path, "data file")
    stripped = text.lstrip()
    if not stripped:
        raise DataFormatError(f"{path}: the file holds only white space (expected a JSON list of examples or JSON Lines)")
    try:
        if stripped.startswith("["):
            try:
                data = json.loads(text, object_hook=_shared_strings)
            except json.JSONDecodeError as err:
                raise DataFormatError(f"{path}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
            return data
        return [_shared_strings(record) if isinstance(record, dict) else record
                for _, record in jsonl_records(text.splitlines())]
    except JsonLinesError as err:
        if err.too_deep:
            raise DataFormatError(f"{path}: JSON nested too deeply to be TACRED data") from None
        raise DataFormatError(f"{path}: invalid JSON Lines record at line {err.line}: {err.msg}") from None
    except RecursionError:
        raise DataFormatError(f"{path}: JSON nested too deeply to be TACRED data") from None


def _describe(raw: Any, index: int) -> str:
    ident = raw.get("id") if isinstance(raw, dict) else None
    return f"example {index} (id {ident!r})" if ident is not None else f"example {index}"


def load_examples(path: str | Path, *, strict: bool = True) -> LoadResult:
    """Load and validate every example of a TACRED JSON (list) or JSON Lines file.

    Strict mode raises :class:`DataFormatError` naming the file, the example's index and id, the field
    and the problem. Lenient mode (``strict=False``) skips invalid examples and logs each one and the count.
    Inside :func:`reading_examples_once`, a file read already (:func:`check_examples`) is not read again.
    """
    path = check_data_file(path)
    key = _key(path)
    if _once is not None and (key, strict) in _once.results:
        return _once.results[key, strict]
    records = _once.records.pop(key, None) if _once is not None else None
    return _remember(key, strict, _validated(path, _read_json_plain(path) if records is None else records, strict))


def check_examples(path: str | Path, *, strict: bool | None = True) -> LoadResult | None:
    """:func:`load_examples` with the json module alone (no HF datasets, no torch): what ``tacred fit/validate/test/
    predict`` run on their data files before Lightning is imported, so that a malformed file is reported at once.
    ``strict=None`` (not known yet): only the file as a whole (JSON, a list of records) is checked, None returned."""
    path = check_data_file(path)
    key = _key(path)
    if _once is not None and ((key, strict) in _once.results or strict is None and key in _once.checked):
        return None if strict is None else _once.results[key, strict]
    records = _once.records.pop(key, None) if _once is not None else None
    records = _read_json_plain(path) if records is None else records
    if strict is None:
        if _once is not None:
            _once.records[key] = records  # until the examples are validated, under the strictness known then
        return None
    return _remember(key, strict, _validated(path, records, strict))


@dataclass
class _ReadOnce:
    # a file's records as read, kept only until they are validated (the examples are what stays in memory)
    records: dict[tuple[str, int, int], list[Any]]
    results: dict[tuple[tuple[str, int, int], bool], LoadResult]  # the validated examples (strict or not)
    checked: set[tuple[str, int, int]]  # the files validated (either way)


_once: _ReadOnce | None = None


@contextlib.contextmanager
def reading_examples_once() -> Iterator[None]:
    """Within the block, each data file is read once and validated once: the check before the heavy imports
    (:func:`check_examples`) and the data module's :func:`load_examples` share the result (callers never change it;
    a file changed in between is read again). The contents are let go after it."""
    global _once
    outer = _once
    _once = _ReadOnce({}, {}, set()) if outer is None else outer
    try:
        yield
    finally:
        _once = outer


def _key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path.resolve()), stat.st_mtime_ns, stat.st_size


def _remember(key: tuple[str, int, int], strict: bool, result: LoadResult) -> LoadResult:
    if _once is not None:
        _once.results[key, strict] = result
        _once.checked.add(key)
    return result


def _validated(path: Path, records: list[Any], strict: bool) -> LoadResult:
    examples: list[Example] = []
    skipped: list[tuple[int, str, str]] = []
    first_index: dict[str, int] = {}
    for index, raw in enumerate(records):
        problem = check_example(raw)
        ident = raw.get("id") if problem is None else None
        if ident is not None and ident in first_index:
            problem = f"id {ident!r} repeats the id of example {first_index[ident]}; ids must be unique"
        if problem is None:
            if ident is not None:
                first_index[ident] = index
            examples.append(Example.from_dict(raw, index))
            continue
        if strict:
            raise DataFormatError(f"{path}: {_describe(raw, index)}: {problem}")
        ident = str(raw.get("id")) if isinstance(raw, dict) else "?"
        skipped.append((index, ident, problem))
        log.warning("%s: skipping %s: %s", path, _describe(raw, index), problem)
    if skipped:
        log.warning("%s: skipped %d invalid example(s) of %d", path, len(skipped), len(records))
    if not examples:
        raise DataFormatError(f"{path}: no valid examples" if records else f"{path}: holds no examples")
    return LoadResult(path=path, examples=examples, skipped=skipped)


# ----------------------------------------------------------------------------------------------
# Features: entity masking and relative positions (PAPER_NOTES section 3)


def masked_tokens(ex: Example, words: tuple[str, ...] | None = None) -> list[str]:
    """Replace subject/object tokens by ``SUBJ-<type>`` / ``OBJ-<type>`` (Zhang et al., 2017)."""
    out = list(words if words is not None else ex.tokens)
    for i in range(ex.subj_start, ex.subj_end + 1):
        out[i] = f"SUBJ-{ex.subj_type}"
    for i in range(ex.obj_start, ex.obj_end + 1):
        out[i] = f"OBJ-{ex.obj_type}"
    return out


def relative_positions(start: int, end: int, length: int) -> list[int]:
    """Distance of every token to the span [start, end]: i-start before, 0 inside, i-end after."""
    return [i - start if i < start else (i - end if i > end else 0) for i in range(length)]


def log_bin(p: int) -> int:
    """The original code's binning: sign(p) * (floor(log2 |p|) + 1), and 0 for 0."""
    # int.bit_length() is exactly floor(log2 |p|) + 1 for p != 0, and 0 for 0.
    return abs(p).bit_length() * (1 if p >= 0 else -1)

"""Sentences in SpERT's JSON layout (Eberts & Ulges, 2020), the layout CoNLL04, ADE and SciERC are released in:
``{"tokens": [...], "entities": [{"type", "start", "end"}], "relations": [{"type", "head", "tail"}]}`` with ``end``
exclusive and ``head``/``tail`` indexing the sentence's entities. Read with the json module alone (no torch), every
sentence checked; the entity and relation types come from the training data or from a types file.

Overlapping and nested entities are kept (the joint model classifies every span on its own) unless the reader
refuses them (CoNLL04's pair conversion); two entities on the same span are refused, as are two relations on one
ordered pair (one label per span and per pair).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacred.errors import TacredError

MAX_ENTITIES = 200  # entities in one sentence: the relation step pairs them all (200 entities: 39,800 ordered pairs)


class SpertLayoutError(TacredError, ValueError):
    """A file or sentence in SpERT's layout that cannot be read; the message names the file and the sentence."""


@dataclass(frozen=True)
class SpanEntity:
    type: str
    start: int  # word index, inclusive
    end: int  # word index, exclusive


@dataclass(frozen=True)
class JointSentence:
    """One checked sentence: words, entities, and relations as ``(type, head, tail)`` entity indices."""

    index: int
    tokens: tuple[str, ...]
    entities: tuple[SpanEntity, ...]
    relations: tuple[tuple[str, int, int], ...]

    @property
    def text(self) -> str:
        """The words joined by single spaces (how the sentence reads as raw text)."""
        return " ".join(self.tokens)


@dataclass(frozen=True)
class JointTypes:
    """The entity and relation types a joint model knows, in the order of its classifiers' outputs."""

    entities: tuple[str, ...]
    relations: tuple[str, ...]

    def to_dict(self) -> dict[str, list[str]]:
        return {"entities": list(self.entities), "relations": list(self.relations)}

    @classmethod
    def from_dict(cls, data: Any) -> JointTypes:
        return cls(tuple(data["entities"]), tuple(data["relations"]))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _offset(value: Any, what: str, at: str) -> int:
    if not _is_int(value):
        raise SpertLayoutError(f"{at}: {what} is {json.dumps(value)[:40]}, not an integer")
    return value


def read_types(path: str | Path) -> JointTypes:
    """A types file: SpERT's (``{"entities": {"Loc": {...}}, "relations": {"Work_For": {...}}}``) or plain lists
    (``{"entities": ["Loc", ...], "relations": [...]}``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpertLayoutError(f"{path}: no such types file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SpertLayoutError(f"{path}: not a JSON file ({err})") from None
    if not isinstance(data, dict):
        raise SpertLayoutError(f"{path}: expected an object with 'entities' and 'relations'")
    kinds = []
    for key in ("entities", "relations"):
        names = data.get(key)
        names = list(names) if isinstance(names, dict | list) else None
        if not names or not all(isinstance(n, str) and n.strip() for n in names) or len(set(names)) != len(names):
            raise SpertLayoutError(f"{path}: '{key}' must name at least one type, each once")
        kinds.append(tuple(names))
    return JointTypes(*kinds)


def check_sentence(raw: Any, index: int, where: str, types: JointTypes | None = None,
                   max_entities: int | None = MAX_ENTITIES, overlaps: bool = True) -> JointSentence:
    """One sentence, checked: against ``types`` when given, with at most ``max_entities`` entities (None: no limit),
    and without two entities that share a word unless ``overlaps``; raises :class:`SpertLayoutError` naming ``where``
    and the sentence index."""
    at = f"{where}, sentence {index}"
    if not isinstance(raw, dict):
        raise SpertLayoutError(f"{at}: expected a JSON object, found {type(raw).__name__}")
    for key in ("tokens", "entities", "relations"):
        if not isinstance(raw.get(key), list):
            raise SpertLayoutError(f"{at}: '{key}' must be a list, found {json.dumps(raw.get(key))[:60]}")
    tokens = raw["tokens"]
    if not tokens:
        raise SpertLayoutError(f"{at}: 'tokens' is empty")
    for i, tok in enumerate(tokens):
        if not isinstance(tok, str) or not tok or any(c.isspace() for c in tok):
            raise SpertLayoutError(f"{at}: token {i} ({tok!r}) must be a non-empty string without white space")
    if max_entities is not None and len(raw["entities"]) > max_entities:
        raise SpertLayoutError(f"{at}: {len(raw['entities'])} entities, more than the limit of {max_entities} a "
                               "sentence (their ordered pairs grow with the square)")
    entities: list[SpanEntity] = []
    spans: dict[tuple[int, int], int] = {}
    for k, ent in enumerate(raw["entities"]):
        if not isinstance(ent, dict):
            raise SpertLayoutError(f"{at}: entity {k} must be an object with type, start and end")
        kind = ent.get("type")
        if not isinstance(kind, str) or not kind.strip():
            raise SpertLayoutError(f"{at}: entity {k} has type {json.dumps(kind)[:40]}, expected a name")
        if types is not None and kind not in types.entities:
            raise SpertLayoutError(f"{at}: entity {k} has the unknown type {kind!r} (known: "
                                   f"{', '.join(types.entities)})")
        start = _offset(ent.get("start"), f"entity {k}'s start", at)
        end = _offset(ent.get("end"), f"entity {k}'s end", at)
        if not 0 <= start < end <= len(tokens):
            problem = "empty" if start == end else "out of range"
            raise SpertLayoutError(f"{at}: entity {k} spans words [{start}, {end}), {problem} (the sentence has "
                                   f"{len(tokens)} words; end is exclusive)")
        if (start, end) in spans:
            raise SpertLayoutError(f"{at}: entities {spans[(start, end)]} and {k} have the same span [{start}, "
                                   f"{end}) (one type per span)")
        spans[(start, end)] = k
        entities.append(SpanEntity(kind, start, end))
    if not overlaps:
        for a, first in enumerate(entities):
            for b, second in enumerate(entities[a + 1:], start=a + 1):
                if first.start < second.end and second.start < first.end:
                    raise SpertLayoutError(f"{at}: entities {a} and {b} overlap (words [{first.start}, {first.end}) "
                                           f"and [{second.start}, {second.end}))")
    relations: list[tuple[str, int, int]] = []
    pairs: dict[tuple[int, int], int] = {}
    for k, rel in enumerate(raw["relations"]):
        if not isinstance(rel, dict):
            raise SpertLayoutError(f"{at}: relation {k} must be an object with type, head and tail")
        kind = rel.get("type")
        if not isinstance(kind, str) or not kind.strip():
            raise SpertLayoutError(f"{at}: relation {k} has type {json.dumps(kind)[:40]}, expected a name")
        if types is not None and kind not in types.relations:
            raise SpertLayoutError(f"{at}: relation {k} has the unknown type {kind!r} (known: "
                                   f"{', '.join(types.relations)})")
        ends = []
        for role in ("head", "tail"):
            value = _offset(rel.get(role), f"relation {k}'s {role}", at)
            if not 0 <= value < len(entities):
                raise SpertLayoutError(f"{at}: relation {k}'s {role} is entity {value}, which does not exist (the "
                                       f"sentence has {len(entities)} entities)")
            ends.append(value)
        head, tail = ends
        if head == tail:
            raise SpertLayoutError(f"{at}: relation {k}'s head and tail are the same entity ({head})")
        if (head, tail) in pairs:
            raise SpertLayoutError(f"{at}: relations {pairs[(head, tail)]} and {k} both hold from entity {head} to "
                                   f"entity {tail} (one relation per ordered pair)")
        pairs[(head, tail)] = k
        relations.append((kind, head, tail))
    return JointSentence(index, tuple(tokens), tuple(entities), tuple(relations))


def _records(path: Path) -> list[Any]:
    """A JSON list of sentences, or JSON Lines (one sentence a line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpertLayoutError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SpertLayoutError(f"{path}: a folder, expected a JSON file of sentences") from None
    except UnicodeDecodeError as err:
        raise SpertLayoutError(f"{path}: not UTF-8 ({err.reason} at byte {err.start})") from None
    if not text.strip():
        raise SpertLayoutError(f"{path}: empty (expected a JSON list of sentences or JSON Lines)")
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as err:
            raise SpertLayoutError(f"{path}: invalid JSON ({err})") from None
        return data
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except (json.JSONDecodeError, RecursionError) as err:
                raise SpertLayoutError(f"{path}: line {n}: invalid JSON ({err})") from None
    return out


def read_sentences(path: str | Path, types: JointTypes | None = None) -> list[JointSentence]:
    """Every sentence of a file in SpERT's layout, checked (against ``types`` when given); an empty list of
    sentences is an error."""
    path = Path(path)
    records = _records(path)
    if not records:
        raise SpertLayoutError(f"{path}: holds no sentences")
    return [check_sentence(raw, i, str(path), types) for i, raw in enumerate(records)]


def types_of(sentences: Iterable[JointSentence]) -> JointTypes:
    """The types the sentences use, each sorted by name."""
    entities, relations = set(), set()
    for s in sentences:
        entities.update(e.type for e in s.entities)
        relations.update(r[0] for r in s.relations)
    return JointTypes(tuple(sorted(entities)), tuple(sorted(relations)))


def check_known(sentences: Sequence[JointSentence], types: JointTypes, where: str) -> None:
    """Every type in ``sentences`` is one of ``types`` (a dev or test file against the training file's types)."""
    for s in sentences:
        for k, e in enumerate(s.entities):
            if e.type not in types.entities:
                raise SpertLayoutError(f"{where}, sentence {s.index}: entity {k} has the type {e.type!r}, which the "
                                       f"training data never uses (known: {', '.join(types.entities)}); pass a "
                                       "types file (--data.types_file) to declare it")
        for k, (kind, _, _) in enumerate(s.relations):
            if kind not in types.relations:
                raise SpertLayoutError(f"{where}, sentence {s.index}: relation {k} has the type {kind!r}, which the "
                                       f"training data never uses (known: {', '.join(types.relations)}); pass a "
                                       "types file (--data.types_file) to declare it")


def signatures(sentences: Iterable[JointSentence], types: JointTypes) -> list[list[list[bool]]]:
    """allowed[h][t][r]: whether relation ``r`` holds somewhere in ``sentences`` from an entity of type ``h`` to one
    of type ``t`` (each CoNLL04 relation has one such pair of types)."""
    e, r = len(types.entities), len(types.relations)
    allowed = [[[False] * r for _ in range(e)] for _ in range(e)]
    index = {t: k for k, t in enumerate(types.entities)}
    for s in sentences:
        for kind, head, tail in s.relations:
            if kind in types.relations:
                allowed[index[s.entities[head].type]][index[s.entities[tail].type]][types.relations.index(kind)] = True
    return allowed

"""Results tables written from stored runs and a YAML spec (``tacred compare``, ``tacred end-to-end``): the spec's
shared keys read and checked (title, measure, marker, the rows with their targets, the published systems), each error
naming the file and the entry; the mean ± sample std cells, the targets met or missed, the Markdown table, and its
copy between README's markers."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacred.errors import ConfigError, TacredError
from tacred.experiments.ensemble import mean_std
from tacred.io import write_json, write_text_atomic

SPEC_KEYS = ("title", "measure", "marker", "models", "published")  # every table's; a spec adds its own
ROW_KEYS = ("key", "name", "inputs", "target")  # every row's
PUBLISHED_KEYS = ("name", "inputs", "source")  # every published system's, beside its figures
README_START = "<!-- tacred compare: start -->"
README_END = "<!-- tacred compare: end -->"


class TableError(TacredError, ValueError):
    """A results table's spec, or the stored results it names, that cannot be used (the message names the file and
    the entry)."""


@dataclass(frozen=True)
class Goal:
    """A target a row may set: how the table states it (``"NER ≥ {:.1f}"``), the summary entry it is held against,
    and whether that entry must stay at or below it (a spread) instead of reaching it."""

    label: str
    value: str
    at_most: bool = False


@dataclass(frozen=True)
class Row:
    """One of the application's rows: ``key`` names it in the summary, ``name`` and ``inputs`` are its first cells,
    ``target`` what it should reach (keys of the table's goals)."""

    key: str
    name: str
    inputs: str
    target: dict[str, float]


@dataclass(frozen=True)
class Published:
    """A published system: its name, what it reads, its figures as the paper states them (by the spec's keys, in the
    table's order; None where the paper gives none) and where they are printed."""

    name: str
    inputs: str
    figures: dict[str, Any]
    source: str

    def record(self) -> dict[str, Any]:
        """The system as the summary lists it."""
        return {"name": self.name, "inputs": self.inputs, **self.figures, "source": self.source}


# -- reading a spec ---------------------------------------------------------------------------------------------------
def read_spec(path: Path, keys: Collection[str]) -> dict[str, Any]:
    """A spec's top-level mapping; keys other than :data:`SPEC_KEYS` and the table's own ``keys`` are refused."""
    from tacred.options.config_files import load_yaml

    try:
        data = load_yaml(path, "spec")
    except ConfigError as err:
        raise TableError(str(err)) from None
    known = (*SPEC_KEYS, *keys)
    if not isinstance(data, dict):
        raise TableError(f"{path}: expected a mapping of {', '.join(known)}")
    check_keys(data, known, str(path))
    return data


def check_keys(entry: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    unknown = set(entry) - set(known)
    if unknown:
        raise TableError(f"{where}: unknown keys {sorted(unknown)}")


def text(entry: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    """``entry[key]``, a non-empty text; ``default`` where the key is absent or null (without one it is needed)."""
    value = entry.get(key)
    if value is None:
        if default is None:
            raise TableError(f"{where}: needs '{key}'")
        return default
    if not isinstance(value, str) or not value.strip():
        raise TableError(f"{where}: '{key}' must be a non-empty text, got {value!r}")
    return value


def number(entry: Mapping[str, Any], key: str, where: str) -> float:
    value = entry.get(key)
    if value is None:
        raise TableError(f"{where}: needs '{key}'")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TableError(f"{where}: '{key}' must be a number, got {value!r}")
    return float(value)


def optional_number(entry: Mapping[str, Any], key: str, where: str) -> float | None:
    return None if entry.get(key) is None else number(entry, key, where)


def entries(data: Mapping[str, Any], key: str, where: str) -> list[tuple[str, dict[str, Any]]]:
    """The mappings listed under ``key``, each with how errors name it (``FILE, key[k]``)."""
    listed = data.get(key) or []
    if not isinstance(listed, list):
        raise TableError(f"{where}: '{key}' must be a list of mappings, got {listed!r}")
    found = []
    for k, entry in enumerate(listed):
        if not isinstance(entry, dict):
            raise TableError(f"{where}, {key}[{k}]: expected a mapping")
        found.append((f"{where}, {key}[{k}]", entry))
    return found


def read_target(entry: Mapping[str, Any], where: str, goals: Mapping[str, Goal]) -> dict[str, float]:
    target = entry.get("target") or {}
    if not isinstance(target, dict) or set(target) - set(goals):
        raise TableError(f"{where}: 'target' takes {', '.join(goals)}, got {target!r}")
    for key, value in target.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TableError(f"{where}: 'target' {key} must be a number (percent), got {value!r}")
    return {key: float(value) for key, value in target.items()}


def read_rows(data: Mapping[str, Any], where: str, keys: Collection[str],
              goals: Mapping[str, Goal]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The ``models`` entries, at least one: for each, how errors name it, the entry, and its :class:`Row` fields
    checked (each key used once); keys other than :data:`ROW_KEYS` and the table's own ``keys`` are refused."""
    rows, used = [], set()
    for at, entry in entries(data, "models", where):
        check_keys(entry, (*ROW_KEYS, *keys), at)
        key = text(entry, "key", at)
        if key in used:
            raise TableError(f"{at}: the key {key!r} is used twice (each row needs its own)")
        used.add(key)
        rows.append((at, entry, {"key": key, "name": text(entry, "name", at), "inputs": text(entry, "inputs", at),
                                 "target": read_target(entry, at, goals)}))
    if not rows:
        raise TableError(f"{where}: 'models' lists no model")
    return rows


FigureReader = Callable[[Mapping[str, Any], str, str], Any]  # (entry, key, where) -> the checked figure


def read_published(data: Mapping[str, Any], where: str,
                   figures: Mapping[str, FigureReader]) -> tuple[Published, ...]:
    """The ``published`` entries: name, inputs and source, and each of ``figures`` read by its reader."""
    found = []
    for at, entry in entries(data, "published", where):
        check_keys(entry, (*PUBLISHED_KEYS, *figures), at)
        found.append(Published(text(entry, "name", at), text(entry, "inputs", at),
                               {key: read(entry, key, at) for key, read in figures.items()}, text(entry, "source", at)))
    return tuple(found)


# -- figures over seeds -----------------------------------------------------------------------------------------------
def spread(key: str, values: Sequence[float]) -> dict[str, Any]:
    """A summary's entries for one figure over seeds: ``key``, the values; ``key_mean`` and ``key_std``, their mean
    and sample std (none without values); all to two decimals."""
    found = {key: [round(v, 2) for v in values]}
    if values:
        mean, std = mean_std(values)
        found |= {f"{key}_mean": round(mean, 2), f"{key}_std": round(std, 2)}
    return found


def verdicts(target: Mapping[str, float], row: Mapping[str, Any], goals: Mapping[str, Goal]) -> dict[str, Any]:
    """Each target against a complete row's summary: met, or by how many points it is missed."""
    found = {}
    for key, want in target.items():
        goal = goals[key]
        value = row.get(goal.value)
        if value is None:
            found[key] = {"target": want, "value": None, "met": False, "missed_by": None}
            continue
        short = value - want if goal.at_most else want - value
        found[key] = {"target": want, "value": value, "met": short <= 0, "missed_by": round(max(short, 0.0), 2)}
    return found


# -- writing the table ------------------------------------------------------------------------------------------------
def mean_std_cell(row: Mapping[str, Any], key: str) -> str:
    """Mean ± sample std of a :func:`spread` over the row's seeds; one seed's value alone (a spread needs two), and
    – without any."""
    if f"{key}_mean" not in row:
        return "–"
    if len(row[key]) < 2:
        return f"{row[f'{key}_mean']:.2f}"
    return f"{row[f'{key}_mean']:.2f} ± {row[f'{key}_std']:.2f}"


def target_cell(row: Mapping[str, Any], goals: Mapping[str, Goal], seeds: int | None) -> str:
    """A row's targets: under way while its seeds are not all in (``seeds``: how many complete it, counted against
    those in; None: not counted), – without a target, else each met or missed by how many points."""
    if not row["complete"]:
        return "under way" if seeds is None else f"under way ({len(row['seeds'])} of {seeds} seeds)"
    if not row.get("targets"):
        return "–"
    parts = []
    for key, verdict in row["targets"].items():
        label = goals[key].label.format(verdict["target"])
        if verdict["met"]:
            parts.append(f"{label}: met")
        elif verdict["missed_by"] is None:
            parts.append(f"{label}: not measured")
        else:
            parts.append(f"{label}: missed by {verdict['missed_by']:.2f}")
    return "; ".join(parts)


def markdown_table(head: Sequence[str], align: str, rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table's lines: the head, the rule (``align``: ``l`` or ``r`` for each column), a line a row; an
    empty cell stays empty."""
    rule = "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"
    return [_line(head), rule, *(_line(cells) for cells in rows)]


def _line(cells: Sequence[str]) -> str:
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def markdown_page(title: str, intro: str, block: str) -> str:
    """A table's file: ``# title`` and ``intro`` (each where given) above ``block``, the table and its notes that
    README holds."""
    return (f"# {title}\n\n" if title else "") + (f"{intro}\n\n" if intro else "") + block


def write_results(summary_path: Path, summary: dict[str, Any], page_path: Path, page: str,
                  readme: str | Path | None = None, block: str = "", marker: str = "") -> list[Path]:
    """Write the summary (JSON) and the page and, where ``readme`` is given, ``block`` between its markers."""
    paths = [write_json(summary_path, summary), write_text_atomic(page_path, page)]
    return paths + ([update_readme(readme, block, marker)] if readme is not None else [])


# -- README's copy ----------------------------------------------------------------------------------------------------
def readme_markers(marker: str = "") -> tuple[str, str]:
    """README's start and end lines around a table (:data:`README_START`/:data:`README_END` when the spec names no
    marker, else ``<!-- tacred compare MARKER: start -->`` and its end)."""
    if not marker:
        return README_START, README_END
    return f"<!-- tacred compare {marker}: start -->", f"<!-- tacred compare {marker}: end -->"


def readme_parts(path: Path, marker: str = "") -> tuple[str, str]:
    """What comes before README's start marker and after its end marker (checked before anything is written)."""
    start, end = readme_markers(marker)
    text = path.read_text(encoding="utf-8")
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise TableError(f"{path}: needs one '{start}' line before one '{end}' line")
    head, rest = text.split(start)
    return head, rest.split(end)[1]


def update_readme(path: str | Path, block: str, marker: str = "") -> Path:
    """Put ``block`` between README's two marker comments (:func:`readme_markers`)."""
    start, end = readme_markers(marker)
    head, tail = readme_parts(Path(path), marker)
    return write_text_atomic(path, f"{head}{start}\n{block}{end}{tail}")


def table_of(markdown: str) -> str:
    """The table and its notes without the lines above it (what README holds of a table's file)."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    return "\n".join(lines[start:]).strip() + "\n"

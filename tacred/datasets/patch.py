"""Corrected TACRED labels: apply a TACREV (Alt et al., 2020) or Re-TACRED (Stoica et al., 2021) patch,
a file of new relations keyed by example id, to a TACRED split in the official JSON format.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tacred.constants import TACRED_LABELS
from tacred.errors import TacredError
from tacred.io import read_json, write_json

Mode = Literal["tacrev", "retacred"]
MODES: tuple[Mode, ...] = ("tacrev", "retacred")

# TACREV: C. Alt, A. Gabryszak, L. Hennig. "TACRED Revisited: A Thorough Evaluation of the TACRED Relation
# Extraction Task", ACL 2020; https://github.com/DFKI-NLP/tacrev. Files patch/dev_patch.json and
# patch/test_patch.json, each a JSON list of {"id": ..., "relation": ...}. They relabel part of dev and test
# (the challenging examples the authors re-annotated); every other example keeps its label, and the label
# set stays TACRED's 42.
TACREV_LABELS: tuple[str, ...] = TACRED_LABELS
# md5 of the patched splits as the TACREV README publishes them; its script writes them with json.dump's
# defaults, as write_split does.
TACREV_MD5: dict[str, str] = {
    "dev": "ce23ba10ca15bde94a3f733679bf1b05",
    "test": "dbcce82f5ab67fbfd1062db6cc6b66cd",
}

# Re-TACRED: G. Stoica, E. A. Platanios, B. Póczos. "Re-TACRED: Addressing Shortcomings of the TACRED
# Dataset", AAAI 2021; https://github.com/gstoica27/Re-TACRED. Files Re-TACRED/{train,dev,test}_id2label.json,
# each one JSON object {id: relation} that relabels the whole split. Ids missing from it are examples the
# authors removed (non-English data, their Section 3.5); their apply_patch.py keeps only the ids in the patch.
# 40 labels in the order of the authors' LABEL_TO_ID (PALSTM/utils/constant.py), no_relation = id 0.
RETACRED_LABELS: tuple[str, ...] = (
    "no_relation", "org:members", "per:siblings", "per:spouse", "org:country_of_branch",
    "per:country_of_death", "per:parents", "per:stateorprovinces_of_residence",
    "org:top_members/employees", "org:dissolved", "org:number_of_employees/members",
    "per:stateorprovince_of_death", "per:origin", "per:children", "org:political/religious_affiliation",
    "per:city_of_birth", "per:title", "org:shareholders", "per:employee_of", "org:member_of",
    "org:founded_by", "per:countries_of_residence", "per:other_family", "per:religion", "per:identity",
    "per:date_of_birth", "org:city_of_branch", "org:alternate_names", "org:website", "per:cause_of_death",
    "org:stateorprovince_of_branch", "per:schools_attended", "per:country_of_birth", "per:date_of_death",
    "per:city_of_death", "org:founded", "per:cities_of_residence", "per:age", "per:charges",
    "per:stateorprovince_of_birth",
)
# Re-TACRED replaces the three org:*_of_headquarters relations by org:*_of_branch ...
RETACRED_RENAMED: dict[str, str] = {
    "org:country_of_headquarters": "org:country_of_branch",
    "org:city_of_headquarters": "org:city_of_branch",
    "org:stateorprovince_of_headquarters": "org:stateorprovince_of_branch",
}
# ... adds per:identity, and has no per:alternate_names, org:parents or org:subsidiaries.
RETACRED_ADDED: tuple[str, ...] = ("per:identity",)
RETACRED_DROPPED: tuple[str, ...] = ("per:alternate_names", "org:parents", "org:subsidiaries")
# Split sizes after the removals (dataset card of DFKI-SLT/tacred); TACRED has 68,124 / 22,631 / 15,509.
RETACRED_SPLIT_SIZES: dict[str, int] = {"train": 58_465, "dev": 19_584, "test": 13_418}

LABEL_SETS: dict[Mode, tuple[str, ...]] = {"tacrev": TACREV_LABELS, "retacred": RETACRED_LABELS}
_MAX_LISTED = 5  # ids quoted in one error message


class PatchError(TacredError, ValueError):
    """A patch or data file that cannot be read or applied; the message names the file and entry."""


@dataclass(frozen=True)
class PatchFile:
    """A loaded patch: id -> new relation, and the published layout it came in."""

    labels: dict[str, str]
    layout: Mode  # "tacrev": list of {"id", "relation"}; "retacred": one {id: relation} object


@dataclass
class PatchResult:
    """The patched examples (input order) and what happened to each input example.

    ``changed + unchanged + removed == len(input)``; ``patched`` counts the examples the patch covered
    (changed, or confirmed with their old relation); ``changes`` counts (old, new) pairs.
    """

    examples: list[dict[str, Any]]
    mode: Mode
    patched: int
    changed: int
    unchanged: int
    removed_ids: list[str] = field(default_factory=list)
    changes: Counter = field(default_factory=Counter)

    @property
    def removed(self) -> int:
        return len(self.removed_ids)


def _listed(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:_MAX_LISTED])
    return shown + (f", ... ({len(ids) - _MAX_LISTED} more)" if len(ids) > _MAX_LISTED else "")


class _DuplicateKey(TacredError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.load keeps the last of repeated keys silently; a repeated id in a patch must be an error.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _read_json(path: Path, what: str, *, unique_keys: bool) -> Any:
    hook = _no_duplicate_keys if unique_keys else None  # the hook is slow; data ids are checked later
    try:
        return read_json(path, object_pairs_hook=hook)
    except json.JSONDecodeError as e:
        raise PatchError(f"{path}: not a valid JSON {what}: {e.msg} (line {e.lineno}, column {e.colno})") from e
    except _DuplicateKey as e:
        raise PatchError(f"{path}: key {e.key!r} appears twice in one JSON object") from e
    except UnicodeDecodeError as e:
        raise PatchError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    except RecursionError:
        raise PatchError(f"{path}: JSON nested too deeply to be a {what}") from None


def read_patch(path: str | Path) -> PatchFile:
    """Load a patch in either published layout; every entry must give a non-empty id and relation."""
    path = Path(path)
    data = _read_json(path, "patch", unique_keys=True)
    labels: dict[str, str] = {}
    if isinstance(data, list):  # TACREV: [{"id": ..., "relation": ...}, ...]
        layout: Mode = "tacrev"
        first_entry: dict[str, int] = {}
        for i, entry in enumerate(data):
            if not isinstance(entry, dict) or set(entry) != {"id", "relation"}:
                got = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
                raise PatchError(f'{path}: entry {i} must be an object with exactly "id" and "relation", got {got}')
            pid, relation = entry["id"], entry["relation"]
            if not isinstance(pid, str) or not pid:
                raise PatchError(f'{path}: entry {i} has id {pid!r}; expected a non-empty string')
            if not isinstance(relation, str) or not relation:
                raise PatchError(f"{path}: entry {i} (id {pid!r}) has relation {relation!r}; expected a non-empty string")
            if pid in first_entry:
                raise PatchError(f"{path}: id {pid!r} appears in entries {first_entry[pid]} and {i}")
            first_entry[pid] = i
            labels[pid] = relation
    elif isinstance(data, dict):  # Re-TACRED: {id: relation, ...}
        layout = "retacred"
        for pid, relation in data.items():
            if not pid:
                raise PatchError(f"{path}: an entry has an empty id")
            if not isinstance(relation, str) or not relation:
                raise PatchError(f"{path}: id {pid!r} maps to {relation!r}; expected a non-empty relation name")
            labels[pid] = relation
    else:
        raise PatchError(
            f'{path}: expected a list of {{"id", "relation"}} objects (TACREV) or one object mapping id to '
            f"relation (Re-TACRED), got a JSON {type(data).__name__}"
        )
    if not labels:
        raise PatchError(f"{path}: the patch has no entries")
    return PatchFile(labels=labels, layout=layout)


def load_patch(path: str | Path) -> dict[str, str]:
    """id -> new relation from a TACREV (list of objects) or Re-TACRED (id -> label object) patch file."""
    return read_patch(path).labels


def read_split(path: str | Path) -> list[dict[str, Any]]:
    """The examples of a TACRED JSON split as plain dicts, so that every field survives patching."""
    path = Path(path)
    data = _read_json(path, "TACRED split", unique_keys=False)
    if not isinstance(data, list):
        raise PatchError(f"{path}: expected a JSON list of examples, got a JSON {type(data).__name__}")
    return data


def write_split(path: str | Path, examples: list[dict[str, Any]]) -> None:
    """Write examples with json.dump's defaults (as the TACREV and Re-TACRED scripts do), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, examples, indent=None, newline=False)


def check_mode(patch: PatchFile, mode: str, source: str | Path) -> None:
    """A ``--mode`` that contradicts the patch's layout would drop or keep the wrong examples: refuse it."""
    if mode not in MODES:
        raise PatchError(f"--mode {mode!r}: expected one of {', '.join(MODES)}")
    if mode != patch.layout:
        layouts = {"tacrev": "TACREV's layout (a JSON list of {id, relation})",
                   "retacred": "Re-TACRED's layout (one JSON object {id: relation})"}
        raise PatchError(f"--mode {mode}: {source} has {layouts[patch.layout]}, which is a {patch.layout} patch; "
                         f"drop --mode or use --mode {patch.layout}")


def label_set(mode: Mode) -> tuple[str, ...]:
    """The labels of a split patched in ``mode`` (``NO_RELATION`` first, then fixed label ids)."""
    if mode not in LABEL_SETS:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return LABEL_SETS[mode]


def _hint(relation: str, mode: Mode) -> str:
    if mode == "tacrev" and relation in RETACRED_LABELS:
        return " (a Re-TACRED label: is this a Re-TACRED patch? use mode 'retacred')"
    if mode == "retacred" and relation in RETACRED_RENAMED:
        return f" (Re-TACRED uses {RETACRED_RENAMED[relation]!r} instead)"
    if mode == "retacred" and relation in TACRED_LABELS:
        return " (a TACRED label that Re-TACRED dropped: is this a TACREV patch? use mode 'tacrev')"
    return ""


def _index_ids(examples: list[dict[str, Any]], data_source: str) -> set[str]:
    first: dict[str, int] = {}
    for i, ex in enumerate(examples):
        if not isinstance(ex, dict):
            raise PatchError(f"{data_source}: example {i} is a JSON {type(ex).__name__}, not an object")
        eid = ex.get("id")
        if not isinstance(eid, str) or not eid:
            raise PatchError(f"{data_source}: example {i} has id {eid!r}; expected a non-empty string")
        if not isinstance(ex.get("relation"), str):
            raise PatchError(f"{data_source}: example {i} (id {eid!r}) has no string 'relation'")
        if eid in first:
            raise PatchError(f"{data_source}: id {eid!r} appears at examples {first[eid]} and {i}; ids must be unique")
        first[eid] = i
    return set(first)


def apply_patch(
    examples: list[dict[str, Any]],
    patch: dict[str, str],
    *,
    source: str,
    mode: Mode,
    data_source: str = "data",
) -> PatchResult:
    """Give each example the relation the patch assigns to its id; the input is not modified.

    ``mode="tacrev"``: examples not in the patch are kept unchanged (TACREV relabels a subset) and nothing
    is removed. ``mode="retacred"``: examples not in the patch are removed, because the Re-TACRED files list
    every example the authors kept and leave out the ones they dropped; relations renamed by Re-TACRED
    (e.g. org:city_of_headquarters -> org:city_of_branch) count as changed. Errors (``PatchError``, naming
    ``source``/``data_source``): an id in the patch missing from the data, a repeated id in the data, a
    relation outside the mode's label set (the patch's, and in tacrev mode also the kept examples').
    """
    target = label_set(mode)
    allowed = set(target)
    ids = _index_ids(examples, data_source)

    missing = [pid for pid in patch if pid not in ids]
    if missing:
        raise PatchError(
            f"{source}: {len(missing)} of {len(patch)} patch ids are not in {data_source}: {_listed(missing)}"
            " (is this the patch for this split?)"
        )
    unknown = [pid for pid, relation in patch.items() if relation not in allowed]
    if unknown:
        first = patch[unknown[0]]
        raise PatchError(
            f"{source}: {len(unknown)} entries have a relation outside the {len(target)} {mode} labels, "
            f"first id {unknown[0]!r} -> {first!r}{_hint(first, mode)}; ids: {_listed(unknown)}"
        )

    out: list[dict[str, Any]] = []
    changed = unchanged = 0
    removed_ids: list[str] = []
    changes: Counter = Counter()
    for ex in examples:
        old, new = ex["relation"], patch.get(ex["id"])
        if new is None and mode == "retacred":
            removed_ids.append(ex["id"])
            continue
        if new is None and old not in allowed:
            raise PatchError(f"{data_source}: example id {ex['id']!r} has relation {old!r}, which is not a TACRED label")
        if new is None or new == old:
            unchanged += 1
        else:
            changed += 1
            changes[(old, new)] += 1
        patched_ex = dict(ex)
        patched_ex["relation"] = old if new is None else new
        out.append(patched_ex)
    return PatchResult(
        examples=out, mode=mode, patched=len(patch), changed=changed, unchanged=unchanged,
        removed_ids=removed_ids, changes=changes,
    )

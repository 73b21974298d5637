"""The results table a reader holds against the literature: this application's recipes, five seeds each as
``tacred ablate`` stores them, beside published figures, each recipe with its target and how far it is from it.

A spec (YAML, e.g. ``docs/results/semeval_glove/comparison.yaml``) names the stored results folder, the models
(a variant folder each, or ``candidates``, variant → description: the one with the highest mean dev F1 over its
seeds, chosen on dev only; ``FOLDER/VARIANT`` names a variant stored in another folder beside the spec, such as a
longer schedule's sweep) and the published figures with their sources. :func:`compare` writes ``summary.json`` and
``comparison.md`` from the stored runs alone, so the table is regenerated, never typed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tacred.errors import TacredError
from tacred.experiments.ablation import SETTLED_MARGIN, SETTLED_WINDOW, load_results
from tacred.experiments.ensemble import mean_std
from tacred.experiments.results import plateau_settled, variant_summary
from tacred.io import write_json, write_text_atomic

SUMMARY_FILE = "summary.json"
TABLE_FILE = "comparison.md"
TARGET_KEYS = ("macro_f1", "max_std", "vote_macro_f1")
UNSETTLED = (f"† not settled (`dev_plateau` in summary.json): mean dev F1 over seeds more than {SETTLED_MARGIN:g} point "
             f"below its best in one of its last {SETTLED_WINDOW} epochs (after the first, in a shorter recipe); "
             "measured at the recipe's epoch budget.")


class ComparisonError(TacredError, ValueError):
    """A comparison spec or the stored results it names is wrong (the message names the file and the entry)."""


@dataclass(frozen=True)
class Model:
    """One of the application's rows: a stored variant, or the dev-best of ``candidates``."""

    key: str
    name: str
    inputs: str
    variant: str | None = None
    candidates: dict[str, str] = field(default_factory=dict)  # variant -> how the table describes it
    target: dict[str, float] = field(default_factory=dict)
    seeds: int | None = None  # how many seeds make this row complete, when not the spec's number


@dataclass(frozen=True)
class Published:
    """A figure from a paper: its macro-F1 on the spec's test set and where it is printed."""

    name: str
    inputs: str
    macro_f1: float
    source: str


SEMEVAL_MEASURE = ("SemEval-2010 Task 8 test set: official macro-F1 (9 relations, direction counted, Other excluded) "
                   "and the TACRED scorer's micro F1, percent; mean ± sample std over seeds")


@dataclass(frozen=True)
class Spec:
    path: Path
    results: Path
    seeds: int
    title: str
    models: tuple[Model, ...]
    published: tuple[Published, ...]
    measure: str = SEMEVAL_MEASURE  # what the figures are, as summary.json states it
    metric: str = "SemEval macro-F1"  # the macro-F1 column's heading
    marker: str = ""  # README's markers are `<!-- tacred compare MARKER: start -->` (plain without one)

    def model_seeds(self, model: Model) -> int:
        return model.seeds if model.seeds is not None else self.seeds


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ComparisonError(f"{where}: '{key}' must be a non-empty string, got {value!r}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ComparisonError(f"{where}: must be a number, got {value!r}")
    return float(value)


def load_spec(path: str | Path) -> Spec:
    """Read and check a spec; ``results`` is a folder relative to the spec's own."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError as err:
        raise ComparisonError(f"{path}: no such file") from err
    except yaml.YAMLError as err:
        raise ComparisonError(f"{path}: not valid YAML ({err})") from err
    if not isinstance(data, dict):
        raise ComparisonError(f"{path}: expected a mapping with results, models and published")
    unknown = set(data) - {"results", "seeds", "title", "models", "published", "measure", "metric", "marker"}
    if unknown:
        raise ComparisonError(f"{path}: unknown keys {sorted(unknown)}")
    results = path.parent / _text(data, "results", str(path))
    seeds = data.get("seeds", 5)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ComparisonError(f"{path}: 'seeds' must be a positive integer, got {seeds!r}")
    models = []
    for i, entry in enumerate(data.get("models") or []):
        where = f"{path}: models[{i}]"
        if not isinstance(entry, dict):
            raise ComparisonError(f"{where}: expected a mapping")
        extra = set(entry) - {"key", "name", "inputs", "variant", "candidates", "target", "seeds"}
        if extra:
            raise ComparisonError(f"{where}: unknown keys {sorted(extra)}")
        if ("variant" in entry) == ("candidates" in entry):
            raise ComparisonError(f"{where}: give exactly one of 'variant' and 'candidates'")
        candidates = entry.get("candidates", {})
        if "candidates" in entry and (not isinstance(candidates, dict) or len(candidates) < 2
                                      or not all(isinstance(c, str) and isinstance(d, str) for c, d in candidates.items())):
            raise ComparisonError(f"{where}: 'candidates' must map at least two variant names to their descriptions")
        model_seeds = entry.get("seeds")
        if model_seeds is not None and (isinstance(model_seeds, bool) or not isinstance(model_seeds, int)
                                        or model_seeds < 1):
            raise ComparisonError(f"{where}: 'seeds' must be a positive integer, got {model_seeds!r}")
        target = entry.get("target") or {}
        if not isinstance(target, dict) or set(target) - set(TARGET_KEYS):
            raise ComparisonError(f"{where}: 'target' may hold {', '.join(TARGET_KEYS)}, got {target!r}")
        models.append(Model(key=_text(entry, "key", where), name=_text(entry, "name", where),
                            inputs=_text(entry, "inputs", where),
                            variant=_text(entry, "variant", where) if "variant" in entry else None,
                            candidates=dict(candidates),
                            target={k: _number(v, f"{where}: target.{k}") for k, v in target.items()},
                            seeds=model_seeds))
    if not models:
        raise ComparisonError(f"{path}: 'models' lists no model")
    keys = [m.key for m in models]
    if len(set(keys)) != len(keys):
        raise ComparisonError(f"{path}: model keys repeat: {keys}")
    published = []
    for i, entry in enumerate(data.get("published") or []):
        where = f"{path}: published[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"name", "inputs", "macro_f1", "source"}:
            raise ComparisonError(f"{where}: expected exactly name, inputs, macro_f1 and source")
        published.append(Published(_text(entry, "name", where), _text(entry, "inputs", where),
                                   _number(entry["macro_f1"], f"{where}: macro_f1"), _text(entry, "source", where)))
    texts = {key: _text(data, key, str(path)) for key in ("measure", "metric", "marker") if key in data}
    return Spec(path, results, seeds, str(data.get("title") or ""), tuple(models), tuple(published), **texts)


def measure_variant(results: Path, variant: str, seeds: int) -> dict[str, Any]:
    """A stored variant's ``summary.json`` entry (:func:`~tacred.experiments.results.variant_summary`) with the
    SemEval macro-F1 list as ``macro_f1``, the mean ± std of it and the mean dev F1, and whether all ``seeds`` runs
    are in."""
    runs = load_results(results, [variant])
    if not runs:
        return {"variant": variant, "seeds": [], "complete": False}
    summary = variant_summary(results, variant, runs)
    macro = summary.pop("semeval_macro_f1")
    if macro is None:
        raise ComparisonError(f"{results / variant}: a run has no semeval_macro_f1 (not tested on a directed label "
                              "set such as SemEval's or KBP37's)")
    found = summary["dev_plateau"]
    return {"variant": variant, "complete": len(runs) >= seeds, **summary, "macro_f1": macro,
            "macro_f1_mean": round(mean_std(macro)[0], 2), "macro_f1_std": round(mean_std(macro)[1], 2),
            "dev_f1_mean": round(mean_std(summary["dev_f1"])[0], 2),
            "settled": None if found is None else plateau_settled(found)}


def verdicts(target: dict[str, float], row: dict[str, Any]) -> dict[str, Any]:
    """Each target against a complete row: met, or by how much it is missed (points)."""
    got = {"macro_f1": row.get("macro_f1_mean"), "max_std": row.get("macro_f1_std"),
           "vote_macro_f1": row.get("ensemble_vote_macro_f1")}
    out = {}
    for key, want in target.items():
        value = got[key]
        if value is None:
            out[key] = {"target": want, "value": None, "met": False, "missed_by": None}
            continue
        short = value - want if key == "max_std" else want - value
        out[key] = {"target": want, "value": value, "met": short <= 0, "missed_by": round(max(short, 0.0), 2)}
    return out


def _measure_named(spec: Spec, name: str, seeds: int) -> dict[str, Any]:
    """:func:`measure_variant` of ``VARIANT`` in the spec's results folder, or of ``FOLDER/VARIANT`` in ``FOLDER``
    beside the spec; the row keeps the name as written."""
    folder, _, variant = name.rpartition("/")
    return {**measure_variant(spec.path.parent / folder if folder else spec.results, variant, seeds), "variant": name}


def measure(spec: Spec) -> dict[str, Any]:
    """``summary.json``'s content: one entry per model (``best``-style entries name the variant chosen on dev),
    plus the published figures."""
    models: dict[str, Any] = {}
    for model in spec.models:
        if model.variant is not None:
            row = _measure_named(spec, model.variant, spec.model_seeds(model))
        else:
            rows = [_measure_named(spec, c, spec.model_seeds(model)) for c in model.candidates]
            if all(r["complete"] for r in rows):
                row = dict(max(rows, key=lambda r: r["dev_f1_mean"]))
                row["chosen_by"] = f"highest mean dev F1 over seeds among {', '.join(model.candidates)}"
                row["candidates_dev_f1_mean"] = {r["variant"]: r["dev_f1_mean"] for r in rows}
            else:
                waiting = [r["variant"] for r in rows if not r["complete"]]
                row = {"variant": None, "seeds": [], "complete": False,
                       "chosen_by": f"not yet: waiting for {', '.join(waiting)}"}
        row = {"name": model.name, "inputs": model.inputs, **row}
        if model.target:
            row["targets"] = verdicts(model.target, row) if row["complete"] else None
        models[model.key] = row
    return {"measure": spec.measure, "seeds": spec.seeds, **models,
            "published": [vars(p) for p in spec.published]}


def _pm(mean: float, std: float) -> str:
    return f"{mean:.2f} ± {std:.2f}"


def _target_cell(model: Model, row: dict[str, Any], seeds: int) -> str:
    if not row["complete"]:
        return f"under way ({len(row['seeds'])} of {seeds} seeds)" if row["seeds"] else "under way"
    if not model.target:
        return "–"
    parts = []
    labels = {"macro_f1": "≥ {:.1f}", "max_std": "std ≤ {:.1f}", "vote_macro_f1": "vote ≥ {:.1f}"}
    for key, verdict in row["targets"].items():
        label = labels[key].format(verdict["target"])
        parts.append(f"{label}: met" if verdict["met"] else f"{label}: missed by {verdict['missed_by']:.2f}")
    return "; ".join(parts)


def render_markdown(spec: Spec, summary: dict[str, Any]) -> str:
    """The table: the application's models (mean ± std over seeds, majority vote of the seeds, targets), then the
    published figures, then their sources."""
    lines = [f"| model | word representation | {spec.metric} | micro F1 | majority vote: macro / micro | target |",
             "|---|---|---:|---:|---:|---|"]
    for model in spec.models:
        row = summary[model.key]
        name = model.name
        if model.candidates and row.get("variant"):
            name = f"{name}: {model.candidates[row['variant']]}"
        if row["complete"] and row.get("settled") is False:
            name += " †"
        if row["seeds"]:
            one = len(row["seeds"]) == 1  # no spread to show
            macro = f"{row['macro_f1_mean']:.2f}" if one else _pm(row["macro_f1_mean"], row["macro_f1_std"])
            micro = f"{row['test_f1_mean']:.2f}" if one else _pm(row["test_f1_mean"], row["test_f1_std"])
            vote = (f"{row['ensemble_vote_macro_f1']:.2f} / {row['ensemble_vote_f1']:.2f}"
                    if row["complete"] and row.get("ensemble_vote_macro_f1") is not None else "–")
            if not row["complete"]:
                macro, micro = f"({macro})", f"({micro})"
        else:
            macro = micro = vote = "–"
        lines.append(f"| {name} | {model.inputs} | {macro} | {micro} | {vote} | "
                     f"{_target_cell(model, row, spec.model_seeds(model))} |")
    for i, paper in enumerate(spec.published, 1):
        lines.append(f"| {paper.name} [{i}] | {paper.inputs} | {paper.macro_f1:g} | – | – | published |")
    notes = [f"- [{i}] {paper.source}" for i, paper in enumerate(spec.published, 1)]
    if any(summary[m.key]["complete"] and summary[m.key].get("settled") is False for m in spec.models):
        notes = [UNSETTLED, "", *notes]
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


def compare(spec_path: str | Path, out: str | Path | None = None, readme: str | Path | None = None) -> list[Path]:
    """Write ``summary.json`` and ``comparison.md`` into ``out`` (default: the spec's folder) and, if given, the
    table into ``readme`` between its markers."""
    spec = load_spec(spec_path)
    if not spec.results.is_dir():
        raise ComparisonError(f"{spec.path}: results folder {spec.results} does not exist")
    if readme is not None:
        _readme_parts(Path(readme), spec.marker)  # a README without its markers fails before anything is written
    out = Path(out) if out is not None else spec.path.parent
    summary = measure(spec)
    table = render_markdown(spec, summary)
    header = f"# {spec.title}\n\n" if spec.title else ""
    paths = [write_json(out / SUMMARY_FILE, summary), write_text_atomic(out / TABLE_FILE, header + table)]
    return paths + ([update_readme(readme, table, spec.marker)] if readme is not None else [])


README_START = "<!-- tacred compare: start -->"
README_END = "<!-- tacred compare: end -->"


def readme_markers(marker: str = "") -> tuple[str, str]:
    """README's start and end lines around a comparison's table (:data:`README_START`/:data:`README_END` when the
    spec names no marker, else ``<!-- tacred compare MARKER: start -->`` and its end)."""
    if not marker:
        return README_START, README_END
    return f"<!-- tacred compare {marker}: start -->", f"<!-- tacred compare {marker}: end -->"


def _readme_parts(path: Path, marker: str = "") -> tuple[str, str]:
    """What comes before README's start marker and after its end marker."""
    start, end = readme_markers(marker)
    text = path.read_text(encoding="utf-8")
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ComparisonError(f"{path}: needs one '{start}' line before one '{end}' line")
    head, rest = text.split(start)
    return head, rest.split(end)[1]


def update_readme(path: str | Path, table: str, marker: str = "") -> Path:
    """Put ``table`` between README's two marker comments (:func:`readme_markers`)."""
    start, end = readme_markers(marker)
    head, tail = _readme_parts(Path(path), marker)
    return write_text_atomic(path, f"{head}{start}\n{table}{end}{tail}")


def table_of(markdown: str) -> str:
    """The table and its notes without the title line (what README embeds)."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    return "\n".join(lines[start:]).strip() + "\n"


__all__: Sequence[str] = ("ComparisonError", "Spec", "compare", "load_spec", "measure", "render_markdown", "table_of",
                          "update_readme")

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

from tacred.experiments import tables
from tacred.experiments.ablation import SETTLED_MARGIN, SETTLED_WINDOW, load_results
from tacred.experiments.ensemble import mean_std
from tacred.experiments.results import plateau_settled, variant_summary
from tacred.experiments.tables import Goal, Published, Row, TableError

SUMMARY_FILE = "summary.json"
TABLE_FILE = "comparison.md"
# what a row's `target` may set, and the entry of its summary each is held against
GOALS = {"macro_f1": Goal("≥ {:.1f}", "macro_f1_mean"),
         "max_std": Goal("std ≤ {:.1f}", "macro_f1_std", at_most=True),
         "vote_macro_f1": Goal("vote ≥ {:.1f}", "ensemble_vote_macro_f1")}
UNSETTLED = (f"† not settled (`dev_plateau` in summary.json): mean dev F1 over seeds more than {SETTLED_MARGIN:g} point "
             f"below its best in one of its last {SETTLED_WINDOW} epochs (after the first, in a shorter recipe); "
             "measured at the recipe's epoch budget.")
SEMEVAL_MEASURE = ("SemEval-2010 Task 8 test set: official macro-F1 (9 relations, direction counted, Other excluded) "
                   "and the TACRED scorer's micro F1, percent; mean ± sample std over seeds")


@dataclass(frozen=True)
class Model(Row):
    """One of the application's rows: a stored variant, or the dev-best of ``candidates``."""

    variant: str | None = None
    candidates: dict[str, str] = field(default_factory=dict)  # variant -> how the table describes it
    seeds: int | None = None  # how many seeds make this row complete, when not the spec's number


@dataclass(frozen=True)
class Spec:
    path: Path
    results: Path
    seeds: int
    title: str
    models: tuple[Model, ...]
    published: tuple[Published, ...]  # each with its `macro_f1`
    measure: str  # what the figures are, as summary.json states it
    metric: str  # the macro-F1 column's heading
    marker: str  # README's markers are `<!-- tacred compare MARKER: start -->` (plain without one)

    def model_seeds(self, model: Model) -> int:
        return model.seeds if model.seeds is not None else self.seeds


def load_spec(path: str | Path) -> Spec:
    """Read and check a spec (:mod:`tacred.experiments.tables` reads the keys every table shares); ``results`` is a
    folder relative to the spec's own."""
    path = Path(path)
    where = str(path)
    data = tables.read_spec(path, ("results", "seeds", "metric"))
    rows = tables.read_rows(data, where, ("variant", "candidates", "seeds"), GOALS)
    return Spec(path, results=path.parent / tables.text(data, "results", where),
                seeds=_seeds(data.get("seeds", 5), where), title=tables.text(data, "title", where, ""),
                models=tuple(_model(at, entry, row) for at, entry, row in rows),
                published=tables.read_published(data, where, {"macro_f1": tables.number}),
                measure=tables.text(data, "measure", where, SEMEVAL_MEASURE),
                metric=tables.text(data, "metric", where, "SemEval macro-F1"),
                marker=tables.text(data, "marker", where, ""))


def _seeds(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TableError(f"{where}: 'seeds' must be a positive integer, got {value!r}")
    return value


def _model(where: str, entry: dict[str, Any], row: dict[str, Any]) -> Model:
    """A row's own keys: one ``variant`` or ``candidates`` (variant -> description), and its own ``seeds``."""
    if ("variant" in entry) == ("candidates" in entry):
        raise TableError(f"{where}: give exactly one of 'variant' and 'candidates'")
    candidates = entry.get("candidates", {})
    if "candidates" in entry and (not isinstance(candidates, dict) or len(candidates) < 2
                                  or not all(isinstance(c, str) and isinstance(d, str) for c, d in candidates.items())):
        raise TableError(f"{where}: 'candidates' must map at least two variant names to their descriptions")
    seeds = entry.get("seeds")
    return Model(**row, variant=tables.text(entry, "variant", where) if "variant" in entry else None,
                 candidates=dict(candidates), seeds=None if seeds is None else _seeds(seeds, where))


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
        raise TableError(f"{results / variant}: a run has no semeval_macro_f1 (not tested on a directed label set "
                         "such as SemEval's or KBP37's)")
    found = summary["dev_plateau"]
    return {"variant": variant, "complete": len(runs) >= seeds, **summary, **tables.spread("macro_f1", macro),
            "dev_f1_mean": round(mean_std(summary["dev_f1"])[0], 2),
            "settled": None if found is None else plateau_settled(found)}


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
            row["targets"] = tables.verdicts(model.target, row, GOALS) if row["complete"] else None
        models[model.key] = row
    return {"measure": spec.measure, "seeds": spec.seeds, **models,
            "published": [p.record() for p in spec.published]}


def render_markdown(spec: Spec, summary: dict[str, Any]) -> str:
    """The table: the application's models (mean ± std over seeds, in brackets while seeds are missing; majority vote
    of the seeds; targets), then the published figures, then their sources."""
    rows = []
    for model in spec.models:
        row = summary[model.key]
        name = model.name
        if model.candidates and row.get("variant"):
            name = f"{name}: {model.candidates[row['variant']]}"
        if row["complete"] and row.get("settled") is False:
            name += " †"
        macro, micro = tables.mean_std_cell(row, "macro_f1"), tables.mean_std_cell(row, "test_f1")
        if row["seeds"] and not row["complete"]:
            macro, micro = f"({macro})", f"({micro})"
        vote = (f"{row['ensemble_vote_macro_f1']:.2f} / {row['ensemble_vote_f1']:.2f}"
                if row["complete"] and row.get("ensemble_vote_macro_f1") is not None else "–")
        # a row waiting for candidates has no seeds of its own to count
        target = tables.target_cell(row, GOALS, spec.model_seeds(model) if row["seeds"] else None)
        rows.append([name, model.inputs, macro, micro, vote, target])
    rows += [[f"{paper.name} [{i}]", paper.inputs, f"{paper.figures['macro_f1']:g}", "–", "–", "published"]
             for i, paper in enumerate(spec.published, 1)]
    head = ["model", "word representation", spec.metric, "micro F1", "majority vote: macro / micro", "target"]
    lines = tables.markdown_table(head, "llrrrl", rows)
    notes = [f"- [{i}] {paper.source}" for i, paper in enumerate(spec.published, 1)]
    if any(summary[m.key]["complete"] and summary[m.key].get("settled") is False for m in spec.models):
        notes = [UNSETTLED, "", *notes]
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


def compare(spec_path: str | Path, out: str | Path | None = None, readme: str | Path | None = None) -> list[Path]:
    """Write ``summary.json`` and ``comparison.md`` into ``out`` (default: the spec's folder) and, if given, the
    table into ``readme`` between its markers."""
    spec = load_spec(spec_path)
    if not spec.results.is_dir():
        raise TableError(f"{spec.path}: results folder {spec.results} does not exist")
    if readme is not None:
        tables.readme_parts(Path(readme), spec.marker)  # a README without its markers fails before anything is written
    out = Path(out) if out is not None else spec.path.parent
    summary = measure(spec)
    table = render_markdown(spec, summary)
    page = tables.markdown_page(spec.title, "", table)
    return tables.write_results(out / SUMMARY_FILE, summary, out / TABLE_FILE, page, readme, table, spec.marker)


__all__: Sequence[str] = ("Spec", "compare", "load_spec", "measure", "render_markdown")

"""F1 per relation of stored runs on a directed label set (SemEval-2010 Task 8's way: both directions of a relation
pooled, a wrong direction an error), mean over seeds per variant: the rows a SemEval-style macro-F1 averages, so a
table shows which relations a variant gains or loses its macro-F1 on."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from tacred.experiments.ablation import format_mean_std
from tacred.experiments.ensemble import mean_std
from tacred.experiments.results import StoredRun, load_stored
from tacred.io import write_text_atomic

PER_RELATION_FILES = ("per_relation.md", "per_relation.csv")
MACRO_ROW = "macro-F1"


def relation_scores(run: StoredRun) -> dict[str, tuple[float, int]]:
    """Relation type -> (F1 in %, gold test sentences) of one run's recorded predictions, over the whole release
    (sentences the converter could not read count as no-relation predictions, as in the run's own scores)."""
    from tacred.evaluation.scoring import over_release, semeval_macro_f1

    test = run.test
    gold, pred = over_release(test.gold_names, [test.labels[i] for i in run.pred], test.unconverted, test.no_relation)
    return {str(r.relation): (100 * r.f1, r.gold) for r in semeval_macro_f1(gold, pred, other=test.no_relation).types}


def per_relation(out: str | Path, variants: Sequence[str]) -> tuple[dict[str, dict[str, list[float]]], dict[str, int]]:
    """``({variant: {relation: [F1 % per seed]}}, {relation: gold test sentences})`` for the variants whose stored
    runs are on a directed label set (``Type(e1,e2)``); both empty where none is."""
    from tacred.training.reports import is_semeval_label_set

    scores: dict[str, dict[str, list[float]]] = {}
    support: dict[str, int] = {}
    for name in variants:
        for run in load_stored(out, name):
            if not is_semeval_label_set(run.test.labels, run.test.no_relation):
                break
            for relation, (f1, gold) in relation_scores(run).items():
                scores.setdefault(name, {}).setdefault(relation, []).append(f1)
                support[relation] = gold
    return scores, dict(sorted(support.items()))


def _cell(values: Sequence[float]) -> str:
    return format_mean_std(mean_std(list(values)), len(values))


def _macro(relations: dict[str, list[float]]) -> list[float]:
    """Each seed's macro-F1: the mean of its relations' F1."""
    per_seed = list(zip(*relations.values(), strict=True))
    return [sum(seed) / len(seed) for seed in per_seed]


def render_markdown(scores: dict[str, dict[str, list[float]]], support: dict[str, int]) -> str:
    names = list(scores)
    lines = ["| Relation | Test sentences | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for relation, gold in support.items():
        lines.append(f"| {relation} | {gold:,} | "
                     + " | ".join(_cell(scores[n][relation]) if relation in scores[n] else "—" for n in names) + " |")
    lines.append(f"| {MACRO_ROW} | {sum(support.values()):,} | "
                 + " | ".join(_cell(_macro(scores[n])) for n in names) + " |")
    lines += ["", "F1 (%) per relation over the whole test set (sentences the converter could not read count as "
                  "no-relation predictions), both directions pooled and a wrong direction counted as an error; mean "
                  "± std over seeds. The last row, the mean of a variant's relations, is its SemEval-style macro-F1."]
    return "\n".join(lines) + "\n"


def render_csv(scores: dict[str, dict[str, list[float]]], support: dict[str, int]) -> str:
    """One line per variant and relation (the macro-F1 as relation ``macro-F1``), full precision."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["variant", "relation", "test_sentences", "seeds", "f1", "f1_std"])
    for name, relations in scores.items():
        rows = [*((r, support[r], relations[r]) for r in support if r in relations),
                (MACRO_ROW, sum(support.values()), _macro(relations))]
        for relation, gold, values in rows:
            mean, std = mean_std(list(values))
            writer.writerow([name, relation, gold, len(values), f"{mean:.4f}", f"{std:.4f}"])
    return buf.getvalue()


def write_per_relation(out: str | Path, variants: Sequence[str]) -> list[Path]:
    """``per_relation.md`` and ``per_relation.csv`` in ``out`` when its stored runs are on a directed label set (else
    nothing is written); returns the paths written."""
    scores, support = per_relation(out, variants)
    if not scores:
        return []
    paths = [Path(out) / name for name in PER_RELATION_FILES]
    write_text_atomic(paths[0], render_markdown(scores, support))
    write_text_atomic(paths[1], render_csv(scores, support))
    return paths

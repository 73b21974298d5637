"""The official TACRED scorer (Zhang et al., 2017: micro P/R/F1 with ``no_relation`` ignored; its torchmetrics
counterpart is :class:`tacred.evaluation.metrics.TacredScore`), the SemEval-2010 Task 8 official macro-F1, and readers for label files.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tacred.constants import NO_RELATION, TACRED_LABELS
from tacred.errors import TacredError, read_text
from tacred.io import JsonLinesError, jsonl_records, read_json

Label = Hashable  # a relation name (str) or a label id (int)


@dataclass
class Counts:
    """Per-relation counts of the official scorer; ``no_relation`` never appears as a key."""

    correct: Counter = field(default_factory=Counter)
    guessed: Counter = field(default_factory=Counter)
    gold: Counter = field(default_factory=Counter)


@dataclass(frozen=True)
class RelationScore:
    """P/R/F1 of one relation with the counts they come from."""

    relation: Label
    precision: float
    recall: float
    f1: float
    gold: int
    guessed: int
    correct: int

    def to_dict(self) -> dict[str, float | int]:
        return {k: v for k, v in vars(self).items() if k != "relation"}


@dataclass(frozen=True)
class Score:
    """Micro-averaged result plus one row per relation seen in gold or predictions (sorted)."""

    precision: float
    recall: float
    f1: float
    relations: tuple[RelationScore, ...]

    def to_dict(self) -> dict[str, object]:
        rows = {str(r.relation): r.to_dict() for r in self.relations}
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1, "relations": rows}


def score_counts(gold: Sequence[Label], pred: Sequence[Label], no_relation: Label = NO_RELATION) -> Counts:
    """Count correct/guessed/gold per relation exactly as the official ``scorer.py`` does."""
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} labels but predictions have {len(pred)}")
    if gold and isinstance(gold[0], str) != isinstance(no_relation, str):
        raise ValueError(f"labels look like {gold[0]!r} but no_relation is {no_relation!r}; pass a matching one")
    counts = Counts()
    for g, p in zip(gold, pred, strict=True):
        if p != no_relation:
            counts.guessed[p] += 1
        if g != no_relation:
            counts.gold[g] += 1
        if g == p and p != no_relation:
            counts.correct[p] += 1
    return counts


def _where(condition: Any, value: Any, otherwise: Any) -> Any:
    """``value if condition else otherwise``, elementwise for numpy arrays and torch tensors (imported only when
    such arrays are passed: ``tacred score`` runs without them)."""
    if isinstance(condition, bool):
        return value if condition else otherwise
    if type(condition).__module__.startswith("torch"):
        import torch

        return torch.where(condition, value, otherwise)
    import numpy as np

    return np.where(condition, value, otherwise)


def _nonzero(count: Any) -> Any:
    return count + (count == 0)  # 0 -> 1, anything else unchanged: a divisor whose quotient is then discarded


def prf(correct: Any, guessed: Any, gold: Any, empty_precision: float = 1.0) -> tuple[Any, Any, Any]:
    """P/R/F1 from counts with the official scorer's edge cases: P = ``empty_precision`` when nothing was guessed
    (1.0 in TACRED's scorer, 0.0 in SemEval's), R = 0 without gold, F1 = 0 when P + R = 0.

    The counts are numbers (floats come back), or numpy arrays or torch tensors of one shape (elementwise, e.g. a
    whole threshold sweep at once, or a metric's counts on their device).
    """
    precision = _where(guessed > 0, correct / _nonzero(guessed), empty_precision)
    recall = _where(gold > 0, correct / _nonzero(gold), 0.0)
    denom = precision + recall
    f1 = _where(denom > 0, 2 * precision * recall / _nonzero(denom), 0.0)
    return precision, recall, f1


def micro_prf(counts: Counts) -> tuple[float, float, float]:
    """Micro P/R/F1: P = 1.0 when nothing was guessed, R = 0.0 without gold, F1 = 0.0 when P + R = 0."""
    total = (sum(counts.correct.values()), sum(counts.guessed.values()), sum(counts.gold.values()))
    return prf(*total)


def score_from_counts(counts: Counts) -> Score:
    """Micro scores and per-relation rows (same edge-case conventions as the micro figures)."""
    rows = []
    for rel in sorted(set(counts.gold) | set(counts.guessed)):
        c, p, g = counts.correct[rel], counts.guessed[rel], counts.gold[rel]
        rows.append(RelationScore(rel, *prf(c, p, g), gold=g, guessed=p, correct=c))
    return Score(*micro_prf(counts), relations=tuple(rows))


def score(gold: Sequence[Label], pred: Sequence[Label], no_relation: Label = NO_RELATION) -> Score:
    """Score predictions against gold labels with the official TACRED scorer."""
    return score_from_counts(score_counts(gold, pred, no_relation))


def _pct(value: float) -> str:
    # the official script pads so that 5.00%, 50.00% and 100.00% right-align
    return " " * ((value < 0.1) + (value < 1.0)) + f"{value:.2%}"


def _rows(rows: Sequence[RelationScore]) -> list[str]:
    width = max((len(str(r.relation)) for r in rows), default=0)
    return [f"{str(r.relation):<{width}}  P: {_pct(r.precision)}  R: {_pct(r.recall)}  F1: {_pct(r.f1)}  #: {r.gold}"
            for r in rows]


def format_report(result: Score, all_relations: bool = False) -> str:
    """The official script's output: per-relation lines (relations with gold examples, unless
    ``all_relations``), then the three micro-averaged lines."""
    lines = ["Per-relation statistics:", *_rows([r for r in result.relations if all_relations or r.gold > 0])]
    lines += ["", "Final Score:", f"Precision (micro): {result.precision:.3%}",
              f"   Recall (micro): {result.recall:.3%}", f"       F1 (micro): {result.f1:.3%}"]
    return "\n".join(lines)


_DIRECTED = re.compile(r"^(?P<type>[^()]+)\(e[12],e[12]\)$")


@dataclass(frozen=True)
class SemEvalScore:
    """SemEval-2010 Task 8 official result: macro averages over the relation types present in gold."""

    macro_precision: float
    macro_recall: float
    macro_f1: float
    types: tuple[RelationScore, ...]

    def to_dict(self) -> dict[str, object]:
        return {"macro_precision": self.macro_precision, "macro_recall": self.macro_recall,
                "macro_f1": self.macro_f1, "types": {str(r.relation): r.to_dict() for r in self.types}}


def semeval_macro_f1(gold: Sequence[str], pred: Sequence[str], other: str = NO_RELATION) -> SemEvalScore:
    """SemEval-2010 Task 8's official score, as ``semeval2010_task8_scorer-v1.2.pl`` computes it:
    "(9+1)-way evaluation with directionality taken into account", macro-averaged F1 excluding Other.

    Labels are ``Type(e1,e2)``, ``Type(e2,e1)``, ``other`` or ``Other`` (both mean Other). Per type T:
    guessed[T] counts every prediction of type T in either direction (a right type with the wrong
    direction is a wrong guess of T: v1.2 adds these to P's denominator), gold[T] every gold example
    of type T, correct[T] exact matches including direction. P = correct/guessed (0 when nothing was
    guessed, unlike TACRED's 1), R = correct/gold, F1 their harmonic mean. The official figure is
    the mean of the per-type F1 (not F1 of macro P and R) over the types present in gold.
    """
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} labels but predictions have {len(pred)}")

    def relation_type(label: str, which: str, index: int) -> str | None:
        if label in (other, "Other"):
            return None
        match = _DIRECTED.match(label)
        if match is None:
            raise ValueError(f"{which} label {index} is {label!r}; SemEval labels look like "
                             f"'Cause-Effect(e1,e2)' or {other!r}")
        return match["type"]

    counts = Counts()
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
        g_type, p_type = relation_type(g, "gold", i), relation_type(p, "predicted", i)
        if p_type is not None:
            counts.guessed[p_type] += 1
        if g_type is not None:
            counts.gold[g_type] += 1
            if g == p:
                counts.correct[g_type] += 1
    rows = tuple(RelationScore(t, *prf(counts.correct[t], counts.guessed[t], counts.gold[t], 0.0),
                               gold=counts.gold[t], guessed=counts.guessed[t], correct=counts.correct[t])
                 for t in sorted(counts.gold))
    n = max(len(rows), 1)
    return SemEvalScore(sum(r.precision for r in rows) / n, sum(r.recall for r in rows) / n,
                        sum(r.f1 for r in rows) / n, rows)


def format_semeval_report(result: SemEvalScore) -> str:
    """Per-type lines and the official macro-averaged line."""
    lines = ["Per relation, direction counted (SemEval-2010 Task 8's official score, for any directed label set):",
             *_rows(result.types)]
    lines.append(f"Macro-averaged (excluding Other): P = {result.macro_precision:.2%}  "
                 f"R = {result.macro_recall:.2%}  F1 = {result.macro_f1:.2%}")
    return "\n".join(lines)


def over_release(gold: Sequence[str], pred: Sequence[str], unconverted: Sequence[str],
                 no_relation: str = NO_RELATION) -> tuple[list[str], list[str]]:
    """Gold and predicted labels over every sentence of a release: the sentences a converter could not turn into
    examples (their gold labels, ``unconverted``) are added as ``no_relation`` predictions, so that a score stays
    comparable with figures published over the whole release."""
    return [*gold, *unconverted], [*pred, *([no_relation] * len(unconverted))]


class LabelFileError(TacredError, ValueError):
    """A label file that cannot be read or aligned; the message names the file and the line or example."""


def _record(obj: object, path: Path, where: str) -> tuple[str, str | None]:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("relation"), str) or not obj["relation"].strip():
        raise LabelFileError(f"{path}: {where}: expected an object with a string 'relation' (not empty), "
                             f"got {str(obj)[:80]}")
    ident = obj.get("id")
    if ident is not None and not isinstance(ident, (str, int)):
        raise LabelFileError(f"{path}: {where}: 'id' must be a string or an integer, got {ident!r}")
    return obj["relation"], None if ident is None else str(ident)


def _text_record(line: str, path: Path, where: str) -> tuple[str, str | None]:
    fields = line.split("\t")
    if len(fields) == 2 and fields[0].strip().isdigit():  # SemEval's official "ID<TAB>LABEL"
        return fields[1].strip(), fields[0].strip()
    if len(fields) != 1 or not line.strip() or len(line.split()) != 1:
        raise LabelFileError(f"{path}: {where}: expected one label (or 'ID<TAB>LABEL') per line, got {line!r}")
    return line.strip(), None


def read_labels(path: str | Path) -> tuple[list[str], list[str] | None]:
    """Labels and (when every record has one) ids from a TACRED JSON list, a JSON Lines file
    (``{"id": ..., "relation": ...}`` per line, our prediction format) or a text file with one label
    per line (the official key format; ``ID<TAB>LABEL`` lines as in SemEval are accepted)."""
    path = Path(path)
    text = read_text(path)
    records: list[tuple[str, str | None, str]] = []  # (label, id, where)
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise LabelFileError(f"{path}: invalid JSON at line {err.lineno}: {err.msg}") from None
        except RecursionError:
            raise LabelFileError(f"{path}: JSON nested too deeply to be a label file") from None
        records = [(*_record(obj, path, f"example {i}"), f"example {i}") for i, obj in enumerate(data)]
    else:
        lines = text.splitlines()
        while lines and not lines[-1].strip():
            lines.pop()  # trailing newlines carry no label
        if lines and lines[0].lstrip().startswith("{"):  # JSON Lines
            try:  # a record is checked as it is read: the first problem in the file is the one reported
                records = [(*_record(obj, path, f"line {number}"), f"line {number}")
                           for number, obj in jsonl_records(lines)]
            except JsonLinesError as err:
                raise LabelFileError(f"{path}: {err}") from None
        else:
            records = [(*_text_record(line, path, f"line {number}"), f"line {number}")
                       for number, line in enumerate(lines, start=1)]
    if not records:
        raise LabelFileError(f"{path}: no labels found")
    labels = [label for label, _, _ in records]
    with_id = [ident is not None for _, ident, _ in records]
    if not any(with_id):
        return labels, None
    if not all(with_id):
        where = records[with_id.index(False)][2]
        raise LabelFileError(f"{path}: {where} has no id while others have one")
    ids, seen = [ident for _, ident, _ in records], {}
    for ident, (_, _, where) in zip(ids, records, strict=True):
        if ident in seen:
            raise LabelFileError(f"{path}: {where}: id {ident!r} repeats {seen[ident]}")
        seen[ident] = where
    return labels, ids


def read_predictions_with_gold(path: str | Path) -> tuple[list[str], list[str]]:
    """Gold and predicted labels from a predictions file that carries both (``test_predictions.jsonl``: a JSON
    object with string ``relation`` and ``gold`` per line)."""
    gold, pred = [], []
    try:
        for number, row in jsonl_records(Path(path).read_text(encoding="utf-8").splitlines()):
            if not isinstance(row, dict) or not isinstance(row.get("relation"), str) or not isinstance(row.get("gold"), str):
                raise LabelFileError(f"{path}: line {number}: needs string 'relation' and 'gold' fields "
                                     f"(or pass --gold with the gold file)")
            gold.append(row["gold"])
            pred.append(row["relation"])
    except JsonLinesError as err:
        raise LabelFileError(f"{path}: {err}") from None
    if not gold:
        raise LabelFileError(f"{path}: no predictions found")
    return gold, pred


def read_score(path: str | Path) -> Score:
    """A :class:`Score` back from the ``test_metrics.json`` that ``tacred test`` writes."""
    try:
        data = read_json(path)
        rows = tuple(RelationScore(name, **{k: row[k] for k in ("precision", "recall", "f1", "gold", "guessed", "correct")})
                     for name, row in sorted(data["relations"].items()))
        return Score(float(data["precision"]), float(data["recall"]), float(data["f1"]), rows)
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
        raise TacredError(f"{path}: not a score file written by tacred test (test_metrics.json): {err!r}") from None


def label_set_of(gold: list[str], no_relation: str = NO_RELATION) -> tuple[set[str], str]:
    """The label set predictions are checked against, and its name: TACRED's, Re-TACRED's or SemEval's when the gold
    labels fit one of them, else the gold labels themselves (plus the no-relation label)."""
    from tacred.datasets.patch import RETACRED_LABELS
    from tacred.datasets.semeval import OTHER, SEMEVAL_LABELS

    found = set(gold)
    semeval = set(SEMEVAL_LABELS) | {OTHER}
    for name, labels in (("TACRED's 42 labels", set(TACRED_LABELS)), ("Re-TACRED's 40 labels", set(RETACRED_LABELS)),
                         ("SemEval-2010 Task 8's labels", semeval)):
        if found <= labels:
            return labels, name
    return found | {no_relation}, "the gold labels"


def check_predicted_labels(gold: list[str], pred: list[str], pred_path: str | Path, *,
                           no_relation: str = NO_RELATION, labels: list[str] | None = None) -> None:
    """Raise :class:`LabelFileError` for a predicted label outside the label set (``labels`` or :func:`label_set_of`)."""
    allowed, name = (set(labels), "the --labels file") if labels is not None else label_set_of(gold, no_relation)
    outside = [p for p in pred if p not in allowed]
    if outside:
        first = pred.index(outside[0])
        raise LabelFileError(f"{pred_path}: example {first} (in gold order): predicted label {outside[0]!r} is not in "
                             f"the label set ({name}); {len(outside)} prediction(s) are outside it")


def _listing(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:10])
    return f"{len(ids)} ({shown}{', ...' if len(ids) > 10 else ''})"


def read_aligned(gold_path: str | Path, pred_path: str | Path) -> tuple[list[str], list[str]]:
    """Gold and predicted labels in gold order: by id when both files have ids, else by position."""
    gold, gold_ids = read_labels(gold_path)
    pred, pred_ids = read_labels(pred_path)
    if gold_ids is not None and pred_ids is not None:
        by_id = dict(zip(pred_ids, pred, strict=True))
        missing = [i for i in gold_ids if i not in by_id]
        extra = sorted(set(pred_ids) - set(gold_ids))
        if missing or extra:
            raise LabelFileError(f"{pred_path}: ids do not match {gold_path}: missing {_listing(missing)}, "
                                 f"extra {_listing(extra)}")
        return gold, [by_id[i] for i in gold_ids]
    if len(gold) != len(pred):
        raise LabelFileError(f"{pred_path} has {len(pred)} labels but {gold_path} has {len(gold)} "
                             f"(aligned by position since the files do not both have ids)")
    return gold, pred

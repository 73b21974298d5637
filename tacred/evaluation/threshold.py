"""A tunable no-relation decision: a bias ``t`` added to log p(no_relation) before the argmax.

Rule (:mod:`tacred.evaluation.decision`, numpy alone): predict the best other relation r* iff
``log p(r*) > log p(no_relation) + t``, else no_relation. ``t = 0`` is exactly the argmax; ``t > 0`` trades recall for
precision, ``t < 0`` the other way round.

Per-relation thresholds for a precision target (:func:`tune_relation_thresholds`): r* does not depend on the
thresholds, so the examples predicted as r are those whose r* is r and whose margin passes ``t[r]``, and each
relation's precision depends on its own threshold alone. Each relation gets the threshold with the most correct
predictions among those whose precision on the tuning data reaches the target (then the higher precision, then the
threshold closest to 0); a relation that no threshold brings to the target with at least one correct prediction is
switched off (never predicted). Every relation predicted then reaches the target, and so does the micro precision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tacred.evaluation.decision import (
    RELATION_RULE,
    RULE,
    ThresholdError,
    checked_probabilities,
    decide,
    describe_threshold,
    margins,
)
from tacred.evaluation.decision import (
    load_threshold as load_threshold,  # where the commands have always found it
)
from tacred.evaluation.scoring import prf
from tacred.io import write_json


def _as_probs(probs: Any, no_relation_id: int) -> torch.Tensor:
    p = probs.detach().cpu().numpy() if isinstance(probs, torch.Tensor) else probs
    return torch.from_numpy(checked_probabilities(p, no_relation_id))


def _margins(p: torch.Tensor, no_relation_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Best other label r* (N,) and the margin m = log p(no_relation) − log p(r*) (N,)."""
    best, margin = margins(p.numpy(), no_relation_id)
    return torch.from_numpy(best), torch.from_numpy(margin)


def apply_threshold(probs: Any, no_relation_id: int, threshold: float | None) -> torch.Tensor:
    """Label ids (N,) under the rule of this module (:func:`tacred.evaluation.decision.decide`); ``threshold`` None or 0 gives
    ``probs.argmax(-1)``. ``probs``: (N, L) tensor or array."""
    return torch.from_numpy(decide(_as_probs(probs, no_relation_id).numpy(), no_relation_id, threshold))


@dataclass(frozen=True)
class Sweep:
    """Micro P/R/F1 (official scorer) at every distinct operating point, from predicting no relation at all
    (index 0) to predicting a relation for every example; ``thresholds[k]`` yields point k."""

    thresholds: np.ndarray  # (K,)
    precision: np.ndarray  # (K,)
    recall: np.ndarray  # (K,)
    f1: np.ndarray  # (K,)
    guessed: np.ndarray  # (K,) examples predicted as a relation


def sweep(probs: Any, gold: Sequence[int] | np.ndarray | torch.Tensor, no_relation_id: int) -> Sweep:
    """Every distinct outcome of the rule at once: sort by margin; raising ``t`` turns a prefix into no_relation."""
    p = _as_probs(probs, no_relation_id)
    g = torch.as_tensor(np.asarray(gold), dtype=torch.long).reshape(-1)
    if g.numel() != p.shape[0]:
        raise ThresholdError(f"got {g.numel()} gold labels for {p.shape[0]} probability rows")
    if g.numel() and (g.min() < 0 or g.max() >= p.shape[1]):
        raise ThresholdError(f"gold label ids must lie in [0, {p.shape[1]}), got values in [{int(g.min())}, {int(g.max())}]")
    best, margin = _margins(p, no_relation_id)
    order = torch.argsort(margin, stable=True)
    m = margin[order].numpy()  # (N,) ascending: the first k examples are relations at t just below -m[k-1]
    hit = (g[order] == best[order]).numpy().astype(np.int64)
    n = m.size
    correct = np.concatenate([[0], np.cumsum(hit)])  # (N+1,)
    guessed = np.arange(n + 1)
    total_gold = int((g != no_relation_id).sum())
    # a prefix is reachable only where the margin changes (equal margins switch together)
    keep = np.ones(n + 1, dtype=bool)
    keep[1:n] = m[:-1] < m[1:]
    if n == 0:
        thresholds = np.zeros(1)
    else:
        cut = np.empty(n + 1)  # relation iff margin < cut, and t = -cut
        cut[0], cut[n] = m[0] - 1.0, m[-1] + 1.0
        mid = m[:-1] + (m[1:] - m[:-1]) / 2
        cut[1:n] = np.where(mid > m[:-1], mid, m[1:])
        thresholds = -cut
    precision, recall, f1 = prf(correct, guessed, np.full(n + 1, total_gold))
    return Sweep(thresholds[keep], precision[keep], recall[keep], f1[keep], guessed[keep])


@dataclass(frozen=True)
class Scores:
    precision: float
    recall: float
    f1: float


@dataclass(frozen=True)
class TunedThreshold:
    """The chosen threshold and the scores on the tuning data without it (``untuned``) and with it (``tuned``)."""

    threshold: float
    untuned: Scores
    tuned: Scores
    examples: int
    target_precision: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"no_relation_threshold": self.threshold, "rule": RULE, "examples": self.examples,
                "target_precision": self.target_precision,
                "untuned": asdict(self.untuned), "tuned": asdict(self.tuned)}

    def save(self, path: str | Path, **extra: Any) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_json(path, {**self.to_dict(), **extra})


def micro_scores(pred: torch.Tensor | np.ndarray, gold: Any, no_relation_id: int) -> Scores:
    """Official micro P/R/F1 of label ids (vectorised; same conventions as :func:`tacred.evaluation.scoring.score`)."""
    pred, gold = np.asarray(pred).reshape(-1), np.asarray(gold).reshape(-1)
    guessed = int((pred != no_relation_id).sum())
    correct = int(((pred == gold) & (pred != no_relation_id)).sum())
    total = int((gold != no_relation_id).sum())
    return Scores(*prf(correct, guessed, total))


def tune_threshold(probs: Any, gold: Any, no_relation_id: int, target_precision: float | None = None) -> TunedThreshold:
    """The threshold with the best micro F1 on (probs, gold), or, with ``target_precision``, the best recall
    among thresholds whose precision reaches it. Ties go to the threshold closest to 0 (the argmax).

    Without a target the result never scores below the argmax on this data, which is one of the candidates.
    Raises :class:`ThresholdError` when no threshold with at least one correct relation reaches the target.
    """
    if target_precision is not None and not 0.0 < target_precision <= 1.0:
        raise ThresholdError(f"target precision must lie in (0, 1], got {target_precision}")
    curve = sweep(probs, gold, no_relation_id)
    p = _as_probs(probs, no_relation_id)
    gold_ids = np.asarray(gold).reshape(-1)
    untuned = micro_scores(p.argmax(dim=1).numpy(), gold_ids, no_relation_id)
    closeness = -np.abs(curve.thresholds)
    if target_precision is None:
        key = np.lexsort((closeness, curve.f1))  # last = best F1, then closest to 0
        candidates = key[::-1]
    else:
        feasible = np.flatnonzero((curve.precision >= target_precision - 1e-12) & (curve.recall > 0))
        if feasible.size == 0:
            useful = curve.recall > 0
            best_p = float(curve.precision[useful].max()) if useful.any() else 0.0
            raise ThresholdError(f"no threshold reaches precision {target_precision:.2%} on these "
                                 f"{p.shape[0]} examples (the best with any correct relation is {best_p:.2%})")
        key = np.lexsort((closeness[feasible], curve.precision[feasible], curve.recall[feasible]))
        candidates = feasible[key[::-1]]
    top = candidates[0]
    if target_precision is None:
        neutral_is_best = untuned.f1 >= curve.f1[top] - 1e-12
    else:
        neutral_is_best = untuned.precision >= target_precision - 1e-12 and untuned.recall >= curve.recall[top] - 1e-12
    if neutral_is_best:  # the argmax is already optimal: keep the model's own decision
        return TunedThreshold(0.0, untuned, untuned, int(p.shape[0]), target_precision)
    # confirm with the decision rule itself (guards against float ties at a boundary)
    for k in candidates[:8]:
        t = float(curve.thresholds[k])
        tuned = micro_scores(apply_threshold(p, no_relation_id, t).numpy(), gold_ids, no_relation_id)
        ok = tuned.f1 >= untuned.f1 if target_precision is None else tuned.precision >= target_precision - 1e-12
        if ok:
            return TunedThreshold(t, untuned, tuned, int(p.shape[0]), target_precision)
    if target_precision is None:
        return TunedThreshold(0.0, untuned, untuned, int(p.shape[0]), None)
    raise ThresholdError(f"no threshold reaches precision {target_precision:.2%} on these {p.shape[0]} examples")


@dataclass(frozen=True)
class RelationPoint:
    """One relation's threshold (None: switched off) and its figures on the tuning data at that threshold:
    ``gold`` examples of the relation, ``guessed`` predicted as it, ``correct`` of those right."""

    label: str
    threshold: float | None
    gold: int
    guessed: int
    correct: int

    @property
    def precision(self) -> float:
        return self.correct / self.guessed if self.guessed else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 0.0


@dataclass(frozen=True)
class RelationThresholds:
    """Per-relation thresholds chosen for a precision target, with the micro scores without them (the argmax) and
    with them on the tuning data."""

    relations: tuple[RelationPoint, ...]
    min_precision: float
    untuned: Scores
    tuned: Scores
    examples: int

    @property
    def thresholds(self) -> dict[str, float | None]:
        return {r.label: r.threshold for r in self.relations}

    @property
    def switched_off(self) -> list[str]:
        return [r.label for r in self.relations if r.threshold is None]

    def to_dict(self) -> dict[str, Any]:
        return {"relation_thresholds": self.thresholds, "rule": RELATION_RULE, "min_precision": self.min_precision,
                "examples": self.examples, "untuned": asdict(self.untuned), "tuned": asdict(self.tuned),
                "relations": {r.label: {"gold": r.gold, "guessed": r.guessed, "correct": r.correct,
                                        "precision": r.precision, "recall": r.recall} for r in self.relations}}

    def save(self, path: str | Path, **extra: Any) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_json(path, {**self.to_dict(), **extra})


def tune_relation_thresholds(probs: Any, gold: Any, labels: Sequence[str], no_relation: str,
                             min_precision: float) -> RelationThresholds:
    """Per-relation thresholds reaching precision ``min_precision`` on (probs, gold) (module docstring); a relation
    that cannot reach it is switched off. ``probs``: (N, L); ``gold``: (N,) label ids."""
    if not 0.0 < min_precision <= 1.0:
        raise ThresholdError(f"min_precision must lie in (0, 1], got {min_precision}")
    no_relation_id = list(labels).index(no_relation)
    p = _as_probs(probs, no_relation_id)
    gold_ids = np.asarray(gold).reshape(-1)
    if gold_ids.size != p.shape[0]:
        raise ThresholdError(f"got {gold_ids.size} gold labels for {p.shape[0]} probability rows")
    best, _ = _margins(p, no_relation_id)
    best = best.numpy()
    chosen = np.zeros(len(labels))
    for r in range(len(labels)):
        if r == no_relation_id:
            continue
        rows = np.flatnonzero(best == r)
        curve = sweep(p[rows], gold_ids[rows], no_relation_id) if rows.size else None
        if curve is None:
            chosen[r] = np.inf
            continue
        correct = np.rint(curve.precision * curve.guessed).astype(np.int64)  # (K,)
        feasible = np.flatnonzero((curve.precision >= min_precision - 1e-12) & (correct > 0))
        if feasible.size == 0:
            chosen[r] = np.inf
            continue
        key = np.lexsort((-np.abs(curve.thresholds[feasible]), curve.precision[feasible], correct[feasible]))
        chosen[r] = float(curve.thresholds[feasible[key[-1]]])
    pred = decide(p.numpy(), no_relation_id, chosen)  # the rule itself gives the figures reported
    points = []
    for r, label in enumerate(labels):
        if r != no_relation_id:
            guessed = int((pred == r).sum())
            points.append(RelationPoint(label, None if np.isinf(chosen[r]) else float(chosen[r]),
                                        int((gold_ids == r).sum()), guessed, int(((pred == r) & (gold_ids == r)).sum())))
    untuned = micro_scores(p.argmax(dim=1).numpy(), gold_ids, no_relation_id)
    return RelationThresholds(tuple(points), min_precision, untuned, micro_scores(pred, gold_ids, no_relation_id),
                              int(p.shape[0]))


def format_relation_thresholds(tuned: RelationThresholds, split: str = "") -> str:
    """A table of each relation's threshold and its figures, then the micro scores with and without them."""
    where = f" on {split}" if split else ""
    rows = [f"Per-relation thresholds for precision >= {tuned.min_precision:.2%}{where} ({RELATION_RULE}):",
            f"  {'relation':<44} {'threshold':>9} {'gold':>6} {'guessed':>7} {'P':>8} {'R':>8}"]
    for r in tuned.relations:
        t = "off" if r.threshold is None else f"{r.threshold:+.4f}"
        rows.append(f"  {r.label:<44} {t:>9} {r.gold:>6} {r.guessed:>7} {r.precision:8.2%} {r.recall:8.2%}")
    if tuned.switched_off:
        rows.append(f"  switched off (never predicted: no threshold reaches the target): {', '.join(tuned.switched_off)}")
    for name, s in (("untuned (argmax)", tuned.untuned), ("thresholded", tuned.tuned)):
        rows.append(f"  {name:<17} P: {s.precision:7.3%}  R: {s.recall:7.3%}  F1: {s.f1:7.3%}")
    return "\n".join(rows)


def format_comparison(threshold: float | np.ndarray, untuned: Scores, tuned: Scores, split: str = "") -> str:
    """Two lines comparing the argmax with the thresholded decision."""
    where = f" on {split}" if split else ""
    rule = RELATION_RULE if isinstance(threshold, np.ndarray) else RULE
    rows = [f"No-relation threshold {describe_threshold(threshold)}{where} ({rule}):"]
    for name, s in (("untuned (argmax)", untuned), ("thresholded", tuned)):
        rows.append(f"  {name:<17} P: {s.precision:7.3%}  R: {s.recall:7.3%}  F1: {s.f1:7.3%}")
    return "\n".join(rows)

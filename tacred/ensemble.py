"""Ensembles of independently trained models: majority vote (Bilan & Roth 2018, ties broken by summed
probability) and probability averaging (Zhang et al. 2017), label alignment, and mean ± std over members.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def check_member_probabilities(probs: np.ndarray) -> np.ndarray:
    """Validate (K, N, C) member probabilities: K ≥ 1 members, finite, non-negative."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 3:
        raise ValueError(f"expected member probabilities of shape (members, examples, labels), got {probs.shape}")
    if probs.shape[0] == 0 or probs.shape[2] == 0:
        raise ValueError(f"need at least one member and one label, got shape {probs.shape}")
    bad = ~np.isfinite(probs) | (probs < 0)
    if bad.any():
        member, example, label = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"member {member}, example {example}, label {label}: probability "
                         f"{probs[member, example, label]!r} is not a finite non-negative number")
    return probs


def votes(probs: np.ndarray) -> np.ndarray:
    """(K, N, C) probabilities → (N, C) number of members whose argmax is each label."""
    probs = check_member_probabilities(probs)
    k, n, c = probs.shape
    counts = np.zeros((n, c), dtype=np.int64)
    best = probs.argmax(axis=2)  # (K, N)
    for member in range(k):
        counts[np.arange(n), best[member]] += 1
    return counts


def majority_vote(probs: np.ndarray) -> np.ndarray:
    """(K, N, C) → (N,) label ids: the label most members predict.

    A tie between labels goes to the tied label with the largest probability summed over all members; if
    that is tied too, to the smallest label id. Labels outside the tie never win, however probable.
    """
    probs = check_member_probabilities(probs)
    counts = votes(probs)  # (N, C)
    tied = counts == counts.max(axis=1, keepdims=True)  # (N, C)
    summed = probs.sum(axis=0)  # (N, C)
    return np.where(tied, summed, -np.inf).argmax(axis=1)  # argmax takes the first (smallest id) of equals


def average_probabilities(probs: np.ndarray) -> np.ndarray:
    """(K, N, C) → (N, C): the members' mean probability of every label."""
    return check_member_probabilities(probs).mean(axis=0)


def average_vote(probs: np.ndarray) -> np.ndarray:
    """(K, N, C) → (N,) label ids: argmax of the averaged probabilities (smallest id on exact ties)."""
    return average_probabilities(probs).argmax(axis=1)


def align_labels(probs: np.ndarray, labels: Sequence[str], target: Sequence[str], member: str = "member") -> np.ndarray:
    """Reorder the columns of (N, C) ``probs`` over ``labels`` to the order of ``target`` (same label set)."""
    probs = np.asarray(probs)
    if probs.ndim != 2 or probs.shape[1] != len(labels):
        raise ValueError(f"{member}: probabilities of shape {probs.shape} do not match its {len(labels)} labels")
    if len(set(labels)) != len(labels):
        raise ValueError(f"{member}: repeated labels in {list(labels)}")
    if set(labels) != set(target):
        missing, extra = sorted(set(target) - set(labels)), sorted(set(labels) - set(target))
        raise ValueError(f"{member} has a different label set: missing {missing}, extra {extra}")
    position = {label: i for i, label in enumerate(labels)}
    return probs[:, [position[label] for label in target]]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n − 1; 0.0 for a single value) of per-member scores."""
    if not values:
        raise ValueError("mean_std needs at least one value")
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


@dataclass(frozen=True)
class SummaryRow:
    """One line of the ensemble summary: a name and micro P/R/F1 (fractions) per split, or mean ± std."""

    name: str
    scores: dict[str, tuple[float, float, float]]
    spread: dict[str, tuple[float, float, float]] | None = None


def format_summary(rows: Sequence[SummaryRow], splits: Sequence[str]) -> str:
    """A Markdown table with micro P/R/F1 in percent for each split; ``spread`` adds ``± std``."""
    header = ["model"] + [f"{split} {m}" for split in splits for m in ("P", "R", "F1")]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row.name]
        for split in splits:
            for i in range(3):
                cell = f"{100 * row.scores[split][i]:.2f}"
                if row.spread is not None:
                    cell += f" ± {100 * row.spread[split][i]:.2f}"
                cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

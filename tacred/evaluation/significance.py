"""Paired significance of a difference in TACRED micro-F1: approximate randomization over test examples
(Noreen, 1989; Riezler & Maxwell, 2005), with several seeds of each system paired seed by seed.

The statistic is the mean over seed pairs of F1(A_s) − F1(B_s). Under the null hypothesis the two systems are
exchangeable on every example, so each resample swaps the predictions of A and B on a random half of the
examples (the same examples for every seed pair) and recomputes the statistic; the p-value is the share of
resamples whose |statistic| reaches the observed one, (r + 1) / (R + 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Significance:
    delta: float  # observed mean F1(A) − F1(B) over seed pairs, as a fraction
    p_value: float
    resamples: int
    pairs: int


def _counts(gold: np.ndarray, pred: np.ndarray, no_relation: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-example contributions to the official scorer's totals: correct (N,) and guessed (N,)."""
    guessed = pred != no_relation
    return (guessed & (pred == gold)).astype(np.float64), guessed.astype(np.float64)


def _f1(correct: np.ndarray, guessed: np.ndarray, gold_total: float) -> np.ndarray:
    """Micro F1 from summed counts, with the official scorer's edge cases (P = 1 when nothing is guessed)."""
    precision = np.where(guessed > 0, correct / np.maximum(guessed, 1), 1.0)
    recall = correct / gold_total if gold_total > 0 else np.zeros_like(correct)
    denom = precision + recall
    return np.where(denom > 0, 2 * precision * recall / np.where(denom > 0, denom, 1), 0.0)


def paired_randomization(gold: Sequence[int], a: Sequence[Sequence[int]], b: Sequence[Sequence[int]],
                         no_relation: int, resamples: int = 10_000, seed: int = 0) -> Significance:
    """Two-sided approximate randomization test of F1(A) − F1(B).

    Args:
        gold: (N,) gold label ids of the test examples.
        a, b: (S, N) predicted label ids of S seeds of each system; seed s of A is paired with seed s of B.
        no_relation: the id the scorer ignores.
    """
    gold = np.asarray(gold, dtype=np.int64)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if a.ndim != 2 or a.shape != b.shape or a.shape[1] != gold.shape[0] or a.shape[0] == 0:
        raise ValueError(f"expected two (seeds, examples) arrays of one shape over {gold.shape[0]} examples; "
                         f"got {a.shape} and {b.shape}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1; got {resamples}")
    gold_total = float((gold != no_relation).sum())
    pairs, n = a.shape
    ca, ga = zip(*(_counts(gold, p, no_relation) for p in a), strict=True)  # S × (N,)
    cb, gb = zip(*(_counts(gold, p, no_relation) for p in b), strict=True)
    ca, ga, cb, gb = (np.stack(x) for x in (ca, ga, cb, gb))  # (S, N)

    # Swapping example i moves b_i - a_i into A's totals and out of B's, so every resample needs one product: the
    # swap masks times those differences. Counts are whole numbers, exact in float32 below 2**24 examples.
    exact = np.float32 if n < 2**24 else np.float64
    delta = np.concatenate([(cb - ca).T, (gb - ga).T], axis=1).astype(exact)  # (N, 2S)
    totals_a, totals_b = (np.concatenate([c.sum(axis=1), g.sum(axis=1)]) for c, g in ((ca, ga), (cb, gb)))

    def statistic(swap: np.ndarray) -> np.ndarray:
        """swap: (R, N) booleans → (R,) mean F1 difference with A and B exchanged where True."""
        moved = (swap.astype(exact) @ delta).astype(np.float64)  # (R, 2S)
        a_totals, b_totals = totals_a + moved, totals_b - moved
        f1_a = _f1(a_totals[:, :pairs], a_totals[:, pairs:], gold_total)
        f1_b = _f1(b_totals[:, :pairs], b_totals[:, pairs:], gold_total)
        return (f1_a - f1_b).mean(axis=1)

    observed = float(statistic(np.zeros((1, n), dtype=bool))[0])
    rng = np.random.default_rng(seed)
    reached, done = 0, 0
    while done < resamples:  # in chunks: (R, N) masks of a large test set stay small
        size = min(1000, resamples - done)
        reached += int((np.abs(statistic(rng.random((size, n)) < 0.5)) >= abs(observed) - 1e-12).sum())
        done += size
    return Significance(observed, (reached + 1) / (resamples + 1), resamples, pairs)

"""Tests of the paired approximate-randomization test behind the ablation table's p column."""

from __future__ import annotations

import numpy as np
import pytest

from tacred.evaluation.scoring import score
from tacred.evaluation.significance import paired_randomization


def systems(n: int = 400, seed: int = 0, better_by: float = 0.0, seeds: int = 3) -> tuple[np.ndarray, ...]:
    """Gold with 40% no_relation (id 0) over 5 labels; B right on 60% of examples, A on 60% + ``better_by``."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(1, 5, n) * (rng.random(n) > 0.4)

    def predict(accuracy: float) -> np.ndarray:
        wrong = rng.random((seeds, n)) > accuracy
        return np.where(wrong, (gold + rng.integers(1, 5, (seeds, n))) % 5, gold)

    return gold, predict(0.6 + better_by), predict(0.6)


def test_the_observed_difference_is_the_mean_of_the_official_f1_differences() -> None:
    gold, a, b = systems(better_by=0.1)
    result = paired_randomization(gold, a, b, no_relation=0, resamples=50)
    expected = np.mean([score(gold.tolist(), pa.tolist(), no_relation=0).f1 - score(gold.tolist(), pb.tolist(),
                                                                                      no_relation=0).f1
                        for pa, pb in zip(a, b, strict=True)])
    assert result.delta == pytest.approx(expected) and result.pairs == 3


def test_a_clearly_better_system_is_significant_and_equal_systems_are_not() -> None:
    gold, a, b = systems(better_by=0.15)
    assert paired_randomization(gold, a, b, 0, resamples=2000).p_value < 0.01
    assert paired_randomization(gold, b, b, 0, resamples=200).p_value == 1.0
    gold, a, b = systems(better_by=0.0, seed=3)
    assert paired_randomization(gold, a, b, 0, resamples=2000).p_value > 0.05


def test_the_test_is_symmetric_and_deterministic_for_a_seed() -> None:
    gold, a, b = systems(better_by=0.04)
    ab = paired_randomization(gold, a, b, 0, resamples=1500, seed=7)
    ba = paired_randomization(gold, b, a, 0, resamples=1500, seed=7)
    assert ab.p_value == ba.p_value and ab.delta == pytest.approx(-ba.delta)
    assert paired_randomization(gold, a, b, 0, resamples=1500, seed=7) == ab


def test_shapes_are_checked() -> None:
    gold, a, b = systems()
    with pytest.raises(ValueError, match="expected two .seeds, examples. arrays"):
        paired_randomization(gold, a, b[:2], 0)
    with pytest.raises(ValueError, match="expected two"):
        paired_randomization(gold[:-1], a, b, 0)
    with pytest.raises(ValueError, match="resamples must be at least 1"):
        paired_randomization(gold, a, b, 0, resamples=0)

"""Label probabilities → prediction objects: the one place where every backend's output becomes an answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from tacred.evaluation.decision import decide


@dataclass(frozen=True)
class Prediction:
    """The model's answer for one input: the decided label, its probability and every label's probability."""

    relation: str
    probability: float
    probabilities: dict[str, float]
    subject: str
    object: str
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def predictions(examples: Sequence[Mapping[str, Any]], probs: np.ndarray, labels: Sequence[str], no_relation: str,
                threshold: float | np.ndarray | None) -> list[Prediction]:
    """One :class:`Prediction` per TACRED dict, from its label probabilities (N, L) and the no-relation rule of
    :mod:`tacred.evaluation.decision`."""
    if not len(examples):
        return []
    labels = list(labels)
    decided = decide(probs, labels.index(no_relation), threshold).tolist()
    out = []
    for ex, row, best in zip(examples, np.asarray(probs).tolist(), decided, strict=True):
        out.append(Prediction(
            relation=labels[best], probability=row[best],
            probabilities=dict(zip(labels, row, strict=True)),
            subject=" ".join(ex["token"][ex["subj_start"]:ex["subj_end"] + 1]),
            object=" ".join(ex["token"][ex["obj_start"]:ex["obj_end"] + 1]),
            id=None if ex.get("id") is None else str(ex["id"]),
        ))
    return out

"""A checkpoint's label probabilities over one split (:class:`Evaluation`): what results, ensembles and the inspection
notebooks read, as :func:`tacred.training.evaluate` computes them (the one route of every command that scores a split)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tacred.data.examples import Example
from tacred.evaluation.decision import decide
from tacred.evaluation.scoring import Score, score


@dataclass
class Evaluation:
    """Label probabilities of every example of a split, in the split's order, with what it takes to read them.

    ``examples`` (the split's examples, for :meth:`hardest`) and ``source`` (where the split came from) are kept by
    the evaluations that show examples; stored results hold only the ids. ``unconverted``: gold labels of the
    release's sentences that could not be converted into examples of the split (``conversion.json``), which
    scores over the whole release count as no-relation predictions.
    """

    ids: list[str]
    labels: list[str]
    no_relation: str
    gold: np.ndarray  # (N,) label ids
    probs: np.ndarray  # (N, L)
    examples: Sequence[Example] = field(default_factory=list)
    source: str = ""
    unconverted: list[str] = field(default_factory=list)

    @property
    def no_relation_id(self) -> int:
        return self.labels.index(self.no_relation)

    @property
    def pred(self) -> np.ndarray:
        """The argmax label ids (N,)."""
        return self.probs.argmax(axis=1)

    @property
    def gold_names(self) -> list[str]:
        return self.names(self.gold)

    def predicted(self, threshold: float | np.ndarray | None = None) -> np.ndarray:
        """Predicted label ids (N,): the argmax, or the no-relation rule of :mod:`tacred.evaluation.decision`."""
        return decide(self.probs, self.no_relation_id, threshold)

    def names(self, ids: Sequence[int] | np.ndarray) -> list[str]:
        return [self.labels[i] for i in ids]

    def score(self, threshold: float | np.ndarray | None = None) -> Score:
        """The official scorer's result (per relation and micro)."""
        return score(self.gold_names, self.names(self.predicted(threshold)), self.no_relation)

    def hardest(self, n: int = 10, threshold: float | np.ndarray | None = None) -> list[dict[str, Any]]:
        """The ``n`` most confident errors: wrong predictions ranked by the probability of the predicted label."""
        if len(self.examples) != len(self.ids):
            raise ValueError("hardest() shows the sentences: this evaluation was made without its examples")
        pred = self.predicted(threshold)
        wrong = np.flatnonzero(pred != self.gold)
        confidence = self.probs[wrong, pred[wrong]]
        rows = []
        for i in wrong[np.argsort(-confidence, kind="stable")][:n]:
            rows.append({"index": int(i), "id": self.ids[i], "gold": self.labels[self.gold[i]],
                         "predicted": self.labels[pred[i]], "confidence": round(float(self.probs[i, pred[i]]), 4),
                         "p_gold": round(float(self.probs[i, self.gold[i]]), 4),
                         "sentence": marked_sentence(self.examples[i])})
        return rows


def marked_sentence(ex: Example) -> str:
    """The sentence with ``[subj ...]`` and ``[obj ...]`` around the two arguments."""
    out = []
    for i, tok in enumerate(ex.tokens):
        out.append(("[subj " if i == ex.subj_start else "") + ("[obj " if i == ex.obj_start else "") + tok
                   + ("]" if i == ex.subj_end else "") + ("]" if i == ex.obj_end else ""))
    return " ".join(out)

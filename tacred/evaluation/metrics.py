"""The official TACRED micro P/R/F1 as a torchmetrics metric, for dev/test during training (exact under DDP)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from tacred.evaluation.scoring import Counts, prf


class TacredScore(Metric):
    """The official TACRED micro P/R/F1 as a torchmetrics ``Metric`` with sum-reducible per-label counts.

    Unlike ``MulticlassF1Score(ignore_index=...)`` this keeps false positives on gold ``no_relation``.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    correct: Tensor
    guessed: Tensor
    gold: Tensor

    def __init__(self, num_labels: int, no_relation_id: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if num_labels < 1 or not 0 <= no_relation_id < num_labels:
            raise ValueError(f"need num_labels >= 1 and 0 <= no_relation_id < num_labels, "
                             f"got num_labels={num_labels}, no_relation_id={no_relation_id}")
        self.num_labels, self.no_relation_id = num_labels, no_relation_id
        for name in ("correct", "guessed", "gold"):
            self.add_state(name, default=torch.zeros(num_labels, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor) -> None:
        """preds: (N,) label ids or (N, C) scores (argmax taken); target: (N,) label ids."""
        if preds.ndim == target.ndim + 1:
            preds = preds.argmax(dim=-1)
        if preds.shape != target.shape:
            raise ValueError(f"preds shape {tuple(preds.shape)} does not match target shape {tuple(target.shape)}")
        if preds.is_floating_point() or target.is_floating_point():
            raise ValueError(f"expected integer label ids, got preds {preds.dtype} and target {target.dtype}")
        preds, target = preds.reshape(-1).long(), target.reshape(-1).long()  # (N,)
        if preds.numel() == 0:
            return
        if preds.device.type == "cpu":  # a free check here; on an accelerator it would wait for the device
            both = torch.cat([preds, target])  # (2N,)
            low, high = torch.stack([both.min(), both.max()]).tolist()
            if low < 0 or high >= self.num_labels:
                raise ValueError(f"label ids must lie in [0, {self.num_labels}), got values in [{low}, {high}]")
        # counts by index_add_ on the device: no boolean indexing or bincount, which read sizes back to the host
        guessed = (preds != self.no_relation_id).long()  # (N,)
        preds = preds.clamp(0, self.num_labels - 1)
        self.guessed.index_add_(0, preds, guessed)
        self.gold.index_add_(0, target.clamp(0, self.num_labels - 1), (target != self.no_relation_id).long())
        self.correct.index_add_(0, preds, guessed * (preds == target))

    def compute(self) -> dict[str, Tensor]:
        counts = (self.correct.sum().double(), self.guessed.sum().double(), self.gold.sum().double())
        precision, recall, f1 = prf(*counts)  # on the device: no read-back to the host
        return {"precision": precision.float(), "recall": recall.float(), "f1": f1.float()}

    def counts(self, labels: Sequence[str] | None = None) -> Counts:
        """The accumulated counts keyed by label name (``labels[id]``) or by id; feed to ``score_from_counts``."""
        if labels is not None and len(labels) != self.num_labels:
            raise ValueError(f"got {len(labels)} label names for a metric over {self.num_labels} labels")
        name = (lambda i: labels[i]) if labels is not None else (lambda i: i)
        return Counts(*(Counter({name(i): n for i, n in enumerate(t.tolist()) if n})
                        for t in (self.correct, self.guessed, self.gold)))

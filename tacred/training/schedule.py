"""Learning-rate rules. ``DecayOnStall`` is the original code's: from epoch ``start_epoch`` on, lr × ``factor``
whenever dev F1 did not improve over the previous epoch (``compare="previous"``, the original) or over the best so
far (``"best"``), optionally only after ``patience`` such epochs in a row. ``cosine`` anneals to zero instead.
``linear`` is the fine-tuning rule of BERT-style encoders: a linear warm-up, then a linear decay to zero, per step."""

from __future__ import annotations

from torch.optim import Optimizer
from torch.optim.lr_scheduler import CosineAnnealingLR, LambdaLR, LRScheduler, ReduceLROnPlateau

from tacred.options.specs import DECAY_COMPARE, LR_SCHEDULES


class DecayOnStall(ReduceLROnPlateau):
    """Stepped with the epoch's dev F1 once per epoch (by :meth:`RelationExtractor.on_train_epoch_end`). A
    ReduceLROnPlateau, so that its whole state (``state_dict``: history, stalls, epochs seen) is what Lightning saves
    in a checkpoint's ``lr_schedulers``."""

    def __init__(self, optimizer: Optimizer, start_epoch: int = 15, factor: float = 0.9, compare: str = "previous",
                 patience: int = 1) -> None:
        super().__init__(optimizer, mode="max", factor=factor, patience=0)
        if compare not in DECAY_COMPARE:
            raise ValueError(f"compare must be 'previous' or 'best', got {compare!r}")
        if patience < 1:
            raise ValueError(f"patience must be at least 1 (epochs without improvement before a decay), got {patience}")
        self.start_epoch = start_epoch
        self.compare = compare
        self.patience_epochs = patience
        self.stalled = 0  # epochs in a row without improvement
        self.history: list[float] = []

    def step(self, metrics: float, epoch: int | None = None) -> None:  # type: ignore[override]
        current = float(metrics)
        self.last_epoch += 1  # 1-based epoch that just ended
        if self.history:
            reference = self.history[-1] if self.compare == "previous" else max(self.history)
            self.stalled = self.stalled + 1 if current <= reference else 0
            if self.last_epoch > self.start_epoch and self.stalled >= self.patience_epochs:
                for group in self.optimizer.param_groups:
                    group["lr"] = group["lr"] * self.factor
                self.stalled = 0
        self.history.append(current)

    def get_last_lr(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]


class LinearWarmup(LambdaLR):
    """lr × step / warmup for the first ``warmup`` steps, then down in a straight line to 0 at ``total`` steps.
    Stepped after every optimizer step (Lightning's ``interval: step``)."""

    def __init__(self, optimizer: Optimizer, total: int, warmup: int) -> None:
        if total < 1 or not 0 <= warmup <= total:
            raise ValueError(f"linear warm-up needs 0 <= warmup ({warmup}) <= total steps ({total}), total >= 1")
        self.total, self.warmup = total, warmup
        super().__init__(optimizer, self.factor)

    def factor(self, step: int) -> float:
        if step < self.warmup:
            return step / self.warmup
        return max(0.0, (self.total - step) / max(1, self.total - self.warmup))


def build_schedule(kind: str, optimizer: Optimizer, max_epochs: int, start_epoch: int, factor: float,
                   compare: str, patience: int, total_steps: int = 0,
                   warmup_ratio: float = 0.0) -> tuple[LRScheduler | ReduceLROnPlateau, bool]:
    """The scheduler of ``kind`` and whether it is driven by dev F1 (so Lightning must pass the metric)."""
    if kind == "linear":
        return LinearWarmup(optimizer, total_steps, round(warmup_ratio * total_steps)), False
    if kind == "stall":
        return DecayOnStall(optimizer, start_epoch, factor, compare, patience), True
    if kind == "cosine":
        if max_epochs < 1:
            raise ValueError("lr_schedule 'cosine' needs trainer.max_epochs (the length of the annealing)")
        return CosineAnnealingLR(optimizer, T_max=max_epochs), False
    raise ValueError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}; got {kind!r}")

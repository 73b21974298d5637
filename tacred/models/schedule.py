"""The learning-rate rule of the original code: from epoch ``start_epoch`` on, lr × ``factor`` whenever dev F1 did
not improve over the previous epoch (``compare="previous"``, the original) or over the best so far (``"best"``)."""

from __future__ import annotations

from torch.optim import Optimizer
from torch.optim.lr_scheduler import ReduceLROnPlateau


class DecayOnStall(ReduceLROnPlateau):
    """Driven by the monitored dev F1 once per epoch (a ReduceLROnPlateau, so Lightning passes the metric)."""

    def __init__(self, optimizer: Optimizer, start_epoch: int = 15, factor: float = 0.9, compare: str = "previous") -> None:
        super().__init__(optimizer, mode="max", factor=factor, patience=0)
        if compare not in ("previous", "best"):
            raise ValueError(f"compare must be 'previous' or 'best', got {compare!r}")
        self.start_epoch = start_epoch
        self.compare = compare
        self.history: list[float] = []

    def step(self, metrics: float, epoch: int | None = None) -> None:  # type: ignore[override]
        current = float(metrics)
        self.last_epoch += 1  # 1-based epoch that just ended
        if self.history and self.last_epoch > self.start_epoch:
            reference = self.history[-1] if self.compare == "previous" else max(self.history)
            if current <= reference:
                for group in self.optimizer.param_groups:
                    group["lr"] = group["lr"] * self.factor
        self.history.append(current)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

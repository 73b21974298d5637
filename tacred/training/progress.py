"""What a training run prints while it runs: one line per epoch with train loss, dev P/R/F1, learning rate and time."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from lightning.pytorch.callbacks import Callback, ModelSummary

log = logging.getLogger("lightning.pytorch.callbacks.model_summary")


def _value(metrics: dict[str, Any], key: str) -> float | None:
    value = metrics.get(key)
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def epoch_line(epoch: int, max_epochs: int | None, metrics: dict[str, Any], lr: float | None, seconds: float,
               best: tuple[int, float] | None, lr_end: float | None = None) -> str:
    """``epoch 3/30  train loss 1.2345  dev P 45.00 R 50.00 F1 47.37 (best 48.10 @ 2)  lr 0.1  12.3 s``; epochs count
    from 1. Metrics that were not logged are left out. ``lr`` is the learning rate the epoch started with; a schedule
    that steps every batch (a warm-up) gives ``lr_end`` too, shown as ``lr 0 -> 0.0002`` where it moved."""
    total = f"/{max_epochs}" if max_epochs and max_epochs > 0 else ""
    parts = [f"epoch {epoch + 1}{total}"]
    loss = _value(metrics, "train/loss")
    if loss is not None:
        parts.append(f"train loss {loss:.4f}")
    p, r, f1 = (_value(metrics, f"val/{k}") for k in ("precision", "recall", "f1"))
    if f1 is not None:
        dev = f"dev P {100 * (p or 0):.2f} R {100 * (r or 0):.2f} F1 {100 * f1:.2f}"
        if best is not None:
            dev += f" (best {100 * best[1]:.2f}" + (f" @ {best[0] + 1})" if best[0] >= 0 else ")")
        parts.append(dev)
    if lr is not None:
        parts.append(f"lr {lr:.4g}" + (f" -> {lr_end:.4g}" if lr_end is not None and lr_end != lr else ""))
    parts.append(f"{seconds:.1f} s")
    return "  ".join(parts)


def _lr(trainer: Any) -> float | None:
    return float(trainer.optimizers[0].param_groups[0]["lr"]) if trainer.optimizers else None


class EpochSummary(Callback):
    """Prints :func:`epoch_line` at the end of every training epoch (after validation), on the main process only.

    Reads what was already logged; draws no random numbers and changes nothing, so metrics stay those of a silent run.
    The best dev F1 of earlier epochs comes from the ``val/f1`` checkpoint callback, so it survives a resume.
    """

    def __init__(self) -> None:
        self._start = 0.0
        self._lr: float | None = None
        self._best: tuple[int, float] | None = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        # an epoch resumed from inside starts without on_train_epoch_start: its line counts from the resume
        self.on_train_epoch_start(trainer, pl_module)

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._start = time.perf_counter()
        self._lr = _lr(trainer)

    def _previous_best(self, trainer: Any) -> tuple[int, float] | None:
        if self._best is not None:
            return self._best
        for callback in trainer.checkpoint_callbacks:  # a resumed run: the best so far, its epoch unknown (-1)
            if getattr(callback, "monitor", None) == "val/f1" and callback.best_model_score is not None:
                return (-1, float(callback.best_model_score))
        return None

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        metrics = dict(trainer.callback_metrics)
        f1 = _value(metrics, "val/f1")
        best = self._previous_best(trainer)
        if f1 is not None and (best is None or f1 > best[1]):
            best = (trainer.current_epoch, f1)
        self._best = best
        # an epoch-interval scheduler has already stepped after the epoch's last batch (its new value is the next
        # epoch's), so only a per-step schedule's value now is where this epoch ended
        per_step = any(config.interval == "step" for config in trainer.lr_scheduler_configs)
        line = epoch_line(trainer.current_epoch, trainer.max_epochs, metrics, self._lr,
                          time.perf_counter() - self._start, best, lr_end=_lr(trainer) if per_step else None)
        bar = trainer.progress_bar_callback
        if bar is not None:
            bar.print(line)  # above the bar, without breaking it
        else:
            print(line, flush=True)


class TextModelSummary(ModelSummary):
    """Lightning's model summary without the FLOPs column and total, which stay 0 without an example input."""

    @staticmethod
    def summarize(summary_data: list[tuple[str, list[str]]], total_parameters: int, trainable_parameters: int,
                  model_size: float, total_training_modes: dict[str, int], total_flops: int,
                  **summarize_kwargs: Any) -> None:
        log.info("\n" + summary_table(summary_data, total_parameters, trainable_parameters, model_size,
                                       total_training_modes))


def summary_table(columns: list[tuple[str, list[str]]], total_parameters: int, trainable_parameters: int,
                  model_size: float, modes: dict[str, int]) -> str:
    """The module table (one row per module; the FLOPs column left out) and the parameter totals."""
    from lightning.pytorch.utilities.model_summary import get_formatted_model_size, get_human_readable_count

    columns = [(name, [str(v) for v in values]) for name, values in columns if name != "FLOPs"]
    widths = [max([len(name), *(len(v) for v in values)]) for name, values in columns]
    rule = "-" * (sum(widths) + 3 * (len(columns) + 1))
    rows = [" | ".join(name.ljust(w) for (name, _), w in zip(columns, widths, strict=True)), rule]
    rows += [" | ".join(values[i].ljust(w) for (_, values), w in zip(columns, widths, strict=True))
             for i in range(len(columns[0][1]) if columns else 0)]
    totals = [(get_human_readable_count(trainable_parameters), "Trainable params"),
              (get_human_readable_count(total_parameters - trainable_parameters), "Non-trainable params"),
              (get_human_readable_count(total_parameters), "Total params"),
              (get_formatted_model_size(model_size), "Total estimated model params size (MB)"),
              (modes.get("train", 0), "Modules in train mode"), (modes.get("eval", 0), "Modules in eval mode")]
    return "\n".join([*rows, rule, *(f"{str(value):<10}{label}" for value, label in totals)])

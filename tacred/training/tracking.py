"""Experiment tracking: run-folder defaults for configured loggers, a W&B run that survives restarts (its id is kept
in the checkpoints), best dev F1 as the W&B summary (the sweep metric), and the test per-relation table and
confusion matrix."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import WandbLogger as LightningWandbLogger

from tacred.evaluation.scoring import Score

RUN_ID_KEY = "tacred_wandb_run_id"
LIGHTNING_WANDB_LOGGERS = ("lightning.pytorch.loggers.WandbLogger", "lightning.pytorch.loggers.wandb.WandbLogger")
RELATION_COLUMNS = ["relation", "precision", "recall", "f1", "gold", "guessed", "correct"]


class WandbLogger(LightningWandbLogger):
    """Lightning's W&B logger (the same arguments), which logs at :attr:`evaluated_step` when it is set: ``tacred
    test``/``validate`` set it to the training step of the checkpoint they evaluate, so their metrics land at that
    step of the training's W&B run, not at step 0. The CLI uses it wherever a config names Lightning's."""

    evaluated_step: int | None = None

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        super().log_metrics(metrics, step=step if self.evaluated_step is None else self.evaluated_step)


def _class_name(logger_cfg: Any) -> str:
    return str(getattr(logger_cfg, "class_path", "") or "").rsplit(".", 1)[-1]


def logger_configs(logger: Any) -> list[Any]:
    """The class_path/init_args entries of ``trainer.logger`` (one, a list, or none for True/False/None)."""
    if isinstance(logger, (list, tuple)):
        return [entry for entry in logger if hasattr(entry, "class_path")]
    return [logger] if hasattr(logger, "class_path") else []


def fill_logger_defaults(logger: Any, run_dir: Path, subcommand: str) -> None:
    """Give configured loggers the run folder where ``save_dir`` is "" or null: CSV loggers (and for
    ``ResumableCSVLogger`` an unset ``version``: "" for fit, i.e. ``RUN/metrics.csv``, else ``RUN/<command>/``), and
    W&B loggers unless WANDB_DIR is set, and as the W&B run's name unless one is configured. (A CSV logger requires a
    save_dir, hence "" in configs.) Lightning's WandbLogger becomes :class:`WandbLogger`, with the same arguments."""
    for entry in logger_configs(logger):
        args = entry.init_args
        name = _class_name(entry)
        if name.endswith("CSVLogger"):
            if not args.get("save_dir"):
                args.save_dir = str(run_dir)
            if name == "ResumableCSVLogger" and args.get("version") is None:
                args.version = "" if subcommand == "fit" else subcommand
        elif name == "WandbLogger":
            if entry.class_path in LIGHTNING_WANDB_LOGGERS:
                entry.class_path = f"{WandbLogger.__module__}.{WandbLogger.__qualname__}"
            if not args.get("save_dir") and not args.get("dir") and not os.environ.get("WANDB_DIR"):
                args.save_dir = str(run_dir)
            if not args.get("name") and not os.environ.get("WANDB_NAME"):
                args.name = run_dir.name  # the run folder names the W&B run unless the config does


def resume_wandb_run(logger: Any, checkpoint: dict[str, Any] | None) -> None:
    """Continue the W&B run recorded in ``checkpoint`` (a resumed fit, or test of a trained model) unless the run id
    is configured or chosen by a sweep agent (WANDB_RUN_ID)."""
    run_id = (checkpoint or {}).get(RUN_ID_KEY)
    if not run_id or os.environ.get("WANDB_RUN_ID"):
        return
    for entry in logger_configs(logger):
        args = entry.init_args
        if _class_name(entry) == "WandbLogger" and args.get("version") is None and args.get("id") is None:
            args.id = run_id


def wandb_loggers(loggers: Sequence[Any]) -> list[Any]:
    """The W&B loggers among a trainer's loggers."""
    return [logger for logger in loggers if isinstance(logger, LightningWandbLogger)]


def relation_rows(result: Score) -> list[list[Any]]:
    """One row per relation (``RELATION_COLUMNS``): P/R/F1 and the counts they come from."""
    return [[str(r.relation), r.precision, r.recall, r.f1, r.gold, r.guessed, r.correct] for r in result.relations]


def log_test_results(loggers: Sequence[Any], result: Score, gold: Sequence[str], pred: Sequence[str],
                     labels: Sequence[str], stage: str = "test") -> None:
    """Log the per-relation table, a confusion matrix and the micro scores to every active W&B run."""
    active = wandb_loggers(loggers)
    if not active:
        return
    import wandb

    index = {label: i for i, label in enumerate(labels)}
    unknown = sorted({label for label in (*gold, *pred) if label not in index})
    if unknown:
        raise ValueError(f"{stage}: labels {unknown[:5]} are not among the model's {len(labels)} labels")
    for logger in active:
        run = logger.experiment
        step = getattr(logger, "evaluated_step", None)
        run.log({
            **({"trainer/global_step": step} if step is not None else {}),
            f"{stage}/relations": wandb.Table(columns=RELATION_COLUMNS, data=relation_rows(result)),
            f"{stage}/confusion_matrix": wandb.plot.confusion_matrix(
                y_true=[index[g] for g in gold], preds=[index[p] for p in pred], class_names=list(labels),
                title=f"{stage} confusion matrix"),
        })
        run.summary.update({f"{stage}/precision": result.precision, f"{stage}/recall": result.recall,
                            f"{stage}/f1": result.f1})


class WandbTracking(Callback):
    """Added by the CLI when a W&B logger is configured: keeps the run id in every checkpoint (so the same command
    continues the same W&B run after a crash), makes the best ``val/f1`` the run's summary value, records the whole
    resolved configuration (network and trainer included) in the run's config when training, and logs test results
    at the last training step of the tested checkpoint (not at step 0).

    Args:
        config: the command's resolved configuration as plain data (what ``config.yaml`` holds).
        final_step: ``global_step`` of the checkpoint a test/validate command evaluates.
    """

    def __init__(self, config: dict[str, Any] | None = None, final_step: int | None = None) -> None:
        self.config = config
        self.final_step = final_step

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if not trainer.is_global_zero:
            return
        for logger in wandb_loggers(trainer.loggers):
            if stage != "fit":
                if self.final_step is not None and isinstance(logger, WandbLogger):
                    logger.evaluated_step = self.final_step
                continue
            run = logger.experiment
            run.define_metric("val/f1", step_metric="trainer/global_step", step_sync=True, summary="max")
            if self.config:
                run.config.update(self.config, allow_val_change=True)

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        ids = [logger.version for logger in wandb_loggers(trainer.loggers) if logger.version]
        if ids:
            checkpoint[RUN_ID_KEY] = ids[0]


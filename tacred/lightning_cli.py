"""The LightningCLI subclass: data-derived sizes linked into the model, run folders, checkpoints and resuming."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from jsonargparse import Namespace
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback

from tacred.checkpoints import LastCheckpoint, check_checkpoint
from tacred.data.datamodule import TacredDataModule
from tacred.models.module import RelationExtractor

log = logging.getLogger(__name__)


class ConfigInCheckpoint(SaveConfigCallback):
    """Writes ``config.yaml`` into the run folder and the same configuration into every checkpoint, so that a
    checkpoint alone is enough to test or predict."""

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            super().setup(trainer, pl_module, stage)

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        checkpoint["tacred_config"] = self.parser.dump(self.config, skip_none=False)


class TacredCLI(LightningCLI):
    def __init__(self, args: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(
            RelationExtractor, TacredDataModule, args=args,
            save_config_callback=ConfigInCheckpoint, save_config_kwargs={"overwrite": True},
            load_from_checkpoint_support=False, auto_configure_optimizers=False, **kwargs,
        )

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument("--run_dir", type=str | None, default=None,
                            help="Folder of this run: config.yaml, checkpoints/, metrics.csv, predictions.")
        parser.add_argument("--resume", type=str, default="auto",
                            help="fit only: 'auto' resumes from RUN_DIR/checkpoints/last.ckpt when it exists; 'never'.")
        parser.add_lightning_class_args(ModelCheckpoint, "checkpoint")
        parser.set_defaults({
            "checkpoint.monitor": "val/f1", "checkpoint.mode": "max", "checkpoint.save_last": False,
            "checkpoint.filename": "best", "checkpoint.auto_insert_metric_name": False,
            "checkpoint.save_top_k": 1, "checkpoint.save_on_train_epoch_end": True,
            "trainer.use_distributed_sampler": False,
        })
        parser.link_arguments("data.vocab", "model.vocab", apply_on="instantiate")
        parser.link_arguments("data.word_vectors", "model.word_vectors", apply_on="instantiate")
        parser.link_arguments("seed_everything", "data.seed")

    def before_instantiate_classes(self) -> None:
        cfg = self.config[self.subcommand]
        run_dir = Path(cfg.run_dir or cfg.trainer.default_root_dir or "runs/default")
        cfg.run_dir = str(run_dir)
        cfg.trainer.default_root_dir = str(run_dir)
        if cfg.checkpoint.dirpath is None:
            cfg.checkpoint.dirpath = str(run_dir / "checkpoints")
        if cfg.trainer.logger in (None, True):
            # fit: metrics.csv straight in the run folder, extended when a run resumes; test etc.: a subfolder
            version = "" if self.subcommand == "fit" else self.subcommand
            cfg.trainer.logger = Namespace(class_path="tacred.loggers.ResumableCSVLogger",
                                           init_args=Namespace(save_dir=str(run_dir), name="", version=version))
        if self.subcommand in ("validate", "test", "predict"):
            if cfg.ckpt_path:
                check_checkpoint(cfg.ckpt_path)
                if not cfg.data.vocab_path:
                    cfg.data.vocab_path = cfg.ckpt_path  # the checkpoint's own vocabularies, never rebuilt ones
            if cfg.model.output_dir is None:
                cfg.model.output_dir = str(run_dir)
        if self.subcommand == "fit" and cfg.ckpt_path is None and cfg.resume == "auto":
            last = Path(cfg.checkpoint.dirpath) / "last.ckpt"
            if last.exists():
                check_checkpoint(last)  # a corrupt last.ckpt is an error, not a silent fresh start
                log.info("resuming from %s", last)
                cfg.ckpt_path = str(last)

    def after_instantiate_classes(self) -> None:
        if self.subcommand == "fit":
            self.trainer.callbacks.append(LastCheckpoint(self.config.fit.checkpoint.dirpath))
        if self.subcommand == "fit" and self.trainer.logger is not None:
            has_lr_monitor = any(isinstance(c, LearningRateMonitor) for c in self.trainer.callbacks)
            if not has_lr_monitor:
                self.trainer.callbacks.append(LearningRateMonitor(logging_interval="epoch"))

"""The LightningCLI subclass: data-derived sizes linked into the model, run folders, checkpoints and resuming."""

from __future__ import annotations

import copy
import logging
import os
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from jsonargparse import Namespace
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint, ModelSummary, Timer
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback
from lightning.pytorch.plugins.io import TorchCheckpointIO

from tacred.checkpoints import is_lightning_ckpt_name, read_checkpoint
from tacred.errors import ConfigError
from tacred.options.rules import OptionError
from tacred.training.callbacks import CheckpointReadOnce, LastCheckpoint, PredictionFileWriter
from tacred.training.datamodule import TacredDataModule
from tacred.training.module import RelationExtractor
from tacred.training.progress import EpochSummary, TextModelSummary
from tacred.training.quiet import quiet_libraries
from tacred.training.resume import check_run_dir, resume_checkpoint
from tacred.training.run_folder import RunFolderGuard
from tacred.training.tracking import WandbTracking, fill_logger_defaults, resume_wandb_run, wandb_loggers
from tacred.training.validation import check_command_line, command_line_error

log = logging.getLogger(__name__)


class ConfigInCheckpoint(SaveConfigCallback):
    """Writes ``config.yaml`` into the run folder and the same configuration into every checkpoint, so that a
    checkpoint alone is enough to test or predict."""

    given_logger: Any = None  # trainer.logger as the user gave it (set by TacredCLI)

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            super().setup(trainer, pl_module, stage)

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        # the logger as given, not as filled in for this command: `tacred test` fills in its own folders
        config = self.config.clone()
        config.trainer.logger = self.given_logger
        checkpoint["tacred_config"] = self.parser.dump(config, skip_none=False)


def _network_field(network: Any, key: str) -> Any:
    """``model.network.<key>`` as parsed (a namespace, in class_path/init_args form or not, a mapping or a
    NetworkConfig), or the NetworkConfig default when it is not given."""
    from dataclasses import fields

    from tacred.models.config import NetworkConfig

    if isinstance(network, dict | Namespace) and network.get("init_args") is not None:
        network = network["init_args"]  # class_path/init_args form
    value = network.get(key) if isinstance(network, dict | Namespace) else getattr(network, key, None)
    return next(f.default for f in fields(NetworkConfig) if f.name == key) if value is None else value


def _read_when_needed(attribute: str) -> Any:
    """A link from the data module to the model: a function that reads ``data.<attribute>`` when called, so that
    the model checks its options before any data file is read (:class:`RelationExtractor` calls it)."""
    return lambda data: lambda: getattr(data, attribute)


def _word_dim(network: Any) -> int:
    """The data module's ``embedding_dim``: the network's ``word_dim``."""
    return _network_field(network, "word_dim")


def _tokenizer(network: Any) -> str | None:
    """The data module's tokenizer: ``model.network.pretrained`` when the encoder is a transformer, else None."""
    return _network_field(network, "pretrained") if _network_field(network, "encoder") == "transformer" else None


def summary_depth(callbacks: Any) -> int:
    """``max_depth`` of a ModelSummary given in ``trainer.callbacks`` (Lightning's own default: 1)."""
    for callback in callbacks or []:
        if isinstance(callback, dict | Namespace) and str(callback.get("class_path", "")).endswith("ModelSummary"):
            return int((callback.get("init_args") or {}).get("max_depth", 1))
    return 1


def check_launched_processes(trainer: Any) -> None:
    """torchrun starts the processes and Lightning only joins them: with fewer devices × nodes than torchrun's
    WORLD_SIZE, every process would run the whole command alone (and write the same outputs N times)."""
    launched = int(os.environ.get("WORLD_SIZE", "1")) if "TORCHELASTIC_RUN_ID" in os.environ else 1
    if launched > trainer.num_nodes * trainer.num_devices:
        raise ConfigError(f"torchrun started {launched} processes, but --trainer.devices {trainer.num_devices} × "
                          f"--trainer.num_nodes {trainer.num_nodes} is {trainer.num_nodes * trainer.num_devices}: "
                          "pass its --nproc_per_node as --trainer.devices, its --nnodes as --trainer.num_nodes, "
                          "and --trainer.strategy ddp")


class TacredCLI(LightningCLI):
    """LightningCLI with tacred's run folders, resuming, checkpoints and loggers.

    ``TacredCLI(args=["fit", ...])`` builds the parser of that one command only, as each parser introspects the
    Trainer's, the model's and the data module's signatures. Lightning reads the commands from the class
    (:meth:`subcommands`), so the instance is one of a subclass that names a single command (:func:`_one_command`).
    """

    command: ClassVar[str | None] = None  # the one sub-command this class parses; None: all of Lightning's
    joint: ClassVar[bool] = False  # the joint entity-and-relation model (JointCLI) instead of the relation classifier

    def __new__(cls, args: list[str] | None = None, *rest: Any, **kwargs: Any) -> TacredCLI:
        command = args[0] if isinstance(args, list | tuple) and args else None  # a dict is parsed as a whole
        if cls.command is None and command in LightningCLI.subcommands():
            cls = _one_command(cls, command)
        return super().__new__(cls)

    def __init__(self, args: list[str] | None = None, guard: RunFolderGuard | None = None,
                 checkpoint: tuple[str, dict[str, Any]] | None = None, **kwargs: Any) -> None:
        """``checkpoint``: (path, contents) of the ``--ckpt_path`` file when the caller has read it already."""
        self._guard = guard or RunFolderGuard()
        self._read = checkpoint
        self._start_checkpoint: dict[str, Any] | None = None
        self._held_ckpt_path: str | None = None
        self._verbose_given = any(a == "--verbose" or a.startswith("--verbose=") for a in args or [])
        # a bad value raises (one line through tacred.cli.main) instead of printing the whole usage text
        exit_on_error = {"exit_on_error": False}
        parser_kwargs = {**{name: exit_on_error for name in self.subcommands()}, **exit_on_error}
        if self.joint:  # the classes named by class_path in the configuration, as LightningCLI's subclass mode reads them
            from tacred.training.joint_datamodule import JointDataModule
            from tacred.training.joint_module import JointExtractor

            classes: tuple[Any, ...] = (JointExtractor, JointDataModule)
            kwargs.setdefault("subclass_mode_model", True)
            kwargs.setdefault("subclass_mode_data", True)
        else:
            classes = (RelationExtractor, TacredDataModule)
        with quiet_libraries():  # the whole command: parsing, and the Trainer's run
            super().__init__(
                *classes, args=args,
                save_config_callback=ConfigInCheckpoint, save_config_kwargs={"overwrite": True},
                load_from_checkpoint_support=False, auto_configure_optimizers=False,
                parser_kwargs=kwargs.pop("parser_kwargs", parser_kwargs), **kwargs,
            )

    @classmethod
    def subcommands(cls) -> dict[str, set[str]]:
        """Lightning's sub-commands, or only :attr:`command` when the class names one."""
        every = LightningCLI.subcommands()
        return every if cls.command is None else {cls.command: every[cls.command]}

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument("--run_dir", type=str | None, default=None,
                            help="Folder of this run: config.yaml, checkpoints/, metrics.csv, predictions.")
        parser.add_argument("--resume", type=Literal["auto", "never"], default="auto",
                            help="fit only: 'auto' resumes from RUN_DIR/checkpoints/last.ckpt when it exists; "
                                 "'never' starts over and overwrites the folder's checkpoints.")
        parser.add_argument("--checkpoint_minutes", type=float | None, default=10.0,
                            help="fit only: also write RUN_DIR/checkpoints/last.ckpt inside an epoch every this "
                                 "many minutes, so a long epoch resumes where it stopped (null: at epoch ends only).")
        parser.add_argument("--num_threads", type=int | None, default=None,
                            help="torch CPU threads (default: torch's choice; small models train fastest with 1-2).")
        if self.command in ("test", "predict"):
            parser.add_argument("--overwrite", type=bool, default=False,
                                help="Replace earlier outputs in the output folder (test_predictions.jsonl, "
                                     "test_score.txt, test_metrics.json, predictions.jsonl); by default a new name is "
                                     "chosen (test_predictions-1.jsonl, ...).")
        parser.add_lightning_class_args(ModelCheckpoint, "checkpoint")
        parser.set_defaults({
            "checkpoint.monitor": "val/f1", "checkpoint.mode": "max", "checkpoint.save_last": False,
            "checkpoint.filename": "best", "checkpoint.auto_insert_metric_name": False,
            "checkpoint.save_top_k": 1, "checkpoint.save_on_train_epoch_end": True,
            "trainer.use_distributed_sampler": False,
            # a fresh train loader every epoch, its order drawn from the epoch being trained: after resuming from an
            # epoch's last.ckpt, Lightning finishes that epoch's end and would otherwise train the next epoch on the
            # loader it built at start-up (the finished epoch's order), so the resumed run would drift
            "trainer.reload_dataloaders_every_n_epochs": 1,
        })
        if self.joint:
            for name in ("types", "pieces", "max_width", "signatures"):
                parser.link_arguments("data", f"model.init_args.{name}", compute_fn=_read_when_needed(name),
                                      apply_on="instantiate")
            parser.link_arguments("seed_everything", "data.init_args.seed")
            parser.link_arguments("model.init_args.pretrained", "data.init_args.tokenizer")
            return
        parser.link_arguments("data", "model.vocab", compute_fn=_read_when_needed("vocab"), apply_on="instantiate")
        parser.link_arguments("data", "model.word_vectors", compute_fn=_read_when_needed("word_vectors"),
                              apply_on="instantiate")
        parser.link_arguments("seed_everything", "data.seed")
        # one size for the word vectors: the network's word embedding decides, the data module reads GloVe at it
        parser.link_arguments("model.network", "data.embedding_dim", compute_fn=_word_dim)
        parser.link_arguments("model.network", "data.tokenizer", compute_fn=_tokenizer)

    def before_instantiate_classes(self) -> None:
        cfg = self.config[self.subcommand] if self.subcommand else self.config
        if self._held_ckpt_path is not None:  # held back by parse_arguments
            cfg.ckpt_path, self._held_ckpt_path = self._held_ckpt_path, None
        check_command_line(cfg)  # the classes check their own options when they are built, before reading data
        if self.subcommand in ("validate", "test") and not self._verbose_given:
            cfg.verbose = False  # the scorer's report is printed already: Lightning's table would repeat it
        if cfg.num_threads:
            import torch

            torch.set_num_threads(cfg.num_threads)
        from tacred.devices import keep_freed_memory

        keep_freed_memory()  # a batch's large buffers reused by the next instead of zeroed again by the kernel
        # environment variables are expanded: a W&B sweep runs each trial in e.g. runs/sweep/$WANDB_RUN_ID
        run_dir = Path(os.path.expandvars(cfg.run_dir or cfg.trainer.default_root_dir or "runs/default"))
        check_run_dir(run_dir)
        self._guard.snapshot(run_dir)
        cfg.run_dir = str(run_dir)
        cfg.trainer.default_root_dir = str(run_dir)
        if cfg.checkpoint.dirpath is None:
            cfg.checkpoint.dirpath = str(run_dir / "checkpoints")
        self._given_logger = copy.deepcopy(cfg.trainer.logger)
        checkpoint: dict[str, Any] | None = None  # the checkpoint this command starts from, if any
        if cfg.trainer.logger in (None, True) and self.subcommand == "predict":
            cfg.trainer.logger = False  # predict logs no metrics: no empty predict/ folder in the run
        elif cfg.trainer.logger in (None, True):
            # fit: metrics.csv straight in the run folder, extended when a run resumes; test etc.: a subfolder
            version = "" if self.subcommand == "fit" else self.subcommand
            cfg.trainer.logger = Namespace(class_path="tacred.training.loggers.ResumableCSVLogger",
                                           init_args=Namespace(save_dir=str(run_dir), name="", version=version))
        else:
            fill_logger_defaults(cfg.trainer.logger, run_dir, self.subcommand)
        if self.subcommand in ("validate", "test", "predict"):
            data, model = _own_options(cfg.data), _own_options(cfg.model)
            if cfg.ckpt_path:
                checkpoint = self._checkpoint(cfg.ckpt_path)
                if not data.vocab_path:
                    data.vocab_path = cfg.ckpt_path  # the checkpoint's own vocabularies, never rebuilt ones
            if model.output_dir is None:
                model.output_dir = str(run_dir)
        if self.subcommand == "fit" and cfg.ckpt_path is None:
            checkpoint = resume_checkpoint(Path(cfg.checkpoint.dirpath), cfg.resume)
            if checkpoint is not None:
                cfg.ckpt_path = str(Path(cfg.checkpoint.dirpath) / "last.ckpt")
        elif self.subcommand == "fit" and cfg.ckpt_path and not is_lightning_ckpt_name(cfg.ckpt_path):
            checkpoint = self._checkpoint(cfg.ckpt_path)  # missing or corrupt: a clear error before anything runs
        resume_wandb_run(cfg.trainer.logger, checkpoint)
        self._start_checkpoint = checkpoint
        self._final_step = None if checkpoint is None or self.subcommand == "fit" else checkpoint.get("global_step")

    def instantiate_classes(self) -> None:
        """Lightning's, with a bad option named as on the command line (``--model.network.num_heads``)."""
        try:
            super().instantiate_classes()
        except ValueError as err:  # an OptionError, or jsonargparse's error about a union type caused by one
            cause: BaseException | None = err
            while cause is not None and not isinstance(cause, OptionError):
                cause = cause.__cause__
            if cause is None:
                raise
            raise command_line_error(cause) from None

    def parse_arguments(self, parser: LightningArgumentParser, args: Any) -> None:
        """Lightning's, then the ``--ckpt_path`` checkpoint's hyperparameters merged into the model's options, from
        the contents read once (:meth:`_checkpoint`). LightningCLI would load the whole file once more for them when
        it finds ``ckpt_path`` set after parsing, so the path is held back until :meth:`before_instantiate_classes`."""
        super().parse_arguments(parser, args)
        command = self.config.get("subcommand")
        ckpt_path = self.config[command].get("ckpt_path") if command else None
        if not ckpt_path or not Path(ckpt_path).is_file():
            return
        hparams = dict(self._checkpoint(ckpt_path).get("hyper_parameters") or {})
        hparams.pop("_instantiator", None)
        if hparams and self.joint:
            model = self.config[command].model
            hparams = {"class_path": model.class_path, "init_args": hparams}
        if hparams:
            self.config = parser.parse_object({command: {"model": hparams}}, self.config)
        self._held_ckpt_path = ckpt_path
        self.config[command].ckpt_path = None

    def _checkpoint(self, path: str) -> dict[str, Any]:
        if self._read is not None and self._read[0] == str(path):
            return self._read[1]  # read once, by tacred.cli
        return read_checkpoint(path)

    def _resolved_config(self) -> dict[str, Any]:
        """This command's whole configuration as plain data (what config.yaml holds), for the W&B run's config."""
        import yaml

        config = self.config.clone()
        config[self.subcommand].trainer.logger = self._given_logger
        return (yaml.safe_load(self.parser.dump(config, skip_none=False)) or {}).get(self.subcommand) or {}

    def after_instantiate_classes(self) -> None:
        check_launched_processes(self.trainer)
        if type(self.trainer.strategy.checkpoint_io) is TorchCheckpointIO:  # not one the user chose
            # Lightning's restore reads through tacred's reader: once per command (checkpoints.reading_once)
            self.trainer.strategy.checkpoint_io = CheckpointReadOnce()
        if self._start_checkpoint is not None:
            cfg = self.config[self.subcommand] if self.subcommand else self.config
            from tacred.inference.trained import check_compatible

            check_compatible(self._start_checkpoint, self.model, cfg.ckpt_path)
            self._start_checkpoint = None
        for callback in self.trainer.callbacks:
            if isinstance(callback, ConfigInCheckpoint):
                callback.given_logger = self._given_logger
        if wandb_loggers(self.trainer.loggers):
            self.trainer.callbacks.append(WandbTracking(self._resolved_config(), self._final_step))
        if self.subcommand != "fit":
            self.model.overwrite_outputs = bool(self.config[self.subcommand].get("overwrite"))
            # evaluating never rewrites the hyperparameters of the run that trained the model (vocab_path, say):
            # the same values, saved again with Lightning's switch for not logging them
            self.model.save_hyperparameters(dict(self.model.hparams), logger=False)
            self.datamodule.save_hyperparameters(dict(self.datamodule.hparams), logger=False)
        # Lightning's summary has a FLOPs column that stays 0 (it needs an example input): ours leaves it out
        depth = summary_depth(self.config[self.subcommand].trainer.callbacks)
        self.trainer.callbacks = [TextModelSummary(max_depth=depth) if isinstance(c, ModelSummary) else c
                                  for c in self.trainer.callbacks]
        if self.subcommand == "predict":
            self.trainer.callbacks.append(PredictionFileWriter())
        if self.subcommand == "fit":
            self.trainer.callbacks.append(LastCheckpoint(self.config.fit.checkpoint.dirpath,
                                                        self.config.fit.checkpoint_minutes))
            self.trainer.callbacks.append(EpochSummary())
        if not any(isinstance(c, Timer) for c in self.trainer.callbacks):
            # no time limit: it stores the training time in every checkpoint, summed over a resumed run's legs
            # (tacred.checkpoints.trained_seconds); present in every subcommand, so loading such a checkpoint
            # finds the callback that wrote it
            self.trainer.callbacks.append(Timer(verbose=False))
        if self.subcommand == "fit" and self.trainer.logger is not None:
            has_lr_monitor = any(isinstance(c, LearningRateMonitor) for c in self.trainer.callbacks)
            if not has_lr_monitor:
                self.trainer.callbacks.append(LearningRateMonitor(logging_interval="epoch"))


def _own_options(section: Any) -> Any:
    """A class's options in the configuration: its ``init_args`` where the class is named by ``class_path``."""
    return section.init_args if isinstance(section, Namespace) and section.get("init_args") is not None else section


class JointCLI(TacredCLI):
    """:class:`TacredCLI` for the joint entity-and-relation model: the configuration names
    ``tacred.training.joint_module.JointExtractor`` and ``tacred.training.joint_datamodule.JointDataModule`` by
    ``class_path`` (configs/conll04/joint_*.yaml); run folders, resuming, checkpoints and loggers are the same."""

    joint: ClassVar[bool] = True


@cache
def _one_command(cls: type[TacredCLI], command: str) -> type[TacredCLI]:
    """``cls`` narrowed to ``command`` (its :meth:`~TacredCLI.subcommands`); one class per command and process."""
    return type(f"{cls.__name__}_{command}", (cls,), {"command": command, "__module__": cls.__module__})

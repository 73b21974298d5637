"""The checks of the command line itself. Every class checks its own options when it is built (the network's
config, the LightningModule, the data module: :mod:`tacred.option_rules`); here are the few Trainer options whose
bad values would otherwise fail late or pass silently, ``--num_threads``, and the names the command line gives an
option in an error (``--model.network.num_heads``)."""

from __future__ import annotations

from typing import Any

from tacred.errors import LINK_SOURCES, ConfigError
from tacred.models.config import NetworkConfig
from tacred.option_rules import OptionError, Rule, at_least, shown
from tacred.training.datamodule import TacredDataModule
from tacred.training.module import RelationExtractor

# where each owner's options live on the command line
OPTION_GROUPS: dict[type, str] = {NetworkConfig: "model.network", RelationExtractor: "model", TacredDataModule: "data"}


def command_line_error(err: OptionError) -> ConfigError:
    """``err`` naming its option as the command line does (a linked option by the one it follows)."""
    group = next((g for owner, g in OPTION_GROUPS.items() if issubclass(err.owner, owner)), None)
    if group is None:
        return err
    option = f"{group}.{err.option}"
    return ConfigError(f"--{LINK_SOURCES.get(option, option)} {shown(err.value)}: {err.rule}")


def _epochs(value: Any, trainer: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and (value >= 1 or value == -1)
    return None if value is None or ok else "must be >= 1 (or -1 for no limit)"


# Lightning's Trainer takes many more options; these would otherwise fail late or pass silently
TRAINER_RULES: dict[str, Rule] = {
    "max_epochs": _epochs,
    "min_epochs": at_least(0, none_ok=True),
    "gradient_clip_val": at_least(0, none_ok=True),
    "accumulate_grad_batches": at_least(1, none_ok=True),
    "check_val_every_n_epoch": at_least(1, none_ok=True),
    "log_every_n_steps": at_least(1, none_ok=True),
}


def check_command_line(cfg: Any) -> None:
    """The Trainer options of :data:`TRAINER_RULES`, the accelerator and ``--num_threads`` of a parsed command line,
    before anything is built (raises :class:`ConfigError`)."""
    trainer = cfg.get("trainer") or {}
    for name, rule in TRAINER_RULES.items():
        problem = rule(trainer.get(name), trainer)
        if problem:
            raise ConfigError(f"--trainer.{name} {trainer.get(name)!r}: {problem}")
    if trainer.get("accelerator") is not None:
        from tacred.devices import check_accelerator

        check_accelerator(trainer["accelerator"], "--trainer.accelerator")
    problem = at_least(1, none_ok=True)(cfg.get("num_threads"), cfg)
    if problem:
        raise ConfigError(f"--num_threads {cfg.get('num_threads')!r}: {problem}")

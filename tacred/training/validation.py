"""The checks of the command line itself. Every class checks its own options when it is built (the network's
config, the LightningModule, the data module: :mod:`tacred.options.rules`); here are the few Trainer options whose
bad values would otherwise fail late or pass silently, ``--num_threads``, and the names the command line gives an
option in an error (``--model.network.num_heads``)."""

from __future__ import annotations

from typing import Any

from tacred.errors import LINK_SOURCES, ConfigError
from tacred.models.config import NetworkConfig
from tacred.options.command_checks import check_trainer_and_threads
from tacred.options.rules import OptionError, shown
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


def check_command_line(cfg: Any) -> None:
    """The Trainer options of :data:`TRAINER_RULES`, the accelerator and ``--num_threads`` of a parsed command line,
    before anything is built (raises :class:`ConfigError`)."""
    check_trainer_and_threads(cfg)  # the rules tacred.options.command_checks applied before Lightning loaded
    trainer = cfg.get("trainer") or {}
    if trainer.get("accelerator") is not None:
        from tacred.devices import check_accelerator

        check_accelerator(trainer["accelerator"], "--trainer.accelerator")

"""TacredCLI (tacred/training/cli.py): a command line builds the parser of its own command only."""

from __future__ import annotations

from lightning.pytorch.cli import LightningCLI

from tacred.training.cli import TacredCLI


def test_a_command_line_gets_a_class_that_names_its_command_only() -> None:
    every = LightningCLI.subcommands()
    assert TacredCLI.subcommands() == every
    for command in every:
        cli = TacredCLI.__new__(TacredCLI, args=[command, "--config", "x.yaml"])  # what TacredCLI(args=...) makes
        assert isinstance(cli, TacredCLI) and cli.command == command
        assert cli.subcommands() == {command: every[command]}
        assert type(TacredCLI.__new__(TacredCLI, args=[command])) is type(cli)  # one class per command
    assert type(TacredCLI.__new__(TacredCLI, args=["--help"])) is TacredCLI  # no command: all of them
    assert type(TacredCLI.__new__(TacredCLI, args={"fit": {}})) is TacredCLI  # a parsed mapping: parsed as a whole

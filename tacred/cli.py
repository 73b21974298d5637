"""The ``tacred`` command: Lightning's fit/validate/test/predict plus the project's own sub-commands."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

LIGHTNING_COMMANDS = ("fit", "validate", "test", "predict")
EVAL_COMMANDS = ("validate", "test", "predict")

USAGE = """usage: tacred COMMAND [options]

Training and evaluation (Lightning CLI; `tacred COMMAND --help` for every option):
  fit        train a model:            tacred fit --config configs/tacred.yaml --data.data_dir DIR
  validate   score the dev split:      tacred validate --ckpt_path RUN/checkpoints/best.ckpt
  test       score the test split:     tacred test --ckpt_path RUN/checkpoints/best.ckpt
  predict    predict raw sentences (--sentences FILE|-) or a TACRED file (--data.predict_file FILE)

Tools:
{tools}
"""


def command_help(module: str) -> str | None:
    """The ``HELP`` line of ``tacred.commands.<module>``, read from its source: importing every command (and with it
    torch, Lightning, spaCy) would make ``tacred --help`` take seconds."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(f"tacred.commands.{module}")
    if spec is None or spec.origin is None:
        return None
    for node in ast.parse(Path(spec.origin).read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "HELP" for t in node.targets)
                and isinstance(node.value, ast.Constant)):
            return str(node.value.value)
    return None


def _tools_help() -> str:
    from tacred.commands import COMMANDS

    return "\n".join(f"  {name:<10} {command_help(module) or ''}" for name, module in COMMANDS.items())


def main(argv: list[str] | None = None) -> int:
    """Run one command; a user error prints ``tacred CMD: error: ...`` and returns 2 (``--debug``: the traceback)."""
    from tacred.errors import debug_requested, report

    debug, argv = debug_requested(list(sys.argv[1:] if argv is None else argv))
    command = argv[0] if argv and not argv[0].startswith("-") else ""
    try:
        return _dispatch(argv)
    except BrokenPipeError:
        # `tacred score ... | head`: the reader went away; exit quietly like other Unix tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print(f"{f'tacred {command}'.strip()}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - every failure becomes one line unless --debug asks for the traceback
        if debug:
            raise
        return report(command, err)


def _dispatch(argv: list[str]) -> int:
    os.environ.setdefault("WANDB_MODE", "offline")
    # OpenMP threads that spin while waiting make a busy 2-core machine up to 15x slower (docs/performance.md)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE.format(tools=_tools_help()))
        return 0
    if argv[0] in ("-V", "--version"):
        from tacred import __version__

        print(__version__)
        return 0
    from tacred.commands import COMMANDS

    if argv[0] in COMMANDS:
        return importlib.import_module(f"tacred.commands.{COMMANDS[argv[0]]}").main(argv[1:])
    if argv[0] not in LIGHTNING_COMMANDS:
        known = ", ".join([*LIGHTNING_COMMANDS, *COMMANDS])
        print(f"tacred: error: unknown command {argv[0]!r} (commands: {known}; see tacred --help)", file=sys.stderr)
        return 2
    if argv[0] == "predict":
        routed = _predict_route(argv)
        if routed is not None:
            return routed
    return run_lightning(argv)


def _predict_route(argv: list[str]) -> int | None:
    """``tacred predict``'s own answers: ``--help`` (the raw-sentence options first, then how to predict a file; fast),
    ``--help all`` (Lightning's every option) and ``--sentences``; None: Lightning's predict runs."""
    from tacred.commands.predict_raw import build_parser
    from tacred.commands.predict_raw import main as predict_raw

    rest = argv[1:]
    wants_help = any(a in ("-h", "--help") for a in rest)
    if wants_help and "all" in rest:
        return run_lightning(["predict", "--help"])
    if wants_help:
        build_parser().print_help()
        return 0
    if any(a == "--sentences" or a.startswith("--sentences=") for a in rest):
        return predict_raw(rest)
    return None


def run_lightning(argv: list[str]) -> int:
    """Run a Lightning sub-command; a failed command removes what it added to the run folder (see
    :class:`tacred.errors.RunFolderGuard`), and its error reaches :func:`main` as one line."""
    from tacred.commands.parsing import underscored
    from tacred.training.config_files import check_config_files
    from tacred.training.run_folder import RunFolderGuard

    # `--run-dir` is `--run_dir`, as for the argparse commands (whose parser, OneLineParser, does the same)
    argv = [argv[0], *underscored(argv[1:], stop=None)]

    from tacred.training.quiet import tacred_log_lines

    guard = RunFolderGuard()
    with tacred_log_lines():
        try:
            check_config_files(argv)
            ckpt_path = _option(argv, "--ckpt_path")
            from tacred.checkpoints import check_checkpoint_file, is_lightning_ckpt_name

            checkpoint = None
            if ckpt_path is not None and not is_lightning_ckpt_name(ckpt_path) and Path(ckpt_path).is_dir():
                from tacred.checkpoints import resolve_checkpoint

                resolved = str(resolve_checkpoint(ckpt_path))  # a run folder: its best.ckpt, else last.ckpt
                argv = [resolved if a == ckpt_path else a.replace(f"--ckpt_path={ckpt_path}", f"--ckpt_path={resolved}")
                        for a in argv]
                ckpt_path = resolved
            if ckpt_path is not None and not is_lightning_ckpt_name(ckpt_path):
                check_checkpoint_file(ckpt_path)  # a wrong path answered in ~0.1 s, before torch and Lightning load
                from tacred.checkpoints import read_checkpoint

                checkpoint = read_checkpoint(ckpt_path)  # a corrupt file: one clear line before LightningCLI reads it
                warn_replaced_options(argv, checkpoint)
                argv = with_checkpoint_config(argv, checkpoint)
            from tacred.training.cli import TacredCLI

            TacredCLI(args=argv, guard=guard, checkpoint=None if checkpoint is None else (ckpt_path, checkpoint))
        except BaseException:
            guard.undo()
            raise
    return 0


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def warn_replaced_options(argv: list[str], checkpoint: dict[str, Any]) -> None:
    """LightningCLI applies a ``--ckpt_path``'s model hyperparameters over the command line: say which options given
    on it are replaced (``--model.lr 0.01`` with a checkpoint trained at 0.1 tests or resumes at 0.1)."""
    saved = checkpoint.get("hyper_parameters") or {}
    for arg in argv[1:]:
        name = arg.split("=", 1)[0]
        if name.startswith("--model.") and name[len("--model."):].split(".")[0] in saved:
            logging.getLogger("tacred").warning(
                "%s is replaced by the checkpoint's own value: --ckpt_path restores the model's hyperparameters "
                "(Lightning CLI); start a new run without --ckpt_path to change them", name)


def checkpoint_run_folder(ckpt_path: str | Path) -> Path:
    """The run folder a checkpoint belongs to: ``RUN`` for ``RUN/checkpoints/x.ckpt``, else the checkpoint's folder."""
    folder = Path(ckpt_path).parent
    return folder.parent if folder.name == "checkpoints" else folder


def with_checkpoint_config(argv: list[str], checkpoint: dict[str, Any]) -> list[str]:
    """``tacred test --ckpt_path X`` without ``--config``: the configuration saved inside the checkpoint becomes the
    first ``--config`` (jsonargparse reads a config given as YAML text), so the command line applies on top of it;
    LightningCLI then applies the checkpoint's model hyperparameters, as it does for every ``--ckpt_path``."""
    if argv[0] not in EVAL_COMMANDS or _option(argv, "--config") is not None or _option(argv, "-c") is not None:
        return argv
    ckpt_path = _option(argv, "--ckpt_path")
    from tacred.checkpoints import CheckpointError

    config: Any = checkpoint.get("tacred_config")
    if not isinstance(config, str) or not config:
        raise CheckpointError(f"{ckpt_path}: holds no tacred configuration (not written by `tacred fit`?); "
                              "pass the run's config.yaml with --config")
    import yaml

    try:
        data = yaml.safe_load(config)
    except yaml.YAMLError as err:
        raise CheckpointError(f"{ckpt_path}: its stored configuration is not valid YAML ({err})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{ckpt_path}: its stored configuration is not a mapping of options")
    for key in ("ckpt_path", "resume", "verbose"):
        data.pop(key, None)
    # outputs go beside the checkpoint (the run it belongs to), not into its training path taken from the current
    # folder; --run_dir on the command line still chooses
    data["run_dir"] = str(checkpoint_run_folder(ckpt_path))
    (data.get("trainer") or {}).pop("default_root_dir", None)
    # checkpoints written before data.embedding_dim became a link target of model.network.word_dim hold both
    (data.get("data") or {}).pop("embedding_dim", None)
    # how the model was trained (4 GPUs, DDP, 2 nodes) says nothing about where it is evaluated: defaults apply
    for key in ("devices", "num_nodes", "strategy", "accelerator"):
        (data.get("trainer") or {}).pop(key, None)
    return [argv[0], "--config", yaml.safe_dump(data), *argv[1:]]

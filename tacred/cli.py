"""The ``tacred`` command: Lightning's fit/validate/test/predict plus the project's own sub-commands."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

LIGHTNING_COMMANDS = ("fit", "validate", "test", "predict")

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

    width = max(10, *(len(name) for name in COMMANDS))
    return "\n".join(f"  {name:<{width}} {command_help(module) or ''}" for name, module in COMMANDS.items())


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
    """Run a Lightning sub-command in this process: ``fit`` through :func:`tacred.training.fit`, the others through
    :func:`tacred.training.launch.lightning_command`; a failed command removes what it added to the run folder, and
    its error reaches :func:`main` as one line."""
    from tacred.commands.parsing import underscored
    from tacred.training.quiet import tacred_log_lines

    # `--run-dir` is `--run_dir`, as for the argparse commands (whose parser, OneLineParser, does the same)
    argv = [argv[0], *underscored(argv[1:], stop=None)]
    with tacred_log_lines():
        if argv[0] == "fit":
            from tacred.training.api import fit

            fit(args=argv[1:])
        else:
            from tacred.training.launch import lightning_command

            lightning_command(argv)
    close_process_group()
    return 0


def close_process_group() -> None:
    """Destroy the process group a finished DDP command joined, while the interpreter is whole. Left to the exit,
    gloo's worker threads can outlive it and abort the process (SIGABRT, "terminate called without an active
    exception"), which fails a torchrun launch that had succeeded. Only after success: a process that failed must
    not wait in a collective for members that may be gone."""
    dist = sys.modules.get("torch.distributed")  # never loads torch for a command that did not
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()

"""``tacred ensemble``: train K seeds (or take K checkpoints), predict dev and test with each, and combine them
by majority vote and by averaging probabilities; every member, their mean ± std and both ensembles are scored.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tacred.commands.parsing import OneLineParser
from tacred.errors import report
from tacred.experiments.ensemble import SPLITS, EnsembleError, run_ensemble, train_members

HELP = "Train K seeds (or take K checkpoints) and score each member, their mean ± std, and two ensembles."


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="tacred ensemble", description=HELP, allow_abbrev=False,
        epilog="Any other option (e.g. --data.data_dir DIR --trainer.max_epochs 30) is passed to every `tacred fit`. "
               "Seeds whose run finished are skipped, and an interrupted one resumes from its last.ckpt, so the same "
               "command can simply be run again.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", action="append", metavar="CFG", help="fit config(s) for the members (repeatable)")
    source.add_argument("--checkpoints", nargs="+", metavar="CKPT", help="use these trained checkpoints instead")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5], help="member seeds (default: 1 2 3 4 5)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (member runs go to DIR/seed-S)")
    parser.add_argument("--use", choices=("best", "last"), default="best",
                        help="which checkpoint of a trained member to use: best dev F1 (default) or the last epoch")
    parser.add_argument("--data_dir", metavar="DIR", help="data folder for predicting (default: each member's own)")
    parser.add_argument("--splits", nargs="+", default=list(SPLITS), choices=SPLITS, help="splits to predict and score")
    parser.add_argument("--batch_size", type=int, default=256, help="prediction batch size (default: 256)")
    parser.add_argument("--device", default="auto", help="where members predict: auto (CUDA when present, else the "
                                                         "CPU), cpu, cuda or cuda:N (default auto)")
    return parser


# -- main -------------------------------------------------------------------------------------------------
def check_arguments(args: argparse.Namespace) -> None:
    """Refuse, before any work, what would give a meaningless ensemble or fail late: fewer than two distinct members,
    a device torch does not know or does not have, a batch size below 1."""
    from tacred.checkpoints import resolve_checkpoint
    from tacred.devices import DeviceError, torch_device

    for config in args.config or ():  # the files first: a mistyped one is answered before torch loads
        if not Path(config).is_file():
            raise EnsembleError(f"--config {config}: no such file")
    for given in args.checkpoints or ():
        resolve_checkpoint(given)
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise EnsembleError(f"--data_dir {args.data_dir}: no such folder")
    try:
        args.device = torch_device(args.device)
    except DeviceError as err:
        raise EnsembleError(f"--{err}") from None
    if args.batch_size < 1:
        raise EnsembleError(f"--batch_size {args.batch_size}: must be at least 1")
    if args.checkpoints:
        resolved: dict[Path, str] = {}
        for given in args.checkpoints:
            path = Path(given).resolve()
            if path in resolved:
                raise EnsembleError(f"--checkpoints: {given} is given twice (also as {resolved[path]}); "
                                    "an ensemble needs distinct members")
            resolved[path] = given
        if len(resolved) < 2:
            raise EnsembleError(f"--checkpoints {' '.join(args.checkpoints)}: an ensemble needs at least 2 checkpoints")
    elif len(set(args.seeds)) < 2 or len(set(args.seeds)) != len(args.seeds):
        raise EnsembleError(f"--seeds {' '.join(map(str, args.seeds))}: an ensemble needs at least 2 distinct seeds")


def run(args: argparse.Namespace, fit_args: list[str]) -> int:
    check_arguments(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.checkpoints:
        if fit_args:
            raise EnsembleError(f"unrecognized arguments with --checkpoints: {' '.join(fit_args)}")
        checkpoints = [Path(c) for c in args.checkpoints]
        names = [f"member-{i + 1}" for i in range(len(checkpoints))]
    else:
        checkpoints = train_members(args.config, args.seeds, out, fit_args, args.use)
        names = [f"seed-{s}" for s in args.seeds]
    print(run_ensemble(checkpoints, names, args.splits, out, args.data_dir, args.batch_size, args.device))
    print(f"summary: {out / 'summary.md'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args, fit_args = build_parser().parse_known_args(argv)
    from tacred.checkpoints import CheckpointError

    try:
        return run(args, fit_args)
    except (EnsembleError, CheckpointError, OSError, ValueError) as err:  # ValueError: data and label errors
        return report("ensemble", err)

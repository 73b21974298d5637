"""``tacred threshold``: tune the no-relation threshold of a checkpoint on dev, or apply one to a split."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from tacred.commands.parsing import OneLineParser
from tacred.errors import report

if TYPE_CHECKING:
    from tacred.evaluation.predictions import Evaluation

HELP = "Tune a no-relation threshold on dev (threshold.json) or apply one to a split and score it."


def _source(p: argparse.ArgumentParser, split: str) -> None:
    p.add_argument("--ckpt_path", required=True, metavar="CKPT", help="a checkpoint written by tacred fit")
    p.add_argument("--split", default=split, choices=("train", "dev", "test"), help=f"split to use (default: {split})")
    p.add_argument("--file", default=None, metavar="JSON", help="a TACRED JSON/JSONL file instead of --split")
    p.add_argument("--data_dir", default=None, metavar="DIR", help="folder of the split files (default: the run's)")
    p.add_argument("--batch_size", type=int, default=100, help="examples per forward pass (default: 100)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="tacred threshold", description=HELP,
        epilog="Rule: predict the best relation r* iff log p(r*) > log p(no_relation) + T, else no_relation. "
               "T = 0 is the plain argmax; T > 0 favours precision, T < 0 recall.")
    sub = parser.add_subparsers(dest="action", required=True, metavar="{tune,apply}")
    tune = sub.add_parser("tune", help="choose T maximising F1 (or recall at a target precision, or one T per relation "
                                       "at a minimum precision) on dev")
    _source(tune, "dev")
    goal = tune.add_mutually_exclusive_group()
    goal.add_argument("--target_precision", dest="target_precision", type=float, default=None,
                      metavar="P", help="maximise recall subject to precision >= P (0 < P <= 1) instead of F1")
    goal.add_argument("--min_precision", type=float, default=None, metavar="P",
                      help="one threshold per relation: each relation's most recall at precision >= P on dev; a "
                           "relation that cannot reach P is switched off (never predicted)")
    tune.add_argument("--output", "-o", default=None, metavar="JSON",
                      help="where to write (default: threshold.json next to the checkpoint)")
    apply = sub.add_parser("apply", help="score a split with a threshold and write thresholded predictions")
    _source(apply, "test")
    apply.add_argument("--threshold", default=None, metavar="T|FILE",
                       help="a number or a threshold.json (default: threshold.json next to the checkpoint)")
    apply.add_argument("--output", "-o", default=None, metavar="JSONL",
                       help="predictions file (default: RUN/<split>_predictions_thresholded.jsonl)")
    return parser


def _beside_checkpoint(ckpt_path: str) -> Path:
    """Where ``threshold.json`` goes: beside the checkpoint (a run folder's best.ckpt, else last.ckpt), where
    ``load_model`` and ``tacred serve`` look for it."""
    from tacred.checkpoints import resolve_checkpoint

    return resolve_checkpoint(ckpt_path).parent / "threshold.json"


def _evaluation(args: argparse.Namespace) -> Evaluation:
    """The checkpoint's probabilities over ``--split`` or ``--file``, through the one evaluation route."""
    from tacred.training.api import evaluate

    return evaluate(args.ckpt_path, args.file or args.split, data_dir=args.data_dir, batch_size=args.batch_size)


def _tune_relations(args: argparse.Namespace) -> int:
    from tacred.evaluation.threshold import format_relation_thresholds, tune_relation_thresholds

    result = _evaluation(args)
    tuned = tune_relation_thresholds(result.probs, result.gold, result.labels, result.no_relation, args.min_precision)
    out = Path(args.output) if args.output else _beside_checkpoint(args.ckpt_path)
    tuned.save(out, checkpoint=str(Path(args.ckpt_path).resolve()), data=result.source)
    name = Path(args.file).name if args.file else args.split
    print(f"tuned per relation for precision >= {args.min_precision:.2%} on {result.source}, {tuned.examples} examples")
    print(format_relation_thresholds(tuned, name))
    print(f"threshold: {out} (load_model, tacred extract, predict and serve use it beside the checkpoint)")
    return 0


def _tune(args: argparse.Namespace) -> int:
    from tacred.evaluation.threshold import format_comparison, tune_threshold

    if args.min_precision is not None:
        return _tune_relations(args)
    result = _evaluation(args)
    source = result.source
    tuned = tune_threshold(result.probs, result.gold, result.no_relation_id, args.target_precision)
    out = Path(args.output) if args.output else _beside_checkpoint(args.ckpt_path)
    tuned.save(out, checkpoint=str(Path(args.ckpt_path).resolve()), data=source)
    name = Path(args.file).name if args.file else args.split
    goal = f"recall at precision >= {args.target_precision:.2%}" if args.target_precision else "F1"
    print(f"tuned for {goal} on {source}, {tuned.examples} examples")
    print(format_comparison(tuned.threshold, tuned.untuned, tuned.tuned, name))
    print(f"{name} F1 before: {tuned.untuned.f1:.3%}  after: {tuned.tuned.f1:.3%}")
    print(f"threshold: {out}\nuse it: tacred test --ckpt_path {args.ckpt_path} --model.no_relation_threshold {out}")
    return 0


def _apply(args: argparse.Namespace) -> int:
    from tacred.analysis.inspection import run_folder
    from tacred.evaluation.decision import label_thresholds
    from tacred.evaluation.scoring import format_report
    from tacred.evaluation.threshold import format_comparison, load_threshold, micro_scores

    given = args.threshold if args.threshold is not None else _beside_checkpoint(args.ckpt_path)
    if args.threshold is None and not Path(given).is_file():
        raise FileNotFoundError(f"no --threshold given and no {given} (run `tacred threshold tune` first)")
    result = _evaluation(args)
    threshold = label_thresholds(load_threshold(given), result.labels, result.no_relation, given)
    pred = result.predicted(threshold)
    name = Path(args.file).stem if args.file else args.split
    out = Path(args.output) if args.output else run_folder(args.ckpt_path) / f"{name}_predictions_thresholded.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        for i, ex in enumerate(result.examples):
            f.write(json.dumps({"id": ex.id, "relation": result.labels[pred[i]], "gold": result.labels[result.gold[i]],
                                "probability": round(float(result.probs[i, pred[i]]), 6)}) + "\n")
    print(format_report(result.score(threshold)))
    untuned = micro_scores(result.predicted(), result.gold, result.no_relation_id)
    print(format_comparison(threshold, untuned, micro_scores(pred, result.gold, result.no_relation_id), name))
    print(f"predictions: {out}")
    return 0


def check_options(args: argparse.Namespace) -> None:
    """What can be checked before the checkpoint loads and dev is evaluated: the precision goal, the checkpoint, the
    data files named."""
    from tacred.checkpoints import resolve_checkpoint
    from tacred.errors import ConfigError

    for flag in ("target_precision", "min_precision"):
        value = getattr(args, flag, None)
        if value is not None and not 0.0 < value <= 1.0:
            raise ConfigError(f"--{flag} {value:g}: a precision, above 0 and at most 1 (0.8 for 80%)")
    resolve_checkpoint(args.ckpt_path)
    if args.file is not None and not Path(args.file).is_file():
        raise FileNotFoundError(f"--file {args.file}: no such file")
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise FileNotFoundError(f"--data_dir {args.data_dir}: no such folder")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.checkpoints import CheckpointError
    from tacred.errors import ConfigError, LabelError

    if args.batch_size < 1:
        return report(f"threshold {args.action}", ConfigError("--batch_size must be at least 1"))
    try:
        check_options(args)
        return _tune(args) if args.action == "tune" else _apply(args)
    except (CheckpointError, LabelError, FileNotFoundError, ValueError, OSError) as err:
        return report(f"threshold {args.action}", err)

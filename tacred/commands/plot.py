"""``tacred plot KIND``: PNG figures from a checkpoint and a data split, or from stored results."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from tacred.commands.parsing import OneLineParser
from tacred.errors import TacredError, report

HELP = "Draw attention heatmaps, confusion matrices, per-relation scores, training curves or PR curves as PNG."
KINDS = ("attention", "confusion", "relations", "curves", "pr")


def _model_source(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument("--ckpt_path", required=required, metavar="CKPT", help="a checkpoint written by tacred fit")
    p.add_argument("--split", default="dev", choices=("train", "dev", "test"), help="split to run (default: dev)")
    p.add_argument("--file", default=None, metavar="JSON", help="a TACRED JSON/JSONL file instead of --split")
    p.add_argument("--data_dir", default=None, metavar="DIR", help="folder of the split files (default: the run's)")


def _threshold(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", default=None, metavar="T|FILE",
                   help="no-relation threshold (a number or threshold.json); default: the argmax")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="tacred plot", description=HELP)
    sub = parser.add_subparsers(dest="kind", required=True, metavar="{" + ",".join(KINDS) + "}")
    att = sub.add_parser("attention", help="self-attention per head and position-aware weights over one sentence")
    _model_source(att, required=True)
    which = att.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", default=None, help="the example's id")
    which.add_argument("--index", type=int, default=None, help="the example's position in the split (0-based)")
    att.add_argument("--layer", type=int, nargs="+", default=None, help="1-based layers to draw (default: all)")
    att.add_argument("--unlabelled", action="store_true",
                     help="the sentences have no gold relation (e.g. from tacred annotate): show no verdict; "
                          "assumed for a --file in which every relation is no_relation")
    for name, text in (("confusion", "row-normalised confusion matrix of the relations"),
                       ("relations", "per-relation precision/recall/F1 bars (official scorer)")):
        p = sub.add_parser(name, help=text)
        _model_source(p, required=False)
        _threshold(p)
        p.add_argument("--predictions", default=None, metavar="JSONL",
                       help="stored predictions (test_predictions.jsonl: id, relation, gold) instead of a checkpoint")
        p.add_argument("--gold", default=None, metavar="FILE", help="gold labels when --predictions has no 'gold'")
        if name == "relations":
            p.add_argument("--scores", default=None, metavar="JSON", help="stored scores (test_metrics.json)")
    cur = sub.add_parser("curves", help="train loss, dev F1 and learning rate per epoch from metrics.csv")
    cur.add_argument("--run_dir", default=None, metavar="RUN", help="a run folder holding metrics.csv")
    cur.add_argument("--metrics", default=None, metavar="CSV", help="a metrics.csv file")
    cur.add_argument("--ckpt_path", default=None, metavar="CKPT", help="a checkpoint; its run folder's metrics.csv")
    pr = sub.add_parser("pr", help="precision-recall curve of the no-relation threshold, argmax point marked")
    _model_source(pr, required=True)
    _threshold(pr)
    for p in sub.choices.values():
        p.add_argument("--output", "-o", default=None, metavar="PNG", help="where to write (default: RUN/plots/...)")
        p.add_argument("--dpi", type=int, default=100, help="resolution (default: 100)")
    return parser


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80] or "example"


def _run_model(args: argparse.Namespace) -> tuple[Any, Path, str]:
    """The checkpoint's probabilities over ``--split`` or ``--file`` (the one evaluation route,
    :func:`tacred.training.evaluate`), the plots folder and the split's name."""
    from tacred.analysis.inspection import run_folder
    from tacred.training.api import evaluate

    result = evaluate(args.ckpt_path, args.file or args.split, data_dir=args.data_dir)
    name = Path(args.file).stem if args.file else args.split
    return result, run_folder(args.ckpt_path) / "plots", name


def draw(args: argparse.Namespace) -> tuple[Any, Path]:
    """Build the requested figure; return it with its default output path."""
    from tacred.analysis import inspection, plots
    from tacred.evaluation.scoring import read_aligned, read_predictions_with_gold, read_score, score
    from tacred.evaluation.threshold import load_threshold, micro_scores, sweep

    threshold = load_threshold(args.threshold) if getattr(args, "threshold", None) is not None else None
    if args.kind == "attention":
        model, data, source = inspection.load_split(args.ckpt_path, args.split, args.data_dir, args.file)
        index = inspection.find_example(data, source, args.id, args.index)
        # a --file of tacred annotate's output carries the default relation on every line: it has no gold labels
        unlabelled = args.unlabelled or (args.file is not None and inspection.only_default_relation(model, data))
        view = inspection.attention_view(model, data, index, labelled=not unlabelled)
        layers = None if args.layer is None else [n - 1 for n in args.layer]
        name = Path(args.file).stem if args.file else args.split
        out = inspection.run_folder(args.ckpt_path) / "plots" / f"attention_{name}_{_safe(view.id)}.png"
        return plots.attention_figure(view, layers), out
    if args.kind == "curves":
        given = [x for x in (args.run_dir, args.metrics, args.ckpt_path) if x is not None]
        if len(given) != 1:
            raise TacredError("give exactly one of --run_dir, --metrics or --ckpt_path")
        source = Path(args.metrics) if args.metrics else (
            Path(args.run_dir) if args.run_dir else inspection.run_folder(args.ckpt_path))
        curves = inspection.read_training_curves(source)
        folder = source.parent if source.suffix == ".csv" else source
        return plots.training_curves_figure(curves, f"Training curves: {folder}"), folder / "plots" / "curves.png"
    if args.kind == "pr":
        result, folder, name = _run_model(args)
        curve = sweep(result.probs, result.gold, result.no_relation_id)
        default = micro_scores(result.predicted(), result.gold, result.no_relation_id)
        from tacred.checkpoints import resolve_checkpoint

        stored = resolve_checkpoint(args.ckpt_path).parent / "threshold.json"  # `tacred threshold tune`'s, if any
        threshold = threshold if threshold is not None else (load_threshold(stored) if stored.is_file() else None)
        tuned = None
        if threshold is not None:
            tuned = (threshold, micro_scores(result.predicted(threshold), result.gold, result.no_relation_id))
        return plots.precision_recall_figure(curve, default, tuned, f"No-relation threshold on {name}"), folder / f"pr_{name}.png"
    # confusion / relations: from a checkpoint, stored predictions or (relations) stored scores
    sources = [x for x in (args.ckpt_path, args.predictions, getattr(args, "scores", None)) if x is not None]
    if len(sources) != 1:
        options = "--ckpt_path, --predictions" + (" or --scores" if args.kind == "relations" else "")
        raise TacredError(f"give exactly one of {options}")
    if args.kind == "relations" and args.scores is not None:
        scores = Path(args.scores)
        return plots.relation_scores_figure(read_score(args.scores)), scores.parent / "plots" / f"relations_{scores.stem}.png"
    if args.predictions is not None:
        if threshold is not None:
            raise TacredError("--threshold needs --ckpt_path (stored predictions hold no probabilities)")
        gold, pred = (read_aligned(args.gold, args.predictions) if args.gold is not None
                      else read_predictions_with_gold(args.predictions))
        folder, name, no_relation = Path(args.predictions).parent / "plots", Path(args.predictions).stem, "no_relation"
    else:
        result, folder, name = _run_model(args)
        gold, pred = result.names(result.gold), result.names(result.predicted(threshold))
        no_relation = result.labels[result.no_relation_id]
    if args.kind == "confusion":
        return plots.confusion_figure(gold, pred, no_relation), folder / f"confusion_{name}.png"
    return plots.relation_scores_figure(score(gold, pred, no_relation)), folder / f"relations_{name}.png"


def check_files(args: argparse.Namespace) -> None:
    """The files a plot reads, found before torch or matplotlib loads."""
    from tacred.checkpoints import resolve_checkpoint

    if getattr(args, "ckpt_path", None):
        resolve_checkpoint(args.ckpt_path)
    for flag in ("file", "predictions", "gold", "scores", "metrics"):
        value = getattr(args, flag, None)
        if value is not None and not Path(value).is_file():
            raise FileNotFoundError(f"--{flag} {value}: no such file")
    for flag in ("data_dir", "run_dir"):
        value = getattr(args, flag, None)
        if value is not None and not Path(value).is_dir():
            raise FileNotFoundError(f"--{flag} {value}: no such folder")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.checkpoints import CheckpointError
    from tacred.errors import LabelError

    try:
        check_files(args)  # before the plotting modules (torch, matplotlib) load
        from tacred.analysis.plots import save_figure

        fig, default = draw(args)
        path = save_figure(fig, args.output or default, dpi=args.dpi)
    except (CheckpointError, LabelError, TacredError, FileNotFoundError, ValueError, OSError) as err:
        return report(f"plot {args.kind}", err)
    print(f"{args.kind}: {path}")
    return 0

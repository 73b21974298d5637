"""``tacred ensemble``: train K seeds (or take K checkpoints), predict dev and test with each, and combine them
by majority vote and by averaging probabilities; every member, their mean ± std and both ensembles are scored.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tacred.ensemble import (
    SummaryRow,
    align_labels,
    average_probabilities,
    format_summary,
    majority_vote,
    mean_std,
    votes,
)
from tacred.errors import TacredError, report

HELP = "Train K seeds (or take K checkpoints) and score each member, their mean ± std, and two ensembles."
FINISHED = "fit_finished.json"
SPLITS = ("dev", "test")


class EnsembleError(TacredError):
    """A problem the user can fix (a failed member run, mismatched members, a missing file)."""


@dataclass
class MemberPredictions:
    """One member's probabilities for one split, in the split's example order."""

    ids: list[str]
    gold: list[str]
    labels: list[str]
    no_relation: str
    probs: np.ndarray  # (N, C)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    parser.add_argument("--data-dir", metavar="DIR", help="data folder for predicting (default: each member's own)")
    parser.add_argument("--splits", nargs="+", default=list(SPLITS), choices=SPLITS, help="splits to predict and score")
    parser.add_argument("--batch-size", type=int, default=256, help="prediction batch size (default: 256)")
    parser.add_argument("--device", default="cpu", help="torch device for predicting (default: cpu)")
    return parser


# -- training ---------------------------------------------------------------------------------------------
def train_members(configs: list[str], seeds: list[int], out: Path, fit_args: list[str], use: str) -> list[Path]:
    """Run ``tacred fit`` once per seed (skipping finished runs) and return the chosen checkpoints."""
    if len(set(seeds)) != len(seeds):
        raise EnsembleError(f"--seeds has repeated values: {seeds}")
    checkpoints = []
    for seed in seeds:
        run = out / f"seed-{seed}"
        marker = run / FINISHED
        command = [sys.executable, "-m", "tacred", "fit", *(a for c in configs for a in ("--config", c)),
                   *fit_args, "--seed_everything", str(seed), "--run_dir", str(run)]
        if marker.is_file():
            print(f"seed {seed}: finished earlier ({marker}), skipped", flush=True)
        else:
            print(f"seed {seed}: {' '.join(command[2:])}", flush=True)
            proc = subprocess.run(command, env={**os.environ})
            if proc.returncode != 0:
                raise EnsembleError(f"seed {seed}: tacred fit failed with exit code {proc.returncode} (run folder "
                                    f"{run}); run the same command again to resume it")
            marker.write_text(json.dumps({"seed": seed, "command": command[2:]}, indent=1), encoding="utf-8")
        checkpoint = run / "checkpoints" / f"{use}.ckpt"
        if not checkpoint.is_file():
            raise EnsembleError(f"seed {seed}: {checkpoint} not found after training")
        checkpoints.append(checkpoint)
    return checkpoints


# -- predicting -------------------------------------------------------------------------------------------
def predict_member(checkpoint: Path, splits: list[str], data_dir: str | None, batch_size: int,
                   device: str) -> dict[str, MemberPredictions]:
    """Probabilities of one checkpoint on each split (in-process, no Trainer), with its own data options and
    vocabularies."""
    from tacred.inspection import datamodule_for
    from tacred.models.module import RelationExtractor

    model = RelationExtractor.from_checkpoint(checkpoint, map_location=device)
    data = datamodule_for(checkpoint, data_dir)
    labels = model.label_names()
    result = {}
    for split in splits:
        encoded = data.encoded(split)
        probs = model.split_probabilities(encoded, batch_size).double().numpy()
        gold = [labels[i] for i in encoded.labels.tolist()]
        result[split] = MemberPredictions(list(encoded.ids), gold, labels, model.vocab.no_relation, probs)
    return result


def _stack(members: list[tuple[str, MemberPredictions]], split: str) -> tuple[np.ndarray, MemberPredictions]:
    first_name, first = members[0]
    stacked = [first.probs]
    for name, member in members[1:]:
        if member.ids != first.ids or member.gold != first.gold:
            raise EnsembleError(f"{split}: {name} predicted other examples (or other gold labels) than {first_name}; "
                                f"members must be scored on the same data (use --data-dir)")
        stacked.append(align_labels(member.probs, member.labels, first.labels, member=name))
    return np.stack(stacked), first  # (K, N, C)


def write_predictions(path: Path, ref: MemberPredictions, best: np.ndarray, probs: np.ndarray,
                      counts: np.ndarray | None = None) -> list[str]:
    """JSONL: id, predicted relation, gold, the (mean) probability of the prediction and, for votes, its votes."""
    predicted = [ref.labels[i] for i in best.tolist()]
    with open(path, "w", encoding="utf-8") as f:
        for i, ident in enumerate(ref.ids):
            row: dict[str, Any] = {"id": ident, "relation": predicted[i], "gold": ref.gold[i],
                                   "probability": round(float(probs[i, best[i]]), 6)}
            if counts is not None:
                row["votes"] = int(counts[i, best[i]])
            f.write(json.dumps(row) + "\n")
    return predicted


# -- main -------------------------------------------------------------------------------------------------
def check_arguments(args: argparse.Namespace) -> None:
    """Refuse, before any work, what would give a meaningless ensemble or fail late: fewer than two distinct members,
    a device torch does not know or does not have, a batch size below 1."""
    import torch

    try:
        device = torch.device(args.device)
    except (RuntimeError, ValueError):
        raise EnsembleError(f"--device {args.device!r}: not a torch device (e.g. cpu, cuda, cuda:1, mps)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise EnsembleError(f"--device {args.device!r}: no CUDA GPU is available")
    if args.batch_size < 1:
        raise EnsembleError(f"--batch-size {args.batch_size}: must be at least 1")
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
    from tacred.scoring import score

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
    predictions = []
    for name, checkpoint in zip(names, checkpoints, strict=True):
        print(f"predicting {', '.join(args.splits)} with {name}", flush=True)
        predictions.append(predict_member(checkpoint, args.splits, args.data_dir, args.batch_size, args.device))

    member_scores: list[dict[str, tuple[float, float, float]]] = [{} for _ in checkpoints]
    ensembles: dict[str, dict[str, tuple[float, float, float]]] = {"majority vote": {}, "average probabilities": {}}
    for split in args.splits:
        probs, ref = _stack([(n, p[split]) for n, p in zip(names, predictions, strict=True)], split)
        no_relation = ref.no_relation
        for k, name in enumerate(names):
            pred = write_predictions(out / f"{split}_predictions.{name}.jsonl", ref, probs[k].argmax(1), probs[k])
            s = score(ref.gold, pred, no_relation=no_relation)
            member_scores[k][split] = (s.precision, s.recall, s.f1)
        mean = average_probabilities(probs)
        combos = {"majority vote": ("vote", majority_vote(probs), votes(probs)),
                  "average probabilities": ("average", mean.argmax(1), None)}
        for title, (tag, best, counts) in combos.items():
            pred = write_predictions(out / f"{split}_predictions.{tag}.jsonl", ref, best, mean, counts)
            s = score(ref.gold, pred, no_relation=no_relation)
            ensembles[title][split] = (s.precision, s.recall, s.f1)

    rows = [SummaryRow(name, scores) for name, scores in zip(names, member_scores, strict=True)]
    stats = {split: [mean_std([m[split][i] for m in member_scores]) for i in range(3)] for split in args.splits}
    rows.append(SummaryRow(f"members: mean ± std (n={len(checkpoints)})",
                           {s: tuple(v[0] for v in stats[s]) for s in args.splits},  # type: ignore[misc]
                           {s: tuple(v[1] for v in stats[s]) for s in args.splits}))  # type: ignore[misc]
    rows += [SummaryRow(f"ensemble: {title}", scores) for title, scores in ensembles.items()]
    table = format_summary(rows, args.splits)
    text = (f"# Ensemble of {len(checkpoints)} models\n\nMicro P/R/F1 (%) from the official TACRED scorer; std is the "
            f"sample standard deviation over members. Majority-vote ties go to the tied label with the largest summed "
            f"probability.\n\n{table}\n\nCheckpoints:\n" + "".join(f"- {n}: {c}\n" for n, c in zip(names, checkpoints, strict=True)))
    (out / "summary.md").write_text(text, encoding="utf-8")
    (out / "summary.json").write_text(json.dumps({
        "checkpoints": [str(c) for c in checkpoints],
        "members": [{"name": n, **{s: dict(zip(("precision", "recall", "f1"), m[s], strict=True)) for s in args.splits}}
                    for n, m in zip(names, member_scores, strict=True)],
        "ensembles": {t: {s: dict(zip(("precision", "recall", "f1"), v[s], strict=True)) for s in args.splits}
                      for t, v in ensembles.items()},
    }, indent=1), encoding="utf-8")
    print(table)
    print(f"summary: {out / 'summary.md'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args, fit_args = build_parser().parse_known_args(argv)
    from tacred.checkpoints import CheckpointError

    try:
        return run(args, fit_args)
    except (EnsembleError, CheckpointError, OSError, ValueError) as err:  # ValueError: data and label errors
        return report("ensemble", err)

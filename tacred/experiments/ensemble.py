"""Ensembles of independently trained models: majority vote (Bilan & Roth 2018, ties broken by summed
probability) and probability averaging (Zhang et al. 2017), label alignment, and mean ± std over members;
:func:`run_ensemble` trains or takes the members, predicts, scores and writes what ``tacred ensemble`` leaves.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tacred.errors import TacredError
from tacred.evaluation.predictions import Evaluation
from tacred.io import prediction_record, write_json, write_jsonl, write_text_atomic

FINISHED = "fit_finished.json"
SPLITS = ("dev", "test")


class EnsembleError(TacredError):
    """A problem the user can fix (a failed member run, mismatched members, a missing file)."""


def check_member_probabilities(probs: np.ndarray) -> np.ndarray:
    """Validate (K, N, C) member probabilities: K ≥ 1 members, finite, non-negative."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 3:
        raise ValueError(f"expected member probabilities of shape (members, examples, labels), got {probs.shape}")
    if probs.shape[0] == 0 or probs.shape[2] == 0:
        raise ValueError(f"need at least one member and one label, got shape {probs.shape}")
    bad = ~np.isfinite(probs) | (probs < 0)
    if bad.any():
        member, example, label = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"member {member}, example {example}, label {label}: probability "
                         f"{probs[member, example, label]!r} is not a finite non-negative number")
    return probs


def votes(probs: np.ndarray) -> np.ndarray:
    """(K, N, C) probabilities → (N, C) number of members whose argmax is each label."""
    probs = check_member_probabilities(probs)
    k, n, c = probs.shape
    counts = np.zeros((n, c), dtype=np.int64)
    best = probs.argmax(axis=2)  # (K, N)
    for member in range(k):
        counts[np.arange(n), best[member]] += 1
    return counts


def majority_vote(probs: np.ndarray) -> np.ndarray:
    """(K, N, C) → (N,) label ids: the label most members predict.

    A tie between labels goes to the tied label with the largest probability summed over all members; if
    that is tied too, to the smallest label id. Labels outside the tie never win, however probable.
    """
    probs = check_member_probabilities(probs)
    counts = votes(probs)  # (N, C)
    tied = counts == counts.max(axis=1, keepdims=True)  # (N, C)
    summed = probs.sum(axis=0)  # (N, C)
    return np.where(tied, summed, -np.inf).argmax(axis=1)  # argmax takes the first (smallest id) of equals


def average_probabilities(probs: np.ndarray) -> np.ndarray:
    """(K, N, C) → (N, C): the members' mean probability of every label."""
    return check_member_probabilities(probs).mean(axis=0)


def average_vote(probs: np.ndarray) -> np.ndarray:
    """(K, N, C) → (N,) label ids: argmax of the averaged probabilities (smallest id on exact ties)."""
    return average_probabilities(probs).argmax(axis=1)


def align_labels(probs: np.ndarray, labels: Sequence[str], target: Sequence[str], member: str = "member") -> np.ndarray:
    """Reorder the columns of (N, C) ``probs`` over ``labels`` to the order of ``target`` (same label set)."""
    probs = np.asarray(probs)
    if probs.ndim != 2 or probs.shape[1] != len(labels):
        raise ValueError(f"{member}: probabilities of shape {probs.shape} do not match its {len(labels)} labels")
    if len(set(labels)) != len(labels):
        raise ValueError(f"{member}: repeated labels in {list(labels)}")
    if set(labels) != set(target):
        missing, extra = sorted(set(target) - set(labels)), sorted(set(labels) - set(target))
        raise ValueError(f"{member} has a different label set: missing {missing}, extra {extra}")
    position = {label: i for i, label in enumerate(labels)}
    return probs[:, [position[label] for label in target]]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n − 1; 0.0 for a single value), e.g. of per-member or per-seed scores."""
    if not values:
        raise ValueError("mean_std needs at least one value")
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


@dataclass(frozen=True)
class SummaryRow:
    """One line of the ensemble summary: a name and micro P/R/F1 (fractions) per split, or mean ± std."""

    name: str
    scores: dict[str, tuple[float, float, float]]
    spread: dict[str, tuple[float, float, float]] | None = None


def format_summary(rows: Sequence[SummaryRow], splits: Sequence[str]) -> str:
    """A Markdown table with micro P/R/F1 in percent for each split; ``spread`` adds ``± std``."""
    header = ["model"] + [f"{split} {m}" for split in splits for m in ("P", "R", "F1")]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row.name]
        for split in splits:
            for i in range(3):
                cell = f"{100 * row.scores[split][i]:.2f}"
                if row.spread is not None:
                    cell += f" ± {100 * row.spread[split][i]:.2f}"
                cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- members: training and predicting --------------------------------------------------------------------------------------------
def train_members(configs: list[str], seeds: list[int], out: Path, fit_args: list[str], use: str) -> list[Path]:
    """Train one member per seed with :func:`tacred.training.fit` in a subprocess each (skipping finished runs) and
    return the chosen checkpoints."""
    from tacred.training.api import FitError, fit, fit_command

    if len(set(seeds)) != len(seeds):
        raise EnsembleError(f"--seeds has repeated values: {seeds}")
    checkpoints = []
    for seed in seeds:
        run = out / f"seed-{seed}"
        marker = run / FINISHED
        options = [*(a for c in configs for a in ("--config", c)), *fit_args, "--seed_everything", str(seed),
                   "--run_dir", str(run)]
        command = fit_command(options)
        if marker.is_file():
            print(f"seed {seed}: finished earlier ({marker}), skipped", flush=True)
        else:
            print(f"seed {seed}: {' '.join(command[2:])}", flush=True)
            try:
                fit(args=options, in_subprocess=True)
            except FitError as err:
                raise EnsembleError(f"seed {seed}: tacred fit failed with exit code {err.returncode} (run folder "
                                    f"{run}); run the same command again to resume it") from None
            write_json(marker, {"seed": seed, "command": command[2:]}, newline=False)
        checkpoint = run / "checkpoints" / f"{use}.ckpt"
        if not checkpoint.is_file():
            raise EnsembleError(f"seed {seed}: {checkpoint} not found after training")
        checkpoints.append(checkpoint)
    return checkpoints


# -- predicting -------------------------------------------------------------------------------------------
def predict_member(checkpoint: Path, splits: list[str], data_dir: str | None, batch_size: int,
                   device: str) -> dict[str, Evaluation]:
    """Probabilities of one checkpoint on each split (:func:`tacred.training.evaluate`: in-process, no Trainer),
    with its own data options and vocabularies."""
    from tacred.training import evaluate

    return {split: evaluate(checkpoint, split, data_dir=data_dir, batch_size=batch_size, device=device)
            for split in splits}


def stack_members(members: list[tuple[str, Evaluation]], split: str) -> tuple[np.ndarray, Evaluation]:
    first_name, first = members[0]
    stacked = [first.probs]
    for name, member in members[1:]:
        if member.ids != first.ids or member.gold_names != first.gold_names:
            raise EnsembleError(f"{split}: {name} predicted other examples (or other gold labels) than {first_name}; "
                                f"members must be scored on the same data (use --data_dir)")
        stacked.append(align_labels(member.probs, member.labels, first.labels, member=name))
    return np.stack(stacked), first  # (K, N, C)


def write_predictions(path: Path, ref: Evaluation, best: np.ndarray, probs: np.ndarray,
                      counts: np.ndarray | None = None) -> list[str]:
    """JSONL: id, predicted relation, gold, the (mean) probability of the prediction and, for votes, its votes;
    returns the predicted relations."""
    records = []
    for i, (ident, gold) in enumerate(zip(ref.ids, ref.gold_names, strict=True)):
        record = prediction_record(ident, ref.labels, probs[i], int(best[i]), gold=gold)
        if counts is not None:
            record["votes"] = int(counts[i, best[i]])
        records.append(record)
    write_jsonl(path, records)
    return [r["relation"] for r in records]


def run_ensemble(checkpoints: list[Path], names: list[str], splits: Sequence[str], out: Path,
                 data_dir: str | None = None, batch_size: int = 256, device: str = "cpu") -> str:
    """Predict ``splits`` with every member, score each member, their mean ± std and both ensembles, and write
    ``OUT/<split>_predictions.<member|vote|average>.jsonl``, ``summary.md`` and ``summary.json``; return the table."""
    from tacred.evaluation.scoring import score

    splits = list(splits)
    predictions = []
    for name, checkpoint in zip(names, checkpoints, strict=True):
        print(f"predicting {', '.join(splits)} with {name}", flush=True)
        predictions.append(predict_member(checkpoint, splits, data_dir, batch_size, device))

    member_scores: list[dict[str, tuple[float, float, float]]] = [{} for _ in checkpoints]
    ensembles: dict[str, dict[str, tuple[float, float, float]]] = {"majority vote": {}, "average probabilities": {}}
    for split in splits:
        probs, ref = stack_members([(n, p[split]) for n, p in zip(names, predictions, strict=True)], split)
        no_relation = ref.no_relation
        for k, name in enumerate(names):
            pred = write_predictions(out / f"{split}_predictions.{name}.jsonl", ref, probs[k].argmax(1), probs[k])
            s = score(ref.gold_names, pred, no_relation=no_relation)
            member_scores[k][split] = (s.precision, s.recall, s.f1)
        mean = average_probabilities(probs)
        combos = {"majority vote": ("vote", majority_vote(probs), votes(probs)),
                  "average probabilities": ("average", mean.argmax(1), None)}
        for title, (tag, best, counts) in combos.items():
            pred = write_predictions(out / f"{split}_predictions.{tag}.jsonl", ref, best, mean, counts)
            s = score(ref.gold_names, pred, no_relation=no_relation)
            ensembles[title][split] = (s.precision, s.recall, s.f1)

    rows = [SummaryRow(name, scores) for name, scores in zip(names, member_scores, strict=True)]
    stats = {split: [mean_std([m[split][i] for m in member_scores]) for i in range(3)] for split in splits}
    rows.append(SummaryRow(f"members: mean ± std (n={len(checkpoints)})",
                           {s: tuple(v[0] for v in stats[s]) for s in splits},  # type: ignore[misc]
                           {s: tuple(v[1] for v in stats[s]) for s in splits}))  # type: ignore[misc]
    rows += [SummaryRow(f"ensemble: {title}", scores) for title, scores in ensembles.items()]
    table = format_summary(rows, splits)
    text = (f"# Ensemble of {len(checkpoints)} models\n\nMicro P/R/F1 (%) from the official TACRED scorer; std is the "
            f"sample standard deviation over members. Majority-vote ties go to the tied label with the largest summed "
            f"probability.\n\n{table}\n\nCheckpoints:\n" + "".join(f"- {n}: {c}\n" for n, c in zip(names, checkpoints, strict=True)))
    write_text_atomic(out / "summary.md", text)
    write_json(out / "summary.json", {
        "checkpoints": [str(c) for c in checkpoints],
        "members": [{"name": n, **{s: dict(zip(("precision", "recall", "f1"), m[s], strict=True)) for s in splits}}
                    for n, m in zip(names, member_scores, strict=True)],
        "ensembles": {t: {s: dict(zip(("precision", "recall", "f1"), v[s], strict=True)) for s in splits}
                      for t, v in ensembles.items()},
    }, newline=False)
    return table

"""Results as data: what a finished run leaves beside its ``result.json`` (test predictions and probabilities, the
resolved configuration, the code commit, dev F1 per epoch), and what is computed from stored runs without
training: ensembles over seeds, paired significance against a reference, ``summary.json`` and the dev curves."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tacred.evaluation.predictions import Evaluation
from tacred.experiments.ablation import (
    RESULT_FILE,
    SETTLED_MARGIN,
    SETTLED_WINDOW,
    AblationError,
    RunResult,
    ordered,
)
from tacred.experiments.ensemble import mean_std
from tacred.io import atomic_path, read_json, write_json

PROBS_FILE = "test_probabilities.npz"
SUMMARY_FILE = "summary.json"
CURVES_FILE = "dev_curves.png"
COMMIT_VARIABLE = "TACRED_COMMIT"  # the commit of a copy of the code (without .git, or with a stale one)


def git_commit(cwd: str | Path | None = None) -> str | None:
    """The code's commit (with ``+dirty`` when tracked files differ from it). ``TACRED_COMMIT``, where set, names it
    instead: a copy of the code sent to another machine has no ``.git``, or a stale one that names another commit.
    Outside a git checkout and without the variable it is None."""
    if os.environ.get(COMMIT_VARIABLE):
        return os.environ[COMMIT_VARIABLE]
    try:
        run = {"cwd": cwd or Path(__file__).resolve().parent, "capture_output": True, "text": True, "timeout": 10}
        head = subprocess.run(["git", "rev-parse", "HEAD"], check=True, **run).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], check=True, **run).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty.strip() else "")


def environment() -> dict[str, str]:
    """What a run's numbers depend on besides the code, the config and the seed: the library versions and the CPU
    kernels ATen dispatches to. ``ATEN_CPU_CAPABILITY`` (``avx2``, ``avx512``, ``default``) chooses the kernels, and
    AVX2 and AVX-512 kernels round differently, so one seed trains to other weights on a CPU that picks the other.
    Where CUDA is available (the trainer's ``accelerator: auto`` then trains there), ``gpu`` names the card."""
    import platform

    import lightning
    import torch

    found = {"python": platform.python_version(), "torch": torch.__version__, "lightning": lightning.__version__,
             "numpy": np.__version__, "machine": platform.machine(),
             "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    if torch.cuda.is_available():
        found["gpu"] = torch.cuda.get_device_name(0)
    return found


def provenance() -> dict[str, Any]:
    """What trained a run, taken when its fit starts (a checkout may move while it trains): ``commit`` and
    ``environment``. A fit in a subprocess inherits this process's environment."""
    return {"commit": git_commit(), "environment": environment()}


def test_record(evaluation: Evaluation) -> dict[str, Any]:
    """The test scores of an evaluation plus its predictions as label ids (what significance tests need). With
    sentences of the release that could not be converted, the scores are over the whole release, those sentences
    counted as no-relation predictions (their gold label ids are kept as ``unconverted``)."""
    from tacred.evaluation.scoring import over_release, score, semeval_macro_f1
    from tacred.training.reports import is_semeval_label_set

    gold, pred = over_release([evaluation.labels[i] for i in evaluation.gold],
                              [evaluation.labels[i] for i in evaluation.pred], evaluation.unconverted,
                              evaluation.no_relation)
    result = score(gold, pred, no_relation=evaluation.no_relation)
    semeval = (semeval_macro_f1(gold, pred, other=evaluation.no_relation).macro_f1
               if is_semeval_label_set(evaluation.labels, evaluation.no_relation) else None)
    test = {"labels": evaluation.labels, "no_relation": evaluation.no_relation,
            "gold": evaluation.gold.tolist(), "pred": evaluation.pred.tolist()}
    if evaluation.unconverted:  # scores above are over the whole release: these count as no-relation predictions
        test["unconverted"] = [evaluation.labels.index(label) for label in evaluation.unconverted]
    return {"precision": result.precision, "recall": result.recall, "f1": result.f1, "semeval_macro_f1": semeval,
            "test": test}


def save_probabilities(folder: Path, evaluation: Evaluation) -> Path:
    """``test_probabilities.npz``: float16 probabilities (N, C) and the example ids, for ensembles."""
    path = folder / PROBS_FILE
    with atomic_path(path, keep_suffix=True) as tmp:
        np.savez_compressed(tmp, probs=evaluation.probs.astype(np.float16), ids=np.asarray(evaluation.ids))
    return path


@dataclass(frozen=True)
class StoredRun:
    """One stored run of a variant: its test :class:`Evaluation` as ``result.json`` and ``test_probabilities.npz``
    hold it (the probabilities stored as float16), and ``pred``, the predictions the run recorded when it was tested:
    the argmax of its full-precision probabilities, which the stored ones can tie, so votes and significance read
    these."""

    variant: str
    seed: int
    test: Evaluation
    pred: np.ndarray


def load_stored(out: str | Path, variant: str) -> list[StoredRun]:
    """Every seed of ``variant`` under ``out`` that stored its test predictions, in seed order."""
    runs = []
    for path in sorted(Path(out).glob(f"{variant}/seed_*/{RESULT_FILE}"), key=lambda p: int(p.parent.name[5:])):
        data = read_json(path)
        test = data.get("test")
        if not test:
            continue
        probs_path = path.parent / PROBS_FILE
        if not probs_path.is_file():
            raise AblationError(f"{path.parent}: no {PROBS_FILE} beside its {RESULT_FILE} (every tested run stores "
                                "its probabilities); test the run again with the same `tacred ablate` command")
        stored = np.load(probs_path)
        labels = list(test["labels"])
        evaluation = Evaluation([str(i) for i in stored["ids"]], labels, test["no_relation"],
                                np.asarray(test["gold"], dtype=np.int64), stored["probs"].astype(np.float64),
                                source=str(path.parent),
                                unconverted=[labels[i] for i in test.get("unconverted") or []])
        runs.append(StoredRun(variant, int(data["seed"]), evaluation, np.asarray(test["pred"], dtype=np.int64)))
    for r in runs[1:]:
        if r.test.labels != runs[0].test.labels or not np.array_equal(r.test.gold, runs[0].test.gold):
            raise AblationError(f"{out}/{variant}: seeds {runs[0].seed} and {r.seed} were tested on different data")
    return runs


def significance(out: str | Path, variants: Sequence[str], reference: str, resamples: int = 10_000) -> dict[str, Any]:
    """Paired approximate randomization of each variant's F1 against ``reference`` over the test examples,
    seed s paired with seed s (the seeds both have)."""
    from tacred.evaluation.significance import paired_randomization

    ref = {r.seed: r for r in load_stored(out, reference)}
    tests = {}
    for name in variants:
        if name == reference or not ref:
            continue
        runs = [r for r in load_stored(out, name) if r.seed in ref]
        if not runs:
            continue
        base = ref[runs[0].seed].test
        if runs[0].test.labels != base.labels or not np.array_equal(runs[0].test.gold, base.gold):
            raise AblationError(f"{out}: {name} and {reference} were tested on different data or label sets")
        tests[name] = paired_randomization(base.gold, [r.pred for r in runs], [ref[r.seed].pred for r in runs],
                                           base.no_relation_id, resamples)
    return tests


def ensemble_scores(runs: Sequence[StoredRun]) -> dict[str, float] | None:
    """Test F1 (%) of the majority vote and of the averaged probabilities of the given seeds (None: < 2 seeds); on SemEval's label set also their official macro-F1 (``vote_macro``, ``average_macro``)."""
    from tacred.evaluation.scoring import over_release, score, semeval_macro_f1
    from tacred.experiments.ensemble import average_vote, majority_vote
    from tacred.training.reports import is_semeval_label_set

    if len(runs) < 2:
        return None
    probs = np.stack([r.test.probs for r in runs])  # (K, N, C)
    first = runs[0].test
    labels, gold, other, unconverted = first.labels, first.gold_names, first.no_relation, first.unconverted
    predictions = {"vote": [labels[i] for i in majority_vote(probs)],
                   "average": [labels[i] for i in average_vote(probs)]}
    if unconverted:  # over the whole release, as each run's own scores
        predictions = {name: over_release(gold, pred, unconverted, other)[1] for name, pred in predictions.items()}
        gold = [*gold, *unconverted]
    scores: dict[str, float] = {name: 100 * score(gold, pred, no_relation=other).f1
                                for name, pred in predictions.items()}
    if is_semeval_label_set(labels, other):
        scores.update({f"{name}_macro": 100 * semeval_macro_f1(gold, pred, other=other).macro_f1
                       for name, pred in predictions.items()})
    return {**scores, "members": len(runs)}


def variant_summary(out: str | Path, name: str, runs: Sequence[RunResult]) -> dict[str, Any]:
    """One variant's entry of ``summary.json``: the test F1 of every seed (%), mean ± std, precision and recall,
    SemEval macro-F1, dev F1, both ensembles, the epochs trained, where its mean dev F1 plateaus (``dev_plateau``),
    the checkpoint tested, the configs it was trained with and the code commits."""
    out = Path(out)
    runs = sorted(runs, key=lambda r: r.seed)
    extra = [read_json(out / name / f"seed_{r.seed}" / RESULT_FILE) for r in runs]
    f1 = [round(100 * r.f1, 2) for r in runs]
    ensembles = ensemble_scores(load_stored(out, name)) or {}
    macro = [r.semeval_macro_f1 for r in runs]
    curves = dev_curves(out, [name])
    return {
        "seeds": [r.seed for r in runs], "test_f1": f1,
        "test_f1_mean": round(mean_std(f1)[0], 2), "test_f1_std": round(mean_std(f1)[1], 2),
        "test_precision": [round(100 * r.precision, 2) for r in runs],
        "test_recall": [round(100 * r.recall, 2) for r in runs],
        "semeval_macro_f1": [round(100 * m, 2) for m in macro] if all(m is not None for m in macro) else None,
        "dev_f1": [round(100 * r.dev_f1, 2) for r in runs],
        "ensemble_vote_f1": round(ensembles["vote"], 2) if ensembles else None,
        "ensemble_avg_f1": round(ensembles["average"], 2) if ensembles else None,
        **({"ensemble_vote_macro_f1": round(ensembles["vote_macro"], 2),
            "ensemble_avg_macro_f1": round(ensembles["average_macro"], 2)} if "vote_macro" in ensembles else {}),
        "epochs": sorted({r.epochs for r in runs}),
        "dev_plateau": plateau(curves[name]) if name in curves else None,
        "checkpoint": sorted({r.checkpoint for r in runs}),
        "recipe": extra[0].get("recipe"),
        "commits": sorted({e.get("commit") or "unknown" for e in extra}),
    }


def write_summary(out: str | Path, results: Sequence[RunResult]) -> Path:
    """``summary.json``: :func:`variant_summary` per variant. ``best`` is the variant of that name or, without one,
    a copy of the variant with the highest mean dev F1 over its seeds (chosen on dev, never on test) naming it in
    ``variant``."""
    out = Path(out)
    summary: dict[str, Any] = {name: variant_summary(out, name, [r for r in results if r.variant == name])
                               for name in ordered(r.variant for r in results)}
    if len(summary) > 1:
        # a variant named `best` (a candidate recipe) is chosen like any other; if another wins on dev, the
        # candidate's own entry stays in the summary as `best_candidate`
        name = max(summary, key=lambda n: mean_std(summary[n]["dev_f1"])[0])
        if name != "best" and "best" in summary:
            summary["best_candidate"] = summary.pop("best")
        summary["best"] = {"variant": name, "chosen_by": "highest mean dev F1 over seeds", **summary[name]}
    return write_json(out / SUMMARY_FILE, summary)


def dev_curves(out: str | Path, variants: Sequence[str]) -> dict[str, np.ndarray]:
    """Dev F1 (%) per epoch of each variant's stored seeds, (seeds, epochs), cut to the shortest seed's epochs."""
    curves: dict[str, list[list[float]]] = {}
    for name in variants:
        for result in sorted(Path(out).glob(f"{name}/seed_*/{RESULT_FILE}")):
            curve = read_json(result).get("dev_curve")
            if curve:
                curves.setdefault(name, []).append(curve)
    return {name: 100 * np.asarray([c[:min(map(len, runs))] for c in runs]) for name, runs in curves.items()}


def plateau(curves: np.ndarray, within: Sequence[float] = (1.0, 0.5)) -> dict[str, Any]:
    """Where the mean dev F1 over seeds peaks, and for each margin the first epoch from which every later epoch's
    mean stays within that many points of the peak (None: the last epoch is further below): how a run's length is
    checked against convergence."""
    mean = curves.mean(axis=0)
    peak = int(mean.argmax())
    since: dict[str, int | None] = {}
    for margin in within:
        below = np.flatnonzero(mean < mean[peak] - margin)
        since[f"{margin:g}"] = None if below.size and below[-1] == len(mean) - 1 else int(below[-1]) + 2 if below.size else 1
    return {"seeds": len(curves), "epochs": len(mean), "peak_epoch": peak + 1,
            "peak_dev_f1": round(float(mean[peak]), 2), "last_dev_f1": round(float(mean[-1]), 2),
            "within_points_of_peak_from_epoch": since}


def settled(curves: np.ndarray, window: int = SETTLED_WINDOW, margin: float = SETTLED_MARGIN) -> bool:
    """Whether the mean dev F1 over seeds stayed within ``margin`` points of its best in each of the last ``window``
    epochs (the rule that chose the recipe's epochs, :func:`plateau`); a row that is not settled, still rising or
    falling away at the end, is measured at the common budget rather than at its own plateau."""
    return plateau_settled(plateau(curves, within=(margin,)), window, margin)


def plateau_settled(found: Mapping[str, Any], window: int = SETTLED_WINDOW, margin: float = SETTLED_MARGIN) -> bool:
    """:func:`settled` read off a :func:`plateau` record that holds ``margin`` (``summary.json``'s ``dev_plateau``)."""
    since = found["within_points_of_peak_from_epoch"][f"{margin:g}"]
    return since is not None and since <= max(1, found["epochs"] - window + 1)


def plot_dev_curves(out: str | Path, variants: Sequence[str], path: Path) -> Path | None:
    """Dev F1 per epoch of each variant: the mean over seeds with a band of ± one standard deviation; on the left
    every epoch, on the right the last half, zoomed on the rows near the top. A row that had not settled
    (:func:`settled`) is marked † in the legend; past ten rows the colours repeat with another line style."""
    curves = dev_curves(out, variants)
    if not curves:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (full, zoom) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    last = max(len(values[0]) for values in curves.values())
    start = last // 2  # the zoom's first epoch - 1
    low, high = np.inf, -np.inf
    for i, (name, values) in enumerate(curves.items()):
        epochs = np.arange(1, values.shape[1] + 1)
        mean, std = values.mean(axis=0), values.std(axis=0, ddof=1) if len(values) > 1 else np.zeros(len(epochs))
        style = {"color": f"C{i % 10}", "linestyle": ("-", "--", ":", "-.")[i // 10 % 4], "linewidth": 1.5}
        label = f"{name}{'' if settled(values) else ' †'} (n={len(values)})"
        for ax in (full, zoom):
            ax.plot(epochs, mean, label=label if ax is full else None, **style)
            ax.fill_between(epochs, mean - std, mean + std, color=style["color"], alpha=0.15 if ax is full else 0.07,
                            linewidth=0)
        if len(mean) > start:
            low, high = min(low, float((mean - std)[start:].min())), max(high, float((mean + std)[start:].max()))
    for ax in (full, zoom):
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    full.set_ylabel("dev F1 (%)")
    full.set_title("Dev F1 per epoch: mean over seeds, band ± 1 std")
    if np.isfinite(low) and last > start + 1:
        zoom.set_xlim(start + 1, last)
        zoom.set_ylim(max(low, high - 10) - 0.5, high + 0.5)  # rows more than 10 points below the top leave the zoom
    zoom.set_title(f"epochs {start + 1}+ (zoom)")
    note = f"† not settled: dev F1 > {SETTLED_MARGIN:g} point below its best in the last {SETTLED_WINDOW} epochs"
    handles, labels = full.get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8,
               title=note if any("†" in label for label in labels) else None, title_fontsize=7)
    fig.tight_layout()
    with atomic_path(path, keep_suffix=True) as tmp:
        fig.savefig(tmp, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path

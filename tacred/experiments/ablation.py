"""Ablation sweeps (Table 3 of Bilan & Roth, 2018): variant files, run folders, stored results, tables and a chart.

Pure functions; :mod:`tacred.commands.ablate` runs the fits and tests.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import MISSING, asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from tacred.errors import TacredError
from tacred.experiments.ensemble import mean_std
from tacred.io import (
    MetricsFileError,
    atomic_path,
    read_epoch_metrics,
    read_json,
    write_json,
    write_text_atomic,
)

RESULT_FILE = "result.json"
FIT_DONE_FILE = "fit.done"
TABLE_FILES = ("table.md", "table.tex", "table.csv", "f1.png")
# Row order of the paper's Table 3 and the baselines (configs/ablations/); the related-work rows follow in the
# attention-variant registry's order (row_order()).
TABLE_3_ORDER = (
    "final", "lemmas", "two_residuals", "layer_norm", "relu", "lstm_self_attention", "no_position_aware",
    "absolute_positions", "xavier_init", "lstm", "pa_lstm",
)
# Published TACRED test F1 (PAPER_NOTES section 7), for the optional "paper" column.
PUBLISHED_F1 = {
    "final": 66.5, "lemmas": 65.6, "two_residuals": 65.4, "layer_norm": 61.9, "relu": 66.2,
    "lstm_self_attention": 64.0, "no_position_aware": 40.6, "absolute_positions": 66.3, "xavier_init": 66.5,
    "lstm": 62.7, "pa_lstm": 65.1,
}


class AblationError(TacredError, ValueError):
    """A variant file, option or stored result that cannot be used (the message names it)."""


@dataclass(frozen=True)
class Variant:
    name: str  # the table row: the file name without .yaml
    path: Path


def row_order() -> tuple[str, ...]:
    """Table 3 and the baselines, then each registered attention variant's ablation rows (importing the
    registry imports torch, so this is a function rather than a constant)."""
    from tacred.models.attention import variants

    related = [row for variant in variants() for row in variant.ablations if row not in TABLE_3_ORDER]
    return TABLE_3_ORDER + tuple(dict.fromkeys(related))


def ordered(names: Iterable[str]) -> list[str]:
    """The paper's row order for known names (:func:`row_order`), then the others alphabetically."""
    rank = {name: i for i, name in enumerate(row_order())}
    return sorted(set(names), key=lambda n: (rank.get(n, len(rank)), n))


def find_variants(files: Sequence[str | Path] = (), directory: str | Path | None = None) -> list[Variant]:
    """Variant override files: ``files`` in the given order, then every ``*.yaml`` of ``directory`` in row order."""
    paths = [Path(f) for f in files]
    if directory is not None:
        folder = Path(directory)
        if not folder.is_dir():
            raise AblationError(f"--variants_dir {folder}: not a directory")
        found = {p.stem: p for p in [*folder.glob("*.yaml"), *folder.glob("*.yml")]}
        if not found:
            raise AblationError(f"--variants_dir {folder}: no .yaml files in it")
        paths += [found[name] for name in ordered(found)]
    variants: dict[str, Variant] = {}
    for path in paths:
        if not path.is_file():
            raise AblationError(f"variant file not found: {path}")
        if path.suffix not in (".yaml", ".yml"):
            raise AblationError(f"variant file {path} is not a .yaml file")
        if path.stem in variants and variants[path.stem].path.resolve() != path.resolve():
            raise AblationError(f"two variant files are named {path.stem!r}: {variants[path.stem].path} and {path}")
        variants[path.stem] = Variant(path.stem, path)
    return list(variants.values())


def run_dir(out: str | Path, variant: str, seed: int) -> Path:
    return Path(out) / variant / f"seed_{seed}"


CLAIM_FILE = "claim.json"


def claim_run(run: Path) -> str | None:
    """Take ``run`` for this process, so that several ``tacred ablate`` processes with the same arguments share a
    sweep: None when taken, otherwise who holds it (``"pid 123 on host"``). A claim whose process is gone (same
    host, no such pid) is taken over: its fit resumes from its last.ckpt."""
    import os
    import socket

    run.mkdir(parents=True, exist_ok=True)
    path, mine = run / CLAIM_FILE, {"pid": os.getpid(), "host": socket.gethostname()}
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                held = json.loads(path.read_text(encoding="utf-8"))
                pid, host = int(held["pid"]), str(held["host"])
            except (OSError, ValueError, KeyError, TypeError):
                return f"{path} (unreadable; delete it if no process runs this fit)"
            if host != mine["host"] or _alive(pid):
                return f"pid {pid} on {host}"
            path.unlink(missing_ok=True)  # the process that held it died
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(mine, f)
        return None
    return f"{path} (taken by another process meanwhile)"


def earlier_seconds(run: Path) -> float:
    """Training seconds that earlier, interrupted legs of ``run`` already spent, as its ``last.ckpt`` records them
    (:func:`tacred.checkpoints.trained_seconds`): 0.0 for a fresh run or a checkpoint that predates the record."""
    from tacred.checkpoints import CheckpointError, read_checkpoint, trained_seconds

    last = run / "checkpoints" / "last.ckpt"
    if not last.is_file():
        return 0.0
    try:
        return trained_seconds(read_checkpoint(last)) or 0.0
    except CheckpointError:
        return 0.0  # the fit that resumes from it stops with the clear error, naming the file


def release_run(run: Path) -> None:
    (run / CLAIM_FILE).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists (PermissionError: it does, as another user)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def fit_options(configs: str | Path | Sequence[str | Path], variant: Variant, seed: int, run: Path,
                max_epochs: int | None = None, extra: Sequence[str] = ()) -> list[str]:
    """The ``tacred fit`` options of one variant and seed, resuming from ``run/checkpoints/last.ckpt`` when it exists:
    the base config files in order (e.g. a dataset's config, then a tuned recipe), then the variant's overrides."""
    from tacred.training.api import fit_options as options

    bases = [configs] if isinstance(configs, str | Path) else list(configs)
    limit = [] if max_epochs is None else ["--trainer.max_epochs", str(max_epochs)]
    return options([*map(str, bases), str(variant.path)], [*limit, *extra], seed=seed, run_dir=run, resume="auto")


def dev_f1_by_epoch(metrics_csv: Path) -> dict[int, float]:
    """Dev F1 per 0-based epoch from a run's ``metrics.csv`` (a resumed run may log an epoch twice: the last wins)."""
    if not metrics_csv.is_file():
        raise AblationError(f"{metrics_csv}: not found; did the fit run?")
    try:
        metrics = read_epoch_metrics(metrics_csv, ["val/f1"])
    except MetricsFileError as err:
        raise AblationError(str(err)) from None
    if "val/f1" not in metrics.columns:
        raise AblationError(f"{metrics_csv}: no 'val/f1' column")
    return dict(metrics.series("val/f1"))


def probe_batch(num_words: int, num_pos: int, num_ner: int, num_labels: int) -> Any:
    """A tiny two-sentence :class:`~tacred.data.batching.Batch` (lengths 6 and 4) for :func:`trainable_parameters`."""
    import torch

    from tacred.data.batching import Batch

    gen = torch.Generator().manual_seed(0)
    pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])

    def ids(high: int) -> torch.Tensor:
        return torch.randint(min(2, high - 1), high, (2, 6), generator=gen).masked_fill(pad, 0)

    pos = torch.arange(6)[None, :].expand(2, 6)
    return Batch(words=ids(num_words), pos=ids(num_pos), ner=ids(num_ner), subj_positions=(pos - 1).masked_fill(pad, 0),
                 obj_positions=(pos - 3).masked_fill(pad, 0), pad_mask=pad, labels=torch.arange(2) % num_labels,
                 index=torch.arange(2))


def trainable_parameters(network: Any, batch: Any) -> int:
    """Number of parameters that receive a gradient from one training-mode backward pass (unused tables don't count)."""
    was_training = network.training
    network.train()
    network.zero_grad(set_to_none=True)
    network(batch).logits.sum().backward()
    count = sum(p.numel() for p in network.parameters() if p.requires_grad and p.grad is not None)
    network.zero_grad(set_to_none=True)
    network.train(was_training)
    return count


@dataclass(frozen=True)
class RunResult:
    """One variant × seed: test scores (fractions), the tested checkpoint's dev F1, size and cost."""

    variant: str
    seed: int
    precision: float
    recall: float
    f1: float
    dev_f1: float
    parameters: int
    epochs: int
    seconds: float
    checkpoint: str = "best"
    resumed: bool = False
    semeval_macro_f1: float | None = None  # the official SemEval-2010 Task 8 score (fraction), for SemEval runs

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "result") -> RunResult:
        """Read a stored result (extra keys such as the commands are ignored); errors name ``source``."""
        known = {f.name: f for f in fields(cls)}
        missing = [n for n, f in known.items() if f.default is MISSING and n not in data]
        if missing:
            raise AblationError(f"{source}: missing {', '.join(missing)}")
        numbers = ("seed", "precision", "recall", "f1", "dev_f1", "parameters", "epochs", "seconds")
        optional = [n for n in ("semeval_macro_f1",) if data.get(n) is not None]  # None: not a SemEval run
        wrong = [n for n in (*numbers, *optional) if isinstance(data[n], bool) or not isinstance(data[n], int | float)]
        if wrong:
            raise AblationError(f"{source}: {', '.join(wrong)} must be numbers")
        return cls(**{n: data[n] for n in known if n in data})


def write_result(run: Path, result: RunResult, **extra: Any) -> Path:
    return write_json(run / RESULT_FILE, {**asdict(result), **extra})


def load_results(out: str | Path, variants: Iterable[str] | None = None) -> list[RunResult]:
    """Every ``OUT/<variant>/seed_<S>/result.json`` (only the given variants, if any), in row and seed order."""
    wanted = set(variants) if variants is not None else None
    results = []
    for path in sorted(Path(out).glob(f"*/seed_*/{RESULT_FILE}")):
        if wanted is not None and path.parent.parent.name not in wanted:
            continue
        try:
            data = read_json(path)
        except json.JSONDecodeError as err:
            raise AblationError(f"{path}: not valid JSON ({err}); delete it to rerun that run") from err
        results.append(RunResult.from_dict(data, source=str(path)))
    rank = {name: i for i, name in enumerate(ordered(r.variant for r in results))}
    return sorted(results, key=lambda r: (rank[r.variant], r.seed))


@dataclass(frozen=True)
class Row:
    """One table row: means and sample standard deviations over seeds, in percent."""

    variant: str
    seeds: tuple[int, ...]
    precision: tuple[float, float]
    recall: tuple[float, float]
    f1: tuple[float, float]
    dev_f1: tuple[float, float]
    delta_f1: float | None  # mean F1 minus the reference's over the seeds both have, in points; None: none shared
    parameters: int
    p_value: float | None = None  # paired approximate randomization against the reference (tacred.evaluation.significance)
    macro_f1: tuple[float, float] | None = None  # official SemEval macro-F1; None unless every run of the row has it
    settled: bool | None = None  # dev F1 settled by the last epoch (tacred.experiments.results.settled); None: unknown

    @property
    def label(self) -> str:
        """The variant's name, marked † when its dev F1 had not settled (:data:`UNSETTLED_NOTE`)."""
        return self.variant + (" †" if self.settled is False else "")


# a row is settled when its mean dev F1 stayed within SETTLED_MARGIN points of its best in each of its last
# SETTLED_WINDOW epochs (tacred.experiments.results.settled)
SETTLED_WINDOW, SETTLED_MARGIN = 10, 1.0
UNSETTLED_NOTE = (f"† not settled: in its last {SETTLED_WINDOW} epochs the mean dev F1 over seeds was more than "
                  f"{SETTLED_MARGIN:g} point below its best (`dev_plateau` in summary.json), so the row is measured at "
                  "the common budget, not at its own plateau.")


def summarize(results: Sequence[RunResult], reference: str = "final", tests: dict[str, Any] | None = None) -> list[Row]:
    """One row per variant (the reference first, then row order), scores in percent; Δ F1 against ``reference`` over
    the seeds both have (the pairs the significance test compares, so a row still missing seeds is not compared
    with the reference's other seeds), and the p-value of ``tests[variant]`` (a
    :class:`tacred.evaluation.significance.Significance`) where given."""
    by_variant: dict[str, list[RunResult]] = {}
    for r in results:
        by_variant.setdefault(r.variant, []).append(r)
    rows = []
    for name in ordered(by_variant):
        runs = sorted(by_variant[name], key=lambda r: r.seed)

        def pct(attr: str, runs: list[RunResult] = runs) -> tuple[float, float]:
            return mean_std([100 * getattr(r, attr) for r in runs])

        macro = pct("semeval_macro_f1") if all(r.semeval_macro_f1 is not None for r in runs) else None
        rows.append(Row(name, tuple(r.seed for r in runs), pct("precision"), pct("recall"), pct("f1"),
                        pct("dev_f1"), None, max(r.parameters for r in runs), macro_f1=macro))
    if reference not in by_variant:
        return rows
    ref_f1 = {r.seed: 100 * r.f1 for r in by_variant[reference]}

    def delta(name: str) -> float | None:
        pairs = [(100 * r.f1, ref_f1[r.seed]) for r in by_variant[name] if r.seed in ref_f1]
        return mean_std([a - b for a, b in pairs])[0] if pairs else None

    tests = tests or {}
    rows.sort(key=lambda row: row.variant != reference)  # the row the others are compared with comes first
    return [replace(row, delta_f1=delta(row.variant),
                    p_value=tests[row.variant].p_value if row.variant in tests else None) for row in rows]


def _p(row: Row, reference: str, tex: bool = False) -> str:
    if row.variant == reference or row.p_value is None:
        return "—" if not tex else "--"
    text = f"{row.p_value:.3f}" if row.p_value >= 0.001 else "<0.001"
    return text.replace("<", "$<$") if tex else text


def format_mean_std(value: tuple[float, float], n: int, pm: str = " ± ") -> str:
    """``mean ± std`` to one decimal, the mean alone for one run (``n``: the runs)."""
    return f"{value[0]:.1f}{pm}{value[1]:.1f}" if n > 1 else f"{value[0]:.1f}"


def _delta(row: Row, reference: str, minus: str = "−") -> str:
    if row.delta_f1 is None or row.variant == reference:
        return "—" if minus == "−" else "--"
    return f"{row.delta_f1:+.1f}".replace("-", minus)


def render_markdown(rows: Sequence[Row], reference: str = "final", published: bool = False) -> str:
    """The paper's Table 3 layout: variant rows; P, R, F1 (mean ± std over seeds), the SemEval macro-F1 where a row's
    runs have it, Δ F1, p where tested, parameters, seeds, and with ``published`` the paper's TACRED F1."""
    tested, macro = any(r.p_value is not None for r in rows), any(r.macro_f1 is not None for r in rows)
    head = (["Variant", "P", "R", "F1"] + (["SemEval macro-F1"] if macro else []) + [f"Δ F1 vs {reference}"]
            + (["p"] if tested else []) + ["Parameters", "Seeds"] + (["Paper F1"] if published else []))
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for r in rows:
        n = len(r.seeds)
        cells = ([r.label, format_mean_std(r.precision, n), format_mean_std(r.recall, n), format_mean_std(r.f1, n)]
                 + ([format_mean_std(r.macro_f1, n) if r.macro_f1 else "—"] if macro else []) + [_delta(r, reference)]
                 + ([_p(r, reference)] if tested else []) + [f"{r.parameters:,}", str(n)])
        if published:
            cells.append(f"{PUBLISHED_F1[r.variant]:.1f}" if r.variant in PUBLISHED_F1 else "—")
        lines.append("| " + " | ".join(cells) + " |")
    if any(r.settled is False for r in rows):
        lines += ["", UNSETTLED_NOTE]
    return "\n".join(lines) + "\n"


def render_latex(rows: Sequence[Row], reference: str = "final", published: bool = False) -> str:
    """A plain ``tabular`` (no extra packages) with the columns of :func:`render_markdown`."""
    tested, macro = any(r.p_value is not None for r in rows), any(r.macro_f1 is not None for r in rows)
    head = (["Variant", "P", "R", "F1"] + (["Macro-F1"] if macro else []) + [r"$\Delta$ F1"]
            + (["$p$"] if tested else []) + ["Parameters", "Seeds"] + (["Paper F1"] if published else []))
    lines = [r"\begin{tabular}{l" + "r" * (len(head) - 1) + "}", r"\hline", " & ".join(head) + r" \\", r"\hline"]
    for r in rows:
        n = len(r.seeds)
        name = r.variant.replace("_", r"\_") + (r"$^\dagger$" if r.settled is False else "")
        cells = ([name, *(format_mean_std(v, n, r" $\pm$ ") for v in (r.precision, r.recall, r.f1))]
                 + ([format_mean_std(r.macro_f1, n, r" $\pm$ ") if r.macro_f1 else "--"] if macro else [])
                 + [_delta(r, reference, minus="$-$")] + ([_p(r, reference, tex=True)] if tested else [])
                 + [f"{r.parameters:,}".replace(",", "{,}"), str(n)])
        if published:
            cells.append(f"{PUBLISHED_F1[r.variant]:.1f}" if r.variant in PUBLISHED_F1 else "--")
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\hline", r"\end{tabular}"]
    if any(r.settled is False for r in rows):
        lines.append("% " + UNSETTLED_NOTE.replace("†", r"$\dagger$").replace("`", ""))
    return "\n".join(lines) + "\n"


def render_csv(rows: Sequence[Row]) -> str:
    """Machine-readable rows: every mean and standard deviation in percent, with full precision."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["variant", "runs", "seeds", "precision", "precision_std", "recall", "recall_std", "f1", "f1_std",
                     "delta_f1", "p_value", "dev_f1", "dev_f1_std", "parameters", "settled", "semeval_macro_f1",
                     "semeval_macro_f1_std"])
    for r in rows:
        delta = "" if r.delta_f1 is None else f"{r.delta_f1:.4f}"
        writer.writerow([r.variant, len(r.seeds), " ".join(map(str, r.seeds)), *(f"{x:.4f}" for x in r.precision),
                         *(f"{x:.4f}" for x in r.recall), *(f"{x:.4f}" for x in r.f1), delta,
                         "" if r.p_value is None else f"{r.p_value:.5f}",
                         *(f"{x:.4f}" for x in r.dev_f1), r.parameters,
                         "" if r.settled is None else str(r.settled).lower(),
                         *((f"{x:.4f}" for x in r.macro_f1) if r.macro_f1 else ("", ""))])
    return buf.getvalue()


def plot_f1(rows: Sequence[Row], path: Path, reference: str = "final") -> None:
    """Horizontal bars of test F1 (mean, error bars: std over seeds); a dashed line at the reference's F1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.35 * len(rows)))
    y = list(range(len(rows)))[::-1]
    ax.barh(y, [r.f1[0] for r in rows], xerr=[r.f1[1] for r in rows], color="#4c72b0", capsize=3)
    ax.set_yticks(y, [r.label for r in rows])
    for yi, r in zip(y, rows, strict=True):
        ax.text(r.f1[0] + r.f1[1] + 0.5, yi, f"{r.f1[0]:.1f}", va="center", fontsize=8)
    ref = next((r for r in rows if r.variant == reference), None)
    if ref is not None:
        ax.axvline(ref.f1[0], color="grey", linestyle="--", linewidth=1)
    top = max((r.f1[0] + r.f1[1] for r in rows), default=0.0)
    ax.set_xlim(0, max(10.0, math.ceil(top / 10) * 10 + 5))
    ax.set_xlabel("test F1 (%), mean ± std over seeds")
    fig.tight_layout()
    with atomic_path(path, keep_suffix=True) as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)


def write_tables(out: str | Path, rows: Sequence[Row], reference: str = "final", published: bool = False) -> list[Path]:
    """Write ``table.md``, ``table.tex``, ``table.csv`` and ``f1.png`` into ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in TABLE_FILES]
    write_text_atomic(paths[0], render_markdown(rows, reference, published))
    write_text_atomic(paths[1], render_latex(rows, reference, published))
    write_text_atomic(paths[2], render_csv(rows))
    plot_f1(rows, paths[3], reference)
    return paths

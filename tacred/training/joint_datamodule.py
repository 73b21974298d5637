"""The joint model's LightningDataModule: files in SpERT's layout → checked sentences → word pieces → length-bucketed
batches of whole sentences. The types come from the training file (or a types file), the widest entity span from
the training data, the tokenizer from the model's encoder; a checkpoint's own (``vocab_path``) when evaluating."""

from __future__ import annotations

import logging
from functools import cached_property
from pathlib import Path
from typing import Any

from torch.utils.data import DataLoader

from tacred.data.batching import BucketBatchSampler
from tacred.data.joint_batching import JOINT_KEY, JointSplit, WordPieces, encode_sentence
from tacred.datasets.spert_layout import (
    JointSentence,
    JointTypes,
    check_known,
    read_sentences,
    read_types,
    signatures,
    types_of,
)
from tacred.errors import ConfigError
from tacred.training.datamodule import SplitLoaders

log = logging.getLogger(__name__)


def checkpoint_data(path: str | Path) -> dict[str, Any]:
    """The ``tacred_joint`` record of a joint checkpoint (read through the one safe reader)."""
    from tacred.checkpoints import read_checkpoint

    saved = read_checkpoint(path).get(JOINT_KEY)
    if not isinstance(saved, dict):
        raise ConfigError(f"{path}: not a checkpoint of the joint model (it has no {JOINT_KEY} record)")
    return saved


class JointDataModule(SplitLoaders):
    """Sentences in SpERT's layout for the joint model's fit/validate/test.

    Args:
        data_dir: folder the split files are relative to (absolute paths ignore it).
        train_file, dev_file, test_file: JSON lists (or JSON Lines) of sentences in SpERT's layout; ``train_file``
            may be a list of files (train + dev for a final model).
        types_file: the entity and relation types (SpERT's ``*_types.json``, or ``{"entities": [...],
            "relations": [...]}``); None: the types the training data uses.
        max_width: the widest entity span classified, in words; None: the widest in the training data.
        batch_size, eval_batch_size: sentences a batch (length-bucketed); seed fixes the shuffling.
        vocab_path: evaluate with the types, tokenizer and widest span of this checkpoint (set by tacred
            test/validate from ``--ckpt_path``).
        tokenizer: the encoder whose tokenizer splits the words (linked from ``--model.pretrained``).
    """

    def __init__(self, data_dir: str | None = None, train_file: str | list[str] = "train.json",
                 dev_file: str = "dev.json", test_file: str = "test.json", types_file: str | None = None,
                 max_width: int | None = None, batch_size: int = 8, eval_batch_size: int | None = None,
                 num_workers: int = 0, seed: int = 0, vocab_path: str | None = None,
                 tokenizer: str | None = None) -> None:
        super().__init__()
        for name, value in (("batch_size", batch_size), ("eval_batch_size", eval_batch_size),
                            ("max_width", max_width)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigError(f"--data.{name} {value!r}: must be an integer >= 1")
        self.save_hyperparameters()
        self.data_dir = Path(data_dir) if data_dir else None
        trains = [train_file] if isinstance(train_file, str) else list(train_file)
        self.files = {"train": trains, "dev": [dev_file], "test": [test_file]}
        self.types_file, self.width_given = types_file, max_width
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size or batch_size
        self.num_workers, self.seed = num_workers, seed
        self.vocab_path, self.tokenizer = vocab_path, tokenizer
        self._sentences: dict[str, list[JointSentence]] = {}
        self._encoded: dict[str, JointSplit] = {}
        self._resume: tuple[int, int] | None = None

    # -- files --------------------------------------------------------------------------------------
    def paths(self, split: str) -> list[Path]:
        return [Path(n) if Path(n).is_absolute() or self.data_dir is None else self.data_dir / n
                for n in self.files[split]]

    def sentences(self, split: str) -> list[JointSentence]:
        if split not in self._sentences:
            given = read_types(self.types_file) if self.types_file and not self.vocab_path else None
            found: list[JointSentence] = []
            for path in self.paths(split):
                for s in read_sentences(path, given):
                    found.append(JointSentence(len(found), s.tokens, s.entities, s.relations))
            self._sentences[split] = found
        return self._sentences[split]

    @cached_property
    def saved(self) -> dict[str, Any] | None:
        return checkpoint_data(self.vocab_path) if self.vocab_path else None

    @cached_property
    def types(self) -> JointTypes:
        if self.saved is not None:
            return JointTypes.from_dict(self.saved["types"])
        if self.types_file:
            return read_types(self.types_file)
        types = types_of(self.sentences("train"))
        if not types.entities:
            raise ConfigError(f"{self.paths('train')[0]}: the training data has no entities to learn from")
        return types

    @cached_property
    def signatures(self) -> list[list[list[bool]]]:
        """Which relation may hold between which entity types: those the training data shows."""
        if self.saved is not None:
            return self.saved["signatures"]
        return signatures(self.sentences("train"), self.types)

    @cached_property
    def max_width(self) -> int:
        if self.saved is not None:
            return int(self.saved["max_width"])
        if self.width_given is not None:
            return self.width_given
        return max((e.end - e.start for s in self.sentences("train") for e in s.entities), default=1)

    @cached_property
    def pieces(self) -> dict[str, Any]:
        """The tokenizer's record (:func:`tacred.data.markers.tokenizer_spec`): the checkpoint's, or the encoder's."""
        if self.saved is not None:
            return self.saved["tokenizer"]
        if not self.tokenizer:
            raise ConfigError("the joint data module needs the encoder's tokenizer (--model.pretrained)")
        from tacred.data.markers import tokenizer_spec

        return tokenizer_spec(self.tokenizer)

    # -- Lightning hooks ----------------------------------------------------------------------------
    def setup(self, stage: str | None = None) -> None:
        wanted = {"fit": ("train", "dev"), "validate": ("dev",), "test": ("test",)}
        for split in wanted.get(stage or "", ("train", "dev", "test")):
            self.encoded(split)

    def encoded(self, split: str) -> JointSplit:
        if split not in self._encoded:
            pieces = WordPieces(self.pieces)
            where = ", ".join(map(str, self.paths(split)))
            sentences = self.sentences(split)
            check_known(sentences, self.types, where)
            wider = sum(e.end - e.start > self.max_width for s in sentences for e in s.entities)
            if wider:
                log.warning("%s: %d entities are wider than %d words (max_width): the model cannot find them",
                            where, wider, self.max_width)
            encoded = [encode_sentence(s, pieces, self.types, where) for s in sentences]
            self._encoded[split] = JointSplit(encoded, self.max_width, len(self.types.relations),
                                              int(self.pieces["pad_id"]))
        return self._encoded[split]

    def _loader(self, split: str, train: bool) -> DataLoader:
        data = self.encoded(split)
        trainer = self.trainer
        sampler = BucketBatchSampler(
            data.lengths, self.batch_size if train else self.eval_batch_size, shuffle=train, seed=self.seed,
            epoch_source=(lambda: trainer.current_epoch) if train and trainer is not None else None)
        if train and self._resume is not None:
            sampler.resume_within(*self._resume)
        return DataLoader(data, batch_sampler=sampler, collate_fn=data.collate, num_workers=self.num_workers,
                          persistent_workers=self.num_workers > 0)

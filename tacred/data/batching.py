"""Featurised splits, the :class:`Batch` a model consumes, and length-bucketed batch sampling."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch

from tacred.data.examples import Example
from tacred.data.features import FeatureEncoder, LemmaMissing, length_batches, pad_features
from tacred.data.labels import label_ids
from tacred.data.vocab import Vocabularies


@dataclass
class Batch:
    """A padded batch. Shapes: (B, T) for token-level fields, (B,) for the rest; ``pad_mask`` is True at padding."""

    words: torch.Tensor
    pos: torch.Tensor
    ner: torch.Tensor
    subj_positions: torch.Tensor  # log-binned relative positions to the subject span
    obj_positions: torch.Tensor  # log-binned relative positions to the object span
    pad_mask: torch.Tensor
    labels: torch.Tensor
    index: torch.Tensor  # position of each example in its split

    def to(self, device: torch.device | str) -> Batch:
        return Batch(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})

    def __len__(self) -> int:
        return self.words.shape[0]


class EncodedSplit(torch.utils.data.Dataset):
    """One split turned into id arrays once; ``__getitem__`` returns the example's index for collation."""

    def __init__(self, examples: Sequence[Example], vocab: Vocabularies, source: str = "") -> None:
        self.examples = list(examples)
        self.ids = [ex.id for ex in self.examples]
        self.lengths = np.array([len(ex) for ex in self.examples], dtype=np.int64)
        self.rows: list[dict[str, np.ndarray]] = []  # per example, the id arrays of tacred.data.features.FEATURES
        encode = FeatureEncoder(vocab)
        for i, ex in enumerate(self.examples):
            try:
                self.rows.append(encode(ex))
            except LemmaMissing:
                raise ValueError(f"{source}: example {i} (id {ex.id!r}) has no lemmas but the vocabulary uses lemmas") from None
        self.labels = label_ids(self.examples, vocab.labels, source)

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> int:
        return i

    def collate(self, indices: Sequence[int]) -> Batch:
        """Pad the examples at ``indices`` to the longest of them."""
        arrays, pad = pad_features(self.rows, self.lengths, indices)
        return Batch(
            words=torch.from_numpy(arrays["words"]), pos=torch.from_numpy(arrays["pos"]),
            ner=torch.from_numpy(arrays["ner"]), subj_positions=torch.from_numpy(arrays["subj"]),
            obj_positions=torch.from_numpy(arrays["obj"]), pad_mask=torch.from_numpy(pad),
            labels=torch.from_numpy(self.labels[list(indices)]),
            index=torch.as_tensor(list(indices), dtype=torch.int64),
        )


def encode_split(examples: Sequence[Example], vocab: Vocabularies, source: str = "") -> EncodedSplit:
    """The split as the vocabularies' model reads it: word, POS and NER ids, or a transformer's sub-words with typed
    entity markers (:class:`tacred.data.markers.MarkedSplit`, same interface) when they hold a tokenizer."""
    if vocab.tokenizer is not None:
        from tacred.data.markers import MarkedSplit

        return MarkedSplit(examples, vocab, source)  # type: ignore[return-value]
    return EncodedSplit(examples, vocab, source)


def probe_examples(vocab: Vocabularies) -> list[Example]:
    """Sentences of several lengths made of the vocabulary's own words: what checks an export when there is no data
    and what probes a network's parameters."""
    words = [w for w in vocab.words.itos[2:50]] or ["word"]
    out = []
    for n, length in enumerate((3, 7, 12, 25, 40)):
        tokens = tuple(words[(n + k) % len(words)] for k in range(length))
        out.append(Example(id=f"probe-{n}", tokens=tokens, subj_start=0, subj_end=0, obj_start=length - 1,
                           obj_end=length - 1, subj_type="PERSON", obj_type="ORGANIZATION", pos=("NN",) * length,
                           ner=("O",) * length, relation=vocab.no_relation))
    return out


class BucketBatchSampler(torch.utils.data.Sampler[list[int]]):
    """Batches of similar length: cheap padding, deterministic for a seed and epoch, sharded across ranks.

    Training: shuffle (seed + epoch), sort pools of ``pool_batches`` batches by length, cut, shuffle batches;
    each rank takes every ``num_replicas``-th batch, and ranks are evened out by repeating the first batches
    (training only, so all ranks step together). Evaluation: sorted by length, every example exactly once.
    ``epoch_source`` (e.g. the trainer's current epoch) is read at the start of every pass.
    """

    def __init__(
        self, lengths: Sequence[int], batch_size: int, *, shuffle: bool, seed: int = 0,
        pool_batches: int = 50, num_replicas: int = 1, rank: int = 0, epoch_source: Callable[[], int] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.pool = pool_batches * batch_size
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.epoch_source = epoch_source
        self._resume: tuple[int, int] | None = None  # (epoch, batches already trained) for the next pass

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def resume_within(self, epoch: int, batches_done: int) -> None:
        """The next pass over ``epoch`` leaves out its first ``batches_done`` batches (this process's), which a run
        stopped inside that epoch had trained already; a pass over another epoch is whole."""
        if not 0 <= batches_done <= len(self):
            raise ValueError(f"batches_done must lie in 0..{len(self)}, got {batches_done}")
        self._resume = (epoch, batches_done)

    def _all_batches(self) -> list[list[int]]:
        n = len(self.lengths)
        if not self.shuffle:
            return length_batches(self.lengths, self.batch_size)
        rng = random.Random(self.seed * 100_003 + self.epoch)
        order = list(range(n))
        rng.shuffle(order)
        batches = []
        for start in range(0, n, self.pool):
            pool = sorted(order[start : start + self.pool], key=lambda i: self.lengths[i])
            batches.extend(pool[i : i + self.batch_size] for i in range(0, len(pool), self.batch_size))
        rng.shuffle(batches)
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        if self.epoch_source is not None:
            # asked when the epoch's iterator is built: right after a resume too (Lightning calls set_epoch on a
            # loader's sampler only, never on its batch sampler)
            self.epoch = self.epoch_source()
        batches = self._all_batches()
        if self.num_replicas > 1:
            if self.shuffle and len(batches) % self.num_replicas:
                batches = batches + batches[: self.num_replicas - len(batches) % self.num_replicas]
            batches = batches[self.rank :: self.num_replicas]
        if self._resume is not None:
            epoch, done = self._resume
            self._resume = None
            if epoch == self.epoch:
                batches = batches[done:]
        return iter(batches)

    def __len__(self) -> int:
        total = -(-len(self.lengths) // self.batch_size)
        if self.num_replicas == 1:
            return total
        if self.shuffle:
            return -(-total // self.num_replicas)
        return len(range(self.rank, total, self.num_replicas))

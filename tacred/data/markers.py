"""Typed entity markers for a pretrained transformer (Zhou & Chen, 2021): a sentence becomes
``... @ * person * Bill Gates @ founded # ^ organization ^ Microsoft # ...`` (types lowercased, ``_`` → space), cut
into the model's sub-words, and the classifier reads the hidden states at the two opening markers ``@`` and ``#``.

The tokenizer travels inside the run's vocabularies (:class:`~tacred.data.vocab.Vocabularies` ``tokenizer``: the
``tokenizer.json`` text, the padding id and the longest input), so a checkpoint or an exported model never needs the
folder it was trained from; encoding uses the ``tokenizers`` library alone (no torch), which ONNX inference shares.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from tacred.data.examples import DataFormatError, Example
from tacred.data.labels import label_ids
from tacred.data.pretrained_packages import PretrainedModelError, resolve_pretrained


def tokenizer_spec(pretrained: str) -> dict[str, Any]:
    """What the vocabularies keep of a pretrained model's tokenizer: its ``tokenizer.json``, padding id and longest
    input (the smaller of the tokenizer's ``model_max_length`` and the model's position embeddings)."""
    path = resolve_pretrained(pretrained)
    try:
        from transformers import AutoConfig, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path)
        config = AutoConfig.from_pretrained(path)
    except ImportError:
        raise PretrainedModelError("the transformer encoder needs transformers: pip install -e '.[transformer]' "
                                   "in a clone of tacred") from None
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise PretrainedModelError(f"--model.network.pretrained {pretrained}: cannot load its tokenizer ({first})") from None
    if not tokenizer.is_fast or tokenizer.pad_token_id is None:
        raise PretrainedModelError(f"--model.network.pretrained {pretrained}: needs a fast tokenizer with a "
                                   "padding token (tokenizer.json)")
    limits = [n for n in (tokenizer.model_max_length, getattr(config, "max_position_embeddings", None))
              if isinstance(n, int) and 0 < n < 100_000]
    return {"name": pretrained, "tokenizer_json": tokenizer.backend_tokenizer.to_str(),
            "pad_id": int(tokenizer.pad_token_id), "max_length": min(limits) if limits else 512}


@functools.lru_cache(maxsize=8)
def _tokenizer(tokenizer_json: str) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(tokenizer_json)
    tokenizer.no_truncation()  # an over-long input is an error (TypedMarkers.encode), never cut silently
    tokenizer.no_padding()  # batches are padded to their own longest input (MarkedSplit.collate)
    return tokenizer


def marked_words(ex: Example) -> tuple[list[str], int, int]:
    """The example's words with typed markers inserted, and the word positions of the opening ``@`` and ``#``."""
    subj_type = ex.subj_type.replace("_", " ").lower().split()
    obj_type = ex.obj_type.replace("_", " ").lower().split()
    words: list[str] = []
    subj_at = obj_at = -1
    for i, token in enumerate(ex.tokens):
        if i == ex.subj_start:
            subj_at = len(words)
            words += ["@", "*", *subj_type, "*"]
        if i == ex.obj_start:
            obj_at = len(words)
            words += ["#", "^", *obj_type, "^"]
        words.append(token)
        if i == ex.subj_end:
            words.append("@")
        if i == ex.obj_end:
            words.append("#")
    return words, subj_at, obj_at


class TypedMarkers:
    """Examples → sub-word ids with typed markers, and the positions of the two opening markers."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.name = spec["name"]
        self.pad_id = int(spec["pad_id"])
        self.max_length = int(spec["max_length"])
        self.tokenizer = _tokenizer(spec["tokenizer_json"])

    def encode(self, examples: Sequence[Example], source: str = "") -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """Ids per example (with the model's special tokens), and the positions of ``@`` and ``#`` in them."""
        marked = [marked_words(ex) for ex in examples]
        encodings = self.tokenizer.encode_batch([words for words, _, _ in marked], is_pretokenized=True)
        ids, subj, obj = [], np.zeros(len(examples), np.int64), np.zeros(len(examples), np.int64)
        for i, (ex, (_, subj_at, obj_at), enc) in enumerate(zip(examples, marked, encodings, strict=True)):
            if len(enc.ids) > self.max_length:
                raise DataFormatError(
                    f"{source}: example {i} (id {ex.id!r}): {len(enc.ids)} sub-word tokens with the entity markers, "
                    f"more than the {self.max_length} that {self.name} reads; shorten the sentence")
            word_ids = enc.word_ids
            subj[i], obj[i] = word_ids.index(subj_at), word_ids.index(obj_at)
            ids.append(np.asarray(enc.ids, dtype=np.int64))
        return ids, subj, obj


def pad_marked(tokens: Sequence[np.ndarray], subj: np.ndarray, obj: np.ndarray, indices: Sequence[int],
               pad_id: int) -> dict[str, np.ndarray]:
    """The named arrays of the examples at ``indices``: ``input_ids`` padded with ``pad_id`` to the longest of them
    and ``pad_mask`` (B, T, True at padding), ``subj_marker`` and ``obj_marker`` (B,)."""
    rows = list(indices)
    width = max(len(tokens[i]) for i in rows)
    input_ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    pad = np.ones((len(rows), width), dtype=bool)
    for row, i in enumerate(rows):
        input_ids[row, : len(tokens[i])] = tokens[i]
        pad[row, : len(tokens[i])] = False
    return {"input_ids": input_ids, "pad_mask": pad, "subj_marker": subj[rows], "obj_marker": obj[rows]}


# the named arrays the transformer takes (and its ONNX graph's input names), in order
MARKED_INPUTS = ("input_ids", "pad_mask", "subj_marker", "obj_marker")


@dataclass
class MarkedBatch:
    """A padded batch for the transformer: (B, T) sub-word ids and padding mask (True at padding), (B,) the rest."""

    input_ids: Any  # torch.Tensor; typed loosely so that this module imports without torch (ONNX inference)
    pad_mask: Any
    subj_marker: Any  # position of the subject's opening "@"
    obj_marker: Any  # position of the object's opening "#"
    labels: Any
    index: Any

    def to(self, device: Any) -> MarkedBatch:
        return MarkedBatch(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})

    def __len__(self) -> int:
        return self.input_ids.shape[0]


class MarkedSplit:
    """One split encoded once for the transformer; the interface of :class:`~tacred.data.batching.EncodedSplit`
    (``lengths`` in sub-words, so batches are length-sorted and padded only to their own longest input)."""

    def __init__(self, examples: Sequence[Example], vocab: Any, source: str = "") -> None:
        self.examples = list(examples)
        self.ids = [ex.id for ex in self.examples]
        self.markers = TypedMarkers(vocab.tokenizer)
        self.tokens, self.subj, self.obj = self.markers.encode(self.examples, source)
        self.lengths = np.array([len(t) for t in self.tokens], dtype=np.int64)
        self.labels = label_ids(self.examples, vocab.labels, source)

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> int:
        return i

    def arrays(self, indices: Sequence[int]) -> dict[str, np.ndarray]:
        """The padded numpy inputs of the examples at ``indices``."""
        return pad_marked(self.tokens, self.subj, self.obj, indices, self.markers.pad_id)

    def collate(self, indices: Sequence[int]) -> MarkedBatch:
        import torch

        arrays = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in self.arrays(indices).items()}
        return MarkedBatch(**arrays, labels=torch.from_numpy(self.labels[list(indices)]),
                           index=torch.as_tensor(list(indices), dtype=torch.int64))

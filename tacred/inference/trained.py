"""A trained network for prediction without Lightning: what ``load_model`` (the Python API) and ``tacred serve`` use.

A tacred checkpoint holds the vocabularies, the network's configuration and its weights, which is all prediction
needs. :func:`load_trained` is the one loader of a checkpoint: :class:`TrainedNetwork` and
:class:`~tacred.training.module.RelationExtractor` both hold the network as ``net`` (parameter names ``net.*``), so one
checkpoint serves both. Training, testing and the CLI go through the Lightning module; prediction from Python does
not import Lightning (and with it torchmetrics, matplotlib and TorchDynamo), which took more than half of a
``load_model`` call's time and a quarter of its memory (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from tacred.data.batching import Batch, BucketBatchSampler, EncodedSplit
from tacred.data.features import WORD_INPUTS
from tacred.data.markers import MARKED_INPUTS
from tacred.data.vocab import Vocabularies
from tacred.models.config import NetworkConfig
from tacred.models.network import NetworkOutput, RelationNetwork


def unfit_checkpoint(path: str | Path, err: Exception) -> Exception:
    """The error for a checkpoint whose hyperparameters or vocabulary this version of tacred cannot rebuild."""
    from tacred.checkpoints import CheckpointError

    return CheckpointError(f"{path}: its hyperparameters or vocabulary do not fit this version of tacred "
                           f"({type(err).__name__}: {err})")


@dataclass(frozen=True)
class SavedModel:
    """What a tacred checkpoint holds to rebuild its model: the vocabularies, the network's configuration, the
    training module's other hyperparameters (``lr``, ...) and the file's whole contents (weights, data options)."""

    vocab: Vocabularies
    network: NetworkConfig
    hparams: dict[str, Any]
    contents: dict[str, Any]


M = TypeVar("M", bound=nn.Module)


def load_trained(path: str | Path, build: Callable[[SavedModel], M], map_location: str | torch.device = "cpu",
                 checkpoint: dict[str, Any] | None = None) -> M:
    """The one checkpoint loader: read ``path``, rebuild its model with ``build`` (a module that holds the network
    as ``net``, as :class:`~tacred.training.module.RelationExtractor` and :class:`TrainedNetwork` do), check that the
    weights fit, load them and return the model in evaluation mode on ``map_location``. Whatever does not fit is a
    :class:`~tacred.checkpoints.CheckpointError` naming the file. ``checkpoint``: the file's contents when they were
    read already."""
    from tacred.checkpoints import CheckpointError, check_compatible, read_checkpoint

    ckpt = read_checkpoint(path) if checkpoint is None else checkpoint
    if not isinstance(ckpt.get("tacred_vocab"), dict):
        from tacred.data.joint_batching import JOINT_KEY

        if isinstance(ckpt.get(JOINT_KEY), dict):
            raise CheckpointError(f"{path}: a joint entity-and-relation model; this command takes a relation "
                                  "classifier (a joint model is used by tacred test, extract, serve, kb and export, and "
                                  "by load_model(...).extract)")
        raise CheckpointError(f"{path}: holds no tacred vocabulary (not written by tacred?)")
    hparams = dict(ckpt.get("hyper_parameters", {}))
    try:
        network = NetworkConfig(**hparams.pop("network", {}))
        model = build(SavedModel(Vocabularies.from_dict(ckpt["tacred_vocab"]), network, hparams, ckpt))
    except (TypeError, KeyError) as err:
        raise unfit_checkpoint(path, err) from None
    check_compatible(ckpt, model, path)
    model.load_state_dict(ckpt["state_dict"])
    return model.eval().to(map_location)


def build_network(network: NetworkConfig, vocab: Vocabularies,
                  word_vectors: torch.Tensor | None = None) -> nn.Module:
    """The network sized by the vocabularies (words, POS tags, NER tags, labels), or the pretrained transformer."""
    if network.encoder == "transformer":
        from tacred.models.transformer import TransformerNetwork

        if vocab.tokenizer is None:
            raise ValueError("the transformer encoder needs vocabularies with its tokenizer (the data module adds it "
                             "from --model.network.pretrained)")
        return TransformerNetwork(network, len(vocab.labels))
    return RelationNetwork(network, len(vocab.words), len(vocab.pos), len(vocab.ner), len(vocab.labels), word_vectors)


def label_probabilities(model: nn.Module, data: EncodedSplit, num_labels: int, batch_size: int = 50) -> torch.Tensor:
    """Label probabilities (N, L) of every example of an encoded split, in the split's order; ``model(batch)``
    gives a :class:`NetworkOutput`. Batches are length-sorted (little padding); no Trainer."""
    device = next(model.parameters()).device
    probs = torch.zeros(len(data), num_labels)
    with torch.inference_mode():
        for indices in BucketBatchSampler(data.lengths, batch_size, shuffle=False):
            batch = data.collate(indices).to(device)
            probs[batch.index.cpu()] = torch.softmax(model(batch).logits.float(), dim=-1).cpu()  # (B, L)
    return probs


class TrainedNetwork(nn.Module):
    """The network of a checkpoint with its vocabularies, in evaluation mode (see the module docstring)."""

    def __init__(self, net: nn.Module, vocab: Vocabularies, network_config: NetworkConfig | None = None) -> None:
        super().__init__()
        self.net = net
        self.vocab = vocab
        self.network_config = network_config or NetworkConfig()

    @classmethod
    def from_checkpoint(cls, path: str | Path, map_location: str | torch.device = "cpu",
                        checkpoint: dict[str, Any] | None = None) -> TrainedNetwork:
        """Rebuild the network from its checkpoint alone (:func:`load_trained`); a ``CheckpointError`` names what
        does not fit. ``checkpoint``: the file's contents when they were read already."""
        return load_trained(path, lambda saved: cls(build_network(saved.network, saved.vocab), saved.vocab,
                                                    saved.network), map_location, checkpoint)

    def forward(self, batch: Batch) -> NetworkOutput:
        return self.net(batch)

    def split_probabilities(self, data: EncodedSplit, batch_size: int = 50) -> torch.Tensor:
        """Label probabilities (N, L) of every example of an encoded split, in the split's order."""
        self.eval()
        return label_probabilities(self, data, len(self.vocab.labels), batch_size)


def probability_network(net: nn.Module, share_encoding: bool = False) -> nn.Module:
    """The network as a function of its named input arrays to probabilities: :class:`ProbabilityNetwork` for the
    word-vocabulary networks (``share_encoding``: see there), :class:`MarkedProbabilityNetwork` for the
    transformer."""
    from tacred.models.transformer import TransformerNetwork

    if isinstance(net, TransformerNetwork):
        return MarkedProbabilityNetwork(net)
    return ProbabilityNetwork(net, share_encoding=share_encoding)


class MarkedProbabilityNetwork(nn.Module):
    """The transformer as a function of the arrays of :class:`tacred.inference.encoding.MarkedEncoder`: ``input_ids``
    and ``pad_mask`` (B, T), ``subj_marker`` and ``obj_marker`` (B,) → label probabilities (B, L)."""

    inputs = MARKED_INPUTS

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, input_ids: torch.Tensor, pad_mask: torch.Tensor, subj_marker: torch.Tensor,
                obj_marker: torch.Tensor) -> torch.Tensor:
        from tacred.data.markers import MarkedBatch

        first = input_ids[:, 0]  # stands in for the labels and indices, which the network never reads
        batch = MarkedBatch(input_ids=input_ids, pad_mask=pad_mask, subj_marker=subj_marker, obj_marker=obj_marker,
                            labels=first, index=first)
        return torch.softmax(self.net(batch).logits.float(), dim=-1)  # (B, L)


class ProbabilityNetwork(nn.Module):
    """A word-vocabulary network as a function of named (B, T) arrays (the inputs of
    :class:`tacred.inference.encoding.WordEncoder`) to label probabilities (B, L): what the torch backend runs and
    what ``tacred export`` writes as ``model.onnx``, so both compute the same function.

    ``share_encoding``: rows equal in everything the encoder reads (words, tags, the object's position: the
    candidate pairs of a sentence that share an object, as extraction asks them) are encoded once and only the
    position-aware layer runs per row; in eval mode the result is the same function (each row's encoding depends on
    that row alone). The torch backend turns it on; the ONNX graph is written without it."""

    inputs = WORD_INPUTS

    def __init__(self, net: nn.Module, share_encoding: bool = False) -> None:
        super().__init__()
        self.net = net
        self.share_encoding = share_encoding

    def forward(self, words: torch.Tensor, pos: torch.Tensor, ner: torch.Tensor, subj_positions: torch.Tensor,
                obj_positions: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        batch = Batch(words=words, pos=pos, ner=ner, subj_positions=subj_positions, obj_positions=obj_positions,
                      pad_mask=pad_mask, labels=words[:, 0], index=words[:, 0])
        if self.share_encoding and not self.training:
            logits = self._shared(batch)
        else:
            logits = self.net(batch).logits
        return torch.softmax(logits.float(), dim=-1)  # (B, L)

    def pair_probabilities(self, words: torch.Tensor, pos: torch.Tensor, ner: torch.Tensor, pad_mask: torch.Tensor,
                           sentence: torch.Tensor, pair_words: torch.Tensor, subj_positions: torch.Tensor,
                           obj_positions: torch.Tensor) -> torch.Tensor:
        """Probabilities (P, L) of S sentences' P candidate pairs (the arrays of
        :class:`tacred.models.pair_scoring.SentencePairs`): each sentence's shared part once
        (:func:`~tacred.models.pair_scoring.pair_logits`; the plain pass for a network that does not allow it)."""
        from tacred.models.pair_scoring import PairScorer, SentencePairs, pair_logits, unfactored_reason

        if "_pair_scorer" not in self.__dict__:  # folded from the weights once (not a submodule: no state_dict keys)
            self.__dict__["_pair_scorer"] = PairScorer(self.net) if unfactored_reason(self.net) is None else None
        pairs = SentencePairs(words, pos, ner, pad_mask, sentence, pair_words, subj_positions, obj_positions)
        if self.training:
            return torch.softmax(self.net(pairs.pair_batch()).logits.float(), dim=-1)
        return torch.softmax(pair_logits(self.net, pairs, self.__dict__["_pair_scorer"]).float(), dim=-1)

    def _shared(self, batch: Batch) -> torch.Tensor:
        """The logits with each distinct encoder input encoded once."""
        from tacred.models.encoder import Encoded

        key = torch.cat([batch.words, batch.pos, batch.ner, batch.obj_positions, batch.pad_mask.long()], dim=1)
        distinct, inverse = torch.unique(key, dim=0, return_inverse=True)
        if len(distinct) == len(key):
            return self.net(batch).logits
        rows = torch.arange(len(key), device=key.device)
        first = torch.full((len(distinct),), len(key), device=key.device).scatter_reduce(0, inverse, rows, "amin")
        part = Batch(**{f.name: getattr(batch, f.name)[first] for f in fields(batch)})
        encoded = self.net.encode_batch(part)
        spread = Encoded(encoded.states[inverse], encoded.query[inverse],
                         [weights[inverse] for weights in encoded.self_attention])
        return self.net.classify(spread, batch).logits

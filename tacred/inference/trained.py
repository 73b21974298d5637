"""A trained network for prediction without Lightning: what ``load_model`` (the Python API) and ``tacred serve`` use,
and :class:`TorchBackend`, which runs it on the CPU or a CUDA device.

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
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch
from torch import nn

from tacred.data.batching import Batch, BucketBatchSampler, EncodedSplit
from tacred.data.features import WORD_INPUTS
from tacred.data.markers import MARKED_INPUTS
from tacred.data.vocab import Vocabularies
from tacred.devices import autocast
from tacred.models.config import NetworkConfig
from tacred.models.network import NetworkOutput, RelationNetwork

if TYPE_CHECKING:
    from tacred.inference.predictor import Predictor


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


def saved_vocabularies(checkpoint: dict[str, Any], path: str | Path) -> Vocabularies:
    """The vocabularies of a relation classifier's read ``checkpoint`` (``path`` names it in messages); a
    :class:`~tacred.checkpoints.CheckpointError` for a checkpoint that holds none."""
    from tacred.checkpoints import CheckpointError

    if not isinstance(checkpoint.get("tacred_vocab"), dict):
        from tacred.data.joint_batching import JOINT_KEY

        if isinstance(checkpoint.get(JOINT_KEY), dict):
            raise CheckpointError(f"{path}: a joint entity-and-relation model; this command takes a relation "
                                  "classifier (a joint model is used by tacred test, extract, serve, kb and export, and "
                                  "by load_model(...).extract)")
        raise CheckpointError(f"{path}: holds no tacred vocabulary (not written by tacred?)")
    try:
        return Vocabularies.from_dict(checkpoint["tacred_vocab"])
    except (TypeError, KeyError) as err:
        raise unfit_checkpoint(path, err) from None


def load_trained(path: str | Path, build: Callable[[SavedModel], M], map_location: str | torch.device = "cpu") -> M:
    """The one checkpoint loader: read ``path`` and :func:`rebuild` its model with ``build``."""
    from tacred.checkpoints import read_checkpoint

    checkpoint = read_checkpoint(path)
    return rebuild(checkpoint, saved_vocabularies(checkpoint, path), path, build, map_location)


def rebuild(checkpoint: dict[str, Any], vocab: Vocabularies, path: str | Path, build: Callable[[SavedModel], M],
            map_location: str | torch.device = "cpu") -> M:
    """The model of a read ``checkpoint`` and its ``vocab`` (:func:`saved_vocabularies`; ``path`` names the
    checkpoint in messages): rebuilt with ``build`` (a module that holds the network as ``net``, as
    :class:`~tacred.training.module.RelationExtractor` and :class:`TrainedNetwork` do), its weights checked to fit
    (:func:`check_compatible`) and loaded, in evaluation mode on ``map_location``. Whatever does not fit is a
    :class:`~tacred.checkpoints.CheckpointError` naming the file."""
    hparams = dict(checkpoint.get("hyper_parameters", {}))
    try:
        network = NetworkConfig(**hparams.pop("network", {}))
        model = build(SavedModel(vocab, network, hparams, checkpoint))
    except (TypeError, KeyError) as err:
        raise unfit_checkpoint(path, err) from None
    check_compatible(checkpoint, model, path)
    model.load_state_dict(checkpoint["state_dict"])
    return model.eval().to(map_location)


def check_compatible(checkpoint: dict[str, Any], model: Any, path: str | Path) -> None:
    """Raise :class:`~tacred.checkpoints.CheckpointError` when the checkpoint's weights do not fit ``model`` (other
    labels, vocabulary or architecture), naming the first differing parameter instead of PyTorch's size-mismatch
    dump."""
    from tacred.checkpoints import CheckpointError

    saved_vocab = checkpoint.get("tacred_vocab")
    vocab = getattr(model, "vocab", None)
    if saved_vocab is not None and vocab is not None and list(saved_vocab.get("labels", [])) != vocab.labels.itos:
        theirs, ours = list(saved_vocab.get("labels", [])), vocab.labels.itos
        diff = sorted(set(theirs) ^ set(ours))
        detail = f"differing labels {diff[:5]}" if diff else "the same labels in another order"
        raise CheckpointError(f"{path}: trained with {len(theirs)} labels, this configuration has {len(ours)} "
                              f"({detail}); use the data and labels the checkpoint was trained with")
    state = model.state_dict()
    for name, tensor in checkpoint["state_dict"].items():
        if name in state and tuple(state[name].shape) != tuple(tensor.shape):
            raise CheckpointError(f"{path}: parameter {name} has shape {tuple(tensor.shape)} in the checkpoint but "
                                  f"{tuple(state[name].shape)} in this configuration (another vocabulary or network?)")
    missing = [name for name in state if name not in checkpoint["state_dict"] and not name.endswith("class_weights")]
    if missing:
        raise CheckpointError(f"{path}: the checkpoint has no parameter {missing[0]} (and {len(missing) - 1} more) "
                              f"that this configuration needs (another network?)")


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
    def from_checkpoint(cls, path: str | Path, map_location: str | torch.device = "cpu") -> TrainedNetwork:
        """Rebuild the network from its checkpoint file alone (:func:`load_trained`); a ``CheckpointError`` names
        what does not fit."""
        return load_trained(path, cls._built, map_location)

    @classmethod
    def from_contents(cls, checkpoint: dict[str, Any], path: str | Path,
                      map_location: str | torch.device = "cpu") -> TrainedNetwork:
        """The same from a checkpoint's contents, read already (``path`` names them in messages)."""
        return rebuild(checkpoint, saved_vocabularies(checkpoint, path), path, cls._built, map_location)

    @classmethod
    def _built(cls, saved: SavedModel) -> TrainedNetwork:
        return cls(build_network(saved.network, saved.vocab), saved.vocab, saved.network)

    def forward(self, batch: Batch) -> NetworkOutput:
        return self.net(batch)

    def split_probabilities(self, data: EncodedSplit, batch_size: int = 50) -> torch.Tensor:
        """Label probabilities (N, L) of every example of an encoded split, in the split's order."""
        self.eval()
        return label_probabilities(self, data, len(self.vocab.labels), batch_size)


class TorchBackend:
    """Runs ``module(**arrays) -> (B, L) probabilities`` (e.g. :class:`tacred.inference.trained.ProbabilityNetwork`)
    on ``device``, at ``precision`` (:data:`tacred.devices.PRECISIONS`; None: float32)."""

    def __init__(self, module: nn.Module, device: str, precision: str | None = None) -> None:
        self.device = device
        self.precision = precision
        self.module = module.eval().to(device)

    def probabilities(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        return self._run(self.module, arrays)

    def pair_probabilities(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """Probabilities (P, L) of a batch of sentences' pairs (:func:`tacred.inference.sentence_pairs.pad_sentences`)
        from one shared pass per sentence where the network allows it (:mod:`tacred.models.pair_scoring`)."""
        return self._run(self.module.pair_probabilities, arrays)

    def _run(self, forward: Any, arrays: dict[str, np.ndarray]) -> np.ndarray:
        tensors = {name: torch.from_numpy(array).to(self.device) for name, array in arrays.items()}
        with torch.inference_mode(), autocast(self.device, self.precision):
            return forward(**tensors).float().cpu().numpy()


def torch_backend(checkpoint: dict[str, Any], vocab: Vocabularies, path: str | Path, device: str,
                  precision: str | None = None) -> TorchBackend:
    """The torch backend of a relation classifier's read ``checkpoint`` and its ``vocab``
    (:func:`saved_vocabularies`; ``path`` names the checkpoint in messages): its network rebuilt and checked
    (:func:`rebuild`), on the torch ``device`` (resolved: ``cpu``, ``cuda``, ``cuda:N``) at ``precision``: a network
    over a transformer encoder takes it, a word-vocabulary network always runs float32 (its pair scorer is written
    for float32, and bfloat16 would gain it little)."""
    from tacred.models.transformer import TransformerNetwork

    model = rebuild(checkpoint, vocab, path, TrainedNetwork._built)
    return TorchBackend(probability_network(model.net, share_encoding=True), device,
                        precision if isinstance(model.net, TransformerNetwork) else None)


def load_checkpoint_predictor(checkpoint: dict[str, Any], path: str | Path, device: str = "cpu",
                              **options: Any) -> Predictor:
    """A :class:`~tacred.inference.predictor.Predictor` for a tacred checkpoint's read contents (``path`` names them
    in messages) on the torch ``device`` (resolved); ``options``: those of ``Predictor``. ``load_model`` builds the
    same from the same parts (:func:`tacred.inference.api.open_model`)."""
    from tacred.inference.encoding import build_encoder, encoder_kind
    from tacred.inference.predictor import Predictor

    vocab = saved_vocabularies(checkpoint, path)
    kind = encoder_kind(checkpoint.get("tacred_predictor"), checkpoint["tacred_vocab"])
    return Predictor(build_encoder(kind, vocab, str(path)), torch_backend(checkpoint, vocab, path, device), **options)


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

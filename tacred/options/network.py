"""The network's own options (the fields of :class:`tacred.models.config.NetworkConfig` before the attention
variants add theirs), with their rules, in a module that imports no torch: the command line checks
``--model.network.*`` values against them before loading torch and Lightning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from tacred.options.rules import at_least, fraction, probability


def divides_the_model_dimension(heads: int, cfg: NetworkOptions) -> str | None:
    """The self-attention splits word_dim + pos_dim + ner_dim into equal heads (the LSTM encoder has no heads)."""
    d_model = cfg.word_dim + cfg.pos_dim + cfg.ner_dim
    if cfg.encoder == "lstm" or d_model % heads == 0:
        return None
    return f"must divide the model dimension word_dim + pos_dim + ner_dim = {d_model}"


@dataclass
class NetworkOptions:
    """The fields of :class:`~tacred.models.config.NetworkConfig` that the network itself declares, with defaults
    and rules (see there for what they do)."""

    # inputs
    word_dim: Annotated[int, at_least(1)] = 300
    pos_dim: Annotated[int, at_least(1)] = 30
    ner_dim: Annotated[int, at_least(1)] = 30
    position_dim: Annotated[int, at_least(1)] = 30
    word_dropout: Annotated[float, fraction] = 0.06  # words replaced by <UNK>, not rescaled: 1 is allowed
    object_position_input: bool = True
    # the relative positions told apart (longer ones share the last); Dufter et al.'s tables cover 0 … this
    max_relative_distance: Annotated[int, at_least(1)] = 128
    # encoder
    encoder: Literal["self_attention", "lstm", "lstm_self_attention", "transformer"] = "self_attention"
    num_layers: Annotated[int, at_least(1)] = 1
    num_heads: Annotated[int, at_least(1), divides_the_model_dimension] = 3
    ffn_dim: Annotated[int, at_least(1)] = 130
    dropout: Annotated[float, probability] = 0.4
    attention_dropout: Annotated[float, probability] = 0.1
    norm: Literal["batch", "layer"] = "batch"
    residual: Literal["single", "double"] = "single"
    activation: Literal["rrelu", "relu"] = "rrelu"
    init: Literal["kaiming", "xavier"] = "kaiming"
    position_encoding: Literal["relative", "sinusoidal", "none"] = "relative"
    # LSTM baselines
    lstm_hidden: Annotated[int, at_least(1)] = 200
    lstm_layers: Annotated[int, at_least(1)] = 2
    # summary and position-aware attention (Zhang et al., 2017)
    position_aware: bool = True
    attention_dim: Annotated[int, at_least(1)] = 200
    summary: Literal["max_pool", "last"] = "max_pool"
    # the pretrained transformer (encoder: transformer): a model folder, a hub id, or ``minilm`` (all-MiniLM-L6-v2,
    # installed by tacred[transformer]); its architecture is recorded here when training starts, so a checkpoint
    # rebuilds the network without the folder
    pretrained: str = "minilm"
    transformer_config: dict[str, Any] | None = None

"""Hyperparameters of the network: one dataclass, so each ablation is a few lines of YAML."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal


@dataclass
class NetworkConfig:
    """Architecture switches. Defaults are the paper's final model (PAPER_NOTES sections 3–5).

    Encoder: ``self_attention`` (the paper), ``lstm`` (Zhang's LSTM / PA-LSTM baselines) or
    ``lstm_self_attention`` (Table 3: the LSTM gives h_i, the self-attention encoder gives the query).
    ``transformer``: a pretrained Hugging Face encoder over the sentence with typed entity markers (Zhou & Chen,
    2021; :mod:`tacred.models.transformer`), ``pretrained`` names it and ``dropout`` is its classifier's; the fields of
    the word-vocabulary networks play no part.
    ``position_aware=False`` classifies the sentence summary directly (Table 3 "without the PA layer").
    Attention variants register themselves in :mod:`tacred.models.attention` (``tacred.models.attention.variants()``
    lists them); ``attention_bias`` and ``attention_conv`` are checked against that registry.
    """

    # inputs
    word_dim: int = 300
    pos_dim: int = 30
    ner_dim: int = 30
    position_dim: int = 30
    word_dropout: float = 0.06
    object_position_input: bool = True
    max_relative_distance: int = 128
    # encoder
    encoder: Literal["self_attention", "lstm", "lstm_self_attention", "transformer"] = "self_attention"
    num_layers: int = 1
    num_heads: int = 3
    ffn_dim: int = 130
    dropout: float = 0.4
    attention_dropout: float = 0.1
    norm: Literal["batch", "layer"] = "batch"
    residual: Literal["single", "double"] = "single"
    activation: Literal["rrelu", "relu"] = "rrelu"
    init: Literal["kaiming", "xavier"] = "kaiming"
    position_encoding: Literal["relative", "sinusoidal", "none"] = "relative"
    relpos_query: Literal["separate", "shared"] = "separate"
    # related-work attention variants (one file each in tacred/models/attention/): extra logit terms ``shaw``
    # (Shaw et al. 2018, clip ``shaw_clip``, relative values if ``shaw_values``), ``absolute_scalars`` (Dufter et
    # al.'s SAN+P) and ``relative_scalars`` (SAN+R), both sized by ``max_relative_distance``; γ-scaled q/k/v; a
    # convolution over the attention matrix (``1d``, ``2d``); ``gaussian_heads`` of the heads attend by Gaussian
    # position only (Dagan 2019). The names in attention_bias and attention_conv are the registry's.
    attention_bias: list[str] | None = None
    shaw_clip: int = 16
    shaw_values: bool = True
    learned_temperature: bool = False
    attention_conv: str = "none"
    gaussian_heads: int = 0
    # LSTM baselines
    lstm_hidden: int = 200
    lstm_layers: int = 2
    # summary and position-aware attention (Zhang et al., 2017)
    position_aware: bool = True
    attention_dim: int = 200
    summary: Literal["max_pool", "last"] = "max_pool"
    # the pretrained transformer (encoder: transformer): a model folder, a hub id, or ``minilm`` (all-MiniLM-L6-v2,
    # installed by tacred[transformer]); its architecture is recorded here when training starts, so a checkpoint
    # rebuilds the network without the folder
    pretrained: str = "minilm"
    transformer_config: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        from tacred.training.validation import check_network

        check_network(asdict(self))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

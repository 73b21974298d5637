"""Builds the attention core with the position terms a :class:`NetworkConfig` asks for."""

from __future__ import annotations

from torch import nn

from tacred.models.attention.core import MultiHeadSelfAttention
from tacred.models.attention.relative import RelativePositionScores
from tacred.models.config import NetworkConfig


def build_attention(d_model: int, cfg: NetworkConfig) -> MultiHeadSelfAttention:
    """The paper's relative-position scores when ``position_encoding == "relative"``, plus any variants."""
    biases: list[nn.Module] = []
    if cfg.position_encoding == "relative":
        biases.append(RelativePositionScores(d_model, cfg.num_heads, cfg.max_relative_distance, cfg.relpos_query))
    return MultiHeadSelfAttention(d_model, cfg.num_heads, cfg.attention_dropout, biases=biases)

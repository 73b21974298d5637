"""Builds the attention core with the position terms a :class:`NetworkConfig` asks for."""

from __future__ import annotations

from torch import nn

from tacred.models.attention.convolution import AttentionConv1d, AttentionConv2d
from tacred.models.attention.core import MultiHeadSelfAttention
from tacred.models.attention.gaussian import (
    ContentHeadsOnly,
    ContentHeadsScale,
    GaussianPositionHeads,
    content_head_mask,
)
from tacred.models.attention.position_scalars import AbsolutePositionScalars, RelativePositionScalars
from tacred.models.attention.relative import RelativePositionScores
from tacred.models.attention.shaw import ShawRelativeKeys, ShawRelativeValues
from tacred.models.attention.temperature import LearnedTemperature
from tacred.models.config import NetworkConfig

ATTENTION_BIASES = ("shaw", "absolute_scalars", "relative_scalars")


def build_attention(d_model: int, cfg: NetworkConfig) -> MultiHeadSelfAttention:
    """The paper's relative-position scores when ``position_encoding == "relative"``, plus any variants.

    Dufter et al.'s tables (SAN+P/R, 1-d convolution) cover positions 0 … ``max_relative_distance``, the same
    range as the relative-position vectors; longer sentences share the last entry.
    """
    if d_model % cfg.num_heads:
        raise ValueError(f"d_model={d_model} is not divisible by num_heads={cfg.num_heads}")
    heads, head_dim, positions = cfg.num_heads, d_model // cfg.num_heads, cfg.max_relative_distance + 1
    names = list(cfg.attention_bias or [])
    unknown = [n for n in names if n not in ATTENTION_BIASES]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"attention_bias must list distinct names out of {ATTENTION_BIASES}, got {names}")
    biases: list[nn.Module] = []
    values: nn.Module | None = None
    if cfg.position_encoding == "relative":
        biases.append(RelativePositionScores(d_model, heads, cfg.max_relative_distance, cfg.relpos_query))
    if "shaw" in names:
        biases.append(ShawRelativeKeys(head_dim, cfg.shaw_clip))
        values = ShawRelativeValues(head_dim, cfg.shaw_clip) if cfg.shaw_values else None
    if "absolute_scalars" in names:
        biases.append(AbsolutePositionScalars(heads, positions))
    if "relative_scalars" in names:
        biases.append(RelativePositionScalars(heads, positions))
    temperature: nn.Module | None = LearnedTemperature(head_dim) if cfg.learned_temperature else None
    if cfg.attention_conv not in ("none", "1d", "2d"):
        raise ValueError(f"attention_conv must be 'none', '1d' or '2d', got {cfg.attention_conv!r}")
    transform: nn.Module | None = None
    if cfg.attention_conv == "1d":
        transform = AttentionConv1d(heads, positions)
    elif cfg.attention_conv == "2d":
        transform = AttentionConv2d(heads)
    if cfg.gaussian_heads:
        gaussian = GaussianPositionHeads(d_model, heads, cfg.gaussian_heads)
        keep = content_head_mask(heads, cfg.gaussian_heads)
        biases = [ContentHeadsOnly(b, keep) for b in biases] + [gaussian]
        temperature = ContentHeadsScale(head_dim, keep, temperature)
    return MultiHeadSelfAttention(d_model, heads, cfg.attention_dropout, biases=biases, values=values,
                                  temperature=temperature, transform=transform)

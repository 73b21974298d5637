"""Learnable temperature of Dufter et al. (2020): W_q, W_k and W_v each multiplied by a learned scalar γ.

γ_q·γ_k acts as an inverse temperature of the softmax; all three start at 1, i.e. the plain 1/√Dh scaling.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import torch
from torch import nn

from tacred.models.attention.core import AttentionInputs
from tacred.models.attention.registry import AttentionParts, Hyperparameter, register

if TYPE_CHECKING:
    from tacred.options.network import NetworkOptions


class LearnedTemperature(nn.Module):
    """Temperature hook: returns (q·γ_q, k·γ_k, v·γ_v) and the fixed scale 1/√Dh."""

    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.scale = 1.0 / math.sqrt(head_dim)
        self.gamma = nn.Parameter(torch.ones(3))  # γ_q, γ_k, γ_v

    def reset_parameters(self, init: str = "kaiming") -> None:
        nn.init.ones_(self.gamma)

    def forward(self, inputs: AttentionInputs) -> tuple[AttentionInputs, float]:
        g_q, g_k, g_v = self.gamma
        return replace(inputs, q=inputs.q * g_q, k=inputs.k * g_k, v=inputs.v * g_v), self.scale


@register("learned_temperature", option="learned_temperature", value=True, order=40,
          ablations=("learned_temperature",), hyperparameters=(Hyperparameter("learned_temperature", bool, False),))
def add_learned_temperature(parts: AttentionParts, cfg: NetworkOptions) -> None:
    """Dufter et al.'s learnable temperature: q, k, v each scaled by a learned γ."""
    parts.temperature = LearnedTemperature(parts.head_dim)

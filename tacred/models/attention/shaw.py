"""Shaw et al.'s (2018) relative positions: e_ij = q_i·(k_j + a^K_ij)/√Dh, z_i = Σ_j α_ij (v_j + a^V_ij).

a_ij = w_clip(j−i, k): 2k+1 vectors of size Dh each for keys and values, shared by all heads; zero at the start.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

import torch
from torch import nn

from tacred.models.attention.core import AttentionInputs
from tacred.models.attention.registry import AttentionParts, Hyperparameter, register
from tacred.options.rules import at_least

if TYPE_CHECKING:
    from tacred.options.network import NetworkOptions


def clipped_relative_index(length: int, clip: int, device: torch.device) -> torch.Tensor:
    """(T, T) row ids clip(j − i, k) + k into a (2k+1)-row table."""
    pos = torch.arange(length, device=device)
    return (pos[None, :] - pos[:, None]).clamp(-clip, clip) + clip


def _check_clip(clip: int) -> None:
    if clip < 1:
        raise ValueError(f"shaw_clip must be at least 1, got {clip}")


class ShawRelativeKeys(nn.Module):
    """Position bias q_i · a^K_{clip(j−i)} / √Dh: all 2k+1 distances in one (T × (2k+1)) product, then gathered."""

    def __init__(self, head_dim: int, clip: int = 16) -> None:
        super().__init__()
        _check_clip(clip)
        self.clip = clip
        self.table = nn.Parameter(torch.zeros(2 * clip + 1, head_dim))  # a^K

    def reset_parameters(self, init: str = "kaiming") -> None:
        nn.init.zeros_(self.table)

    def forward(self, inputs: AttentionInputs) -> torch.Tensor:
        q = inputs.q
        b, h, n, dh = q.shape
        scores = (q @ self.table.T) / math.sqrt(dh)  # (B, H, T, 2k+1)
        index = clipped_relative_index(n, self.clip, q.device).expand(b, h, n, n)
        return scores.gather(-1, index)  # (B, H, T, T)


class ShawRelativeValues(nn.Module):
    """Relative values Σ_j α_ij a^V_{clip(j−i)}: the weights are summed per clipped distance, then · a^V."""

    def __init__(self, head_dim: int, clip: int = 16) -> None:
        super().__init__()
        _check_clip(clip)
        self.clip = clip
        self.table = nn.Parameter(torch.zeros(2 * clip + 1, head_dim))  # a^V

    def reset_parameters(self, init: str = "kaiming") -> None:
        nn.init.zeros_(self.table)

    def forward(self, weights: torch.Tensor, inputs: AttentionInputs) -> torch.Tensor:
        b, h, n, _ = weights.shape
        index = clipped_relative_index(n, self.clip, weights.device).expand(b, h, n, n)
        per_distance = weights.new_zeros(b, h, n, 2 * self.clip + 1).scatter_add(-1, index, weights)  # (B, H, T, 2k+1)
        return per_distance @ self.table  # (B, H, T, Dh)


@register("shaw", option="attention_bias", order=10, ablations=("shaw",), hyperparameters=(
    Hyperparameter("shaw_clip", Annotated[int, at_least(1)], 16),  # k: distances beyond ±k share one vector
    Hyperparameter("shaw_values", bool, True),  # relative values a^V as well as keys a^K
))
def add_shaw(parts: AttentionParts, cfg: NetworkOptions) -> None:
    """Shaw et al.'s clipped relative keys (clip ``shaw_clip``), and relative values unless ``shaw_values: false``."""
    parts.biases.append(ShawRelativeKeys(parts.head_dim, cfg.shaw_clip))
    if cfg.shaw_values:
        parts.values = ShawRelativeValues(parts.head_dim, cfg.shaw_clip)

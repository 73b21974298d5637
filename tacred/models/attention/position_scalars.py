"""Direct position interactions of Dufter et al. (2020): learned scalars added to the attention logits.

Tables cover t = ``max_positions`` positions; longer sentences reuse the last entry. All start at zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from tacred.models.attention.core import AttentionInputs
from tacred.models.attention.registry import AttentionParts, register

if TYPE_CHECKING:
    from tacred.options.network import NetworkOptions


def _check_size(max_positions: int) -> None:
    if max_positions < 1:
        raise ValueError(f"max_positions must be at least 1, got {max_positions}")


class AbsolutePositionScalars(nn.Module):
    """SAN+P: one scalar per head and (query, key) position: bias[h, i, j] = A^p[h, min(i, t−1), min(j, t−1)]."""

    def __init__(self, num_heads: int, max_positions: int) -> None:
        super().__init__()
        _check_size(max_positions)
        self.max_positions = max_positions
        self.table = nn.Parameter(torch.zeros(num_heads, max_positions, max_positions))  # (H, t, t)

    def reset_parameters(self, init: str = "kaiming") -> None:
        nn.init.zeros_(self.table)

    def forward(self, inputs: AttentionInputs) -> torch.Tensor:
        pos = torch.arange(inputs.length, device=inputs.x.device).clamp(max=self.max_positions - 1)
        return self.table[:, pos][:, :, pos][None]  # (1, H, T, T)


class RelativePositionScalars(nn.Module):
    """SAN+R: one scalar per head and distance, bias[h, i, j] = a^r[h, clip(j − i, t−1)]: 2t − 1 scalars (the
    paper's 2t, less one that no pair uses)."""

    def __init__(self, num_heads: int, max_positions: int) -> None:
        super().__init__()
        _check_size(max_positions)
        self.max_distance = max_positions - 1
        self.table = nn.Parameter(torch.zeros(num_heads, 2 * self.max_distance + 1))  # (H, 2t−1)

    def reset_parameters(self, init: str = "kaiming") -> None:
        nn.init.zeros_(self.table)

    def forward(self, inputs: AttentionInputs) -> torch.Tensor:
        pos = torch.arange(inputs.length, device=inputs.x.device)
        index = (pos[None, :] - pos[:, None]).clamp(-self.max_distance, self.max_distance) + self.max_distance
        return self.table[:, index][None]  # (1, H, T, T)


@register("absolute_scalars", option="attention_bias", order=20, ablations=("san_p",))
def add_absolute_scalars(parts: AttentionParts, cfg: NetworkOptions) -> None:
    """Dufter et al.'s SAN+P: a learned t × t scalar matrix per head (t = max_relative_distance + 1)."""
    parts.biases.append(AbsolutePositionScalars(parts.num_heads, parts.max_positions))


@register("relative_scalars", option="attention_bias", order=30, ablations=("san_r", "san_pr"))
def add_relative_scalars(parts: AttentionParts, cfg: NetworkOptions) -> None:
    """Dufter et al.'s SAN+R: one learned scalar per head and clipped distance."""
    parts.biases.append(RelativePositionScalars(parts.num_heads, parts.max_positions))

"""Convoluted attention of Dufter et al. (2020): A' = conv(softmax(A)), 1-d or 2-d, starting as the identity.

The result is re-masked and renormalised (:func:`renormalize`), so padding keys get no weight.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from tacred.models.attention.registry import AttentionParts, register

if TYPE_CHECKING:
    from tacred.options.network import NetworkOptions


def renormalize(weights: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """(B, H, T, T) → no weight on padding keys, and each row rescaled so its absolute values sum to 1.

    Weights may turn negative, as in Dufter et al.'s plain conv(softmax(A)); rescaling by Σ|w| rather than cutting
    negatives to 0 keeps gradients alive (a cut could zero a whole row), and rows at the sentence edges lose no mass to
    the re-masking. It also makes a filter's overall scale irrelevant.
    """
    kept = weights.masked_fill(pad_mask[:, None, None, :], 0.0)
    return kept / kept.abs().sum(dim=-1, keepdim=True).clamp_min(1e-12)


class AttentionConv1d(nn.Module):
    """Transform hook: out[h, i, j] = Σ_c w[h, min(i, t−1), c] · A[h, i, j + c − 1]: a width-3 filter per head and
    query row along the keys (t filters per head; rows ≥ t share the last one)."""

    def __init__(self, num_heads: int, max_positions: int) -> None:
        super().__init__()
        if max_positions < 1:
            raise ValueError(f"max_positions must be at least 1, got {max_positions}")
        self.max_positions = max_positions
        kernel = torch.zeros(num_heads, max_positions, 3)
        kernel[..., 1] = 1.0  # identity
        self.kernel = nn.Parameter(kernel)  # (H, t, 3)

    def reset_parameters(self, init: str = "kaiming") -> None:
        with torch.no_grad():
            self.kernel.zero_()
            self.kernel[..., 1] = 1.0  # identity

    def forward(self, weights: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        n = weights.shape[-1]
        rows = torch.arange(n, device=weights.device).clamp(max=self.max_positions - 1)
        kernel = self.kernel[:, rows][None]  # (1, H, T, 3)
        padded = F.pad(weights, (1, 1))  # (B, H, T, T+2)
        out = sum(kernel[..., c, None] * padded[..., c : c + n] for c in range(3))  # (B, H, T, T)
        return renormalize(out, pad_mask)


class AttentionConv2d(nn.Module):
    """Transform hook: a depthwise 3 × 3 convolution (one filter per head) over each head's (T × T) matrix.

    Padding query rows are zeroed before it, so they cannot leak into the last real row, and keep their softmax
    weights after it (their outputs are never used).
    """

    def __init__(self, num_heads: int) -> None:
        super().__init__()
        # nn.Conv2d draws its default init here and reset_parameters overwrites it: the draw is kept, as it is part
        # of the draw order (tacred.models.network.RelationNetwork.__init__)
        self.conv = nn.Conv2d(num_heads, num_heads, kernel_size=3, padding=1, groups=num_heads, bias=False)
        self.reset_parameters()

    def reset_parameters(self, init: str = "kaiming") -> None:
        with torch.no_grad():
            self.conv.weight.zero_()
            self.conv.weight[:, 0, 1, 1] = 1.0  # identity

    def forward(self, weights: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        pad_rows = pad_mask[:, None, :, None]  # (B, 1, T, 1)
        convolved = self.conv(weights.masked_fill(pad_rows, 0.0))  # (B, H, T, T)
        return torch.where(pad_rows, weights, renormalize(convolved, pad_mask))


@register("conv_1d", option="attention_conv", value="1d", order=50, ablations=("conv_1d",))
def add_conv_1d(parts: AttentionParts, cfg: NetworkOptions) -> None:
    """Dufter et al.'s 1-d convoluted attention: a width-3 filter per head and query row, after the softmax."""
    parts.transform = AttentionConv1d(parts.num_heads, parts.max_positions)


@register("conv_2d", option="attention_conv", value="2d", order=51, ablations=("conv_2d",))
def add_conv_2d(parts: AttentionParts, cfg: NetworkOptions) -> None:
    """Dufter et al.'s 2-d convoluted attention: one 3 × 3 filter per head, after the softmax."""
    parts.transform = AttentionConv2d(parts.num_heads)

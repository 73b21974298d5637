"""Gaussian positional attention heads (Dagan, 2019): the first G heads attend by position only.

Their content logits and other position biases are switched off by :class:`ContentHeadsScale`/:class:`ContentHeadsOnly`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

import torch
from torch import nn

from tacred.models.attention.core import AttentionInputs
from tacred.models.attention.registry import AttentionParts, Hyperparameter, register
from tacred.options.rules import is_number

if TYPE_CHECKING:
    from tacred.options.network import NetworkOptions


class GaussianPositionHeads(nn.Module):
    """Position bias: log-Gaussian weights for heads 0 … G−1, zero for the other heads.

    A position generator predicts μ_i, σ_i ∈ (0, 1) for each query token (sigmoid of a linear map of x_i); key j at
    p_j = j / N (N = the sentence's real length) gets exp(−(p_j − μ_i)² / (2σ_i² + ε)), normalized over the real
    tokens by the core's masked softmax of these log-weights. The generator starts at zero: μ = σ = 0.5. The
    query/key columns of those heads then get zero gradient; their values are used as usual.
    """

    def __init__(self, d_model: int, num_heads: int, gaussian_heads: int, eps: float = 1e-3) -> None:
        super().__init__()
        if not 0 < gaussian_heads <= num_heads:
            raise ValueError(f"gaussian_heads must be between 1 and num_heads={num_heads}, got {gaussian_heads}")
        self.num_heads, self.gaussian_heads, self.eps = num_heads, gaussian_heads, eps
        # the generator x_i @ weight + bias, starting at zero (reset_parameters)
        self.weight = nn.Parameter(torch.zeros(d_model, 2 * gaussian_heads))
        self.bias = nn.Parameter(torch.zeros(2 * gaussian_heads))

    def reset_parameters(self, init: str = "kaiming") -> None:
        nn.init.zeros_(self.weight)
        nn.init.zeros_(self.bias)

    def forward(self, inputs: AttentionInputs) -> torch.Tensor:
        b, n, _ = inputs.x.shape
        g = self.gaussian_heads
        mu, sigma = torch.sigmoid(inputs.x @ self.weight + self.bias).view(b, n, g, 2).unbind(-1)  # (B, T, G) each
        lengths = (~inputs.pad_mask).sum(dim=1, keepdim=True).clamp_min(1)  # (B, 1)
        p = torch.arange(n, device=inputs.x.device)[None, :] / lengths  # (B, T): p_j = j / N
        diff = p[:, None, None, :] - mu.transpose(1, 2)[..., None]  # (B, G, T_query, T_key)
        logits = -diff.pow(2) / (2 * sigma.transpose(1, 2)[..., None].pow(2) + self.eps)  # (B, G, T, T)
        return torch.cat([logits, logits.new_zeros(b, self.num_heads - g, n, n)], dim=1)  # (B, H, T, T)


def content_head_mask(num_heads: int, gaussian_heads: int) -> torch.Tensor:
    """(1, H, 1, 1): 0 for the Gaussian heads, 1 for the content heads."""
    keep = torch.ones(1, num_heads, 1, 1)
    keep[:, :gaussian_heads] = 0.0
    return keep


class ContentHeadsScale(nn.Module):
    """Temperature hook: the inner temperature's (or 1/√Dh) scale for content heads, 0 for Gaussian heads."""

    def __init__(self, head_dim: int, keep: torch.Tensor, inner: nn.Module | None = None) -> None:
        super().__init__()
        self.scale = 1.0 / math.sqrt(head_dim)
        self.inner = inner
        self.register_buffer("keep", keep, persistent=False)

    def reset_parameters(self, init: str = "kaiming") -> None:
        if self.inner is not None and hasattr(self.inner, "reset_parameters"):
            self.inner.reset_parameters(init)

    def forward(self, inputs: AttentionInputs) -> tuple[AttentionInputs, torch.Tensor]:
        scale = self.scale
        if self.inner is not None:
            inputs, scale = self.inner(inputs)
        return inputs, self.keep * scale  # (1, H, 1, 1)


class ContentHeadsOnly(nn.Module):
    """Wraps another position bias so that it leaves the Gaussian heads alone."""

    def __init__(self, bias: nn.Module, keep: torch.Tensor) -> None:
        super().__init__()
        self.bias = bias
        self.register_buffer("keep", keep, persistent=False)

    def reset_parameters(self, init: str = "kaiming") -> None:
        if hasattr(self.bias, "reset_parameters"):
            self.bias.reset_parameters(init)

    def forward(self, inputs: AttentionInputs) -> torch.Tensor:
        return self.bias(inputs) * self.keep


def at_most_num_heads(value: int, cfg: NetworkOptions) -> str | None:
    """0 (no Gaussian heads) up to every head."""
    ok = is_number(value) and 0 <= value <= cfg.num_heads
    return None if ok else f"must be between 0 and num_heads ({cfg.num_heads})"


@register("gaussian_heads", option="gaussian_heads", value=1, order=90, ablations=("gaussian_heads",),
          starts_as_plain=False, hyperparameters=(Hyperparameter("gaussian_heads", Annotated[int, at_most_num_heads], 0),))
def add_gaussian_heads(parts: AttentionParts, cfg: NetworkOptions) -> None:
    """Dagan's Gaussian positional attention for the first ``gaussian_heads`` heads; built last, as it switches
    the other position terms off for those heads."""
    keep = content_head_mask(parts.num_heads, cfg.gaussian_heads)
    parts.biases = [ContentHeadsOnly(b, keep) for b in parts.biases]
    parts.biases.append(GaussianPositionHeads(parts.d_model, parts.num_heads, cfg.gaussian_heads))
    parts.temperature = ContentHeadsScale(parts.head_dim, keep, parts.temperature)

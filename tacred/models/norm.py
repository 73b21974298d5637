"""Normalisation over real tokens: batch norm (the paper, after Roth et al. 2018) or layer norm (Table 3)."""

from __future__ import annotations

import torch
from torch import nn


class MaskedBatchNorm(nn.Module):
    """BatchNorm over the real tokens of (B, T, D) input: padding neither enters the statistics nor the output.

    Three forms of the same maths: in evaluation every token is normalised with the running statistics and
    padding is zeroed (per element, so bit-identical to normalising the real tokens alone); in eager training
    the real tokens are gathered (boolean indexing: exactly ``nn.BatchNorm1d`` over them); under
    ``torch.compile`` the statistics are masked sums, because boolean indexing has a data-dependent shape
    that breaks the graph.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(dim)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        if not self.training and self.norm.track_running_stats:
            out = self.norm(x.reshape(b * n, d)).view(b, n, d)
            return out.masked_fill(pad_mask[:, :, None], 0.0)
        if torch.compiler.is_compiling():
            return self._masked_statistics(x, pad_mask)
        real = ~pad_mask  # (B, T)
        out = torch.zeros_like(x)
        out[real] = self.norm(x[real])  # (N_real, D)
        return out

    def _masked_statistics(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        """Training-mode batch norm with the statistics of the real tokens as masked sums: (B, T, D) → (B, T, D)."""
        norm = self.norm
        keep = (~pad_mask)[:, :, None].to(x.dtype)  # (B, T, 1)
        count = keep.sum()
        mean = (x * keep).sum(dim=(0, 1)) / count  # (D,)
        centred = (x - mean) * keep  # (B, T, D), zero at padding
        var = (centred * centred).sum(dim=(0, 1)) / count  # biased, as batch norm normalises
        if norm.track_running_stats and norm.running_mean is not None and norm.running_var is not None:
            with torch.no_grad():
                norm.num_batches_tracked.add_(1)
                momentum = norm.momentum if norm.momentum is not None else 1.0 / float(norm.num_batches_tracked)
                norm.running_mean.lerp_(mean.detach().to(norm.running_mean.dtype), momentum)
                unbiased = var.detach() * count / (count - 1).clamp(min=1)
                norm.running_var.lerp_(unbiased.to(norm.running_var.dtype), momentum)
        out = centred * torch.rsqrt(var + norm.eps)
        if norm.affine:
            out = out * norm.weight + norm.bias
        return out * keep


class MaskedLayerNorm(nn.LayerNorm):
    """LayerNorm with the same call signature as :class:`MaskedBatchNorm` (per token, so padding is irrelevant)."""

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(x)


def make_norm(kind: str, dim: int) -> nn.Module:
    return MaskedBatchNorm(dim) if kind == "batch" else MaskedLayerNorm(dim)

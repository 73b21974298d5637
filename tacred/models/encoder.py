"""The self-attention encoder layer (Bilan & Roth, 2018; structure of Roth et al., 2018).

Default: attention → dropout → norm, then feed-forward → dropout → norm over (ffn + block input): a single
residual from the block's input to its last norm, batch norm over real tokens, RReLU. ``residual="double"``
is the Transformer's two residual connections.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tacred.models.attention import MultiHeadSelfAttention
from tacred.models.config import NetworkConfig
from tacred.models.dropout import Dropout


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


def make_activation(kind: str) -> nn.Module:
    return nn.RReLU() if kind == "rrelu" else nn.ReLU()


class PositionwiseFeedForward(nn.Module):
    """Linear(D → F) → activation → Linear(F → D) on every token."""

    def __init__(self, d_model: int, hidden: int, activation: str) -> None:
        super().__init__()
        self.inner = nn.Linear(d_model, hidden)
        self.activation = make_activation(activation)
        self.outer = nn.Linear(hidden, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(self.activation(self.inner(x)))


class EncoderLayer(nn.Module):
    """One self-attention block; ``forward`` returns the new states (B, T, D) and the weights (B, H, T, T)."""

    def __init__(self, d_model: int, cfg: NetworkConfig) -> None:
        super().__init__()
        from tacred.models.attention.factory import build_attention

        self.attention: MultiHeadSelfAttention = build_attention(d_model, cfg)
        self.ffn = PositionwiseFeedForward(d_model, cfg.ffn_dim, cfg.activation)
        self.norm1 = make_norm(cfg.norm, d_model)
        self.norm2 = make_norm(cfg.norm, d_model)
        self.dropout = Dropout(cfg.dropout)
        self.double_residual = cfg.residual == "double"

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        attended, weights = self.attention(x, pad_mask)
        attended = self.dropout(attended)
        h = self.norm1(attended + x if self.double_residual else attended, pad_mask)
        ff = self.dropout(self.ffn(h))
        out = self.norm2(ff + (h if self.double_residual else x), pad_mask)
        return out, weights


class SelfAttentionEncoder(nn.Module):
    """A stack of :class:`EncoderLayer` (the paper uses one)."""

    def __init__(self, d_model: int, cfg: NetworkConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, cfg) for _ in range(cfg.num_layers))
        init_linear_layers(self, cfg.init)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        weights = []
        for layer in self.layers:
            x, w = layer(x, pad_mask)
            weights.append(w)
        return x, weights


def init_linear_layers(module: nn.Module, scheme: str) -> None:
    """Kaiming (the paper) or Xavier initialisation of every Linear weight; biases start at zero."""
    for sub in module.modules():
        if isinstance(sub, nn.Linear):
            if scheme == "kaiming":
                nn.init.kaiming_normal_(sub.weight, nonlinearity="relu")
            else:
                nn.init.xavier_normal_(sub.weight)
            if sub.bias is not None:
                nn.init.zeros_(sub.bias)


def sinusoidal_encoding(length: int, dim: int, device: torch.device) -> torch.Tensor:
    """(T, D) absolute sinusoidal position encodings (Vaswani et al., 2017), for the Table 3 ablation."""
    pos = torch.arange(length, device=device, dtype=torch.float32)[:, None]
    rates = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim, device=device)
    table[:, 0::2] = torch.sin(pos * rates)
    table[:, 1::2] = torch.cos(pos * rates[: dim // 2])
    return table

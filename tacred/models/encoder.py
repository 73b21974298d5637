"""The self-attention encoder (Bilan & Roth, 2018; block structure of Roth et al., 2018) and the encoder interface.

The paper's block: attention → dropout → norm → feed-forward → dropout → norm over (ffn + block input), i.e. ONE
residual, from the block's input to its last norm; batch norm over real tokens; RReLU; Kaiming initialisation.
``residual: double`` is the Transformer's block instead (a residual + norm around each sub-block, Table 3).
The LSTM encoders (:mod:`tacred.models.lstm`) implement the same :class:`SentenceEncoder` interface.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from tacred.models.attention import MultiHeadSelfAttention, build_attention
from tacred.models.config import NetworkConfig
from tacred.models.dropout import Dropout
from tacred.models.initialisation import init_linear
from tacred.models.norm import MaskedBatchNorm, MaskedLayerNorm, make_norm

__all__ = ["Encoded", "EncoderLayer", "MaskedBatchNorm", "MaskedLayerNorm", "PositionwiseFeedForward",
           "SelfAttentionEncoder", "SentenceEncoder", "masked_max"]


@dataclass
class Encoded:
    """What an encoder gives the position-aware layer: token states h and a sentence query q."""

    states: torch.Tensor  # (B, T, S), zero-padded
    query: torch.Tensor  # (B, Q)
    self_attention: list[torch.Tensor] = field(default_factory=list)  # per layer (B, H, T, T); empty for an LSTM


class SentenceEncoder(nn.Module):
    """Interface: ``forward(x (B, T, D), pad_mask (B, T), True at padding) -> Encoded``; ``state_dim`` = S and
    ``query_dim`` = Q size the layers above it."""

    state_dim: int
    query_dim: int


def masked_max(x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """Max over real tokens: (B, T, D) → (B, D)."""
    return x.masked_fill(pad_mask[:, :, None], float("-inf")).amax(dim=1)  # amax: no argmax indices to keep


def make_activation(kind: str) -> nn.Module:
    return nn.RReLU() if kind == "rrelu" else nn.ReLU()


class PositionwiseFeedForward(nn.Module):
    """Linear(D → F) → activation → Linear(F → D) on every token."""

    def __init__(self, d_model: int, hidden: int, activation: str) -> None:
        super().__init__()
        self.inner = nn.Linear(d_model, hidden)
        self.activation = make_activation(activation)
        self.outer = nn.Linear(hidden, d_model)

    def reset_parameters(self, init: str = "kaiming") -> None:
        init_linear(self.inner, init)
        init_linear(self.outer, init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(self.activation(self.inner(x)))  # (B, T, D)


class EncoderLayer(nn.Module):
    """One self-attention block; ``forward`` returns the new states (B, T, D) and the weights (B, H, T, T)."""

    def __init__(self, d_model: int, cfg: NetworkConfig) -> None:
        super().__init__()
        self.attention: MultiHeadSelfAttention = build_attention(d_model, cfg)
        self.ffn = PositionwiseFeedForward(d_model, cfg.ffn_dim, cfg.activation)
        self.norm1 = make_norm(cfg.norm, d_model)
        self.norm2 = make_norm(cfg.norm, d_model)
        self.dropout = Dropout(cfg.dropout)
        self.residual = cfg.residual

    def reset_parameters(self, init: str = "kaiming") -> None:
        self.attention.reset_parameters(init)
        self.ffn.reset_parameters(init)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.residual == "double":
            return self.forward_double_residual(x, pad_mask)
        attended, weights = self.attention(x, pad_mask)  # (B, T, D), (B, H, T, T)
        h = self.norm1(self.dropout(attended), pad_mask)  # (B, T, D): no residual around the attention
        ff = self.dropout(self.ffn(h))  # (B, T, D)
        out = self.norm2(ff + x, pad_mask)  # (B, T, D): the one residual, from the block's input x to the last norm
        return out, weights

    def forward_double_residual(self, x: torch.Tensor, pad_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The Transformer's block (Table 3, "default residual"): residual + norm around attention, then around ffn."""
        attended, weights = self.attention(x, pad_mask)  # (B, T, D), (B, H, T, T)
        h = self.norm1(self.dropout(attended) + x, pad_mask)  # (B, T, D): first residual
        ff = self.dropout(self.ffn(h))  # (B, T, D)
        out = self.norm2(ff + h, pad_mask)  # (B, T, D): second residual
        return out, weights


class SelfAttentionEncoder(SentenceEncoder):
    """A stack of :class:`EncoderLayer` (the paper uses one), dropout on its output; the query is the max-pool."""

    def __init__(self, d_model: int, cfg: NetworkConfig) -> None:
        super().__init__()
        self.state_dim = self.query_dim = d_model
        self.init = cfg.init
        self.layers = nn.ModuleList(EncoderLayer(d_model, cfg) for _ in range(cfg.num_layers))
        self.output_dropout = Dropout(cfg.dropout)
        # Reset once every layer is built, not inside each layer: the draw order of RelationNetwork.__init__.
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Kaiming (the paper) or Xavier projections, zero biases; each variant hook's own start."""
        for layer in self.layers:
            layer.reset_parameters(self.init)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> Encoded:
        weights = []
        for layer in self.layers:
            x, w = layer(x, pad_mask)  # (B, T, D), (B, H, T, T)
            weights.append(w)
        states = self.output_dropout(x)  # (B, T, D)
        return Encoded(states, masked_max(states, pad_mask), weights)  # query (B, D): the sentence summary

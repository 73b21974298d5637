"""Position-aware attention of Zhang et al. (2017): u_i = vᵀ tanh(W_h h_i + W_q q + W_s p_i^s + W_o p_i^o)."""

from __future__ import annotations

import torch
from torch import nn


class PositionAwareAttention(nn.Module):
    """Attention over token states h (B, T, Dh_in) given a sentence query q (B, Dq) and position features
    (B, T, 2P); returns the summary z = Σ a_i h_i (B, Dh_in) and the weights a (B, T)."""

    def __init__(self, input_dim: int, query_dim: int, feature_dim: int, attention_dim: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(input_dim, attention_dim)
        self.query = nn.Linear(query_dim, attention_dim, bias=False)
        self.features = nn.Linear(feature_dim, attention_dim)
        self.score = nn.Linear(attention_dim, 1)
        # The original code's initialisation: tiny projections and a zero scoring vector, so attention
        # starts uniform.
        for layer in (self.hidden, self.query, self.features):
            nn.init.normal_(layer.weight, std=0.001)
        nn.init.zeros_(self.score.weight)

    def forward(self, h: torch.Tensor, q: torch.Tensor, features: torch.Tensor,
                pad_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        u = self.hidden(h) + self.query(q)[:, None, :] + self.features(features)  # (B, T, A)
        scores = self.score(torch.tanh(u)).squeeze(-1)  # (B, T)
        weights = torch.softmax(scores.masked_fill(pad_mask, float("-inf")), dim=-1)  # (B, T)
        return (weights[:, :, None] * h).sum(dim=1), weights  # (B, Dh_in), (B, T)

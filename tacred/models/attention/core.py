"""The attention core shared by every variant: logits = q·kᵀ/τ + Σ biases → masked softmax → (transform) → v.

Hook contracts (all optional, all see the same :class:`AttentionInputs`):
- a *position bias* returns a tensor broadcastable to the logits, (B|1, H, T, T), added before the softmax;
- *relative values* map the weights (B, H, T, T) to (B, H, T, Dh), added to ``weights @ v``;
- a *temperature* returns the scale multiplying q·kᵀ (default 1/√Dh) and may rescale q, k, v;
- a *transform* maps the softmax output (B, H, T, T) to new weights (e.g. a convolution over the matrix).
A hook with parameters of its own defines ``reset_parameters(init)``; :meth:`MultiHeadSelfAttention.reset_parameters`
calls it after initialising q, k, v and the output projection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from tacred.models.dropout import Dropout
from tacred.models.initialisation import init_linear


@dataclass
class AttentionInputs:
    """What every hook may read. q, k, v: (B, H, T, Dh); x: (B, T, D); pad_mask: (B, T), True at padding."""

    x: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    pad_mask: torch.Tensor

    @property
    def length(self) -> int:
        return self.x.shape[1]


class MultiHeadSelfAttention(nn.Module):
    """Multi-head scaled dot-product self-attention with pluggable position terms."""

    def __init__(
        self, d_model: int, num_heads: int, attention_dropout: float = 0.1, *,
        biases: list[nn.Module] | None = None, values: nn.Module | None = None,
        temperature: nn.Module | None = None, transform: nn.Module | None = None,
    ) -> None:
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)
        self.dropout = Dropout(attention_dropout)
        self.biases = nn.ModuleList(biases or [])
        self.values = values
        self.temperature = temperature
        self.transform = transform

    def hooks(self) -> list[nn.Module]:
        """The variant hooks, in the order the core applies them."""
        return [*self.biases, *(h for h in (self.values, self.temperature, self.transform) if h is not None)]

    def reset_parameters(self, init: str = "kaiming") -> None:
        """Kaiming (the paper) or Xavier projections with zero biases, then each hook's own start."""
        for layer in (self.query, self.key, self.value, self.output):
            init_linear(layer, init)
        for hook in self.hooks():
            reset = getattr(hook, "reset_parameters", None)
            if reset is not None:
                reset(init)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, Dh)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (B, T, D), pad_mask: (B, T) → output (B, T, D), weights (B, H, T, T)."""
        b, n, d = x.shape
        inputs = AttentionInputs(x, self._heads(self.query(x)), self._heads(self.key(x)),
                                 self._heads(self.value(x)), pad_mask)
        if self.temperature is not None:
            inputs, scale = self.temperature(inputs)
        else:
            scale = 1.0 / math.sqrt(self.head_dim)
        logits = (inputs.q @ inputs.k.transpose(-1, -2)) * scale  # (B, H, T, T)
        for bias in self.biases:
            logits = logits + bias(inputs)
        logits = logits.masked_fill(pad_mask[:, None, None, :], float("-inf"))
        weights = torch.softmax(logits, dim=-1)  # (B, H, T, T)
        if self.transform is not None:
            weights = self.transform(weights, pad_mask)
        dropped = self.dropout(weights)
        out = dropped @ inputs.v  # (B, H, T, Dh)
        if self.values is not None:
            out = out + self.values(dropped, inputs)
        out = out.transpose(1, 2).reshape(b, n, d)  # (B, T, D)
        return self.output(out), weights


def relative_index(length: int, device: torch.device) -> torch.Tensor:
    """(T, T) tensor holding j - i + (T - 1): the column of distance j - i among 2T - 1 distances."""
    pos = torch.arange(length, device=device)
    return pos[None, :] - pos[:, None] + (length - 1)


def gather_relative(scores: torch.Tensor) -> torch.Tensor:
    """(B, H, T, 2T-1) scores per query and distance → (B, H, T, T) scores per query and key."""
    b, h, n, _ = scores.shape
    index = relative_index(n, scores.device).expand(b, h, n, n)
    return scores.gather(-1, index)

"""Inverted dropout from a uniform mask: the same distribution as ``nn.Dropout``, several times faster on CPU.

On this project's CPU, ``F.dropout`` (Bernoulli sampling) of a (1000, 360) activation takes ~10 ms while
``rand_like(x) >= p`` takes ~1.7 ms; dropout was 17% of a training step (docs/performance.md). In fp32 the
scaled mask is built in place in the uniform draws, which halves the element-wise products.
"""

from __future__ import annotations

import torch
from torch import nn


class Dropout(nn.Module):
    """Zeroes each element with probability ``p`` in training and scales the rest by 1/(1-p)."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.dtype in (torch.float32, torch.float64):
            # the scaled mask in place in the uniform draws: one product forward and one backward instead of two
            # each, with a boolean operand; bit-identical to the form below (x·1·s = x·s, x·0·s = x·0)
            return x * torch.rand_like(x).ge_(self.p).mul_(1.0 / (1.0 - self.p))
        keep = torch.rand_like(x) >= self.p  # bf16/fp16: a reduced-precision mask would round the scale
        return x * keep * (1.0 / (1.0 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}"

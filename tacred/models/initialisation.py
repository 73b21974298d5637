"""Initialisation of the encoder's projections: Kaiming (the paper, Bilan & Roth 2018) or Xavier (Table 3)."""

from __future__ import annotations

from torch import nn


def init_linear(layer: nn.Linear, scheme: str = "kaiming") -> None:
    """Kaiming-normal (for the ReLU family) or Xavier-normal weight; zero bias."""
    if scheme == "kaiming":
        nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
    else:
        nn.init.xavier_normal_(layer.weight)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)

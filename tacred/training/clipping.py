"""Gradient clipping that also reads sparse gradients (``torch.nn.utils.clip_grad_norm_`` rejects them).

The word embedding's gradient is sparse (the rows of a batch's words, docs/performance.md); the clipping norm
still covers every parameter exactly as the dense recipe does: one 2-norm over all gradients together.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn


@torch.no_grad()
def clip_grad_norm_(parameters: Iterable[nn.Parameter], max_norm: float) -> torch.Tensor:
    """Scale all gradients by min(1, max_norm / (‖g‖ + 1e-6)), ‖g‖ the 2-norm of every gradient together.

    Dense gradients go through torch's own functions (same order, same result); a sparse gradient is coalesced
    first (a word seen twice in a batch has two rows that add up), so its values' norm is that of the dense
    gradient. Returns the total norm.
    """
    params = [p for p in parameters if p.grad is not None]
    for p in params:
        if p.grad.is_sparse:
            p.grad = p.grad.coalesce()
    total = nn.utils.get_total_norm([p.grad._values() if p.grad.is_sparse else p.grad for p in params])
    nn.utils.clip_grads_with_norm_([p for p in params if not p.grad.is_sparse], max_norm, total)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)  # the formula of clip_grads_with_norm_
    for p in params:
        if p.grad.is_sparse:
            p.grad._values().mul_(coef.to(p.grad.device))
    return total


@torch.no_grad()
def clip_grad_value_(parameters: Iterable[nn.Parameter], clip_value: float) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] (sparse ones after coalescing)."""
    params = [p for p in parameters if p.grad is not None]
    for p in params:
        if p.grad.is_sparse:
            p.grad = p.grad.coalesce()
            p.grad._values().clamp_(-clip_value, clip_value)
    nn.utils.clip_grad_value_([p for p in params if not p.grad.is_sparse], clip_value)

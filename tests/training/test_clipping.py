"""Gradient clipping over sparse word-embedding gradients: the same update as the dense recipe."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tacred.training.clipping import clip_grad_norm_, clip_grad_value_


def _model(sparse: bool) -> nn.Module:
    torch.manual_seed(0)
    model = nn.ModuleDict({"words": nn.Embedding(20, 6, sparse=sparse), "out": nn.Linear(6, 3)})
    return model


def _step(sparse: bool, clip: str, threshold: float) -> list[torch.Tensor]:
    """One SGD step on a batch that repeats a word (its sparse gradient has two rows to add up)."""
    model = _model(sparse)
    words = torch.tensor([[1, 4, 4, 7], [2, 4, 9, 0]])
    logits = model["out"](model["words"](words).mean(dim=1))  # (B, 3)
    nn.functional.cross_entropy(logits * 10, torch.tensor([0, 2])).backward()
    params = list(model.parameters())
    assert params[0].grad.is_sparse == sparse
    if clip == "norm":
        if sparse:
            clip_grad_norm_(params, threshold)
        else:
            nn.utils.clip_grad_norm_(params, threshold)
    elif sparse:
        clip_grad_value_(params, threshold)
    else:
        nn.utils.clip_grad_value_(params, threshold)
    torch.optim.SGD(params, lr=0.5).step()
    return [p.detach().clone() for p in params]


@pytest.mark.parametrize("clip,threshold", [("norm", 0.05), ("norm", 100.0), ("value", 0.01)])
def test_sparse_gradients_with_clipping_give_the_dense_update(clip, threshold):
    for dense, sparse in zip(_step(False, clip, threshold), _step(True, clip, threshold), strict=True):
        torch.testing.assert_close(sparse, dense, rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_returns_the_norm_of_all_gradients_together():
    model = _model(sparse=True)
    model["out"](model["words"](torch.tensor([[3, 3, 5]]))).sum().backward()
    params = list(model.parameters())
    dense = torch.cat([(p.grad.to_dense() if p.grad.is_sparse else p.grad).flatten() for p in params])
    total = clip_grad_norm_(params, 1e9)
    torch.testing.assert_close(total, dense.norm())

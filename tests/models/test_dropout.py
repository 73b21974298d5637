"""The fast inverted dropout (tacred/models/dropout.py) and the word dropout of the input embeddings."""

from __future__ import annotations

import pytest
import torch

from tacred.constants import PAD_ID, UNK_ID
from tacred.data.batching import Batch
from tacred.models.config import NetworkConfig
from tacred.models.dropout import Dropout
from tacred.models.network import InputEmbeddings


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_training_zeroes_about_p_and_scales_the_rest_by_one_over_keep(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    x = (torch.rand(400, 500) + 0.5).to(dtype)  # no zeros in the input: a zero in the output was dropped
    out = Dropout(0.3).train()(x)
    dropped = out == 0
    assert abs(dropped.float().mean().item() - 0.3) < 0.01
    scale = torch.tensor(1.0 / 0.7, dtype=dtype) if dtype == torch.bfloat16 else 1.0 / 0.7
    assert torch.equal(out[~dropped], (x * scale)[~dropped]) if dtype != torch.bfloat16 else \
        torch.allclose(out[~dropped].float(), (x.float() / 0.7)[~dropped], rtol=1e-2)
    assert abs(out.float().mean().item() - x.float().mean().item()) < 0.01  # the expectation is kept
    assert out.dtype == dtype


def test_eval_mode_and_p_zero_return_the_input_itself() -> None:
    x = torch.randn(3, 4)
    assert Dropout(0.5).eval()(x) is x
    assert Dropout(0.0).train()(x) is x


def test_the_gradient_flows_through_kept_elements_only_with_the_same_scale() -> None:
    torch.manual_seed(1)
    x = (torch.rand(50, 60) + 0.5).requires_grad_()
    out = Dropout(0.4).train()(x)
    out.sum().backward()
    kept = out.detach() != 0
    assert torch.allclose(x.grad[kept], torch.full_like(x.grad[kept], 1 / 0.6))
    assert torch.all(x.grad[~kept] == 0)


def test_the_mask_follows_the_torch_seed() -> None:
    x = torch.ones(20, 30)
    torch.manual_seed(7)
    first = Dropout(0.5).train()(x)
    torch.manual_seed(7)
    assert torch.equal(first, Dropout(0.5).train()(x))
    assert not torch.equal(first, Dropout(0.5).train()(x))


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_a_probability_outside_zero_to_one_is_refused(p: float) -> None:
    with pytest.raises(ValueError, match="dropout probability must be in"):
        Dropout(p)


def _embeddings(word_dropout: float) -> InputEmbeddings:
    torch.manual_seed(0)
    cfg = NetworkConfig(word_dim=6, pos_dim=3, ner_dim=3, num_heads=3, object_position_input=False,
                        word_dropout=word_dropout)
    return InputEmbeddings(cfg, num_words=50, num_pos=9, num_ner=7, word_vectors=None)


def _batch(b: int = 200, t: int = 30) -> Batch:
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(5, t + 1, (b,), generator=g)
    pad = torch.arange(t)[None, :] >= lengths[:, None]  # (B, T)
    words = torch.randint(UNK_ID + 1, 50, (b, t), generator=g).masked_fill(pad, PAD_ID)
    zeros = torch.zeros(b, t, dtype=torch.long)
    return Batch(words=words, pos=zeros, ner=zeros, subj_positions=zeros, obj_positions=zeros, pad_mask=pad,
                 labels=torch.zeros(b, dtype=torch.long), index=torch.arange(b))


def test_word_dropout_replaces_about_that_share_of_real_words_by_unk_and_never_padding() -> None:
    emb, batch = _embeddings(0.25), _batch()
    out = emb.train()(batch)[..., :6]  # (B, T, word_dim): the word part of the embedding
    unk = (out == emb.words.weight[UNK_ID]).all(dim=-1)  # (B, T)
    assert not unk[batch.pad_mask].any()
    assert torch.all(out[batch.pad_mask] == 0)  # padding keeps its zero embedding
    assert abs(unk[~batch.pad_mask].float().mean().item() - 0.25) < 0.02
    kept = ~unk & ~batch.pad_mask
    assert torch.equal(out[kept], emb.words(batch.words)[kept])  # the other words are looked up unchanged


def test_word_dropout_is_off_in_eval_mode() -> None:
    emb, batch = _embeddings(0.25), _batch()
    assert torch.equal(emb.eval()(batch)[..., :6], emb.words(batch.words))

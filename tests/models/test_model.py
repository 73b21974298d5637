"""The network: shapes, padding invariance, efficient relative scores vs a naive reference, block structure."""

from __future__ import annotations

import math

import pytest
import torch

from tacred.data.batching import Batch
from tacred.models.attention.core import AttentionInputs
from tacred.models.attention.relative import RelativePositionScores
from tacred.models.config import NetworkConfig
from tacred.models.encoder import EncoderLayer
from tacred.models.network import RelationNetwork
from tacred.models.norm import MaskedBatchNorm

SMALL = dict(word_dim=24, pos_dim=6, ner_dim=6, position_dim=5, num_heads=3, ffn_dim=13, attention_dim=11,
             lstm_hidden=10, max_relative_distance=8)


def random_batch(lengths: list[int], seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    b, t = len(lengths), max(lengths)
    pad = torch.arange(t)[None, :] >= torch.tensor(lengths)[:, None]
    def ids(high: int) -> torch.Tensor:
        return torch.randint(2, high, (b, t), generator=g).masked_fill(pad, 0)
    positions = torch.randint(-5, 6, (b, t), generator=g).masked_fill(pad, 0)
    return Batch(words=ids(50), pos=ids(9), ner=ids(7), subj_positions=positions, obj_positions=torch.randint(-5, 6, (b, t), generator=g).masked_fill(pad, 0),
                 pad_mask=pad, labels=torch.randint(0, 4, (b,), generator=g), index=torch.arange(b))


def padded(batch: Batch, extra: int) -> Batch:
    """The same batch with ``extra`` more padding columns."""
    def pad(name: str, v: torch.Tensor) -> torch.Tensor:
        if v.dim() != 2:
            return v
        fill = torch.ones if name == "pad_mask" else torch.zeros
        return torch.cat([v, fill(v.shape[0], extra, dtype=v.dtype)], dim=1)
    return Batch(**{k: pad(k, v) for k, v in vars(batch).items()})


def make_net(**overrides) -> RelationNetwork:
    torch.manual_seed(0)
    return RelationNetwork(NetworkConfig(**{**SMALL, **overrides}), num_words=50, num_pos=9, num_ner=7, num_labels=4)


@pytest.mark.parametrize("encoder", ["self_attention", "lstm", "lstm_self_attention"])
def test_output_shapes(encoder):
    net = make_net(encoder=encoder).eval()
    out = net(random_batch([5, 3, 7]))
    assert out.logits.shape == (3, 4)
    assert out.position_attention.shape == (3, 7)
    if encoder != "lstm":
        assert [w.shape for w in out.self_attention] == [(3, 3, 7, 7)]
        assert torch.allclose(out.self_attention[0].sum(-1), torch.ones(3, 3, 7))


@pytest.mark.parametrize("encoder", ["self_attention", "lstm", "lstm_self_attention"])
@pytest.mark.parametrize("training", [False, True])
def test_padding_does_not_change_outputs_at_real_tokens(encoder, training):
    net = make_net(encoder=encoder, dropout=0.0, attention_dropout=0.0, word_dropout=0.0, activation="relu")
    net.train(training)
    short = random_batch([5, 3, 7])
    long = padded(short, 6)
    a, b = net(short), net(long)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a.position_attention, b.position_attention[:, :7], atol=1e-6, rtol=1e-5)
    assert torch.all(b.position_attention[:, 7:] == 0)
    for wa, wb in zip(a.self_attention, b.self_attention, strict=True):
        torch.testing.assert_close(wa, wb[:, :, :7, :7], atol=1e-6, rtol=1e-5)
        assert torch.all(wb[..., 7:] == 0), "attention weight on padding keys"


def naive_relative_scores(module: RelativePositionScores, inputs: AttentionInputs) -> torch.Tensor:
    """The per-query reference: build M_i (T, Dh) of m_{j-i} for every query i and take r_i · M_i^T."""
    b, t, _ = inputs.x.shape
    h, dh, k = module.num_heads, module.head_dim, module.max_distance
    r = inputs.q if module.r is None else module.r(inputs.x).view(b, t, h, dh).transpose(1, 2)
    out = torch.empty(b, h, t, t)
    for i in range(t):
        m_i = torch.stack([module.m[:, max(-k, min(k, j - i)) + k] for j in range(t)], dim=1)  # (H, T, Dh)
        out[:, :, i, :] = torch.einsum("bhd,hjd->bhj", r[:, :, i, :], m_i) / math.sqrt(dh)
    return out


@pytest.mark.parametrize("query", ["separate", "shared"])
@pytest.mark.parametrize("length", [1, 5, 12])
def test_efficient_relative_scores_equal_the_naive_reference(query, length):
    torch.manual_seed(1)
    module = RelativePositionScores(d_model=12, num_heads=3, max_distance=4, query=query)
    torch.nn.init.normal_(module.m)
    x = torch.randn(2, length, 12)
    q = torch.randn(2, 3, length, 4)
    inputs = AttentionInputs(x=x, q=q, k=q, v=q, pad_mask=torch.zeros(2, length, dtype=torch.bool))
    torch.testing.assert_close(module(inputs), naive_relative_scores(module, inputs), atol=1e-5, rtol=1e-5)


def test_relative_scores_use_no_per_pair_vectors():
    """Memory stays O(T^2 H): the largest intermediate is (B, H, T, 2T-1), never (B, H, T, T, Dh)."""
    module = RelativePositionScores(d_model=12, num_heads=3, max_distance=64)
    x = torch.randn(2, 40, 12, requires_grad=True)
    inputs = AttentionInputs(x=x, q=x.view(2, 40, 3, 4).transpose(1, 2), k=x, v=x, pad_mask=torch.zeros(2, 40, dtype=torch.bool))
    sizes = []
    def record(_mod, _inp, out):
        sizes.append(out.numel())
    with torch.autograd.graph.saved_tensors_hooks(lambda t: sizes.append(t.numel()) or t, lambda t: t):
        module(inputs).sum().backward()
    assert max(sizes) <= 2 * 3 * 40 * 79, max(sizes)


def test_single_residual_goes_from_block_input_to_last_norm():
    """With the attention and feed-forward outputs forced to zero, the block reduces to norm2(x)."""
    cfg = NetworkConfig(**{**SMALL, "dropout": 0.0})
    layer = EncoderLayer(12, cfg).eval()
    for lin in (layer.attention.output, layer.ffn.outer):
        torch.nn.init.zeros_(lin.weight)
        torch.nn.init.zeros_(lin.bias)
    x = torch.randn(2, 5, 12)
    mask = torch.zeros(2, 5, dtype=torch.bool)
    out, _ = layer(x, mask)
    torch.testing.assert_close(out, layer.norm2(x, mask))
    assert isinstance(layer.norm1, MaskedBatchNorm) and isinstance(layer.norm2, MaskedBatchNorm)
    double = EncoderLayer(12, NetworkConfig(**{**SMALL, "dropout": 0.0, "residual": "double"})).eval()
    double.load_state_dict(layer.state_dict())
    out2, _ = double(x, mask)
    torch.testing.assert_close(out2, double.norm2(double.norm1(x, mask), mask))


def test_masked_batch_norm_ignores_padding_in_its_statistics():
    norm = MaskedBatchNorm(4).train()
    x = torch.randn(2, 3, 4)
    mask = torch.tensor([[False, False, True], [False, True, True]])
    x_pad = x.clone()
    x_pad[mask] = 1000.0
    torch.testing.assert_close(norm(x, mask), norm(x_pad, mask))


def test_position_aware_attention_starts_uniform():
    net = make_net().eval()
    out = net(random_batch([4, 2]))
    expected = torch.tensor([[0.25] * 4, [0.5, 0.5, 0, 0]])
    torch.testing.assert_close(out.position_attention, expected)


def test_no_pa_variant_classifies_the_summary():
    net = make_net(position_aware=False)
    assert net.position_aware is None and net.positions is None
    assert net(random_batch([3, 2])).logits.shape == (2, 4)


def test_word_dropout_only_in_training():
    net = make_net(word_dropout=1.0, dropout=0.0, attention_dropout=0.0, activation="relu")
    batch = random_batch([4, 4])
    unk = Batch(**{**vars(batch), "words": torch.ones_like(batch.words)})
    net.train()
    torch.testing.assert_close(net(batch).logits, net(unk).logits)
    net.eval()
    assert not torch.allclose(net(batch).logits, net(unk).logits)


@pytest.mark.slow
def test_compiled_network_keeps_parameter_names_and_outputs():
    from tacred.data.vocab import Vocab, Vocabularies
    from tacred.training.module import RelationExtractor

    vocab = Vocabularies(words=Vocab([f"w{i}" for i in range(50)]), pos=Vocab([f"p{i}" for i in range(9)]),
                         ner=Vocab([f"n{i}" for i in range(7)]), labels=Vocab(["no_relation", "a", "b", "c"], unk=None))
    torch.manual_seed(0)
    plain = RelationExtractor(vocab=vocab, network=NetworkConfig(**SMALL)).eval()
    compiled = RelationExtractor(vocab=vocab, network=NetworkConfig(**SMALL), compile=True).eval()
    assert list(compiled.state_dict()) == list(plain.state_dict())
    compiled.load_state_dict(plain.state_dict())
    batch = random_batch([5, 3, 7])
    with torch.no_grad():
        torch.testing.assert_close(compiled(batch).logits, plain(batch).logits, atol=1e-4, rtol=1e-4)
    # a compiled network trains with dense word-embedding gradients (a sparse one splits the graph, below)
    plain.configure_optimizers(), compiled.configure_optimizers()
    assert plain.net.embed.words.sparse and not compiled.net.embed.words.sparse


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_network_compiles_to_one_graph_without_breaks(training, dtype):
    """``--model.compile true`` traces the whole network as one graph (the masked batch norm's boolean indexing
    would break it in training): Dynamo only, no code generation, so this runs in seconds."""
    import torch._dynamo as dynamo

    net = make_net().train(training)
    dynamo.reset()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
        explained = dynamo.explain(net)(random_batch([5, 3, 7]))
    dynamo.reset()
    assert explained.graph_break_count == 0, [b.reason for b in explained.break_reasons]
    assert explained.graph_count == 1


@pytest.mark.slow
def test_compiled_training_step_is_one_graph_forward_and_backward():
    """Dynamo alone (above) does not trace the backward; AOTAutograd does, and with a sparse word-embedding gradient
    (data-dependent shapes) it failed and the compiler fell back to several graphs. The
    module turns sparse gradients off when compiling; dense ones keep one graph."""
    import torch._dynamo as dynamo
    from torch._dynamo.utils import counters

    net = make_net().train()
    assert not net.embed.words.sparse
    dynamo.reset()
    counters.clear()
    net.compile(dynamic=False, backend="aot_eager")  # static shapes trace in a quarter of the time; same failure
    net(random_batch([5, 3, 7])).logits.sum().backward()
    graphs = counters["stats"]["unique_graphs"]
    dynamo.reset()
    assert graphs == 1
    assert net.embed.words.weight.grad is not None and not net.embed.words.weight.grad.is_sparse


# -- learning-rate rules ------------------------------------------------------------------------------------------
def _lrs(scores: list[float], **kwargs: object) -> list[float]:
    from tacred.training.schedule import DecayOnStall

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    rule = DecayOnStall(opt, **kwargs)
    out = []
    for score in scores:
        rule.step(score)
        out.append(round(opt.param_groups[0]["lr"], 6))
    return out


def test_decay_on_stall_follows_the_original_rule_from_its_start_epoch() -> None:
    # epochs 1..6; decay from epoch 3 on whenever F1 did not beat the previous epoch
    assert _lrs([0.5, 0.4, 0.6, 0.6, 0.5, 0.7], start_epoch=2, factor=0.5) == [1.0, 1.0, 1.0, 0.5, 0.25, 0.25]
    # compared with the best epoch so far instead, 0.6 after 0.65 is a stall
    assert _lrs([0.5, 0.65, 0.6, 0.7], start_epoch=0, factor=0.5, compare="best") == [1.0, 1.0, 0.5, 0.5]
    assert _lrs([0.5, 0.65, 0.6, 0.7], start_epoch=0, factor=0.5) == [1.0, 1.0, 0.5, 0.5]
    assert _lrs([0.5, 0.65, 0.64, 0.66], start_epoch=0, factor=0.5, compare="best") == [1.0, 1.0, 0.5, 1.0 * 0.5]


def test_decay_patience_waits_for_that_many_stalls_in_a_row() -> None:
    scores = [0.5, 0.4, 0.3, 0.6, 0.5, 0.4, 0.3]
    assert _lrs(scores, start_epoch=0, factor=0.5, patience=1) == [1.0, 0.5, 0.25, 0.25, 0.125, 0.0625, 0.03125]
    assert _lrs(scores, start_epoch=0, factor=0.5, patience=2) == [1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25]
    with pytest.raises(ValueError, match="patience must be at least 1"):
        _lrs([0.1], patience=0)


def test_cosine_schedule_anneals_to_zero_over_the_epochs() -> None:
    from tacred.training.schedule import build_schedule

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.4)
    schedule, on_metric = build_schedule("cosine", opt, 4, 15, 0.9, "previous", 1)
    lrs = []
    for _ in range(4):
        opt.step()
        schedule.step()
        lrs.append(round(opt.param_groups[0]["lr"], 6))
    assert not on_metric and lrs == [0.341421, 0.2, 0.058579, 0.0]
    with pytest.raises(ValueError, match="lr_schedule must be one of stall, cosine, linear"):
        build_schedule("exponential", opt, 4, 15, 0.9, "previous", 1)

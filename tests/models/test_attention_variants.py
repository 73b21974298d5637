"""Tests of the attention variants: exact equivalences with the plain core, reference formulas, and one contract
test (shapes, no weight on padding, finite values, gradient flow, padding invariance) run over every registered
variant (:func:`tacred.models.attention.variants`), all of them at once, and a few combinations. The contract tests
find the variants in the registry: a new variant needs no edit here, only its own tests."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from tacred.data.batching import Batch
from tacred.models.attention import (
    MultiHeadSelfAttention,
    build_attention,
    choices,
    declared_hyperparameters,
    variants,
)
from tacred.models.attention.registry import LIST_OPTIONS
from tacred.models.config import NetworkConfig
from tacred.models.network import RelationNetwork
from tests.conftest import REPO

D, H = 12, 3  # d_model, heads (Dh = 4)
DH = D // H
CORE_PARAMS = ("query.", "key.", "value.", "output.")



def every_variant() -> dict[str, Any]:
    """The overrides that switch on every registered variant at once: all names of a list option, the last
    registered value of the others (``attention_conv: 2d``)."""
    merged: dict[str, Any] = {}
    for variant in variants():
        for option, value in variant.enabling().items():
            merged[option] = [*merged.get(option, []), *value] if option in LIST_OPTIONS else value
    return merged


# Attention-level variants: NetworkConfig overrides on top of a bare core (no position term). Every registered
# variant on its own and all of them together (small tables: t = 4 positions), then combinations and options.
SMALL_TABLES = {"max_relative_distance": 3}
REGISTERED: dict[str, dict[str, Any]] = {v.name: {**v.enabling(), **SMALL_TABLES} for v in variants()}
VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    **REGISTERED,
    "everything": {**every_variant(), **SMALL_TABLES},
    "relative_shared": {"position_encoding": "relative", "relpos_query": "shared"},
    "shaw_clip_2": {"attention_bias": ["shaw"], "shaw_clip": 2},
    "shaw_keys_only": {"attention_bias": ["shaw"], "shaw_clip": 2, "shaw_values": False},
    "san_pr": {"attention_bias": ["absolute_scalars", "relative_scalars"], "max_relative_distance": 3},
    "gaussian_with_relative": {"gaussian_heads": 1, "position_encoding": "relative"},
    "gaussian_all_heads": {"gaussian_heads": H},
}


def make(overrides: dict[str, Any], seed: int = 0) -> MultiHeadSelfAttention:
    torch.manual_seed(seed)
    options = {"num_heads": H, "attention_dropout": 0.0, "position_encoding": "none", **overrides}
    return build_attention(D, NetworkConfig(**options))


def perturb(module: torch.nn.Module, seed: int = 1) -> None:
    """Give every variant parameter random values, so no test passes because a table is still zero."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if not name.startswith(CORE_PARAMS):
                p.add_(0.3 * torch.randn(p.shape, generator=gen))


def inputs(b: int = 2, n: int = 7, lengths: tuple[int, ...] = (7, 4), seed: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(b, n, D, generator=gen)
    pad = torch.arange(n)[None, :] >= torch.tensor(lengths)[:, None]  # (B, T)
    return x, pad


def copy_core(src: MultiHeadSelfAttention, dst: MultiHeadSelfAttention) -> None:
    dst.load_state_dict({k: v for k, v in src.state_dict().items() if k.startswith(CORE_PARAMS)}, strict=False)


def heads(t: torch.Tensor) -> torch.Tensor:
    b, n, _ = t.shape
    return t.view(b, n, H, DH).transpose(1, 2)  # (B, H, T, Dh)


# -- exact equivalences at initialisation -----------------------------------------------------------------------
@pytest.mark.parametrize("name", [v.name for v in variants() if v.starts_as_plain] + ["san_pr", "shaw_keys_only"])
def test_variant_starts_as_the_plain_core(name: str) -> None:
    """Zero Shaw vectors, zero SAN scalars, γ = 1 and identity kernels give exactly the plain attention."""
    plain, variant = make({}), make(VARIANTS[name], seed=5)
    copy_core(plain, variant)
    x, pad = inputs()
    out_p, w_p = plain(x, pad)
    out_v, w_v = variant(x, pad)
    torch.testing.assert_close(w_v, w_p, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out_v, out_p, atol=1e-6, rtol=1e-5)
    perturb(variant)
    assert not torch.allclose(variant(x, pad)[0], out_p, atol=1e-4), f"{name} has no effect once trained"


def test_shaw_matches_the_papers_formula() -> None:
    """e_ij = q_i·(k_j + a^K_ij)/√Dh and z_i = Σ_j α_ij (v_j + a^V_ij), a_ij = w_clip(j−i, k), computed naively."""
    att = make(VARIANTS["shaw_clip_2"])
    perturb(att)
    x, pad = inputs(b=1, n=6, lengths=(6,))
    out, weights = att(x, pad)
    a_k, a_v = att.biases[0].table, att.values.table  # (2k+1, Dh)
    q, k, v = heads(att.query(x))[0], heads(att.key(x))[0], heads(att.value(x))[0]  # (H, T, Dh)
    n = x.shape[1]
    rel = torch.tensor([[max(-2, min(2, j - i)) + 2 for j in range(n)] for i in range(n)])
    logits = torch.einsum("hid,hijd->hij", q, k[:, None, :, :] + a_k[rel][None]) / math.sqrt(DH)
    alpha = torch.softmax(logits, dim=-1)
    z = torch.einsum("hij,hijd->hid", alpha, v[:, None, :, :] + a_v[rel][None])  # (H, T, Dh)
    torch.testing.assert_close(weights[0], alpha, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out[0], att.output(z.transpose(0, 1).reshape(n, D)), atol=1e-5, rtol=1e-5)


def test_position_scalars_match_tables_and_clip_long_sentences() -> None:
    """SAN+P adds A^p[h, min(i, t−1), min(j, t−1)], SAN+R adds a^r[h, clip(j − i)], t = max_relative_distance + 1."""
    att = make(VARIANTS["san_pr"])  # t = 4, sentence of 7
    perturb(att)
    absolute, relative = att.biases
    assert tuple(absolute.table.shape) == (H, 4, 4) and tuple(relative.table.shape) == (H, 7)
    x, pad = inputs(b=1, n=7, lengths=(7,))
    q, k = heads(att.query(x)), heads(att.key(x))
    expected = q @ k.transpose(-1, -2) / math.sqrt(DH)
    for i in range(7):
        for j in range(7):
            expected[0, :, i, j] += absolute.table[:, min(i, 3), min(j, 3)] + relative.table[:, max(-3, min(3, j - i)) + 3]
    torch.testing.assert_close(att(x, pad)[1], torch.softmax(expected, dim=-1), atol=1e-6, rtol=1e-5)


def test_learned_temperature_scales_the_projections() -> None:
    """γ_q, γ_k, γ_v equal multiplying W_q, W_k, W_v (weights and biases) by them."""
    att, plain = make(VARIANTS["learned_temperature"]), make({})
    copy_core(att, plain)
    gamma = (2.0, 0.5, 3.0)
    with torch.no_grad():
        att.temperature.gamma.copy_(torch.tensor(gamma))
        for layer, g in zip((plain.query, plain.key, plain.value), gamma, strict=True):
            layer.weight.mul_(g)
            layer.bias.mul_(g)
    x, pad = inputs()
    torch.testing.assert_close(att(x, pad)[0], plain(x, pad)[0], atol=1e-5, rtol=1e-5)


def test_conv_1d_uses_one_filter_per_query_row() -> None:
    att = make(VARIANTS["conv_1d"])
    perturb(att)
    with torch.no_grad():
        att.transform.kernel.abs_()  # keep every entry positive, so only the renormalisation remains
    x, pad = inputs(b=1, n=6, lengths=(5,))
    plain = make({})
    copy_core(att, plain)
    base = plain(x, pad)[1][0]  # (H, T, T)
    kernel = att.transform.kernel
    expected = torch.zeros_like(base)
    for i in range(6):
        for j in range(5):  # key 5 is padding: re-masked
            for c in range(3):
                if 0 <= j + c - 1 < 6:
                    expected[:, i, j] += kernel[:, min(i, 3), c] * base[:, i, j + c - 1]
    expected = expected / expected.sum(-1, keepdim=True)
    torch.testing.assert_close(att(x, pad)[1][0], expected, atol=1e-6, rtol=1e-5)


def test_gaussian_head_weights_follow_the_formula_whatever_the_content() -> None:
    """Head 0 weights j by exp(−(j/N − μ_i)² / (2σ_i² + ε)) over the N real tokens; keys' content is irrelevant."""
    att = make(VARIANTS["gaussian_with_relative"])
    perturb(att)
    x, pad = inputs(b=1, n=7, lengths=(5,))
    weights = att(x, pad)[1][0, 0]  # (T, T)
    gaussian = att.biases[-1]
    mu, sigma = torch.sigmoid(x[0] @ gaussian.weight + gaussian.bias).unbind(-1)  # (T,) each, G = 1
    p = torch.arange(7) / 5
    raw = torch.exp(-(p[None, :] - mu[:, None]) ** 2 / (2 * sigma[:, None] ** 2 + gaussian.eps)) * (p < 1)[None]
    torch.testing.assert_close(weights, raw / raw.sum(-1, keepdim=True), atol=1e-6, rtol=1e-5)
    with torch.no_grad():
        att.key.weight.normal_()
    torch.testing.assert_close(att(x, pad)[1][0, 0], weights)
    assert not torch.allclose(att(x, pad)[1][0, 1], weights), "the other heads still attend by content"


def test_invalid_variant_settings_are_rejected() -> None:
    """By the config, when it is built (OptionError, a ValueError), naming the option, the value and the rule."""
    known_biases, known_transforms = ", ".join(choices("attention_bias")), ", ".join(choices("attention_conv"))
    for bad, message in (({"gaussian_heads": H + 1}, "gaussian_heads 4: must be between 0 and num_heads (3)"),
                         ({"gaussian_heads": -1}, "gaussian_heads -1"),
                         ({"attention_bias": ["shaw", "shaw"]}, "distinct"),
                         ({"attention_bias": ["rotary"]}, "attention_bias ['rotary']: unknown attention variant "
                                                          f"'rotary'; known: {known_biases}"),
                         ({"attention_conv": "3d"}, f"attention_conv '3d': unknown value; known: {known_transforms}"),
                         ({"relpos_query": "both"}, "relpos_query 'both': must be one of separate, shared"),
                         ({"shaw_clip": 0, "attention_bias": ["shaw"]}, "shaw_clip 0: must be a number >= 1")):
        with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                           .replace(")", r"\)")):
            make(bad)


# -- the registry ------------------------------------------------------------------------------------------------
def test_registry_names_options_and_ablation_rows() -> None:
    """Each variant has a unique build order, a config that switches it on (and only it), its name among those its
    option accepts, and a configs/ablations file per row."""
    registered = variants()
    assert len({v.order for v in registered}) == len(registered)
    assert choices("attention_conv")[0] == "none"
    rows = {p.stem for p in (REPO / "configs" / "ablations").glob("*.yaml")}
    sizes = {"num_heads": H, "word_dim": 24, "pos_dim": 6, "ner_dim": 6, "position_encoding": "none"}
    for variant in registered:
        config = NetworkConfig(**{**sizes, **variant.enabling()})
        assert [v.name for v in registered if v.selected(config)] == [variant.name]
        if variant.option in ("attention_bias", "attention_conv"):
            assert str(variant.value) in choices(variant.option), variant.name
        assert set(variant.ablations) <= rows, variant.name
        assert variant.summary, variant.name


def test_declared_hyperparameters_are_config_fields_with_their_defaults() -> None:
    """What a variant declares in its file is a NetworkConfig field (the command line's --model.network.NAME), with
    the declared default; every variant's switch is a field."""
    from dataclasses import fields

    defaults = {f.name: f.default for f in fields(NetworkConfig)}
    declared = declared_hyperparameters()
    assert len({h.name for h in declared}) == len(declared)
    for hyperparameter in declared:
        assert defaults[hyperparameter.name] == hyperparameter.default, hyperparameter.name
    assert {v.option for v in variants()} <= set(defaults)
    assert not any(v.selected(NetworkConfig()) for v in variants() if v.option != "position_encoding")


def test_a_variant_declaring_hyperparameters_after_the_config_was_built_is_refused() -> None:
    from tacred.models.attention import Hyperparameter, register

    with pytest.raises(ValueError, match="after NetworkConfig was built"):
        register("late_for_test", option="late_for_test", value=True, order=999,
                 hyperparameters=(Hyperparameter("late_for_test", bool, False),))(lambda parts, cfg: None)
    assert "late_for_test" not in {v.name for v in variants()}


def test_a_new_variant_registers_itself_and_is_built_in_order() -> None:
    """What a new variant file does: one decorated builder; the config accepts its name, the core gets its hook."""
    from tacred.models.attention import VARIANTS, register

    class ZeroBias(torch.nn.Module):
        def forward(self, inputs: Any) -> torch.Tensor:
            return torch.zeros(1, H, inputs.length, inputs.length)

    @register("zero_bias_for_test", option="attention_bias", order=35)
    def add_zero_bias(parts: Any, cfg: NetworkConfig) -> None:
        """A bias of zeros."""
        parts.biases.append(ZeroBias())

    try:
        assert "zero_bias_for_test" in choices("attention_bias")
        att = make({"attention_bias": ["zero_bias_for_test", "shaw"], "shaw_clip": 2})
        assert [type(b).__name__ for b in att.biases] == ["ShawRelativeKeys", "ZeroBias"]  # build order, not list order
        with pytest.raises(ValueError, match="already taken by 'relative_scalars'"):
            register("clash_for_test", option="attention_bias", order=30)(add_zero_bias)
    finally:
        VARIANTS.pop("zero_bias_for_test", None)
    with pytest.raises(ValueError, match="unknown attention variant 'zero_bias_for_test'"):
        make({"attention_bias": ["zero_bias_for_test"]})


# -- the contract every variant keeps ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(VARIANTS))
def test_attention_variant_contract(name: str) -> None:
    att = make(VARIANTS[name])
    perturb(att)
    x, pad = inputs()
    out, weights = att(x, pad)
    assert out.shape == (2, 7, D) and weights.shape == (2, H, 7, 7)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert (weights.masked_select(pad[:, None, None, :].expand_as(weights)) == 0).all(), "weight on padding keys"
    # every row has Σ|weight| = 1: softmax rows, or convolved rows that may hold negative weights
    torch.testing.assert_close(weights.abs().sum(-1), torch.ones(2, H, 7))
    (out[~pad] * torch.randn_like(out[~pad])).sum().backward()
    for pname, p in att.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname
        if not pname.startswith(CORE_PARAMS):
            assert p.grad.abs().sum() > 0, f"no gradient reaches {pname}"
    att.eval()
    alone, _ = att(x[1:, :4], pad[1:, :4])
    garbage = x.clone()
    garbage[1, 4:] = 100 * torch.randn(3, D)
    padded, _ = att(garbage, pad)
    torch.testing.assert_close(padded[1, :4], alone[0], atol=1e-5, rtol=1e-5)


def test_hooks_see_the_documented_shapes() -> None:
    att = make(VARIANTS["everything"])
    seen: dict[str, tuple[int, ...]] = {}
    for i, bias in enumerate(att.biases):
        bias.register_forward_hook(lambda m, args, out, i=i: seen.__setitem__(f"bias{i}", tuple(out.shape)))
    att.values.register_forward_hook(lambda m, args, out: seen.__setitem__("values", tuple(out.shape)))
    x, pad = inputs()
    att(x, pad)
    assert all(s[1:] == (H, 7, 7) and s[0] in (1, 2) for k, s in seen.items() if k.startswith("bias")), seen
    assert seen["values"] == (2, H, 7, DH)
    assert len(seen) == len(att.biases) + 1


# -- every ablation's network, end to end ----------------------------------------------------------------------
ABLATIONS = sorted((REPO / "configs" / "ablations").glob("*.yaml"))


def network_config(path: Path) -> NetworkConfig:
    base = yaml.safe_load((REPO / "configs" / "tacred.yaml").read_text(encoding="utf-8"))["model"]["network"]
    override = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("model", {}).get("network", {})
    return NetworkConfig(**{**base, **override, "word_dim": 24, "pos_dim": 6, "ner_dim": 6, "position_dim": 5,
                            "ffn_dim": 10, "lstm_hidden": 8, "attention_dim": 7})


def batch(lengths: list[int], seed: int = 0) -> Batch:
    gen = torch.Generator().manual_seed(seed)
    b, n = len(lengths), max(lengths)
    pad = torch.arange(n)[None, :] >= torch.tensor(lengths)[:, None]

    def ids(high: int) -> torch.Tensor:
        return torch.randint(2, high, (b, n), generator=gen).masked_fill(pad, 0)

    pos = torch.arange(n)[None, :].expand(b, n)
    return Batch(words=ids(30), pos=ids(8), ner=ids(6), subj_positions=(pos - 1).masked_fill(pad, 0),
                 obj_positions=(pos - 3).masked_fill(pad, 0), pad_mask=pad, labels=torch.arange(b) % 4,
                 index=torch.arange(b))


def test_every_ablation_file_is_tested() -> None:
    assert len(ABLATIONS) >= 19, [p.name for p in ABLATIONS]


@pytest.mark.parametrize("path", ABLATIONS, ids=[p.stem for p in ABLATIONS])
def test_network_variant_contract(path: Path) -> None:
    torch.manual_seed(0)
    net = RelationNetwork(network_config(path), num_words=30, num_pos=8, num_ner=6, num_labels=4)
    data = batch([9, 6, 3])
    out = net(data)
    assert out.logits.shape == (3, 4) and torch.isfinite(out.logits).all()
    for w in out.self_attention:
        assert w.shape == (3, net.cfg.num_heads, 9, 9)
        assert (w.masked_select(data.pad_mask[:, None, None, :].expand_as(w)) == 0).all()
    if out.position_attention is not None:
        assert (out.position_attention[data.pad_mask] == 0).all()
    torch.nn.functional.cross_entropy(out.logits, data.labels).backward()
    missing = [n for n, p in net.named_parameters() if p.grad is None]
    assert not missing, f"parameters without a gradient: {missing}"
    net.eval()
    token_fields = ("words", "pos", "ner", "subj_positions", "obj_positions", "pad_mask")
    short = Batch(**{f: getattr(data, f)[2:, :3] for f in token_fields}, labels=data.labels[2:], index=data.index[2:])
    alone = net(short).logits  # the 3-token sentence without the 6 padding positions it has in ``data``
    torch.testing.assert_close(net(data).logits[2:], alone, atol=1e-5, rtol=1e-5)


def test_without_position_aware_layer_there_are_no_pa_parameters() -> None:
    net = RelationNetwork(network_config(REPO / "configs" / "ablations" / "no_position_aware.yaml"), 30, 8, 6, 4)
    final = RelationNetwork(network_config(REPO / "configs" / "ablations" / "final.yaml"), 30, 8, 6, 4)
    assert net.position_aware is None and net.positions is None
    names = {n for n, _ in net.named_parameters()}
    assert not any(n.startswith(("position_aware.", "positions.")) for n in names)
    assert {n for n, _ in final.named_parameters()} - names == {n for n, _ in final.named_parameters()
                                                                  if n.startswith(("position_aware.", "positions."))}

"""Every candidate pair of a sentence scored from one shared pass of the paper's network (inference only).

In evaluation mode the network's input for a pair is the sentence's embeddings plus the object-position embedding
(17 rows) plus, under entity masking, a few changed word rows; everything before the attention softmax is linear in
that input, so the sentence's q, k, v and relative-query projections are computed once and each pair adds a table
row (and the projections of its changed rows). After the softmax the block has no residual around the attention and
batch norm and RReLU are affine, so the output projection, the first norm and the first feed-forward layer fold into
one F × D matrix, and the second norm into the second feed-forward layer. The rest (the position-aware attention,
the classifier) runs per pair as in :class:`~tacred.models.network.RelationNetwork`; ``tests/models/test_pair_scoring.py``
holds the result to the plain forward pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tacred.data.batching import Batch
from tacred.models.attention.core import AttentionInputs, MultiHeadSelfAttention, gather_relative
from tacred.models.attention.gaussian import ContentHeadsOnly
from tacred.models.attention.relative import RelativePositionScores, clipped_distances
from tacred.models.encoder import masked_max
from tacred.models.network import RelationNetwork, sinusoidal_encoding
from tacred.models.norm import MaskedBatchNorm


@dataclass
class SentencePairs:
    """S sentences and P candidate pairs over them, padded to one length T.

    ``words``/``pos``/``ner``/``pad_mask`` (S, T): each sentence once (its own words, no entity masks);
    ``sentence`` (P,): the sentence of each pair; ``pair_words`` (P, T): the words the pair reads (entity masking
    writes its mask words over the two spans; elsewhere the sentence's words); ``subj_positions``/``obj_positions``
    (P, T): the binned relative positions of :class:`~tacred.data.batching.Batch`."""

    words: torch.Tensor
    pos: torch.Tensor
    ner: torch.Tensor
    pad_mask: torch.Tensor
    sentence: torch.Tensor
    pair_words: torch.Tensor
    subj_positions: torch.Tensor
    obj_positions: torch.Tensor

    def pair_batch(self) -> Batch:
        """The pairs as the plain network's batch (P, T): each sentence repeated for its pairs."""
        s = self.sentence
        return Batch(words=self.pair_words, pos=self.pos[s], ner=self.ner[s], subj_positions=self.subj_positions,
                     obj_positions=self.obj_positions, pad_mask=self.pad_mask[s], labels=s, index=s)


def unfactored_reason(net: nn.Module) -> str | None:
    """Why ``net`` cannot score a sentence's pairs from one shared pass (None: it can). Such a network is run
    pair by pair (:func:`pair_logits` falls back to its plain forward pass)."""
    if not isinstance(net, RelationNetwork):
        return f"{type(net).__name__} is not the paper's network"
    cfg = net.cfg
    if cfg.encoder != "self_attention":
        return f"encoder {cfg.encoder!r}: an LSTM's states are not linear in its input"
    if cfg.num_layers != 1:
        return f"{cfg.num_layers} layers: the second layer's input is not linear in the object position"
    if cfg.residual != "single":
        return "residual 'double': the norm after the attention reads the block's input"
    layer = net.self_attention.layers[0]
    for norm in (layer.norm1, layer.norm2):
        if not isinstance(norm, MaskedBatchNorm) or not norm.norm.track_running_stats:
            return "layer norm (or batch norm without running statistics) is not affine at inference"
    if cfg.activation not in ("rrelu", "relu"):
        return f"activation {cfg.activation!r}"
    return None


def _affine(norm: MaskedBatchNorm) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch norm at inference as y = x·scale + shift (D,), (D,)."""
    bn = norm.norm
    scale = torch.rsqrt(bn.running_var + bn.eps)
    shift = -bn.running_mean * scale
    if bn.affine:
        scale, shift = scale * bn.weight, shift * bn.weight + bn.bias
    return scale, shift


class PairScorer(nn.Module):
    """The factored evaluation-mode forward pass of a :class:`RelationNetwork` (see the module docstring).

    Holds the folded matrices, computed from the network's weights when built: build it again after the weights
    change. ``forward(pairs) -> logits (P, L)``."""

    def __init__(self, net: RelationNetwork) -> None:
        super().__init__()
        reason = unfactored_reason(net)
        if reason is not None:
            raise ValueError(f"this network cannot score pairs from a shared pass: {reason}")
        self.net = net
        layer = net.self_attention.layers[0]
        attention: MultiHeadSelfAttention = layer.attention
        self.attention = attention
        d = net.embed.dim
        self.relative = [b for b in attention.biases if isinstance(_inner(b), RelativePositionScores)
                         and _inner(b).r is not None]
        with torch.no_grad():
            # the linear maps of the encoder input, stacked: q, k, v and each relative-score query W^r
            maps = [attention.query, attention.key, attention.value, *(_inner(b).r for b in self.relative)]
            self.register_buffer("bank_weight", torch.cat([m.weight for m in maps]), persistent=False)  # (N, D)
            self.register_buffer("bank_bias", torch.cat([m.bias for m in maps]), persistent=False)  # (N,)
            table = net.embed.object_position.weight if net.embed.object_position is not None else None
            self.register_buffer("object_table", table.clone() if table is not None else torch.zeros(1, d),
                                 persistent=False)  # (17, D)
            self.register_buffer("object_bank", self.object_table @ self.bank_weight.T, persistent=False)  # (17, N)
            # output projection → norm1 → inner feed-forward: one (F, D) map of the attention's heads
            s1, c1 = _affine(layer.norm1)
            inner = layer.ffn.inner
            out = attention.output
            self.register_buffer("fold_weight", (inner.weight * s1) @ out.weight, persistent=False)  # (F, D)
            self.register_buffer("fold_bias", inner.weight @ (out.bias * s1 + c1) + inner.bias, persistent=False)
            # outer feed-forward → (+ block input) → norm2: states = act·W' + x·s2 + c
            s2, c2 = _affine(layer.norm2)
            outer = layer.ffn.outer
            self.register_buffer("outer_weight", outer.weight * s2[:, None], persistent=False)  # (D, F)
            self.register_buffer("outer_bias", outer.bias * s2 + c2, persistent=False)
            self.register_buffer("input_scale", s2.clone(), persistent=False)
        activation = layer.ffn.activation
        # RReLU at inference is a leaky ReLU with the mean of its slope range (torch.rrelu, training=False)
        self.negative_slope = ((activation.lower + activation.upper) / 2 if isinstance(activation, nn.RReLU)
                               else 0.0)

    def forward(self, pairs: SentencePairs) -> torch.Tensor:
        net = self.net
        embed = net.embed
        sent = pairs.sentence  # (P,)
        pad = pairs.pad_mask[sent]  # (P, T)
        # the sentences' inputs, each once; the pairs' inputs differ from them by the object-position row and by
        # the words that entity masking changed
        parts = [embed.words(pairs.words)]
        if embed.pos is not None:
            parts.append(embed.pos(pairs.pos))
        if embed.ner is not None:
            parts.append(embed.ner(pairs.ner))
        x_sent = torch.cat(parts, dim=-1)  # (S, T, D)
        if net.cfg.position_encoding == "sinusoidal":
            x_sent = x_sent + sinusoidal_encoding(x_sent.shape[1], x_sent.shape[2], x_sent.device)[None]
        bins = embed.bins(pairs.obj_positions)  # (P, T)
        has_object = embed.object_position is not None
        bank = x_sent @ self.bank_weight.T + self.bank_bias  # (S, T, N): once per sentence
        proj = bank[sent]  # (P, T, N)
        x = x_sent[sent]  # (P, T, D)
        if has_object:
            proj = proj + self.object_bank[bins]
            x = x + self.object_table[bins]
        changed = pairs.pair_words != pairs.words[sent]  # (P, T): the rows entity masking rewrote
        if bool(changed.any()):
            rows = changed.nonzero(as_tuple=True)
            delta = embed.words(pairs.pair_words[rows]) - embed.words(pairs.words[sent][rows])  # (M, Dw)
            proj = proj.index_put(rows, delta @ self.bank_weight[:, : delta.shape[1]].T, accumulate=True)
            x = x.index_put(rows, F.pad(delta, (0, x.shape[-1] - delta.shape[1])), accumulate=True)
        heads = self._attend(x, proj, pad)  # (P, T, D)
        pre = heads @ self.fold_weight.T + self.fold_bias  # (P, T, F)
        act = F.leaky_relu(pre, self.negative_slope)
        states = act @ self.outer_weight.T + self.outer_bias + x * self.input_scale  # (P, T, D)
        states = states.masked_fill(pad[:, :, None], 0.0)
        query = masked_max(states, pad)  # (P, D)
        if net.position_aware is None:
            return net.classifier(query)
        features = torch.cat([net.positions(embed.bins(pairs.subj_positions)), net.positions(bins)], dim=-1)
        summary, _ = net.position_aware(states, query, features, pad)  # (P, D)
        return net.classifier(summary)  # (P, L)

    def _attend(self, x: torch.Tensor, proj: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        """The attention core of :class:`MultiHeadSelfAttention` with q, k, v (and W^r x) given: (P, T, D)."""
        att = self.attention
        b, n, d = x.shape
        q, k, v, *r = (att._heads(t) for t in proj.split(d, dim=-1))  # (P, H, T, Dh) each
        inputs = AttentionInputs(x, q, k, v, pad)
        if att.temperature is not None:
            inputs, scale = att.temperature(inputs)
        else:
            scale = 1.0 / math.sqrt(att.head_dim)
        logits = (inputs.q @ inputs.k.transpose(-1, -2)) * scale  # (P, H, T, T)
        given = dict(zip(map(id, self.relative), r, strict=True))
        for bias in att.biases:
            if id(bias) in given:
                logits = logits + _relative_scores(bias, given[id(bias)])
            else:
                logits = logits + bias(inputs)
        logits = logits.masked_fill(pad[:, None, None, :], float("-inf"))
        weights = torch.softmax(logits, dim=-1)  # (P, H, T, T)
        if att.transform is not None:
            weights = att.transform(weights, pad)
        out = weights @ inputs.v  # (P, H, T, Dh)
        if att.values is not None:
            out = out + att.values(weights, inputs)
        return out.transpose(1, 2).reshape(b, n, d)  # (P, T, D)


def _inner(bias: nn.Module) -> nn.Module:
    return bias.bias if isinstance(bias, ContentHeadsOnly) else bias


def _relative_scores(bias: nn.Module, r: torch.Tensor) -> torch.Tensor:
    """:class:`RelativePositionScores` with its query W^r x given (P, H, T, Dh) → (P, H, T, T)."""
    scores = _inner(bias)
    n = r.shape[2]
    m = scores.m[:, clipped_distances(n, scores.max_distance, r.device)]  # (H, 2T-1, Dh)
    out = gather_relative(torch.einsum("bhtd,hkd->bhtk", r * (1.0 / math.sqrt(scores.head_dim)), m))
    return out * bias.keep if isinstance(bias, ContentHeadsOnly) else out


def pair_logits(net: nn.Module, pairs: SentencePairs, scorer: PairScorer | None = None) -> torch.Tensor:
    """Logits (P, L) of every pair: from one shared pass per sentence where the network allows it
    (:func:`unfactored_reason`; ``scorer``: a :class:`PairScorer` already built for ``net``), else the plain forward
    pass over the pairs. The network must be in evaluation mode."""
    if net.training:
        raise ValueError("pair scoring is for evaluation mode (dropout and batch statistics are off)")
    if scorer is None and unfactored_reason(net) is None:
        scorer = PairScorer(net)
    if scorer is None:
        return net(pairs.pair_batch()).logits
    return scorer(pairs)

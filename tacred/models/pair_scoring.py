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
        # hooks other than the relative scores with their own query read the block input x of every pair
        self.reads_input = any(id(b) not in {id(r) for r in self.relative} for b in attention.biases) or any(
            h is not None for h in (attention.temperature, attention.values, attention.transform))
        pa = net.position_aware
        with torch.no_grad():
            s1, c1 = _affine(layer.norm1)
            s2, c2 = _affine(layer.norm2)
            outer = layer.ffn.outer
            outer_weight, outer_bias = outer.weight * s2[:, None], outer.bias * s2 + c2  # (D, F), (D,)
            # the linear maps of the encoder input, stacked: the heads' q, k, v and each relative-score query W^r;
            # then what the rest of the pair needs of its input: the position-aware hidden projection of the
            # residual x·s2 (W_h·diag(s2), with the biases that reach it) and x·s2 itself
            maps = [attention.query, attention.key, attention.value, *(_inner(b).r for b in self.relative)]
            self.num_heads_maps = len(maps)
            weights = [m.weight for m in maps]
            biases = [m.bias for m in maps]
            if pa is not None:
                weights.append(pa.hidden.weight * s2)  # (A, D)
                biases.append(pa.hidden.weight @ outer_bias + pa.hidden.bias)
            if not self.reads_input:  # the head-by-head path takes q scaled by 1/√Dh from the projection itself
                weights[0], biases[0] = weights[0] / math.sqrt(attention.head_dim), biases[0] / math.sqrt(
                    attention.head_dim)
            self.register_buffer("bank_weight", torch.cat(weights), persistent=False)  # (N, D)
            self.register_buffer("bank_bias", torch.cat(biases), persistent=False)  # (N,)
            self.register_buffer("input_scale", s2.clone(), persistent=False)  # x·s2 joins the bank's columns
            table = net.embed.object_position.weight if net.embed.object_position is not None else None
            self.register_buffer("object_table", table.clone() if table is not None else torch.zeros(1, d),
                                 persistent=False)  # (17, D)
            self.register_buffer("object_bank", torch.cat([self.object_table @ self.bank_weight.T,
                                                           self.object_table * s2], dim=-1),
                                 persistent=False)  # (17, N + D)
            # output projection → norm1 → inner feed-forward: one (F, D) map of the attention's heads
            inner = layer.ffn.inner
            out = attention.output
            self.register_buffer("fold_weight", (inner.weight * s1) @ out.weight, persistent=False)  # (F, D)
            self.register_buffer("fold_bias", inner.weight @ (out.bias * s1 + c1) + inner.bias, persistent=False)
            # outer feed-forward → norm2 (states, less x·s2), and through it the position-aware hidden projection
            post = [outer_weight] + ([pa.hidden.weight @ outer_weight] if pa is not None else [])
            self.register_buffer("post_weight", torch.cat(post), persistent=False)  # (D [+ A], F)
            self.register_buffer("outer_bias", outer_bias, persistent=False)
            if pa is not None:  # the position features through their projection: one (17, A) table per argument
                p = net.positions.weight.shape[1]
                self.register_buffer("subject_features", net.positions.weight @ pa.features.weight[:, :p].T
                                     + pa.features.bias, persistent=False)
                self.register_buffer("object_features", net.positions.weight @ pa.features.weight[:, p:].T,
                                     persistent=False)
        activation = layer.ffn.activation
        # RReLU at inference is a leaky ReLU with the mean of its slope range (torch.rrelu, training=False)
        self.negative_slope = ((activation.lower + activation.upper) / 2 if isinstance(activation, nn.RReLU)
                               else 0.0)

    def forward(self, pairs: SentencePairs) -> torch.Tensor:
        net, embed, att = self.net, self.net.embed, self.attention
        sent = pairs.sentence  # (P,)
        pad = pairs.pad_mask[sent]  # (P, T)
        p, n = pairs.pair_words.shape
        d, h, dh, g = embed.dim, att.num_heads, att.head_dim, self.num_heads_maps
        # the sentences' inputs, each once; a pair's input differs from its sentence's by the object-position row
        # and by the words that entity masking changed
        parts = [embed.words(pairs.words)]
        if embed.pos is not None:
            parts.append(embed.pos(pairs.pos))
        if embed.ner is not None:
            parts.append(embed.ner(pairs.ner))
        x_sent = torch.cat(parts, dim=-1)  # (S, T, D)
        if net.cfg.position_encoding == "sinusoidal":
            x_sent = x_sent + sinusoidal_encoding(n, d, x_sent.device)[None]
        bank = torch.cat([torch.addmm(self.bank_bias, x_sent.reshape(-1, d), self.bank_weight.T).view(-1, n, len(
            self.bank_bias)), x_sent * self.input_scale], dim=-1)  # (S, T, N + D): once per sentence
        split = g * d
        # each pair's token rows: its sentence's row plus its object-position row, summed in one pass
        # (embedding_bag over the sentences' rows and the 17 object rows), token-major (P, T, N + D)
        width = bank.shape[-1]
        own = (sent[:, None] * n + torch.arange(n, device=sent.device)).reshape(-1)  # (P·T,)
        bins = embed.bins(pairs.obj_positions)  # (P, T)
        if embed.object_position is not None:
            index = torch.stack([own, bins.reshape(-1) + bank.shape[0] * n], dim=1)  # (P·T, 2)
            rows_all = F.embedding_bag(index, torch.cat([bank.reshape(-1, width), self.object_bank]), mode="sum")
        else:
            rows_all = bank.reshape(-1, width).index_select(0, own)
        rows_all = rows_all.view(p, n, width)
        sentence_words = pairs.words[sent]  # (P, T)
        changed = pairs.pair_words != sentence_words  # (P, T): the rows entity masking rewrote
        delta = None
        if bool(changed.any()):
            rows = changed.nonzero(as_tuple=True)
            delta = embed.words(pairs.pair_words[rows]) - embed.words(sentence_words[rows])  # (M, Dw)
            wd = delta.shape[1]
            moved = torch.cat([delta @ self.bank_weight[:, :wd].T, F.pad(delta * self.input_scale[:wd],
                                                                          (0, d - wd))], dim=-1)  # (M, N + D)
            rows_all.index_put_(rows, moved, accumulate=True)
        heads = rows_all[..., :split].view(p, n, g, h, dh).permute(0, 2, 3, 1, 4)  # (P, G, H, T, Dh), a view
        rest = rows_all[..., split:]  # (P, T, [A +] D): W_h x·s2 and x·s2
        x = None
        if self.reads_input:
            x = x_sent.index_select(0, sent) + (self.object_table[bins] if embed.object_position is not None else 0)
            if delta is not None:
                x = x.index_put(rows, F.pad(delta, (0, d - delta.shape[1])), accumulate=True)
        attended = self._attend(x, heads, pad) if self.reads_input else self._attend_per_head(heads, pad)  # (P, T, D)
        act = F.leaky_relu(attended @ self.fold_weight.T + self.fold_bias, self.negative_slope)  # (P, T, F)
        post = act @ self.post_weight.T  # (P, T, D [+ A])
        # (P, T, D); not zeroed at padding: the max-pool and the position-aware softmax leave padding out
        states = post[..., :d] + self.outer_bias + rest[..., -d:]
        query = masked_max(states, pad)  # (P, D)
        if net.position_aware is None:
            return net.classifier(query)
        pa = net.position_aware
        u = (post[..., d:] + rest[..., :-d] + pa.query(query)[:, None, :] + self.object_features[bins]
             + self.subject_features[embed.bins(pairs.subj_positions)])  # (P, T, A): Zhang et al.'s u_i
        scores = pa.score(torch.tanh(u)).squeeze(-1).masked_fill(pad, float("-inf"))  # (P, T)
        summary = (torch.softmax(scores, dim=-1)[:, :, None] * states).sum(dim=1)  # (P, D)
        return net.classifier(summary)  # (P, L)

    def _attend_per_head(self, heads: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        """The paper's attention (relative-position scores with their own query, or none; no other hook), head by
        head on the strided views of ``heads`` (P, G, H, T, Dh), so no head is copied out: → (P, T, D)."""
        p, _, h, n, dh = heads.shape
        distances = (torch.arange(n, device=heads.device)[None, :] - torch.arange(n, device=heads.device)[:, None]
                     + n - 1).expand(p, n, n)  # (P, T, T): the column of distance j - i
        keys = pad[:, None, :]  # (P, 1, T)
        out = []
        for i in range(h):
            q, k, v = heads[:, 0, i], heads[:, 1, i], heads[:, 2, i]  # (P, T, Dh) each
            logits = torch.bmm(q, k.transpose(1, 2))  # (P, T, T); q came scaled by 1/√Dh
            for j, bias in enumerate(self.relative):
                m = bias.m[i, clipped_distances(n, bias.max_distance, heads.device)]  # (2T-1, Dh)
                r = heads[:, 3 + j, i].reshape(p * n, dh)  # (P·T, Dh), a view
                logits += (r @ (m.T * (1.0 / math.sqrt(bias.head_dim)))).view(p, n, -1).gather(-1, distances)
            weights = torch.softmax(logits.masked_fill_(keys, float("-inf")), dim=-1)  # (P, T, T)
            out.append(torch.bmm(weights, v))  # (P, T, Dh)
        return torch.cat(out, dim=-1)  # (P, T, D)

    def _attend(self, x: torch.Tensor | None, heads: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        """The attention core of :class:`MultiHeadSelfAttention` with q, k, v (and W^r x) given as ``heads``
        (P, G, H, T, Dh); ``x`` (P, T, D), the block input, for hooks that read it: → (P, T, D)."""
        att = self.attention
        b, _, _, n, _ = heads.shape
        q, k, v, *r = heads.unbind(1)  # (P, H, T, Dh) each
        inputs = AttentionInputs(x, q, k, v, pad)  # type: ignore[arg-type]
        if att.temperature is not None:
            inputs, scale = att.temperature(inputs)
        else:
            scale = 1.0 / math.sqrt(att.head_dim)
        logits = (inputs.q * scale) @ inputs.k.transpose(-1, -2)  # (P, H, T, T)
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
        return out.transpose(1, 2).reshape(b, n, -1)  # (P, T, D)


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


def pair_flops(net: RelationNetwork, length: int, factored: bool = True, masked_rows: float = 0.0
               ) -> tuple[float, float]:
    """FLOPs (2 per multiply-add) of the matrix products of scoring a sentence of ``length`` tokens: (once per
    sentence, once per pair). ``factored``: :class:`PairScorer` (``masked_rows``: the rows entity masking changes,
    per pair), else the plain forward pass, which does everything per pair. The paper's products are counted (the
    projections, q·kᵀ, the relative scores, weights·v, the feed-forward, the position-aware attention, the
    classifier); a variant's own small products, embedding look-ups, table rows and element-wise work are not."""
    cfg, t = net.cfg, length
    d, f = net.embed.dim, cfg.ffn_dim
    layer = net.self_attention.layers[0]
    relative = [b for b in layer.attention.biases if isinstance(_inner(b), RelativePositionScores)]
    separate = sum(_inner(b).r is not None for b in relative)
    heads = (3 + separate) * d  # the stacked q, k, v (and W^r) projections
    attention = 2 * t * t * d * 2 + len(relative) * 2 * t * (2 * t - 1) * d  # q·kᵀ and weights·v; relative scores
    classifier = 2 * d * net.classifier.out_features
    a = cfg.attention_dim if net.position_aware is not None else 0
    if a:  # the query's projection, the scores and the summary
        classifier += 2 * d * a + 2 * t * a + 2 * t * d
    if not factored:
        features = 2 * t * 2 * cfg.position_dim * a
        return 0.0, 2.0 * t * d * heads + attention + 2 * t * d * d + 2 * 2 * t * d * f + 2 * t * d * a + features \
            + classifier
    bank = heads + a  # the heads' projections and W_h·diag(s2) of the input
    per_pair = masked_rows * 2 * cfg.word_dim * bank + attention + 2 * t * d * f + 2 * t * f * (d + a) + classifier
    return 2.0 * t * d * bank, per_pair

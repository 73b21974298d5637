"""Every candidate pair of a sentence scored from one shared pass of the paper's network (inference only).

In evaluation mode the network's input for a pair is the sentence's embeddings plus the object-position embedding
(17 rows) plus, under entity masking, a few changed word rows; everything before the attention softmax is linear in
that input, so the sentence's q, k, v and relative-query projections are computed once and each pair adds a table
row (and the projections of its changed rows). A pair's attention logits need no q or k of its own: q·kᵀ and the
relative scores split into the sentence's (S, H, T, T) terms and terms gathered from 17-row tables
(:meth:`PairScorer._attend_tables`), plus, for the rows entity masking rewrote, one row and one column of
corrections each (each distinct rewritten row of a sentence computed once), so only the attention weights times v
run per pair. After the softmax the block has no residual around the attention and batch norm and RReLU are
affine, so the output projection, the first norm and the first feed-forward layer fold into one F × D matrix, whose
share of each head is applied to v before the attention (the weights sum to 1), and the second norm folds into the
second feed-forward layer. Being linear, a sentence's rows are sums of precomputed rows of its words (the most
frequent ones; a product for the rest), tags and biases. Without entity masking a pair's subject enters only the
position-aware layer (its position features), so the pairs that share a sentence and an object share everything
before it, computed once for them. The rest (the position-aware attention, the classifier) runs per pair as in
:class:`~tacred.models.network.RelationNetwork`, its tanh as a sigmoid (vᵀ tanh(u) = 2vᵀ σ(2u) − Σv, σ from exp:
under half of torch's tanh on a CPU); ``tests/models/test_pair_scoring.py`` holds the result to the plain forward
pass.
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
from tacred.models.config import NetworkConfig
from tacred.models.network import RelationNetwork, sinusoidal_encoding
from tacred.models.norm import MaskedBatchNorm

# the states' value at padding rows: the max-pool over tokens never picks it, and times the exactly-0 attention
# weight of padding it adds nothing (finite, unlike -inf, whose product with 0 is NaN)
PAD_STATE = -1e30
# the most frequent words' rows of the pair scorer's bank (vocabularies are ordered by frequency) are looked up, not
# computed, up to this size: 64 MiB, about 8,000 words for the 300-d network; where words have fewer dimensions than
# WORD_TABLE_DIM, computing a row costs less than reading it, and every row is computed
WORD_TABLE_BYTES = 64 * 2 ** 20
WORD_TABLE_DIM = 100


def uses_word_tables(cfg: NetworkConfig) -> bool:
    """Whether the pair scorer sums a sentence's bank rows from word and tag tables (else every row is a product):
    word vectors of :data:`WORD_TABLE_DIM` or more, and no sinusoidal encoding (it is added to the input)."""
    return cfg.word_dim >= WORD_TABLE_DIM and cfg.position_encoding != "sinusoidal"


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
        self.reads_input = _reads_input(attention)
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
            # output projection → norm1 → inner feed-forward: one (F, D) map of the attention's heads
            inner, out = layer.ffn.inner, attention.output
            self.register_buffer("fold_weight", (inner.weight * s1) @ out.weight, persistent=False)  # (F, D)
            self.register_buffer("fold_bias", inner.weight @ (out.bias * s1 + c1) + inner.bias, persistent=False)
            embed = net.embed
            # the object rows (17, D): a network without the object-position input reads zero rows
            table = (embed.object_position.weight.clone() if embed.object_position is not None
                     else torch.zeros(2 * embed.max_bin + 1, d, device=embed.words.weight.device))
            self.register_buffer("object_table", table, persistent=False)
            object_features = None
            if pa is not None:  # the position features through their projection: one (17, A) table per argument
                p = net.positions.weight.shape[1]
                object_features = net.positions.weight @ pa.features.weight[:, p:].T
                self.register_buffer("subject_features", net.positions.weight @ pa.features.weight[:, :p].T
                                     + pa.features.bias, persistent=False)
                self.register_buffer("object_features", object_features, persistent=False)
            if self.reads_input:
                self.register_buffer("bank_weight", torch.cat(weights), persistent=False)  # (N, D)
                self.register_buffer("bank_bias", torch.cat(biases), persistent=False)  # (N,)
                self.register_buffer("input_scale", s2.clone(), persistent=False)  # x·s2 joins the bank's columns
                self.register_buffer("object_bank", torch.cat([table @ self.bank_weight.T, table * s2], dim=-1),
                                     persistent=False)  # (17, N + D): q, k, v, W^r..., [W_h], x·s2
            else:
                self._build_tables(weights, biases, s2, outer_bias, object_features)
            # outer feed-forward → norm2 (states, less x·s2), and through it the position-aware hidden projection
            post = [outer_weight] + ([pa.hidden.weight @ outer_weight] if pa is not None else [])
            self.register_buffer("post_weight", torch.cat(post), persistent=False)  # (D [+ A], F)
            self.register_buffer("outer_bias", outer_bias, persistent=False)
            if pa is not None:  # vᵀ tanh(u) + c = (2v)ᵀ σ(2u) + c − Σv, σ(2u) at under half the cost of tanh on a CPU
                self.register_buffer("score_weight", 2 * pa.score.weight, persistent=False)  # (1, A)
                self.register_buffer("score_bias", pa.score.bias - pa.score.weight.sum(), persistent=False)
        activation = layer.ffn.activation
        # RReLU at inference is a leaky ReLU with the mean of its slope range (torch.rrelu, training=False)
        self.negative_slope = ((activation.lower + activation.upper) / 2 if isinstance(activation, nn.RReLU)
                               else 0.0)

    def _build_tables(self, weights: list[torch.Tensor], biases: list[torch.Tensor], s2: torch.Tensor,
                      outer_bias: torch.Tensor, object_features: torch.Tensor | None) -> None:
        """The tables of :meth:`_attend_tables`: the row bank, whose columns are each row's q (scaled by 1/√Dh), k,
        each W^r x, then what a pair's row has of its own: the values, x·s2 and W_h·diag(s2) x (``self.columns``);
        what the 17 object rows (and the subject's position features) add to each; and, for word vectors of
        :data:`WORD_TABLE_DIM` or more, the bank's rows of the most frequent words (up to :data:`WORD_TABLE_BYTES`),
        of every POS and NER tag and of the biases, so that a sentence's rows are sums of table rows
        (:meth:`_sentence_rows`)."""
        net, attention, d = self.net, self.attention, self.net.embed.dim
        dh, heads, maps = attention.head_dim, attention.num_heads, 3 + len(self.relative)
        # each head's values already through its share of the folded map (F columns a head: the attention weights,
        # which sum to 1, then give the inner feed-forward's input, less its bias, with no (T, D) → F product per pair)
        shares = self.fold_weight.view(-1, heads, dh).transpose(0, 1)  # (H, F, Dh)
        values = ((shares @ weights[2].view(heads, dh, d)).reshape(-1, d), (shares @ biases[2].view(heads, dh, 1))
                  .reshape(-1))
        weight = torch.cat([weights[0] / math.sqrt(dh), weights[1], *weights[3:maps], values[0], torch.diag(s2),
                            *weights[maps:]])  # (N, D)
        bias = torch.cat([biases[0] / math.sqrt(dh), biases[1], *biases[3:maps], values[1], outer_bias,
                          *biases[maps:]])
        self.register_buffer("row_weight", weight, persistent=False)
        self.register_buffer("row_bias", bias, persistent=False)
        own, width = (maps - 1) * d, values[0].shape[0]  # where a pair's own columns start; the values' width
        self.columns = {"q": slice(0, d), "k": slice(d, 2 * d),
                        "r": [slice((2 + i) * d, (3 + i) * d) for i in range(len(self.relative))],
                        "logits": slice(0, own), "own": slice(own, None), "values": width,
                        "states": slice(own + width, own + width + d)}
        object_rows = self.object_table @ weight.T  # (17, N): the object rows' share of each column
        rows = object_rows.shape[0]
        self.register_buffer("object_heads", torch.stack([object_rows[:, c].reshape(rows, heads, dh).transpose(0, 1)
                                                          for c in (self.columns["q"], self.columns["k"],
                                                                    *self.columns["r"])]),
                             persistent=False)  # (2 + R, H, 17, Dh): q_o, k_o, W^r x_o
        # q_o·k_oᵀ per head (H, 17, 17)
        self.register_buffer("object_object", self.object_heads[0] @ self.object_heads[1].transpose(-1, -2),
                             persistent=False)
        # what an object row and a subject row add to a pair's own columns (the values, x·s2, W_h's): the object row's
        # share of the bank, and each argument's position features
        object_own = object_rows[:, self.columns["own"]].clone()
        subject_own = torch.zeros_like(object_own)
        if object_features is not None:
            object_own[:, width + d:] += object_features
            subject_own[:, width + d:] = self.subject_features
        self.register_buffer("argument_rows", torch.cat([object_own, subject_own]), persistent=False)
        # the rows of the bank that sentences sum (:func:`uses_word_tables`)
        self.word_rows = 0
        if not uses_word_tables(net.cfg):
            self.register_buffer("row_table", None, persistent=False)
            return
        embed, wd = net.embed, net.cfg.word_dim
        self.word_rows = min(embed.words.num_embeddings, WORD_TABLE_BYTES // (4 * weight.shape[0]))
        parts = [embed.words(torch.arange(self.word_rows, device=weight.device)) @ weight[:, :wd].T]
        start = wd
        for emb in (embed.pos, embed.ner):
            if emb is not None:
                parts.append(emb.weight @ weight[:, start:start + emb.embedding_dim].T)
                start += emb.embedding_dim
        self.register_buffer("row_table", torch.cat([*parts, torch.zeros_like(bias)[None], bias[None]]),
                             persistent=False)  # words, POS tags, NER tags, a zero row, the biases

    def _word_products(self, ids: torch.Tensor) -> torch.Tensor:
        """The bank's columns of the words ``ids`` (M,), their share of each, by a product → (M, N)."""
        return self.net.embed.words(ids) @ self.row_weight[:, :self.net.cfg.word_dim].T

    def _word_rows(self, ids: torch.Tensor) -> torch.Tensor:
        """The bank's columns of the words ``ids`` (M,): from the table or, for a word past it, a product → (M, N)."""
        k = self.word_rows
        if k == 0:
            return self._word_products(ids)
        out = self.row_table[ids.clamp(max=k - 1)]
        rare = (ids >= k).nonzero().squeeze(1)
        if rare.numel():
            out[rare] = self._word_products(ids[rare])
        return out

    def _sentence_rows(self, pairs: SentencePairs) -> torch.Tensor:
        """Every sentence row's bank columns (S·T, N), padding's states at :data:`PAD_STATE`: a sum of table rows
        (its word, POS tag, NER tag and the biases) and, for a word past the table, its product."""
        embed, d = self.net.embed, self.net.embed.dim
        s, n = pairs.words.shape
        if self.row_table is None:  # small word vectors, or the sinusoidal encoding (the input is more than the embeddings)
            parts = [embed.words(pairs.words)] + [emb(ids) for emb, ids in ((embed.pos, pairs.pos),
                                                                             (embed.ner, pairs.ner)) if emb is not None]
            x = torch.cat(parts, dim=-1)
            if self.net.cfg.position_encoding == "sinusoidal":
                x = x + sinusoidal_encoding(n, d, pairs.words.device)[None]
            rows = torch.addmm(self.row_bias, x.reshape(-1, d), self.row_weight.T)
        else:
            ids, k = pairs.words.reshape(-1), self.word_rows
            zero = self.row_table.shape[0] - 2
            columns, offset = [torch.where(ids < k, ids, zero)], k
            for emb, tags in ((embed.pos, pairs.pos), (embed.ner, pairs.ner)):
                if emb is not None:
                    columns.append(tags.reshape(-1) + offset)
                    offset += emb.num_embeddings
            columns.append(torch.full_like(ids, zero + 1))  # the biases
            rows = F.embedding_bag(torch.stack(columns, dim=1), self.row_table, mode="sum")
            rare = (ids >= k).nonzero().squeeze(1)
            if rare.numel():
                rows.index_add_(0, rare, self._word_products(ids[rare]))
        rows[:, self.columns["states"]].masked_fill_(pairs.pad_mask.reshape(-1, 1), PAD_STATE)
        return rows

    def forward(self, pairs: SentencePairs) -> torch.Tensor:
        net, embed, att = self.net, self.net.embed, self.attention
        sent = pairs.sentence  # (P,)
        pad = pairs.pad_mask[sent]  # (P, T)
        p, n = pairs.pair_words.shape
        d, h, dh, g = embed.dim, att.num_heads, att.head_dim, self.num_heads_maps
        bins = embed.bins(pairs.obj_positions)  # (P, T)
        subject_bins = embed.bins(pairs.subj_positions)
        if not self.reads_input:
            rows = (pairs.pair_words != pairs.words[sent]).nonzero(as_tuple=True)  # the rows entity masking rewrote
            if rows[0].numel():
                masked = (*rows, pairs.pair_words[rows])
                inner, tail = self._attend_tables(pairs, sent, bins, subject_bins, masked)
                return self._after_attention(inner, tail, pad)
            # no rewritten rows: the subject enters only the position-aware layer, so the pairs that share a sentence
            # and an object (its binned positions) share everything before it, computed once for them
            group_sent, group_bins, of_pair = _objects(sent, bins)
            group_pad = pairs.pad_mask[group_sent]
            inner, tail = self._attend_tables(pairs, group_sent, group_bins, None)
            return self._after_attention(inner, tail, group_pad, (of_pair, subject_bins, pad))
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
        index = torch.stack([own, bins.reshape(-1) + bank.shape[0] * n], dim=1)  # (P·T, 2)
        rows_all = F.embedding_bag(index, torch.cat([bank.reshape(-1, width), self.object_bank]), mode="sum")
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
        x = x_sent.index_select(0, sent) + self.object_table[bins]  # (P, T, D): the block input the hooks read
        if delta is not None:
            x = x.index_put(rows, F.pad(delta, (0, d - delta.shape[1])), accumulate=True)
        attended = self._attend(x, heads, pad)  # (P, T, D)
        # the columns of _after_attention: x·s2 + bias (PAD_STATE at padding), then W_h's part
        tail = (rest[..., -d:] + self.outer_bias).masked_fill_(pad[..., None], PAD_STATE)
        if rest.shape[-1] > d:
            tail = torch.cat([tail, rest[..., :-d] + self.object_features[bins] + self.subject_features[subject_bins]],
                             dim=-1)
        inner = torch.addmm(self.fold_bias, attended.reshape(-1, d), self.fold_weight.T).view(p, n, -1)
        return self._after_attention(inner, tail, pad)

    def _after_attention(self, inner: torch.Tensor, tail: torch.Tensor, pad: torch.Tensor,
                         shared: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """The inner feed-forward's input (P, T, F: the attention's heads through the folded map) through its
        activation and the rest of the feed-forward, the max-pooled query, the position-aware attention and the
        classifier; ``tail`` (P, T, D [+ A]): what each row adds to the outer feed-forward's output (x·s2 plus the
        outer bias; W_h x·s2 with its biases and both arguments' position features) → logits (P, L).

        ``shared``: the rows are G groups of pairs that differ only in their subject's position features (no
        rewritten rows), ``tail`` without those: each pair's group (P,), its subject's binned positions (P, T),
        which join each pair's position-aware layer, and its padding (P, T) → logits (P, L)."""
        net, d = self.net, self.net.embed.dim
        p, n, _ = inner.shape
        # in place, here and below: ``inner`` and ``tail`` are this batch's own buffers (and addmm with the tail as a
        # separate input would copy it into a new result)
        act = F.leaky_relu_(inner.view(p * n, -1), self.negative_slope)  # (P·T, F)
        total = tail.reshape(p * n, -1).addmm_(act, self.post_weight.T).view(p, n, -1)  # (P, T, D [+ A])
        # (P, T, D): PAD_STATE at padding, from the tail, so the max-pool needs no mask; the position-aware
        # softmax gives padding a weight of exactly 0
        states = total[..., :d]
        query = states.amax(dim=1)  # (P, D)
        if net.position_aware is None:
            logits = net.classifier(query)
            return logits if shared is None else logits.index_select(0, shared[0])
        pa = net.position_aware
        u = total[..., d:].add_(pa.query(query)[:, None, :])  # (P, T, A): Zhang et al.'s u_i
        if shared is not None:
            of_pair, subject_bins, pad = shared
            u = u.index_select(0, of_pair).add_(self.subject_features[subject_bins])
            states = states.index_select(0, of_pair)
        # vᵀ tanh(u) from σ(2u) = 1 / (1 + exp(-2u)), each step a pass that gives every element the same result
        # wherever it lies in the tensor (torch's own sigmoid rounds the last elements of a contiguous tensor another
        # way, so a pair's scores would depend on its batch)
        scores = F.linear(u.mul_(-2).exp_().add_(1).reciprocal_(), self.score_weight, self.score_bias).squeeze(-1)
        scores = scores.masked_fill(pad, float("-inf"))  # (P, T)
        summary = torch.bmm(torch.softmax(scores, dim=-1)[:, None, :], states).squeeze(1)  # (P, D)
        return net.classifier(summary)  # (P, L)

    def _attend_tables(self, pairs: SentencePairs, sent: torch.Tensor, bins: torch.Tensor,
                       subject_bins: torch.Tensor | None,
                       masked: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor]:
        """The paper's attention for pairs whose rows are their sentence's plus an object-position row, without a
        pair's own q, k or W^r x: with q = q_s + q_o[b] and k = k_s + k_o[b] (s: the sentence, o: the 17-row table,
        b: the row's bin), q·kᵀ = q_s·k_sᵀ + q_s·k_o[b_u]ᵀ + q_o[b_t]·k_sᵀ + q_o[b_t]·k_o[b_u]ᵀ and W^r x·m = the
        sentence's term + a (17, 2T-1) table's, so a pair's logits are its sentence's (S, H, T, T) plus rows and
        columns gathered from small tables, and only v and the rows after the attention are the pair's own.
        ``sent`` (P,): each pair's sentence; ``bins``/``subject_bins`` (P, T): the binned positions (``subject_bins``
        None: the subject's position features are left out of the tail). ``masked``: the (pair, token) rows entity
        masking rewrote and the word each now holds (M,); a rewritten row
        adds Δq = δ·W_q to its q (δ: its word embedding's change; and Δk, Δr, Δv), so its pair's logits gain Δq·kᵀ
        along the row,
        q·Δkᵀ down the column and Δq·Δkᵀ where two rewritten rows meet (:meth:`_masked_terms`).
        → the inner feed-forward's input (P, T, F) and each row's tail for :meth:`_after_attention`
        (P, T, D [+ A])."""
        att, cols = self.attention, self.columns
        s, n = pairs.words.shape
        h, dh, k = att.num_heads, att.head_dim, self.object_table.shape[0]
        p = sent.shape[0]
        maps = self._sentence_rows(pairs)  # (S·T, N): q, k, W^r..., then the values, x·s2, [W_h]
        q_s, k_s, *r_s = (maps[:, c].reshape(s, n, h, dh).transpose(1, 2)
                          for c in (cols["q"], cols["k"], *cols["r"]))  # (S, H, T, Dh)
        q_o, k_o, *r_o = self.object_heads.unbind(0)  # (H, 17, Dh); the bias is the sentence's
        steps = torch.arange(n, device=maps.device)
        distances = steps[None, :] - steps[:, None] + n - 1  # (T, T): the column of distance u - t
        sentence = q_s @ k_s.transpose(-1, -2)  # (S, H, T, T)
        object_terms = self.object_object[:, :, :, None].expand(-1, -1, -1, 2 * n - 1)  # (H, 17, 17, 2T-1)
        for bias, r_sent, r_obj in zip(self.relative, r_s, r_o, strict=True):
            m = bias.m[:, clipped_distances(n, bias.max_distance, maps.device)] * (1.0 / math.sqrt(bias.head_dim))
            sentence = sentence + (r_sent @ m.transpose(-1, -2)).gather(-1, distances.expand(s, h, n, n))
            object_terms = object_terms + (r_obj @ m.transpose(-1, -2))[:, :, None, :]  # (H, 17, 1, 2T-1)
        # padding's keys at -inf once per sentence: every pair's logits start from their sentence's, and what is added
        # to them is finite
        sentence = sentence.masked_fill_(pairs.pad_mask[:, None, None, :], float("-inf"))
        sentence_object = q_s @ k_o.transpose(-1, -2)[None]  # (S, H, T, 17): q_s·k_o
        object_sentence = q_o[None] @ k_s.transpose(-1, -2)  # (S, H, 17, T): q_o·k_s
        # each pair's index into the (17, 17, 2T-1) table of a head: (b_t, b_u, u - t)
        # the logits before any rewritten row's terms depend on the sentence and the object's bins alone: under
        # entity masking they are assembled once for the pairs that share both where that at least halves them
        # (each pair then copies its group's, one pass more; the caller groups unmasked pairs itself)
        base_sent, base_bins, of_pair = sent, bins, None
        if masked is not None:
            objects = _objects(sent, bins)
            if 2 * len(objects[0]) <= len(sent):
                base_sent, base_bins, of_pair = objects
        g = base_sent.shape[0]
        table_index = ((base_bins[:, :, None] * k + base_bins[:, None, :]) * (2 * n - 1) + distances[None]).view(g, -1)
        columns = base_bins[:, None, :].expand(g, n, n)  # b_u
        rows_of = base_bins[:, :, None].expand(g, n, n)  # b_t
        # the columns each pair's row has of its own, in one pass: its sentence row's plus its object's and its
        # subject's rows (embedding_bag sums them): the values (each head's through its share of the folded map), then
        # what the row adds after the attention (x·s2, W_h's columns and both position features)
        own = (sent[:, None] * n + steps).reshape(-1)
        summed = [own, bins.reshape(-1) + s * n]
        if subject_bins is not None:
            summed.append(subject_bins.reshape(-1) + (s * n + k))
        index = torch.stack(summed, dim=1)
        # the values and the tail in buffers of their own: the feed-forward's product adds into the tail, and a
        # product runs slower into a slice of a wider buffer
        start, width = cols["own"].start, cols["values"]
        values, tail = (F.embedding_bag(index, torch.cat([maps[:, start + a:start + b], self.argument_rows[:, a:b]]),
                                        mode="sum").view(p, n, -1)
                        for a, b in ((0, width), (width, maps.shape[1] - start)))  # (P, T, H·F), (P, T, D [+ A])
        terms = None
        if masked is not None:
            pm, tm, written = masked
            # each distinct rewritten row (a sentence's token and the mask word over it) once: δ·W, the mask word's
            # rows less the replaced word's
            words = self.net.embed.words.num_embeddings
            distinct, which = torch.unique((sent[pm] * n + tm) * words + written, return_inverse=True)
            first = torch.empty_like(distinct).scatter_(0, which, torch.arange(len(which), device=which.device))
            moved = self._word_rows(distinct % words) - self._word_rows(pairs.words.view(-1)[distinct // words])
            own_moved = moved[:, cols["own"]].index_select(0, which)
            values.index_put_((pm, tm), own_moved[:, :width], accumulate=True)
            tail.index_put_((pm, tm), own_moved[:, width:], accumulate=True)
            terms = self._masked_terms(pm, tm, which, moved[:, cols["logits"]], first, sent, bins, q_s, k_s, q_o, k_o)
        f = self.fold_bias.shape[0]
        inner = self.fold_bias.expand(p, n, f)  # the heads' shares add up to the inner feed-forward's input
        for i in range(h):
            logits = sentence[:, i].index_select(0, base_sent)  # (G, T, T)
            logits += sentence_object[:, i].index_select(0, base_sent).gather(2, columns)
            logits += object_sentence[:, i].index_select(0, base_sent).gather(1, rows_of)
            logits += object_terms[i].reshape(-1).take(table_index).view(g, n, n)
            if of_pair is not None and terms is not None:  # into this head's terms, the pairs' own (P, T, T) buffer
                logits = terms[i].add_(logits.index_select(0, of_pair))
            elif terms is not None:
                logits += terms[i]
            weights = torch.softmax(logits, dim=-1)
            share = values[..., i * f:(i + 1) * f]
            inner = torch.baddbmm(inner, weights, share) if i == 0 else inner.baddbmm_(weights, share)  # (P, T, F)
        return inner, tail

    def _masked_terms(self, pm: torch.Tensor, tm: torch.Tensor, which: torch.Tensor, moved: torch.Tensor,
                      first: torch.Tensor, sent: torch.Tensor, bins: torch.Tensor, q_s: torch.Tensor,
                      k_s: torch.Tensor, q_o: torch.Tensor, k_o: torch.Tensor) -> torch.Tensor:
        """What the M rewritten rows (pair ``pm``, token ``tm``) add to their pairs' logits, as one (H, P, T, T)
        tensor: along each rewritten row Δq·k_baseᵀ + Δr·m (k_base: the pair's k before the rewrite), down each
        rewritten column q_base·Δkᵀ, and Δq·Δkᵀ where a pair's rewritten rows meet. A sentence's token rewritten
        with the same mask word is the same row in all its pairs: ``which`` (M,) names it among the U distinct ones,
        ``moved`` (U, (2 + R)·D) holds its δ through W_q, W_k and each W^r, ``first`` (U,) one of its rewritten rows;
        its terms with the sentence's own rows are computed once."""
        s, h, n, dh = q_s.shape
        p, u = sent.shape[0], moved.shape[0]
        dq, dk, *dr = (x.reshape(u, h, dh).transpose(0, 1) for x in moved.split(h * dh, dim=-1))  # (H, U, Dh)
        own_sentence, own_token = sent[pm[first]], tm[first]  # (U,)
        steps = torch.arange(n, device=pm.device)
        # against every sentence's rows in one product each, then each distinct row's own sentence: (H, U, T)
        pick = own_sentence[None, :, None, None].expand(h, u, 1, n)
        along = (dq @ k_s.transpose(0, 1).reshape(h, s * n, dh).transpose(1, 2)).view(h, u, s, n).gather(2, pick)
        down = (dk @ q_s.transpose(0, 1).reshape(h, s * n, dh).transpose(1, 2)).view(h, u, s, n).gather(2, pick)
        along, down = along.squeeze(2), down.squeeze(2)
        at = (steps[None, :] - own_token[:, None] + n - 1)[None].expand(h, u, n)  # distance u - t of each column
        for bias, r in zip(self.relative, dr, strict=True):
            table = bias.m[:, clipped_distances(n, bias.max_distance, pm.device)] * (1.0 / math.sqrt(bias.head_dim))
            along = along + (r @ table.transpose(1, 2)).gather(2, at)  # (H, U, 2T-1) → (H, U, T)
        # each rewritten row: its distinct row's terms, plus the object rows' of its pair (Δq·k_o[b_u], q_o[b_t]·Δk)
        b = bins[pm][None].expand(h, -1, -1)  # (H, M, T)
        along = along[:, which] + (dq @ k_o.transpose(1, 2))[:, which].gather(2, b)  # (H, M, T)
        down = down[:, which] + (dk @ q_o.transpose(1, 2))[:, which].gather(2, b)
        terms = torch.zeros(h, p, n, n, dtype=moved.dtype, device=moved.device)
        by_row = terms.permute(1, 2, 3, 0)  # (P, T, T, H), a view
        by_row.index_put_((pm, tm), along.permute(1, 2, 0), accumulate=True)
        by_row.transpose(1, 2).index_put_((pm, tm), down.permute(1, 2, 0), accumulate=True)
        # the pairs' own rewritten rows against each other: slots within each pair (empty ones: distinct row U, whose
        # terms are 0, at token 0)
        meet = F.pad(dq @ dk.transpose(1, 2), (0, 1, 0, 1))  # (H, U + 1, U + 1)
        slot, per_pair = _slots(pm, p)
        rows = torch.full((p, per_pair), u, dtype=torch.long, device=pm.device)
        rows[pm, slot] = which
        positions = torch.zeros(p, per_pair, dtype=torch.long, device=pm.device)
        positions[pm, slot] = tm
        pairs = torch.arange(p, device=pm.device)[:, None, None]
        values = meet[:, rows[:, :, None], rows[:, None, :]]  # (H, P, K, K)
        by_row.index_put_((pairs, positions[:, :, None], positions[:, None, :]), values.permute(1, 2, 3, 0),
                          accumulate=True)
        return terms

    def _attend(self, x: torch.Tensor, heads: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
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


def _objects(sent: torch.Tensor, bins: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The distinct (sentence, object) of P pairs, told apart by their sentence ``sent`` (P,) and the object's binned
    positions ``bins`` (P, T): each one's sentence (G,) and bins (G, T), and each pair's among them (P,)."""
    groups, of_pair = torch.unique(torch.cat([sent[:, None], bins], dim=1), dim=0, return_inverse=True)
    return groups[:, 0], groups[:, 1:], of_pair


def _slots(groups: torch.Tensor, count: int) -> tuple[torch.Tensor, int]:
    """Each item's rank within its group (``groups`` (M,) of ids below ``count``) and the largest group's size."""
    sizes = torch.bincount(groups, minlength=count)
    ordered, order = groups.sort(stable=True)
    slot = torch.empty_like(groups)
    slot[order] = torch.arange(groups.shape[0], device=groups.device) - (torch.cumsum(sizes, 0) - sizes)[ordered]
    return slot, int(sizes.max()) if groups.numel() else 0


def _reads_input(attention: MultiHeadSelfAttention) -> bool:
    """Whether a hook of ``attention`` reads the block input x of every pair: a bias other than the relative scores
    with their own query, a temperature, a value hook or a weight transform."""
    return any(not (isinstance(_inner(b), RelativePositionScores) and _inner(b).r is not None)
               for b in attention.biases) or any(
        h is not None for h in (attention.temperature, attention.values, attention.transform))


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


def pair_flops(net: RelationNetwork, length: int, factored: bool = True, masked_rows: float = 0.0,
               computed_rows: float = 0.0) -> tuple[float, float, float]:
    """FLOPs (2 per multiply-add) of the matrix products of scoring a sentence of ``length`` tokens: (once per
    sentence, once per distinct object of its pairs, once per pair). ``factored``: :class:`PairScorer`
    (``masked_rows``: the rows entity masking changes, per pair; the attention logits from tables unless a hook reads
    the block input, then each pair's own q, k and W^r x), else the plain forward pass, which does everything per
    pair. The paper's products are counted (the projections, q·kᵀ, the relative scores, weights·v, the feed-forward,
    the position-aware attention, the classifier); a variant's own small products, embedding look-ups, table rows and
    element-wise work are not. On the table path with word vectors of :data:`WORD_TABLE_DIM` or more a sentence's
    projections are sums of word and tag table rows, so only the products of its words past the word table count
    (``computed_rows``: their share of its tokens); with smaller word vectors (or the sinusoidal encoding) every row
    is a product. Without rewritten rows the table path runs everything up to the position-aware layer once per
    object (pairs that share one differ only in the subject's position features)."""
    cfg, t = net.cfg, length
    d, f = net.embed.dim, cfg.ffn_dim
    layer = net.self_attention.layers[0]
    relative = [b for b in layer.attention.biases if isinstance(_inner(b), RelativePositionScores)]
    separate = sum(_inner(b).r is not None for b in relative)
    heads = (3 + separate) * d  # the stacked q, k, v (and W^r) projections
    attention = 2 * t * t * d * 2 + len(relative) * 2 * t * (2 * t - 1) * d  # q·kᵀ and weights·v; relative scores
    classifier = 2 * d * net.classifier.out_features
    a = cfg.attention_dim if net.position_aware is not None else 0
    query = 2 * d * a  # the position-aware query's projection
    pooled = 2 * t * a + 2 * t * d + classifier if a else classifier  # the scores, the summary and the classifier
    if not factored:
        features = 2 * t * 2 * cfg.position_dim * a
        return 0.0, 0.0, 2.0 * t * d * heads + attention + 2 * t * d * d + 2 * 2 * t * d * f + 2 * t * d * a \
            + features + query + pooled
    bank = heads + a  # the heads' projections and W_h·diag(s2) of the input
    if not _reads_input(layer.attention):
        # the attention logits from tables: q·kᵀ, W^r x·m and the object terms once per sentence; per pair (per
        # object without rewritten rows) the weights times the values already through the folded map, and the outer
        # feed-forward; a rewritten row's row and column of the logits
        rows, h = 2 * net.embed.max_bin + 1, layer.attention.num_heads  # the object rows, the heads
        width = (2 + separate) * d + h * f + d + a  # the bank's columns
        words = computed_rows * 2 * t * cfg.word_dim * width if uses_word_tables(cfg) else 2.0 * t * d * width
        sentence = 2 * t * t * d + 2 * 2 * t * rows * d + len(relative) * 2 * t * (2 * t - 1) * d
        attended = 2 * t * t * h * f + 2 * t * f * (d + a) + query
        if masked_rows == 0:
            return words + sentence, attended, pooled
        rewritten = masked_rows * (2 * 2 * t * d + len(relative) * 2 * (2 * t - 1) * d)  # its row and column
        return words + sentence, 0.0, attended + pooled + rewritten
    feed_forward = 2 * t * d * f + 2 * t * f * (d + a)
    per_pair = masked_rows * 2 * cfg.word_dim * bank + attention + feed_forward + query + pooled
    return 2.0 * t * d * bank, 0.0, per_pair

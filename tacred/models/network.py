"""The whole network, top to bottom: embeddings → encoder → position-aware attention → classifier.

Bilan & Roth (2018): one self-attention layer with relative-position scores (:mod:`tacred.models.encoder`) under
Zhang et al.'s (2017) position-aware attention (:mod:`tacred.models.position_aware`). The LSTM baselines swap the
encoder (:mod:`tacred.models.lstm`); every switch is a :class:`~tacred.models.config.NetworkConfig` field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from tacred.constants import PAD_ID, UNK_ID
from tacred.data.batching import Batch
from tacred.models.config import NetworkConfig
from tacred.models.dropout import Dropout
from tacred.models.encoder import Encoded, SelfAttentionEncoder
from tacred.models.lstm import LstmEncoder
from tacred.models.position_aware import PositionAwareAttention


@dataclass
class NetworkOutput:
    logits: torch.Tensor  # (B, L)
    self_attention: list[torch.Tensor]  # per layer (B, H, T, T); empty for LSTM-only encoders
    position_attention: torch.Tensor | None  # (B, T)


def max_bin(max_distance: int) -> int:
    """Largest log bin of a relative position up to ``max_distance`` (bins beyond it share its embedding)."""
    return max_distance.bit_length()


class InputEmbeddings(nn.Module):
    """Word (+ word dropout) ⊕ POS ⊕ NER embeddings, plus a learned embedding of the object position."""

    def __init__(self, cfg: NetworkConfig, num_words: int, num_pos: int, num_ner: int,
                 word_vectors: torch.Tensor | None) -> None:
        super().__init__()
        self.word_dropout = cfg.word_dropout
        self.words = nn.Embedding(num_words, cfg.word_dim, padding_idx=PAD_ID)
        if word_vectors is not None:
            if tuple(word_vectors.shape) != (num_words, cfg.word_dim):
                raise ValueError(f"word vectors have shape {tuple(word_vectors.shape)}, expected {(num_words, cfg.word_dim)}")
            self.words.weight.data.copy_(word_vectors)
        else:
            nn.init.uniform_(self.words.weight, -1.0, 1.0)
            self.words.weight.data[PAD_ID].zero_()
        self.pos = nn.Embedding(num_pos, cfg.pos_dim, padding_idx=PAD_ID) if cfg.pos_dim else None
        self.ner = nn.Embedding(num_ner, cfg.ner_dim, padding_idx=PAD_ID) if cfg.ner_dim else None
        self.dim = cfg.word_dim + cfg.pos_dim + cfg.ner_dim
        self.max_bin = max_bin(cfg.max_relative_distance)
        self.object_position = nn.Embedding(2 * self.max_bin + 1, self.dim) if cfg.object_position_input else None
        for emb in (self.pos, self.ner):
            if emb is not None:
                nn.init.uniform_(emb.weight, -1.0, 1.0)
                emb.weight.data[PAD_ID].zero_()
        if self.object_position is not None:
            nn.init.normal_(self.object_position.weight, std=0.02)

    def bins(self, positions: torch.Tensor) -> torch.Tensor:
        return positions.clamp(-self.max_bin, self.max_bin) + self.max_bin

    def forward(self, batch: Batch) -> torch.Tensor:
        words = batch.words
        if self.training and self.word_dropout > 0:
            drop = (torch.rand(words.shape, device=words.device) < self.word_dropout) & ~batch.pad_mask
            words = words.masked_fill(drop, UNK_ID)
        parts = [self.words(words)]
        if self.pos is not None:
            parts.append(self.pos(batch.pos))
        if self.ner is not None:
            parts.append(self.ner(batch.ner))
        x = torch.cat(parts, dim=-1)  # (B, T, D)
        if self.object_position is not None:
            x = x + self.object_position(self.bins(batch.obj_positions))
        return x


def sinusoidal_encoding(length: int, dim: int, device: torch.device) -> torch.Tensor:
    """(T, D) absolute sinusoidal position encodings (Vaswani et al., 2017), for the Table 3 ablation."""
    pos = torch.arange(length, device=device, dtype=torch.float32)[:, None]
    rates = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim, device=device)
    table[:, 0::2] = torch.sin(pos * rates)
    table[:, 1::2] = torch.cos(pos * rates[: dim // 2])
    return table


class RelationNetwork(nn.Module):
    """Bilan & Roth (2018): one relative-position self-attention layer under Zhang et al.'s position-aware attention.

    ``encoder``: ``self_attention`` (the paper), ``lstm`` (Zhang's baselines) or ``lstm_self_attention`` (Table 3:
    the LSTM's states under the self-attention's query); the modules keep the names ``self_attention`` and ``lstm``.
    """

    def __init__(self, cfg: NetworkConfig, num_words: int, num_pos: int, num_ner: int, num_labels: int,
                 word_vectors: torch.Tensor | None = None) -> None:
        """Builds the parts in **the draw order**, the one place that states it.

        Every part draws its initial weights from torch's global generator when it is built, so a seed gives the
        same network (and a seeded run the numbers recorded in ``tests/test_recorded_numbers.py`` and
        ``docs/results/``) only while the parts are built in this order, and each keeps its draws:

        1. the input embeddings: words, POS, NER, object position (each draws torch's default init, which the
           uniform / normal starts below it then overwrite: the overwritten draws count);
        2. the self-attention encoder (:class:`~tacred.models.encoder.SelfAttentionEncoder`): every layer is built
           before any is initialised; a layer builds its attention (the variants' hooks in registry order,
           ``@register(order=...)``, then the core's q, k, v and output projections), its feed-forward and its norms.
           Then one pass initialises every layer (Kaiming or Xavier projections, then each hook's
           ``reset_parameters``);
        3. the LSTM; 4. the position-aware attention; 5. the position table; 6. the classifier.

        A change that adds a draw, drops one or moves one (a part built earlier, a default init skipped, a variant
        with a lower ``order``, an ``init`` inside a layer's constructor) changes every seeded run after it. A part
        that is switched off draws nothing. The pretrained transformer (:mod:`tacred.models.transformer`) draws only
        its classification head.
        """
        super().__init__()
        self.cfg = cfg
        self.embed = InputEmbeddings(cfg, num_words, num_pos, num_ner, word_vectors)
        d = self.embed.dim
        self.input_dropout = Dropout(cfg.dropout)
        # the encoder(s), self-attention first (the draw order above)
        self.self_attention = SelfAttentionEncoder(d, cfg) if cfg.encoder != "lstm" else None
        # next to the self-attention the LSTM gives only the states (its max-pool summary is computed, unused)
        self.lstm = (LstmEncoder(d, cfg, summary=None if cfg.encoder == "lstm" else "max_pool")
                     if cfg.encoder != "self_attention" else None)
        state_dim = (self.lstm if self.lstm is not None else self.self_attention).state_dim
        query_dim = (self.self_attention if self.self_attention is not None else self.lstm).query_dim
        # position-aware attention over the states, with the binned subject/object positions (one table for both)
        self.position_aware = (
            PositionAwareAttention(state_dim, query_dim, 2 * cfg.position_dim, cfg.attention_dim)
            if cfg.position_aware else None
        )
        self.positions = nn.Embedding(2 * self.embed.max_bin + 1, cfg.position_dim) if cfg.position_aware else None
        if self.positions is not None:
            nn.init.uniform_(self.positions.weight, -1.0, 1.0)
        self.classifier = nn.Linear(state_dim if cfg.position_aware else query_dim, num_labels)
        nn.init.xavier_uniform_(self.classifier.weight)
        nn.init.zeros_(self.classifier.bias)

    def encode(self, x: torch.Tensor, pad_mask: torch.Tensor) -> Encoded:
        """x (B, T, D) → states (B, T, S) and query (B, Q) from the configured encoder."""
        if self.lstm is None:
            return self.self_attention(x, pad_mask)
        if self.self_attention is None:
            return self.lstm(x, pad_mask)
        attention = self.self_attention(x, pad_mask)
        lstm = self.lstm(x, pad_mask)
        return Encoded(lstm.states, attention.query, attention.self_attention)

    def forward(self, batch: Batch) -> NetworkOutput:
        return self.classify(self.encode_batch(batch), batch)

    def encode_batch(self, batch: Batch) -> Encoded:
        """The encoder's states and query for a batch: what depends on the words, tags and the object's position
        only (not on the subject's), so rows equal in those encode alike (:func:`tacred.inference.trained`'s
        shared encoding uses this)."""
        x = self.embed(batch)  # (B, T, D)
        if self.cfg.position_encoding == "sinusoidal":  # Table 3: absolute encodings instead of relative scores
            x = x + sinusoidal_encoding(x.shape[1], x.shape[2], x.device)[None]
        return self.encode(self.input_dropout(x), batch.pad_mask)  # states (B, T, S), query (B, Q)

    def classify(self, encoded: Encoded, batch: Batch) -> NetworkOutput:
        """Logits from the encoder's output: the position-aware attention with both arguments' positions."""
        mask = batch.pad_mask  # (B, T), True at padding
        if self.position_aware is None:  # Table 3 "without the PA layer": classify the sentence summary
            return NetworkOutput(self.classifier(encoded.query), encoded.self_attention, None)
        bins = self.embed.bins
        features = torch.cat([self.positions(bins(batch.subj_positions)),
                              self.positions(bins(batch.obj_positions))], dim=-1)  # (B, T, 2P)
        summary, weights = self.position_aware(encoded.states, encoded.query, features, mask)  # (B, S), (B, T)
        return NetworkOutput(self.classifier(summary), encoded.self_attention, weights)

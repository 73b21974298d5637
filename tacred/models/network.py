"""The whole network, top to bottom: embeddings → encoder → sentence summary → position-aware attention → logits."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from tacred.constants import PAD_ID, UNK_ID
from tacred.data.batching import Batch
from tacred.models.config import NetworkConfig
from tacred.models.dropout import Dropout
from tacred.models.encoder import SelfAttentionEncoder, sinusoidal_encoding
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


def masked_max(x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """Max over real tokens: (B, T, D) → (B, D)."""
    return x.masked_fill(pad_mask[:, :, None], float("-inf")).amax(dim=1)  # amax: no argmax indices to keep


class LstmEncoder(nn.Module):
    """Zhang et al.'s LSTM over the real tokens only (packed), returning states (B, T, H) and the last state (B, H)."""

    def __init__(self, input_dim: int, cfg: NetworkConfig) -> None:
        super().__init__()
        self.rnn = nn.LSTM(input_dim, cfg.lstm_hidden, cfg.lstm_layers, batch_first=True,
                           dropout=cfg.dropout if cfg.lstm_layers > 1 else 0.0)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lengths = (~pad_mask).sum(dim=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, (h_n, _) = self.rnn(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return states, h_n[-1]


class RelationNetwork(nn.Module):
    """Bilan & Roth (2018): one relative-position self-attention layer under Zhang et al.'s position-aware attention."""

    def __init__(self, cfg: NetworkConfig, num_words: int, num_pos: int, num_ner: int, num_labels: int,
                 word_vectors: torch.Tensor | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = InputEmbeddings(cfg, num_words, num_pos, num_ner, word_vectors)
        d = self.embed.dim
        self.input_dropout = Dropout(cfg.dropout)
        self.output_dropout = Dropout(cfg.dropout)
        uses_attention = cfg.encoder in ("self_attention", "lstm_self_attention")
        self.self_attention = SelfAttentionEncoder(d, cfg) if uses_attention else None
        self.lstm = LstmEncoder(d, cfg) if cfg.encoder in ("lstm", "lstm_self_attention") else None
        state_dim = cfg.lstm_hidden if self.lstm is not None else d
        query_dim = d if uses_attention else cfg.lstm_hidden
        self.position_aware = (
            PositionAwareAttention(state_dim, query_dim, 2 * cfg.position_dim, cfg.attention_dim)
            if cfg.position_aware else None
        )
        self.positions = nn.Embedding(2 * self.embed.max_bin + 1, cfg.position_dim) if cfg.position_aware else None
        if self.positions is not None:
            nn.init.uniform_(self.positions.weight, -1.0, 1.0)
        out_dim = state_dim if cfg.position_aware else query_dim
        self.classifier = nn.Linear(out_dim, num_labels)
        nn.init.xavier_uniform_(self.classifier.weight)
        nn.init.zeros_(self.classifier.bias)

    def forward(self, batch: Batch) -> NetworkOutput:
        mask = batch.pad_mask
        x = self.embed(batch)  # (B, T, D)
        if self.cfg.position_encoding == "sinusoidal":
            x = x + sinusoidal_encoding(x.shape[1], x.shape[2], x.device)[None]
        x = self.input_dropout(x)
        weights: list[torch.Tensor] = []
        if self.self_attention is not None:
            encoded, weights = self.self_attention(x, mask)  # (B, T, D)
            encoded = self.output_dropout(encoded)
            query = masked_max(encoded, mask)  # (B, D)
            states = encoded
        if self.lstm is not None:
            lstm_states, last = self.lstm(x, mask)  # (B, T, H), (B, H)
            states = self.output_dropout(lstm_states)
            if self.self_attention is None:
                query = masked_max(states, mask) if self.cfg.summary == "max_pool" else self.output_dropout(last)
        position_weights = None
        if self.position_aware is not None:
            bins = self.embed.bins
            features = torch.cat([self.positions(bins(batch.subj_positions)),
                                  self.positions(bins(batch.obj_positions))], dim=-1)  # (B, T, 2P)
            summary, position_weights = self.position_aware(states, query, features, mask)
        else:
            summary = query
        return NetworkOutput(self.classifier(summary), weights, position_weights)

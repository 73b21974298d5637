"""Zhang et al.'s (2017) LSTM encoder, for the LSTM and PA-LSTM baselines and Table 3's "LSTM with self-attention"."""

from __future__ import annotations

import torch
from torch import nn

from tacred.models.config import NetworkConfig
from tacred.models.dropout import Dropout
from tacred.models.encoder import Encoded, SentenceEncoder, masked_max


class LstmEncoder(SentenceEncoder):
    """A multi-layer LSTM over the real tokens only (packed). States (B, T, Hl) after dropout; the query is their
    max-pool (``summary: max_pool``) or the last layer's final state (``summary: last``)."""

    def __init__(self, input_dim: int, cfg: NetworkConfig, summary: str | None = None) -> None:
        super().__init__()
        self.state_dim = self.query_dim = cfg.lstm_hidden
        self.summary = summary or cfg.summary
        self.rnn = nn.LSTM(input_dim, cfg.lstm_hidden, cfg.lstm_layers, batch_first=True,
                           dropout=cfg.dropout if cfg.lstm_layers > 1 else 0.0)
        self.output_dropout = Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> Encoded:
        lengths = (~pad_mask).sum(dim=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, (h_n, _) = self.rnn(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])  # (B, T, Hl)
        states = self.output_dropout(states)
        if self.summary == "max_pool":
            return Encoded(states, masked_max(states, pad_mask))  # (B, Hl)
        return Encoded(states, self.output_dropout(h_n[-1]))  # (B, Hl): the last layer's final state

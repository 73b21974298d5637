"""Entities and relations from one encoder pass a sentence, after SpERT (Eberts & Ulges, 2020, "Span-based Joint
Entity and Relation Extraction with Transformer Pre-training"): every span up to ``max_width`` words is classified
as an entity type or none from [max-pool of its pieces; its first and last word; a width embedding; the sentence's
first token], and every ordered pair of entities as a relation (one sigmoid per type) from [both spans' max-pools;
the max-pool of the words between them; both widths; both entity types; which comes first], relations the types
rule out set to 0 (each CoNLL04 relation holds between one pair of types). Start and end words come from PURE (Zhong &
Chen, 2021), the argument types from PL-Marker's typed objects (Ye et al., 2022). A word-shape embedding, zero at the
start, is added to the input embeddings: the uncased encoders (MiniLM, MPNet) cannot see case otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from tacred.data.joint_batching import SHAPES, JointBatch
from tacred.models.joint_decoding import Found, SentenceFound, by_sentence, entity_pairs, span_entities


@dataclass
class JointEncoded:
    """What one encoder pass over a batch gives: each word's vector (the max over its pieces) and each sentence's
    first token."""

    words: torch.Tensor  # (B, W, H)
    cls: torch.Tensor  # (B, H)
    word_counts: torch.Tensor  # (B,)


def masked_max(chosen: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """The max over words ``[start, end)`` of each of P rows of word vectors, zeros for an empty range: chosen
    (P, W, H) (the word vectors of each pair's sentence, gathered once for every span of the pair), start/end (P,)
    → (P, H)."""
    positions = torch.arange(chosen.shape[1], device=chosen.device)  # (W,)
    inside = (positions[None, :] >= start[:, None]) & (positions[None, :] < end[:, None])  # (P, W)
    pooled = chosen.masked_fill(~inside[:, :, None], float("-inf")).max(dim=1).values  # (P, H)
    return torch.where(inside.any(dim=1, keepdim=True), pooled, torch.zeros_like(pooled))


class JointNetwork(nn.Module):
    """A Hugging Face encoder with the span and pair classifiers above.

    Args:
        encoder: the pretrained encoder (``transformers`` model).
        entity_types, relation_types: how many of each (the span classifier adds "none").
        max_width: the widest span classified, in words.
        width_dim, type_dim: sizes of the width and entity-type embeddings.
        hidden: hidden units of each classifier's feed-forward layer.
        dropout: before each classifier.
        shapes: add the word-shape embedding to the input embeddings.
    """

    def __init__(self, encoder: nn.Module, entity_types: int, relation_types: int, max_width: int,
                 width_dim: int = 25, type_dim: int = 25, hidden: int = 512, dropout: float = 0.1,
                 shapes: bool = True, allowed: torch.Tensor | None = None) -> None:
        super().__init__()
        # allowed[h, t, r]: relation r may hold from an entity of type h to one of type t (the signatures the
        # training data shows); under strict scoring any other is wrong whatever the model says, so found pairs
        # of other types get probability 0 for it
        if allowed is None:
            allowed = torch.ones(entity_types, entity_types, relation_types, dtype=torch.bool)
        self.register_buffer("allowed", allowed.bool())
        self.encoder = encoder
        if getattr(self.encoder, "pooler", None) is not None:
            self.encoder.pooler = None  # unused here (and, unused, it would stall DDP)
        h = self.encoder.config.hidden_size
        self.max_width = max_width
        self.shape = nn.Embedding(len(SHAPES), h, padding_idx=0) if shapes else None
        if self.shape is not None:
            nn.init.zeros_(self.shape.weight)  # the pretrained encoder as it was, until case proves useful
        self.width = nn.Embedding(max_width + 1, width_dim)
        self.types = nn.Embedding(entity_types, type_dim)
        self.order = nn.Embedding(3, type_dim)  # the head before the tail, after it, or the two overlapping
        self.dropout = nn.Dropout(dropout)
        # the entity classifier's first layer over [max-pool; first word; last word; width; first token], as a sum
        # of one projection a part: the word projections run once a word instead of once a span
        self.span_pool = nn.Linear(h, hidden)
        self.span_first = nn.Linear(h, hidden, bias=False)
        self.span_last = nn.Linear(h, hidden, bias=False)
        self.span_width = nn.Linear(width_dim, hidden, bias=False)
        self.span_cls = nn.Linear(h, hidden, bias=False)
        self.entity_out = nn.Linear(hidden, entity_types + 1)
        self.relation = nn.Sequential(nn.Linear(3 * h + 2 * width_dim + 3 * type_dim, hidden), nn.GELU(),
                                      nn.Dropout(dropout), nn.Linear(hidden, relation_types))
        self.act = nn.GELU()

    # -- the encoder pass -------------------------------------------------------------------------
    def encode(self, batch: JointBatch) -> JointEncoded:
        w = int(batch.word_counts.max())
        present = torch.arange(w, device=batch.word_counts.device)[None, :] < batch.word_counts[:, None]  # (B, W)
        return self.encode_pieces(batch.input_ids, batch.pad_mask, batch.piece_words, batch.shapes, present)

    def encode_pieces(self, input_ids: torch.Tensor, pad_mask: torch.Tensor, piece_words: torch.Tensor,
                      shapes: torch.Tensor, present: torch.Tensor) -> JointEncoded:
        """The encoder pass over padded word pieces: input_ids, pad_mask (True at padding), piece_words (each
        piece's word, -1 for special pieces and padding) and shapes (B, T), present (B, W) True at each sentence's
        words (W: words a batch row may hold, at least its longest sentence's; ONNX export traces this)."""
        embeddings = self.encoder.get_input_embeddings()(input_ids)  # (B, T, H)
        if self.shape is not None:
            embeddings = embeddings + self.shape(shapes)
        states = self.encoder(inputs_embeds=embeddings,
                              attention_mask=(~pad_mask).long()).last_hidden_state  # (B, T, H)
        b, _, h = states.shape
        owner = piece_words.clamp(min=0)  # (B, T); special pieces and padding are kept out below
        real = (piece_words >= 0)[:, :, None]
        source = states.masked_fill(~real, float("-inf"))
        words = torch.full((b, present.shape[1], h), float("-inf"), dtype=states.dtype, device=states.device)
        words = words.scatter_reduce(1, owner[:, :, None].expand(-1, -1, h), source, reduce="amax",
                                     include_self=True)  # (B, W, H)
        words = torch.where(present[:, :, None], words, torch.zeros_like(words))
        return JointEncoded(words, states[:, 0], present.sum(dim=1))

    # -- entities ---------------------------------------------------------------------------------
    def span_logits(self, enc: JointEncoded) -> torch.Tensor:
        """Logits of every span: (B, M, W, E + 1), cell [b, m, w] the span of width m + 1 starting at word w (cells
        past a sentence's end hold values to be ignored)."""
        words = self.dropout(enc.words)
        b, w, _ = words.shape
        first = self.span_first(words)  # (B, W, D)
        last = self.span_last(words)  # (B, W, D)
        cls = self.span_cls(self.dropout(enc.cls))[:, None, :]  # (B, 1, D)
        rows, pooled = [], words
        for m in range(self.max_width):
            if m:  # the max over words w..w+m, from the one over w..w+m-1
                pooled = torch.maximum(pooled[:, :-1], words[:, m:])  # (B, W - m, H)
            if pooled.shape[1] == 0:
                rows.append(torch.zeros((b, w, first.shape[-1]), dtype=first.dtype, device=first.device))
                continue
            width = self.span_width(self.width.weight[m + 1])  # (D,)
            z = self.span_pool(pooled) + first[:, :w - m] + last[:, m:] + width + cls  # (B, W - m, D)
            rows.append(nn.functional.pad(z, (0, 0, 0, m)))  # (B, W, D)
        hidden = self.act(torch.stack(rows, dim=1))  # (B, M, W, D)
        return self.entity_out(self.dropout(hidden))  # (B, M, W, E + 1)

    # -- relations --------------------------------------------------------------------------------
    def relation_logits(self, enc: JointEncoded, pairs: torch.Tensor, pair_types: torch.Tensor) -> torch.Tensor:
        """Logits of ordered entity pairs: pairs (P, 5) as (sentence, head start, head end, tail start, tail end)
        in words (ends exclusive), pair_types (P, 2) → (P, R)."""
        if pairs.shape[0] == 0:
            return enc.words.new_zeros((0, self.relation[-1].out_features))
        rows, hs, he, ts, te = pairs.unbind(dim=1)
        chosen = enc.words[rows]  # (P, W, H): each pair's sentence, once for its three pools
        head = masked_max(chosen, hs, he)  # (P, H)
        tail = masked_max(chosen, ts, te)  # (P, H)
        between = masked_max(chosen, torch.minimum(he, te), torch.maximum(hs, ts))  # (P, H)
        widths = self.width(torch.stack([he - hs, te - ts], dim=1).clamp(max=self.max_width))  # (P, 2, Dw)
        types = self.types(pair_types)  # (P, 2, Dt)
        # which comes first tells the direction of a relation between two entities of one type (Kill, Located_In)
        order = self.order(torch.where(he <= ts, 0, torch.where(te <= hs, 1, 2)))  # (P, Dt)
        x = torch.cat([head, tail, between, widths.flatten(1), types.flatten(1), order], dim=-1)  # (P, 3H+2Dw+3Dt)
        return self.relation(self.dropout(x))  # (P, R)

    def forward(self, batch: JointBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Training's pass: span logits (B, M, W, E + 1) and the relation logits of the gold pairs (P, R)."""
        enc = self.encode(batch)
        return self.span_logits(enc), self.relation_logits(enc, batch.pairs, batch.pair_types)


def build_encoder(pretrained: str | None, transformer_config: dict[str, Any] | None) -> tuple[nn.Module, dict]:
    """The encoder: built from a recorded configuration (weights then come from a checkpoint), else loaded from
    ``pretrained``; returns it with the configuration a checkpoint records."""
    from tacred.models.transformer import _load_pretrained, encoder_config

    if transformer_config is not None:
        from transformers import AutoConfig, AutoModel

        kept = dict(transformer_config)
        config = AutoConfig.for_model(kept.pop("model_type"), **kept)
        config._attn_implementation = "eager"
        return AutoModel.from_config(config), dict(transformer_config)
    encoder = _load_pretrained(str(pretrained))
    return encoder, encoder_config(encoder.config)


def decode_entities(span_logits: torch.Tensor, word_counts: torch.Tensor) -> list[list[Found]]:
    """Each sentence's entities (:func:`tacred.models.joint_decoding.span_entities` of the span logits' softmax).
    span_logits (B, M, W, E + 1), word_counts (B,)."""
    probs = torch.softmax(span_logits.float(), dim=-1)
    return span_entities(probs.cpu().numpy(), word_counts.cpu().numpy())


def candidate_pairs(entities: list[list[Found]], device: torch.device | str = "cpu") -> tuple[torch.Tensor,
                                                                                              torch.Tensor,
                                                                                              list[tuple[int, int,
                                                                                                         int]]]:
    """Every ordered pair of each sentence's entities (:func:`tacred.models.joint_decoding.entity_pairs`), as
    :meth:`JointNetwork.relation_logits` takes them (pairs (P, 5), types (P, 2)), and each pair's (sentence, head,
    tail) entity indices."""
    pairs, types, owners = entity_pairs(entities)
    return torch.from_numpy(pairs).to(device), torch.from_numpy(types).to(device), owners


@torch.no_grad()
def find(net: JointNetwork, batch: JointBatch, given: list[list[Found]] | None = None) -> list[SentenceFound]:
    """One encoder pass over a batch of sentences: the entities of each (or the ``given`` ones: the relation step
    alone), then every pair of them scored."""
    enc = net.encode(batch)
    entities = decode_entities(net.span_logits(enc), batch.word_counts) if given is None else given
    pairs, pair_types, owners = candidate_pairs(entities, enc.words.device)
    probs = torch.sigmoid(net.relation_logits(enc, pairs, pair_types).float())  # (P, R)
    probs = (probs * net.allowed[pair_types[:, 0], pair_types[:, 1]]).cpu()  # signatures the types rule out: 0
    return by_sentence(entities, owners, probs)

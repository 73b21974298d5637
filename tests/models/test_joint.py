"""The joint network's parts against their definitions: span vectors from a running max equal the brute-force max
over each span, empty between-contexts are zeros, decoding keeps every span whose best label is an entity, and the
batches put each gold entity in its cell of the span grid."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from tacred.data.joint_batching import (  # noqa: E402
    IGNORED,
    SHAPES,
    JointSplit,
    WordPieces,
    encode_sentence,
    word_shape,
)
from tacred.data.markers import tokenizer_spec  # noqa: E402
from tacred.datasets.spert_layout import read_sentences, read_types  # noqa: E402
from tacred.models.joint import JointEncoded, JointNetwork, build_encoder, decode_entities, masked_max  # noqa: E402
from tests.joint_corpus import corpus_words, write_joint_corpus  # noqa: E402
from tests.tiny_bert import write_tiny_bert  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), corpus_words())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_joint_corpus(tmp_path_factory.mktemp("corpus"))


def test_word_shapes_carry_what_an_uncased_encoder_loses() -> None:
    shapes = [SHAPES[word_shape(w)] for w in ("boston", "Boston", "IBM", "iPhone", "1994", ",", "A")]
    assert shapes == ["lower", "title", "upper", "mixed", "digit", "other", "title"]


def test_every_word_gets_a_piece_even_one_the_tokenizer_drops(tiny: Path) -> None:
    pieces = WordPieces(tokenizer_spec(str(tiny)))
    ids, owners = pieces.encode(["Boston", "\u200b", "lives"])
    assert sorted(set(owners.tolist()) - {-1}) == [0, 1, 2]
    assert ids[owners.tolist().index(1)] == pieces.unk_id
    assert owners[0] == -1 and owners[-1] == -1  # [CLS] ... [SEP]


def test_batches_put_each_gold_entity_in_its_cell(tiny: Path, corpus: Path) -> None:
    types = read_types(corpus / "types.json")
    sentences = read_sentences(corpus / "train.json")[:4]
    pieces = WordPieces(tokenizer_spec(str(tiny)))
    split = JointSplit([encode_sentence(s, pieces, types) for s in sentences], 3, len(types.relations), 0)
    batch = split.collate([0, 1, 2, 3])
    for row, s in enumerate(sentences):
        n = len(s.tokens)
        labels = batch.span_labels[row]
        for e in s.entities:
            assert labels[e.end - e.start - 1, e.start] == types.entities.index(e.type) + 1
        assert (labels != IGNORED).sum() == sum(max(0, n - m) for m in range(3))
        assert int((labels > 0).sum()) == len(s.entities)
    pairs = sum(len(s.entities) * (len(s.entities) - 1) for s in sentences)
    assert batch.pairs.shape == (pairs, 5) and batch.pair_labels.shape == (pairs, len(types.relations))
    assert int(batch.pair_labels.sum()) == sum(len(s.relations) for s in sentences)
    assert not batch.pad_mask[batch.piece_words >= 0].any()


@pytest.fixture(scope="module")
def net(tiny: Path) -> JointNetwork:
    torch.manual_seed(0)
    encoder, _ = build_encoder(str(tiny), None)
    return JointNetwork(encoder, 3, 4, max_width=4, hidden=16).eval()


def test_span_vectors_are_the_max_over_each_span(net: JointNetwork) -> None:
    torch.manual_seed(1)
    words = torch.randn(2, 6, net.encoder.config.hidden_size)
    enc = JointEncoded(words, torch.randn(2, words.shape[-1]), torch.tensor([6, 4]))
    logits = net.span_logits(enc)  # (B, M, W, E + 1)
    assert logits.shape == (2, 4, 6, 4)
    for b in range(2):
        for m in range(4):
            for w in range(6 - m):
                span = words[b, w:w + m + 1]
                z = (net.span_pool(span.max(dim=0).values) + net.span_first(span[0]) + net.span_last(span[-1])
                     + net.span_width(net.width.weight[m + 1]) + net.span_cls(enc.cls[b]))
                torch.testing.assert_close(logits[b, m, w], net.entity_out(net.act(z)), atol=1e-5, rtol=1e-5)


def test_an_empty_range_pools_to_zeros() -> None:
    words = torch.randn(1, 5, 3)
    rows, start, end = torch.tensor([0, 0]), torch.tensor([1, 3]), torch.tensor([4, 3])
    pooled = masked_max(words[rows], start, end)
    torch.testing.assert_close(pooled[0], words[0, 1:4].max(dim=0).values)
    assert torch.equal(pooled[1], torch.zeros(3))


def test_decoding_keeps_entity_spans_inside_each_sentence() -> None:
    logits = torch.zeros(2, 2, 3, 3)  # B, M, W, E + 1
    logits[..., 0] = 5.0  # "none" everywhere
    logits[0, 0, 1, 2] = 9.0  # sentence 0: word 1, width 1, type 1
    logits[0, 1, 1, 1] = 9.0  # sentence 0: words 1-2, type 0 (overlapping: kept)
    logits[1, 1, 2, 1] = 9.0  # sentence 1: a width-2 span from word 2: past a 3-word sentence's end
    found = decode_entities(logits, torch.tensor([3, 3]))
    assert [(s, e, k) for s, e, k, _ in found[0]] == [(1, 2, 1), (1, 3, 0)]
    assert found[1] == []
    assert all(0.9 < p <= 1 for *_, p in found[0])


def test_the_shape_embedding_starts_at_zero(net: JointNetwork) -> None:
    assert net.shape is not None and float(net.shape.weight.detach().abs().sum()) == 0.0
    assert np.isfinite(net.width.weight.detach().numpy()).all()

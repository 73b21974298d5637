"""The factored pair scoring (tacred/models/pair_scoring.py) against the plain forward pass: the same probabilities
(within 1e-5) and labels for every pair, for the paper's network and its variants, with and without entity masks."""

from __future__ import annotations

import pytest
import torch

from tacred.models import pair_scoring
from tacred.models.attention import variants
from tacred.models.config import NetworkConfig
from tacred.models.network import RelationNetwork
from tacred.models.pair_scoring import PairScorer, SentencePairs, pair_logits, unfactored_reason

SMALL = {"word_dim": 24, "pos_dim": 6, "ner_dim": 6, "position_dim": 5, "attention_dim": 16, "ffn_dim": 20,
         "num_heads": 3, "max_relative_distance": 16}


def log_bins(rel: torch.Tensor) -> torch.Tensor:
    """sign(d)·bit_length(|d|), as the data's relative positions are binned."""
    mag = rel.abs()
    bits = torch.where(mag > 0, torch.floor(torch.log2(mag.clamp(min=1).double())).long() + 1, 0)
    return rel.sign() * bits


def random_pairs(gen: torch.Generator, num_words: int, sentences: int = 7, mask_ids: tuple[int, ...] = (),
                 entities: int = 0) -> SentencePairs:
    """Random sentences of 3 to 40 tokens (padded to the longest), each with 1 to 9 random pairs; entity masks
    (``mask_ids``) written over the argument spans. ``entities``: the pairs' arguments are drawn from that many
    entities of the sentence (its first tokens, in random order), so that pairs share objects as extraction's do."""
    lengths = torch.randint(3, 41, (sentences,), generator=gen)
    width = int(lengths.max())
    words = torch.randint(2, num_words, (sentences, width), generator=gen)
    pad = torch.arange(width)[None, :] >= lengths[:, None]
    words = words.masked_fill(pad, 0)
    pos = torch.randint(1, 9, (sentences, width), generator=gen).masked_fill(pad, 0)
    ner = torch.randint(1, 6, (sentences, width), generator=gen).masked_fill(pad, 0)
    rows, subj, obj, pair_words = [], [], [], []
    index = torch.arange(width)
    for s, n in enumerate(lengths.tolist()):
        starts = torch.randperm(n, generator=gen)[:entities]
        for _ in range(int(torch.randint(1, 10, (1,), generator=gen))):
            drawn = starts[torch.randperm(len(starts), generator=gen)] if entities else torch.randperm(n, generator=gen)
            a, b = sorted(drawn[:2].tolist())
            (s0, s1), (o0, o1) = ((a, a), (b, min(n - 1, b + 1))) if torch.rand(1, generator=gen) < 0.5 else \
                ((b, b), (a, a))
            spans = []
            for start, end in ((s0, s1), (o0, o1)):
                rel = torch.where(index < start, index - start, torch.where(index > end, index - end, 0))
                spans.append(log_bins(rel).masked_fill(pad[s], 0))
            pw = words[s].clone()
            if mask_ids:
                pw[s0:s1 + 1], pw[o0:o1 + 1] = mask_ids[0], mask_ids[1]
            rows.append(s)
            subj.append(spans[0])
            obj.append(spans[1])
            pair_words.append(pw)
    return SentencePairs(words, pos, ner, pad, torch.tensor(rows), torch.stack(pair_words), torch.stack(subj),
                         torch.stack(obj))


def eval_network(seed: int = 0, **options) -> RelationNetwork:
    """A random network with random batch-norm statistics (so the folded norms are not the identity), in eval mode."""
    torch.manual_seed(seed)
    net = RelationNetwork(NetworkConfig(**{**SMALL, **options}), num_words=50, num_pos=9, num_ner=6, num_labels=5)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm1d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.3, 0.3)
        for p in net.parameters():  # the variants start as no-ops: move every parameter off its start
            p.add_(torch.randn_like(p) * 0.05)
    return net.eval()


def assert_same(net: RelationNetwork, pairs: SentencePairs) -> None:
    with torch.inference_mode():
        expected = torch.softmax(net(pairs.pair_batch()).logits, dim=-1)
        got = torch.softmax(PairScorer(net)(pairs), dim=-1)
    assert got.shape == expected.shape
    assert (got - expected).abs().max().item() < 1e-5
    assert torch.equal(got.argmax(-1), expected.argmax(-1))


CONFIGS = [
    {},
    {"activation": "relu"},
    {"relpos_query": "shared"},
    {"position_encoding": "sinusoidal"},
    {"position_encoding": "none"},
    {"object_position_input": False},
    {"position_aware": False},
    *[{"position_encoding": "none", **v.enabling()} if v.name == "relative" else v.enabling() for v in variants()],
    {"gaussian_heads": 1, "attention_bias": ["shaw"], "learned_temperature": True},
]


@pytest.fixture
def word_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The small test networks take their sentences' rows from word tables, as 300-d networks do."""
    monkeypatch.setattr(pair_scoring, "WORD_TABLE_DIM", 1)


@pytest.mark.parametrize("options", CONFIGS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "paper")
@pytest.mark.parametrize("masked", [False, True], ids=["plain_words", "entity_masks"])
def test_factored_pairs_equal_the_plain_forward_pass(word_tables: None, options: dict, masked: bool) -> None:
    net = eval_network(**options)
    assert unfactored_reason(net) is None
    assert_same(net, random_pairs(torch.Generator().manual_seed(1), 48, sentences=10,
                                  mask_ids=(48, 49) if masked else ()))


@pytest.mark.parametrize("options", [{}, {"object_position_input": False}, {"position_aware": False},
                                     {"relpos_query": "shared"}],
                         ids=["paper", "object_position_input=False", "position_aware=False", "relpos_query=shared"])
@pytest.mark.parametrize("masked", [False, True], ids=["plain_words", "entity_masks"])
def test_pairs_that_share_an_object_are_scored_alike(word_tables: None, options: dict, masked: bool) -> None:
    """Extraction's pairs: every argument one of a few entities of its sentence, so many pairs share their object
    (scored once for them all without entity masks; their logits before the rewritten rows' terms once with them)."""
    pairs = random_pairs(torch.Generator().manual_seed(7), 48, sentences=10, mask_ids=(48, 49) if masked else (),
                         entities=3)
    objects = torch.unique(torch.cat([pairs.sentence[:, None], pairs.obj_positions], dim=1), dim=0)
    assert len(objects) < len(pairs.sentence) / 2
    assert_same(eval_network(**options), pairs)


@pytest.mark.parametrize("options", [{}, {"object_position_input": False}, {"position_aware": False}],
                         ids=["paper", "object_position_input=False", "position_aware=False"])
@pytest.mark.parametrize("masked", [False, True], ids=["plain_words", "entity_masks"])
def test_small_word_vectors_compute_every_row_alike(options: dict, masked: bool) -> None:
    """Below WORD_TABLE_DIM dimensions (the 50-d GloVe layout) the sentences' rows are products, not table rows."""
    net = eval_network(**options)
    assert net.cfg.word_dim < pair_scoring.WORD_TABLE_DIM and PairScorer(net).row_table is None
    assert_same(net, random_pairs(torch.Generator().manual_seed(6), 48, sentences=10,
                                  mask_ids=(48, 49) if masked else ()))


@pytest.mark.parametrize("masked", [False, True], ids=["plain_words", "entity_masks"])
def test_words_past_the_word_table_are_projected_alike(word_tables: None, monkeypatch: pytest.MonkeyPatch,
                                                       masked: bool) -> None:
    """A vocabulary larger than the word table (its most frequent words): the rarer words' rows are computed, and
    entity masks that replace rare words take their rows out alike."""
    net = eval_network()
    width = PairScorer(net).row_weight.shape[0]
    monkeypatch.setattr(pair_scoring, "WORD_TABLE_BYTES", 4 * width * 20)  # words 0-19 in the table, 20-49 past it
    scorer = PairScorer(net)
    assert scorer.word_rows == 20
    pairs = random_pairs(torch.Generator().manual_seed(5), 48, sentences=10, mask_ids=(3, 4) if masked else ())
    assert bool((pairs.words >= 20).any()) and bool((pairs.words[~pairs.pad_mask] < 20).any())
    with torch.inference_mode():
        expected = torch.softmax(net(pairs.pair_batch()).logits, dim=-1)
        got = torch.softmax(scorer(pairs), dim=-1)
    assert (got - expected).abs().max().item() < 1e-5
    assert torch.equal(got.argmax(-1), expected.argmax(-1))


@pytest.mark.parametrize("options", [{"num_layers": 2}, {"residual": "double"}, {"norm": "layer"},
                                     {"encoder": "lstm"}, {"encoder": "lstm_self_attention"}])
def test_networks_that_cannot_be_factored_fall_back_to_the_plain_pass(options: dict) -> None:
    net = eval_network(**options)
    reason = unfactored_reason(net)
    assert reason is not None
    with pytest.raises(ValueError, match="cannot score pairs from a shared pass"):
        PairScorer(net)
    pairs = random_pairs(torch.Generator().manual_seed(2), 48, mask_ids=(48, 49))
    with torch.inference_mode():
        assert torch.equal(pair_logits(net, pairs), net(pairs.pair_batch()).logits)


def test_pair_scoring_refuses_training_mode() -> None:
    net = eval_network().train()
    with pytest.raises(ValueError, match="evaluation mode"):
        pair_logits(net, random_pairs(torch.Generator().manual_seed(3), 48))


@pytest.mark.parametrize("masked", [False, True], ids=["plain_words", "entity_masks"])
def test_the_shared_pass_reads_the_subject_and_object(masked: bool) -> None:
    """Pairs of one sentence get different scores: both positions (and the masked rows) reach the classifier; two
    pairs with the same object and different subjects too."""
    net = eval_network()
    pairs = random_pairs(torch.Generator().manual_seed(4), 48, sentences=1, mask_ids=(48, 49) if masked else ())
    subject, obj = pairs.subj_positions[0], pairs.obj_positions[0]
    elsewhere = subject.roll(1)  # another subject span, the object kept
    pairs = SentencePairs(*(t for t in (pairs.words, pairs.pos, pairs.ner, pairs.pad_mask)),
                          pairs.sentence[[0, 0, 0]], pairs.pair_words[[0, 0, 0]],
                          torch.stack([subject, obj, elsewhere]), torch.stack([obj, subject, obj]))
    with torch.inference_mode():
        logits = PairScorer(net)(pairs)
    assert not torch.allclose(logits[0], logits[1])
    assert not torch.allclose(logits[0], logits[2])

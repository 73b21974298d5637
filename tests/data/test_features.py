"""The fast encoder of many examples gives exactly the arrays of the reference :func:`encode_example`: every
vocabulary setting, pairs of one sentence in a row and apart, spans anywhere, long sentences."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tacred.data.examples import Example, log_bin, masked_tokens, relative_positions
from tacred.data.features import FEATURES, FeatureEncoder, LemmaMissing
from tacred.data.vocab import Vocab, Vocabularies


def encode_example(ex: Example, vocab: Vocabularies) -> dict[str, np.ndarray]:
    """The reference: each example encoded on its own, word by word (the package's encoding before
    :class:`FeatureEncoder`)."""
    if vocab.use_lemmas and ex.lemmas is None:
        raise LemmaMissing(f"example {ex.id!r} has no lemmas but the vocabulary uses lemmas")
    words = ex.lemmas if vocab.use_lemmas and ex.lemmas is not None else ex.tokens
    words = tuple(w.lower() for w in words) if vocab.lowercase else words
    tokens = masked_tokens(ex, words) if vocab.entity_masking else list(words)
    n = len(ex)
    return {
        "words": np.asarray(vocab.words.encode(tokens), dtype=np.int64),
        "pos": np.asarray(vocab.pos.encode(ex.pos), dtype=np.int64),
        "ner": np.asarray(vocab.ner.encode(ex.ner), dtype=np.int64),
        "subj": np.asarray([log_bin(p) for p in relative_positions(ex.subj_start, ex.subj_end, n)], dtype=np.int64),
        "obj": np.asarray([log_bin(p) for p in relative_positions(ex.obj_start, ex.obj_end, n)], dtype=np.int64),
    }


WORDS = ["Alice", "acme", "Acme", "the", "of", "Paris", "runs", "UNSEEN"]
TYPES = ["PERSON", "ORGANIZATION", "CITY"]


def vocabularies(**options) -> Vocabularies:
    known = ["<PAD>", "<UNK>", "alice", "acme", "Acme", "the", "of", "paris", "runs", "Paris",
             *(f"SUBJ-{t}" for t in TYPES[:2]), *(f"OBJ-{t}" for t in TYPES)]  # SUBJ-CITY unknown: <UNK>
    tags = Vocab(["<PAD>", "<UNK>", "NNP", "NN", *TYPES, "O"], unk="<UNK>")
    return Vocabularies(words=Vocab(known, unk="<UNK>"), pos=tags, ner=tags,
                        labels=Vocab(["no_relation", "per:employee_of"]), **options)


@st.composite
def sentences_and_pairs(draw: st.DrawFn) -> list[Example]:
    n = draw(st.integers(1, 70))
    tokens = tuple(draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n)))
    tags = tuple(draw(st.lists(st.sampled_from(["NNP", "NN", "VB"]), min_size=n, max_size=n)))
    ner = tuple(draw(st.lists(st.sampled_from([*TYPES, "O"]), min_size=n, max_size=n)))
    out = []
    for k in range(draw(st.integers(1, 4))):
        s0 = draw(st.integers(0, n - 1))
        o0 = draw(st.integers(0, n - 1))
        out.append(Example(f"e{k}", tokens, s0, draw(st.integers(s0, n - 1)), o0, draw(st.integers(o0, n - 1)),
                           draw(st.sampled_from(TYPES)), draw(st.sampled_from(TYPES)), tags, ner, "no_relation",
                           lemmas=tuple(w.lower() for w in tokens)))
    return out


@settings(max_examples=60, deadline=None, derandomize=True)
@given(groups=st.lists(sentences_and_pairs(), min_size=1, max_size=4),
       masking=st.booleans(), lowercase=st.booleans(), lemmas=st.booleans())
def test_the_fast_encoder_equals_the_reference(groups, masking, lowercase, lemmas):
    vocab = vocabularies(entity_masking=masking, lowercase=lowercase, use_lemmas=lemmas)
    encode = FeatureEncoder(vocab)
    examples = [ex for group in groups for ex in group] + groups[0]  # the first sentence again, after others
    for ex in examples:
        fast, reference = encode(ex), encode_example(ex, vocab)
        assert fast.keys() == reference.keys() == set(FEATURES)
        for key in FEATURES:
            assert fast[key].dtype == np.int64 and np.array_equal(fast[key], reference[key]), (key, ex)


def test_shared_arrays_cannot_be_changed_by_a_reader():
    vocab = vocabularies(entity_masking=False)
    ex = Example("a", ("Alice", "runs", "Acme"), 0, 0, 2, 2, "PERSON", "ORGANIZATION", ("NNP", "VB", "NNP"),
                 ("PERSON", "O", "ORGANIZATION"), "no_relation")
    first = FeatureEncoder(vocab)(ex)
    with pytest.raises(ValueError, match="read-only"):
        first["words"][0] = 5


def test_a_missing_lemma_list_is_the_same_error():
    vocab = vocabularies(use_lemmas=True)
    ex = Example("x", ("Alice",), 0, 0, 0, 0, "PERSON", "PERSON", ("NNP",), ("PERSON",), "no_relation")
    with pytest.raises(LemmaMissing, match="example 'x' has no lemmas"):
        FeatureEncoder(vocab)(ex)
    with pytest.raises(LemmaMissing, match="example 'x' has no lemmas"):
        encode_example(replace(ex), vocab)

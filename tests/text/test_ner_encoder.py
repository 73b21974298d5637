"""A Hugging Face encoder as a spaCy NER's token vectors (``tacred.text.ner_encoder``), on the packaged
all-MiniLM-L6-v2: one vector per spaCy token, the mean of its pieces' last-layer vectors; long docs in windows that
keep words whole; the registered architecture spaCy builds from a config."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from tacred.text.ner_encoder import (
    ARCHITECTURE,
    NerEncoderError,
    check_folder,
    piece_windows,
    register,
    token_vectors,
)


@pytest.fixture(scope="module")
def minilm() -> str:
    from tacred.data.pretrained_packages import resolve_pretrained

    return str(check_folder(resolve_pretrained("minilm")))


@pytest.fixture(scope="module")
def tokenizer(minilm: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm)


def test_windows_keep_every_piece_in_order_and_never_cut_a_word_that_fits(tokenizer) -> None:
    words = ["Unbelievably", "long", "antidisestablishmentarianism", "words", "in", "Reykjavík", "."] * 3
    whole = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
    for size in (3, 5, 8, 1000):
        windows = piece_windows(words, tokenizer, size)
        assert [i for ids, _ in windows for i in ids] == whole["input_ids"]
        assert [w for _, owners in windows for w in owners] == whole.word_ids()
        assert all(0 < len(ids) <= size for ids, _ in windows)
        for (_, before), (_, after) in zip(windows, windows[1:], strict=False):
            cut = before[-1] == after[0]
            fits = sum(1 for w in whole.word_ids() if w == after[0]) <= size
            assert not (cut and fits)  # a word is split only when it alone is longer than a window
    assert len(piece_windows(words, tokenizer, 1000)) == 1
    assert piece_windows([], tokenizer, 10) == []


def test_a_token_s_vector_is_the_mean_of_its_pieces_last_layer_vectors(minilm: str, tokenizer) -> None:
    import spacy
    import torch
    from transformers import AutoModel

    nlp = spacy.blank("en")
    docs = [nlp("Anna Lindqvist joined  Nordic Steel in Reykjavík."), nlp("Oslo"), nlp("")]
    model = token_vectors(minilm)
    vectors = model.predict(docs)
    assert [v.shape for v in vectors] == [(len(d), 384) for d in docs]
    assert vectors[0].dtype == np.float32

    encoder = AutoModel.from_pretrained(minilm).eval()
    words = [t.text for t in docs[0]]
    pieces = tokenizer(words, is_split_into_words=True)
    with torch.no_grad():
        hidden = encoder(input_ids=torch.tensor([pieces["input_ids"]])).last_hidden_state[0].numpy()
    owners = pieces.word_ids()
    for k, token in enumerate(docs[0]):
        rows = [p for p, w in enumerate(owners) if w == k]
        if token.is_space:  # the double space: a token without pieces
            assert not rows and not vectors[0][k].any()
        else:
            np.testing.assert_allclose(vectors[0][k], hidden[rows].mean(axis=0), atol=2e-5)


def test_a_long_doc_is_read_in_windows_with_a_vector_for_every_token(minilm: str) -> None:
    import spacy

    doc = spacy.blank("en")(" ".join(["The committee met in Geneva on Tuesday ."] * 40))
    whole = token_vectors(minilm).predict([doc])[0]
    windowed = token_vectors(minilm, max_pieces=16).predict([doc])[0]
    assert whole.shape == windowed.shape == (len(doc), 384)
    assert np.isfinite(windowed).all() and not np.allclose(whole, windowed)  # windows see less context


def test_bf16_gives_float32_vectors_close_to_float32_ones(minilm: str) -> None:
    import spacy

    doc = spacy.blank("en")("Anna Lindqvist joined Nordic Steel in Reykjavík .")
    full, half = (token_vectors(minilm, bf16=flag).predict([doc])[0] for flag in (False, True))
    assert half.dtype == np.float32 and half.shape == full.shape
    cosine = (full * half).sum(1) / np.linalg.norm(full, axis=1) / np.linalg.norm(half, axis=1)
    assert cosine.min() > 0.98


def test_spacy_builds_the_registered_architecture_from_a_config(minilm: str) -> None:
    from spacy.util import registry
    from thinc.api import Config

    register()
    register()  # once is enough; again is harmless
    config = Config().from_str(f'[model]\n@architectures = "{ARCHITECTURE}"\nfolder = "{minilm}"\nbf16 = false\n'
                               "max_pieces = 0\n")
    model = registry.resolve(config)["model"]
    assert model.get_dim("nO") == 384


def test_a_folder_without_a_fast_tokenizer_is_an_error_naming_it(tmp_path) -> None:
    with pytest.raises(NerEncoderError, match="not a model folder"):
        check_folder(tmp_path / "nowhere")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(NerEncoderError, match=r"no tokenizer\.json"):
        check_folder(tmp_path)


def test_shape_columns_give_an_uncased_encoder_the_case_it_does_not_see(minilm: str) -> None:
    import spacy

    nlp = spacy.blank("en")
    docs = [nlp("the paris office"), nlp("the Paris office")]
    plain = token_vectors(minilm).predict(docs)
    # all-MiniLM-L6-v2 lowercases: the same pieces, so the same vectors up to float32 rounding, which differs between
    # the rows of one batch on some CPUs (up to 2.7e-6 on a 2-core AMD EPYC with AVX-512)
    np.testing.assert_allclose(plain[0], plain[1], atol=1e-5)
    model = token_vectors(minilm, shape_width=16)
    model.initialize(X=docs)
    assert model.get_dim("nO") == 384 + 16
    cased = model.predict(docs)
    assert [v.shape for v in cased] == [(3, 400), (3, 400)]
    np.testing.assert_allclose(cased[0][:, :384], plain[0], atol=1e-6)
    assert not np.allclose(cased[0][1, 384:], cased[1][1, 384:])  # "paris" and "Paris" differ in shape and prefix
    np.testing.assert_allclose(cased[0][0, 384:], cased[1][0, 384:])  # "the" is "the" in both


def test_rate_scale_slows_the_encoder_and_leaves_the_shape_columns_at_the_optimizer_s_rate(minilm: str) -> None:
    """Adam's first step moves a weight by at most its rate: the encoder's by 1e-3 at rate_scale 1 and 1e-4 at 0.1,
    the shape columns' by the optimizer's 1e-3 in both."""
    import spacy
    from thinc.api import Adam

    docs = [spacy.blank("en")("John Smith works for Acme in Paris .")]
    moved = {}
    for scale in (1.0, 0.1):
        model = token_vectors(minilm, shape_width=8, rate_scale=scale)
        model.initialize(X=docs)
        encoder = next(node for node in model.walk() if node.name == "pytorch").shims[0]._model
        before = {name: param.detach().clone() for name, param in encoder.named_parameters()}
        surface = model.layers[1]
        table = next(node for node in surface.walk() if node.has_param("E"))
        before_table = table.get_param("E").copy()
        vectors, backprop = model.begin_update(docs)
        backprop([model.ops.alloc2f(*v.shape) + 1.0 for v in vectors])
        model.finish_update(Adam(1e-3, L2=0.0, grad_clip=0.0, use_averages=False))
        moved[scale] = (max(float((param.detach() - before[name]).abs().max())
                            for name, param in encoder.named_parameters()),
                        float(np.abs(table.get_param("E") - before_table).max()))
    assert moved[1.0][0] == pytest.approx(1e-3, rel=0.05) and moved[0.1][0] == pytest.approx(1e-4, rel=0.05)
    assert 5e-4 < moved[1.0][1] <= 1e-3 and 5e-4 < moved[0.1][1] <= 1e-3  # the columns: the optimizer's rate
    with pytest.raises(NerEncoderError, match="rate_scale 0: must be above 0"):
        token_vectors(minilm, rate_scale=0)

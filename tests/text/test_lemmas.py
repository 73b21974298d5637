"""spaCy lemmas for the lemma input variant: one lemma per token, and the on-disk cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tacred.text.lemmas import cache_key, default_cache_dir, lemmatize

SENTENCES = [
    ["The", "children", "went", "to", "New York", "and", "bought", "mice", "."],
    ["She", "was", "running", "--", "fast", "!", "!"],
    ["X"],
]


class NoPipeline:
    """Looks like the real pipeline to the cache key, but fails if asked to run."""

    def __init__(self, meta: dict) -> None:
        self.meta = meta

    def __getattr__(self, name: str):
        pytest.fail(f"lemmatize used nlp.{name} although the cache held the answer")


def test_lemmas_keep_token_count_and_lemmatize(nlp, tmp_path: Path) -> None:
    lemmas = lemmatize(SENTENCES, nlp=nlp, cache_dir=tmp_path)
    assert [len(s) for s in lemmas] == [len(s) for s in SENTENCES]
    assert lemmas[0][1:3] == ["child", "go"] and lemmas[0][6] == "buy" and lemmas[1][1:3] == ["be", "run"]
    assert all(lemma.strip() for sentence in lemmas for lemma in sentence)


def test_second_call_is_served_from_the_cache(nlp, tmp_path: Path) -> None:
    first = lemmatize(SENTENCES, nlp=nlp, cache_dir=tmp_path)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text()) == first
    assert not list(tmp_path.glob("*.tmp"))  # the atomic write left no temporary file
    assert lemmatize(SENTENCES, nlp=NoPipeline(dict(nlp.meta)), cache_dir=tmp_path) == first
    newer = dict(nlp.meta, version="999.0.0")
    with pytest.raises(pytest.fail.Exception):
        lemmatize(SENTENCES, nlp=NoPipeline(newer), cache_dir=tmp_path)  # another model version misses


def test_unreadable_cache_file_is_recomputed(nlp, tmp_path: Path) -> None:
    first = lemmatize(SENTENCES[:1], nlp=nlp, cache_dir=tmp_path)
    path, = tmp_path.glob("*.json")
    path.write_text("[[\"trunc", encoding="utf-8")
    assert lemmatize(SENTENCES[:1], nlp=nlp, cache_dir=tmp_path) == first
    assert json.loads(path.read_text()) == first


def test_cache_key_depends_on_token_boundaries_and_model() -> None:
    assert cache_key([["New York"]], "m-1") != cache_key([["New", "York"]], "m-1")
    assert cache_key([["a"]], "m-1") != cache_key([["a"]], "m-2")
    assert cache_key([["a"], ["b"]], "m-1") == cache_key((("a",), ("b",)), "m-1")


def test_default_cache_dir_follows_tacred_cache(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TACRED_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "lemmas"
    monkeypatch.delenv("TACRED_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "tacred" / "lemmas"


def test_empty_token_is_rejected(nlp, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sentence 1: token 0"):
        lemmatize([["ok"], [" "]], nlp=nlp, cache_dir=tmp_path)

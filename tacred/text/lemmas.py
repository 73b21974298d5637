"""Lemmas of pre-tokenised sentences with spaCy, for the paper's lemma input variant (Bilan & Roth, 2018,
Table 3), cached on disk by a hash of the tokens and the model's name and version.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tacred.io import read_json, write_json
from tacred.text.spacy_pipeline import given_or_default, model_id

if TYPE_CHECKING:
    from spacy.language import Language

# Components a lemmatizer needs: the tagger (and the tok2vec it listens to) and the rules on its tags.
_NEEDED = ("tok2vec", "tagger", "attribute_ruler", "morphologizer", "lemmatizer", "transformer")


def default_cache_dir() -> Path:
    """``$TACRED_CACHE/lemmas`` or ``~/.cache/tacred/lemmas``."""
    root = os.environ.get("TACRED_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "tacred") / "lemmas"


def cache_key(tokens_list: Sequence[Sequence[str]], model: str) -> str:
    """SHA-256 of the model id and the tokens (JSON-encoded, so token boundaries count)."""
    payload = json.dumps([model, [list(t) for t in tokens_list]], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _lemmatize(tokens_list: Sequence[Sequence[str]], nlp: Language, batch_size: int) -> list[list[str]]:
    from spacy.tokens import Doc

    docs = []
    for n, tokens in enumerate(tokens_list):
        bad = [i for i, t in enumerate(tokens) if not isinstance(t, str) or not t.strip()]
        if bad:
            raise ValueError(f"sentence {n}: token {bad[0]} is {tokens[bad[0]]!r}; tokens must be non-empty")
        docs.append(Doc(nlp.vocab, words=list(tokens)))
    disable = [name for name in nlp.pipe_names if name not in _NEEDED]
    out = []
    for n, doc in enumerate(nlp.pipe(docs, batch_size=batch_size, disable=disable)):
        # An empty lemma (possible for unusual tokens) falls back to the token itself.
        lemmas = [t.lemma_ if t.lemma_.strip() else t.text for t in doc]
        if len(lemmas) != len(tokens_list[n]):
            raise RuntimeError(f"sentence {n}: spaCy returned {len(lemmas)} lemmas for {len(tokens_list[n])} tokens")
        out.append(lemmas)
    return out


def lemmatize(
    tokens_list: Sequence[list[str]],
    nlp: Language | None = None,
    cache_dir: str | Path | None = None,
    batch_size: int = 256,
) -> list[list[str]]:
    """One lemma per token for every sentence (same lengths as ``tokens_list``), cached on disk.

    The cache file is ``<cache_dir>/<sha256>.json``, written atomically; a file that cannot be read
    (e.g. truncated by hand) is recomputed and replaced.
    """
    nlp = given_or_default(nlp)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"{cache_key(tokens_list, model_id(nlp))}.json"
    if path.is_file():
        try:
            cached = read_json(path)
        except (OSError, json.JSONDecodeError):
            cached = None
        if isinstance(cached, list) and [len(c) for c in cached] == [len(t) for t in tokens_list]:
            return cached
    lemmas = _lemmatize(tokens_list, nlp, batch_size)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(path, lemmas, indent=None, ensure_ascii=False, newline=False)
    return lemmas

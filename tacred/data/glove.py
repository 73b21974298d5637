"""GloVe word vectors (Pennington et al., 2014) as an embedding matrix for a vocabulary.

Reads the GloVe text format from ``.txt``, ``.gz`` or ``.zip``, or vectors installed from PyPI by name
(:mod:`tacred.data.packaged_vectors`, e.g. ``glove-6b-50d``), and caches the finished matrix.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import logging
import os
import time
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import torch

from tacred.errors import GloveFormatError
from tacred.io import atomic_path

logger = logging.getLogger("tacred.data.glove")

DEFAULT_DIM = 300
_CACHE_VERSION = 1  # bump when the cached content or its meaning changes
_MISSING_SHOWN = 20  # missing words named in the log line


@dataclass
class EmbeddingMatrix:
    """Row i holds the vector of ``words[i]``: GloVe where found, uniform(-1, 1) otherwise."""

    vectors: torch.Tensor  # (V, D) float32
    found: int  # rows (outside ``skip``) that received a GloVe vector
    coverage: float  # found / rows outside ``skip``
    missing: list[str]  # every word outside ``skip`` without a GloVe vector, in vocabulary order
    from_cache: bool = field(default=False, compare=False)

    def summary(self) -> str:
        searched = self.found + len(self.missing)
        text = f"{self.found}/{searched} words found in GloVe ({self.coverage:.2%} coverage)"
        if self.missing:
            shown = ", ".join(repr(w) for w in self.missing[:_MISSING_SHOWN])
            more = len(self.missing) - _MISSING_SHOWN
            text += f"; missing: {shown}" + (f" and {more} more" if more > 0 else "")
        return text


def random_embedding_matrix(num_words: int, dim: int, seed: int = 0, skip: Iterable[int] = (0,)) -> torch.Tensor:
    """uniform(-1, 1) rows from a generator seeded by ``seed``, zero rows for ``skip`` (as in PA-LSTM)."""
    skip_rows = _check_skip(skip, num_words)
    generator = torch.Generator().manual_seed(seed)
    vectors = torch.empty(num_words, dim, dtype=torch.float32).uniform_(-1.0, 1.0, generator=generator)
    vectors[skip_rows] = 0.0
    return vectors


def default_cache_dir() -> Path:
    """``$TACRED_CACHE/glove``, or ``~/.cache/tacred/glove`` when the variable is unset."""
    return Path(os.environ.get("TACRED_CACHE") or "~/.cache/tacred").expanduser() / "glove"


@contextlib.contextmanager
def open_glove(path: str | Path, member: str | None = None) -> Iterator[tuple[TextIO, str]]:
    """Open a GloVe text file (plain, gzip or zip); yields the text stream and a name for messages.

    Bytes that are not UTF-8 are kept as surrogate escapes, so such a token cannot match any word
    but the file still reads to the end (``read_glove_vectors`` reports how many there were).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"GloVe file not found: {path}")
    text = {"encoding": "utf-8", "errors": "surrogateescape", "newline": "\n"}  # only \n ends a line
    suffix = path.suffix.lower()
    try:
        if suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                name = _zip_member(archive, path, member)
                with archive.open(name) as raw:
                    yield io.TextIOWrapper(raw, **text), f"{path} (member {name})"
        elif suffix == ".gz":
            with gzip.open(path, "rt", **text) as stream:
                yield stream, str(path)
        else:
            with open(path, **text) as stream:
                yield stream, str(path)
    except (zipfile.BadZipFile, gzip.BadGzipFile, zlib.error, EOFError) as error:
        raise GloveFormatError(f"{path}: damaged or not a {suffix} file ({error})") from error


def _zip_member(archive: zipfile.ZipFile, path: Path, member: str | None) -> str:
    names = [n for n in archive.namelist() if not n.endswith("/")]
    if member is not None:
        if member not in names:
            raise FileNotFoundError(f"{path} has no member {member!r}; members: {', '.join(names) or '(none)'}")
        return member
    texts = [n for n in names if n.lower().endswith(".txt") and not n.startswith("__MACOSX/")]
    if len(texts) != 1:
        found = "no .txt member" if not texts else f"{len(texts)} .txt members"
        raise ValueError(f"{path} holds {found}; pass member=... to choose one of: {', '.join(names) or '(none)'}")
    return texts[0]


def read_glove_vectors(
    path: str | Path,
    words: Iterable[str],
    dim: int = DEFAULT_DIM,
    *,
    lowercase: bool = True,
    member: str | None = None,
) -> dict[str, torch.Tensor]:
    """The GloVe vector (float32, shape (dim,)) of each of ``words`` that the file has.

    A word takes the line whose token equals it; failing that (with ``lowercase``) the first line in
    file order whose token equals it case-insensitively. Each line is split from the right into
    ``dim`` values and the token, so tokens may contain spaces; numbers are parsed only for lines
    whose token is wanted.
    """
    if dim < 1:
        raise ValueError(f"dim must be a positive number of values per line, got {dim}")
    exact_wanted = set(words)
    folded_wanted = {w.lower() for w in exact_wanted} if lowercase else set()
    exact: dict[str, np.ndarray] = {}
    folded: dict[str, np.ndarray] = {}
    not_utf8, first_not_utf8, lineno, empty_since = 0, 0, 0, 0
    with open_glove(path, member) as (stream, name):
        for lineno, line in enumerate(stream, 1):
            line = line.rstrip("\r\n ")
            if not line:
                empty_since = empty_since or lineno
                continue
            if empty_since:
                raise GloveFormatError(f"{name}, line {empty_since}: empty line before the end of the file")
            if lineno == 1 and _is_header(line, dim, name):
                continue  # word2vec-style "COUNT DIM" first line
            spaces = line.count(" ")  # the cheap split: every line is read, few are parsed
            if spaces == dim:
                cut = line.find(" ")
            elif spaces > dim:
                cut = len(line.rsplit(" ", dim)[0])
                if lineno == 1:
                    _check_first_line(line, cut, dim, spaces, name)
            else:
                hint = f" (a {spaces}-d file? set dim={spaces}: --model.network.word_dim {spaces})" if lineno == 1 and spaces else ""
                raise GloveFormatError(f"{name}, line {lineno}: expected {dim} values, found {spaces}{hint}")
            token = line[:cut]
            vector = None
            if token in exact_wanted and token not in exact:
                exact[token] = vector = _parse_values(line[cut + 1 :], name, lineno)
            if lowercase:
                key = token.lower()
                if key in folded_wanted and key not in folded:
                    folded[key] = vector if vector is not None else _parse_values(line[cut + 1 :], name, lineno)
            if not token.isascii():
                try:
                    token.encode("utf-8")
                except UnicodeEncodeError:
                    not_utf8 += 1
                    first_not_utf8 = first_not_utf8 or lineno
    if not_utf8:
        logger.warning("%s: %d tokens are not valid UTF-8 (first on line %d); they cannot match any word",
                       name, not_utf8, first_not_utf8)
    logger.debug("%s: read %d lines", name, lineno)
    result: dict[str, torch.Tensor] = {}
    for word in exact_wanted:
        vector = exact.get(word)
        if vector is None and lowercase:
            vector = folded.get(word.lower())
        if vector is not None:
            result[word] = torch.from_numpy(vector)
    return result


def _is_header(line: str, dim: int, name: str) -> bool:
    """A word2vec-style header ``COUNT DIM``; its DIM must be ``dim``."""
    fields = line.split(" ")
    if len(fields) != 2 or not all(f.isdigit() for f in fields):
        return False
    if int(fields[1]) != dim:
        raise GloveFormatError(f"{name}, line 1: the header says {fields[1]}-d vectors, expected {dim} "
                               f"(pass --model.network.word_dim {fields[1]})")
    return True


def _parse_values(text: str, name: str, lineno: int) -> np.ndarray:
    pieces = text.split(" ")
    try:
        # float() per piece and float32 storage: the fastest exact parse measured (~45 us per line)
        values = np.fromiter(map(float, pieces), dtype=np.float32, count=len(pieces))
    except ValueError:
        for k, piece in enumerate(pieces, 1):
            try:
                float(piece)
            except ValueError:
                raise GloveFormatError(f"{name}, line {lineno}: value {k} is not a number: {piece!r}") from None
        raise
    finite = np.isfinite(values)
    if not finite.all():
        k = int(np.argmin(finite)) + 1
        raise GloveFormatError(f"{name}, line {lineno}: value {k} is not a finite float32: {pieces[k - 1]!r}")
    return values


def _check_first_line(line: str, cut: int, dim: int, spaces: int, name: str) -> None:
    """Tokens may contain spaces, but a first 'token' ending in numbers means ``dim`` is too small."""
    extra = line[:cut].split(" ")[1:]
    try:
        [float(piece) for piece in extra]
    except ValueError:
        return
    raise GloveFormatError(f"{name}, line 1: expected {dim} values, found {spaces} (a {spaces}-d file? set dim={spaces}: --model.network.word_dim {spaces})")


def build_embedding_matrix(
    path: str | Path,
    words: Sequence[str],
    dim: int = DEFAULT_DIM,
    *,
    lowercase: bool = True,
    cache_dir: str | Path | None = None,
    seed: int = 0,
    skip: Iterable[int] = (0,),
    member: str | None = None,
    use_cache: bool = True,
) -> EmbeddingMatrix:
    """Embedding matrix for ``words``: GloVe rows where found, uniform(-1, 1) otherwise, zeros for ``skip``.

    ``path`` is a GloVe text file or the name of packaged vectors (``glove-6b-50d``). The result is cached in
    ``cache_dir`` (default ``default_cache_dir()``), keyed by the source (a file's absolute path, size and mtime; a
    package's version and files), ``words`` and every option, so a second run skips the read.
    """
    from tacred.data.packaged_vectors import packaged_vectors

    packaged = packaged_vectors(path)
    if packaged is None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"GloVe file not found: {path}")
        source, stem = _file_identity(path), path.stem
    else:
        source, stem = packaged.identity(), packaged.name
    words = list(words)
    skip_rows = _check_skip(skip, len(words))
    key = _cache_key(source, words, dim, lowercase, seed, skip_rows, member)
    folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache_file = folder / f"{stem}-{dim}d-{key[:24]}.pt"
    if use_cache:
        cached = _load_cache(cache_file, key, len(words), dim)
        if cached is not None:
            logger.info("GloVe matrix loaded from cache %s: %s", cache_file, cached.summary())
            return cached
    start = time.perf_counter()
    skipped = set(skip_rows)
    wanted = [w for i, w in enumerate(words) if i not in skipped]
    if packaged is None:
        glove = read_glove_vectors(path, wanted, dim, lowercase=lowercase, member=member)
    else:
        glove = packaged.read(wanted, dim, lowercase=lowercase)
    vectors = random_embedding_matrix(len(words), dim, seed, skip_rows)
    found, missing = 0, []
    for i, word in enumerate(words):
        if i in skipped:
            continue
        vector = glove.get(word)
        if vector is None:
            missing.append(word)
        else:
            vectors[i] = vector
            found += 1
    searched = len(words) - len(skipped)
    result = EmbeddingMatrix(vectors, found, found / searched if searched else 0.0, missing)
    logger.info("GloVe matrix built from %s in %.1f s: %s", path, time.perf_counter() - start, result.summary())
    if use_cache:
        _save_cache(cache_file, key, result)
    return result


def _check_skip(skip: Iterable[int], num_words: int) -> list[int]:
    rows = sorted(set(skip))
    for row in rows:
        if not 0 <= row < num_words:
            raise ValueError(f"skip row {row} is out of range for {num_words} words")
    return rows


def _file_identity(path: Path) -> dict[str, object]:
    stat = path.stat()
    return {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _cache_key(
    source: dict[str, object], words: list[str], dim: int, lowercase: bool, seed: int, skip: list[int],
    member: str | None,
) -> str:
    options = {
        "version": _CACHE_VERSION, **source, "member": member, "dim": dim, "lowercase": lowercase,
        "seed": seed, "skip": skip,
    }
    digest = hashlib.sha256(json.dumps(options, sort_keys=True).encode("utf-8"))
    digest.update(json.dumps(words, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _load_cache(cache_file: Path, key: str, num_words: int, dim: int) -> EmbeddingMatrix | None:
    if not cache_file.is_file():
        return None
    try:
        data = torch.load(cache_file, map_location="cpu", weights_only=True)
        vectors = data["vectors"]
        if data["key"] != key or tuple(vectors.shape) != (num_words, dim) or vectors.dtype != torch.float32:
            raise ValueError(f"holds a different matrix (shape {tuple(vectors.shape)}, dtype {vectors.dtype})")
        return EmbeddingMatrix(vectors, int(data["found"]), float(data["coverage"]), list(data["missing"]), True)
    except Exception as error:  # any unreadable cache is rebuilt, never trusted
        logger.warning("ignoring unreadable GloVe cache %s (%s: %s); rebuilding it", cache_file, type(error).__name__, error)
        return None


def _save_cache(cache_file: Path, key: str, matrix: EmbeddingMatrix) -> None:
    data = {
        "key": key, "vectors": matrix.vectors, "found": matrix.found,
        "coverage": matrix.coverage, "missing": matrix.missing,
    }
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(cache_file) as tmp:  # readers see the old file or the whole new one
            torch.save(data, tmp)
        logger.info("GloVe matrix cached at %s", cache_file)
    except OSError as error:
        logger.warning("could not write GloVe cache %s: %s", cache_file, error)

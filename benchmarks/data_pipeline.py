"""Benchmark 4: the data path (JSON file → validated examples → vocabularies → EncodedSplit → batches), the lemma
cache (spaCy's first pass vs the cached second) and the GloVe matrix cache (first build from a synthetic GloVe text file vs the cached second load).
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Table, benchmark_data, human_bytes, machine_line, script_main  # noqa: E402

from tacred.data.batching import BucketBatchSampler, EncodedSplit  # noqa: E402
from tacred.data.examples import load_examples  # noqa: E402
from tacred.data.glove import build_embedding_matrix  # noqa: E402
from tacred.data.vocab import build_vocabularies  # noqa: E402
from tacred.training.datamodule import TacredDataModule  # noqa: E402

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def write_synthetic_glove(path: Path, words: list[str], lines: int, dim: int, seed: int = 0) -> None:
    """A GloVe text file of ``lines`` lines: ``words`` first (found), then filler tokens; 5-decimal values as in
    the real files. Vectors are drawn from a pool of 1,000, so writing is fast but reading costs the same."""
    rng = np.random.default_rng(seed)
    pool = [" ".join(f"{v:.5f}" for v in row) for row in rng.uniform(-1, 1, size=(1000, dim))]
    tokens = (words[:lines] + [f"filler{k}" for k in range(lines - min(lines, len(words)))])
    picks = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        for start in range(0, lines, 10_000):
            out.write("".join(f"{t} {picks.choice(pool)}\n" for t in tokens[start : start + 10_000]))


def data_rows(table: Table, data_dir: Path, labels: Path, scratch: Path) -> None:
    train = data_dir / "train.json"
    cold = scratch / "cold" / "train.json"
    cold.parent.mkdir()
    shutil.copy(train, cold)
    _data_rows(table, cold, labels)


def _data_rows(table: Table, cold: Path, labels: Path) -> None:
    train = cold
    result, seconds = timed(lambda: load_examples(cold))
    n = len(result.examples)
    table.add("JSON → validated examples (json module, strings interned)", n, seconds, n / seconds)
    examples = result.examples
    vocab, seconds = timed(lambda: build_vocabularies(examples, labels=["no_relation", *_labels(labels)],
                                                      entity_masking=False))
    table.add(f"vocabularies ({len(vocab.words):,} words)", n, seconds, n / seconds)
    split, seconds = timed(lambda: EncodedSplit(examples, vocab, source=str(train)))
    table.add("examples → EncodedSplit (ids, positions)", n, seconds, n / seconds)
    sampler = BucketBatchSampler(split.lengths, 50, shuffle=True, seed=0)
    _, seconds = timed(lambda: [split.collate(b) for b in sampler])
    table.add("EncodedSplit → batches of 50 (sample + collate)", n, seconds, n / seconds)

    lemma_rows(table, examples, cold.parent.parent / "lemma-cache")

    def whole() -> int:
        dm = TacredDataModule(data_dir=str(cold.parent), labels=str(labels), entity_masking=False)
        return sum(len(b) for b in dm.train_dataloader())  # loads, builds the vocabularies, encodes, batches

    count, seconds = timed(whole)
    table.add("TacredDataModule: file → batches", count, seconds, count / seconds)


def lemma_rows(table: Table, examples: list, cache: Path) -> None:
    """spaCy lemmas of every sentence (the lemma input variant): the first pass runs the lemmatizer, the second
    reads the cache (keyed by the tokens and the model's name and version). The model is loaded before timing."""
    from tacred.text.lemmas import lemmatize
    from tacred.text.spacy_pipeline import SpacyModelError, load_spacy, model_id

    try:
        nlp = load_spacy()
    except SpacyModelError as err:
        table.notes.append(f"lemma rows left out: {err}")
        return
    tokens = [list(ex.tokens) for ex in examples]
    n = len(tokens)
    _, seconds = timed(lambda: lemmatize(tokens, nlp=nlp, cache_dir=cache))
    table.add(f"lemmas, first pass (spaCy {model_id(nlp)}, then cached)", n, seconds, n / seconds)
    _, seconds = timed(lambda: lemmatize(tokens, nlp=nlp, cache_dir=cache))
    table.add("lemmas again (from the lemma cache)", n, seconds, n / seconds)


def _labels(path: Path) -> list[str]:
    import json

    return [label for label in json.loads(path.read_text(encoding="utf-8")) if label != "no_relation"]


def glove_rows(table: Table, words: list[str], lines: int, dim: int, scratch: Path) -> None:
    path = scratch / f"glove.synthetic.{dim}d.txt"
    write_synthetic_glove(path, words, lines, dim)
    cache = scratch / "glove-cache"
    size = human_bytes(path.stat().st_size)
    first, seconds = timed(lambda: build_embedding_matrix(path, words, dim, cache_dir=cache))
    table.add(f"GloVe matrix, first build ({lines:,} lines × {dim} d, {size}; {first.found:,} of {len(words):,} "
              "words found)", lines, seconds, lines / seconds)
    second, cached = timed(lambda: build_embedding_matrix(path, words, dim, cache_dir=cache))
    if not second.from_cache:
        raise RuntimeError(f"the second GloVe build did not come from the cache in {cache}")
    table.add(f"GloVe matrix, second load from the cache ({seconds / cached:,.0f}x faster)", lines, cached,
              lines / cached)


def run(quick: bool = False) -> Table:
    lines, dim = (5_000, 50) if quick else (200_000, 300)
    table = Table(f"Data path and GloVe cache (1 process, no loader workers, {torch.get_num_threads()} torch threads, "
                  "float32 matrices)", ["stage", "items", "seconds", "items/s"])
    with tempfile.TemporaryDirectory(prefix="tacred-bench-data-") as tmp:
        scratch = Path(tmp)
        data = benchmark_data(quick, scratch)
        data_rows(table, data.data_dir, data.labels_file, scratch)
        train = load_examples(data.data_dir / "train.json").examples
        vocab = build_vocabularies(train, labels=["no_relation", *_labels(data.labels_file)], entity_masking=False)
        glove_rows(table, vocab.words.itos, lines, dim, scratch)
    table.notes += [
        machine_line(),
        f"data: {data.source}; items are training examples, or GloVe lines for the GloVe rows.",
        "the GloVe file is synthetic (the vocabulary's words first, then fillers); the cache is a torch.save of "
        "the finished matrix keyed by the file's path, size, mtime, the words and the options.",
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    return script_main(run, "benchmarks/data_pipeline.py", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())

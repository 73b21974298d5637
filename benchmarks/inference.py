"""Benchmark 3: inference throughput in batches and single-sentence latency of the paper's model.

A :class:`RelationExtractor` with random weights (speed does not depend on them) in ``eval()`` mode under
``torch.inference_mode``, on the test split of the benchmark data.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    QUICK_NETWORK,
    Table,
    autocast,
    benchmark_data,
    machine_line,
    median,
    num_threads,
    percentile,
    precision_notes,
    precisions,
    script_main,
)

from tacred.data.batching import BucketBatchSampler, EncodedSplit  # noqa: E402
from tacred.models.config import NetworkConfig  # noqa: E402
from tacred.training.datamodule import TacredDataModule  # noqa: E402
from tacred.training.module import RelationExtractor  # noqa: E402


def batched_throughput(model: RelationExtractor, split: EncodedSplit, batch_size: int, precision: str,
                       repeats: int) -> float:
    """Sentences per second over the whole split in length-sorted batches, collation included (median pass)."""
    sampler = BucketBatchSampler(split.lengths, batch_size, shuffle=False)
    times = []
    for _ in range(repeats + 1):  # the first pass warms up
        start = time.perf_counter()
        with torch.inference_mode(), autocast(precision):
            for indices in sampler:
                model(split.collate(indices)).logits.argmax(-1)
        times.append(time.perf_counter() - start)
    return len(split) / median(times[1:])


def latencies(model: RelationExtractor, split: EncodedSplit, precision: str, count: int, seed: int = 0) -> list[float]:
    """Seconds to classify each of ``count`` random sentences alone (collate + forward + argmax)."""
    rng = random.Random(seed)
    chosen = [rng.randrange(len(split)) for _ in range(count + 5)]
    out = []
    with torch.inference_mode(), autocast(precision):
        for i in chosen:
            start = time.perf_counter()
            model(split.collate([i])).logits.argmax(-1)
            out.append(time.perf_counter() - start)
    return out[5:]  # the first calls warm up


def run(quick: bool = False) -> Table:
    """Throughput at batch 50 and 500, latency at batch 1, for fp32 / bf16 autocast and 1 / 2 threads."""
    repeats, count = (1, 5) if quick else (3, 300)
    kinds = precisions(quick)
    with tempfile.TemporaryDirectory(prefix="tacred-bench-data-") as scratch:
        data = benchmark_data(quick, Path(scratch))
        dm = TacredDataModule(data_dir=str(data.data_dir), labels=str(data.labels_file), entity_masking=False)
        split = dm.encoded("test")
        torch.manual_seed(0)
        network = NetworkConfig(**QUICK_NETWORK) if quick else NetworkConfig()
        model = RelationExtractor(vocab=dm.vocab, network=network).eval()
        table = Table(
            f"Inference, paper model with random weights, eval() + inference_mode, {len(split)} test sentences",
            ["precision", "threads", "sentences/s, batch 50", "sentences/s, batch 500", "latency median ms",
             "latency p90 ms"],
        )
        for precision in kinds:
            for threads in (1, 2):
                with num_threads(threads):
                    fast = [batched_throughput(model, split, size, precision, repeats) for size in (50, 500)]
                    single = latencies(model, split, precision, count)
                table.add(precision, threads, *fast, 1e3 * median(single), 1e3 * percentile(single, 90))
    table.notes += [*precision_notes(kinds),
        machine_line(),
        f"data: {data.source}.",
        f"throughput: the whole test split in length-sorted batches, collation included, median of {repeats} "
        "passes after a warm-up pass; bf16-mixed = torch.autocast('cpu', bfloat16) as Lightning uses it.",
        f"latency: one sentence at a time (collate + forward + argmax), {count} random test sentences.",
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    return script_main(run, "benchmarks/inference.py", __doc__, argv, quick_help="tiny generated data (a smoke test, not a measurement)")


if __name__ == "__main__":
    raise SystemExit(main())

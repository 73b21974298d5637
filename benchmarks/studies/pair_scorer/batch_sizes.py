"""The pair scorer's CPU time per sentence with the extraction's batches cut at other sizes (`batch_size`, pairs a
forward pass; tacred extract's default is 50): the batches `tacred extract` hands the scorer are recorded for each
size, then every size's batches are timed in turn, three rounds (one torch thread).

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the network
    python -m benchmarks.studies.pair_scorer.batch_sizes WORK 16 50 100 400 [--rounds 3]
"""

import argparse
import time
from pathlib import Path

import torch

from benchmarks.studies.pair_scorer.time_pair_scorer import SETS, recorded_batches, source_of


def main(work: Path, sizes: list[int], rounds: int = 3) -> None:
    from tacred.extraction.runner import DocumentExtractor, ExtractorSettings

    torch.set_num_threads(1)
    recorded = {}
    for size in sizes:
        settings = ExtractorSettings(ckpt_path=str(work / "paper" / "checkpoints" / "best.ckpt"), device="cpu",
                                     num_threads=1, batch_size=size)
        for name in SETS:
            extractor = DocumentExtractor(settings)
            recorded[size, name] = (extractor.predictor.backend,
                                    recorded_batches(settings, extractor, source_of(name), work))
    for round_ in range(1, rounds + 1):
        for (size, name), (backend, batches) in recorded.items():
            sentences = sum(len(b["words"]) for b in batches)
            start = time.process_time()
            for b in batches:
                backend.pair_probabilities(b)
            ms = 1000 * (time.process_time() - start) / sentences
            print(f"round {round_}  {name:5}  batch_size {size:3}  {len(batches):3} batches  {ms:.3f} ms/sentence",
                  flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("sizes", type=int, nargs="*", default=[16, 50, 100, 400])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    main(args.work, args.sizes, args.rounds)

"""The pair scorer's CPU time per sentence with the extraction's batches cut at other sizes (`batch_size`, pairs a
forward pass; tacred extract's default is 50): the batches `tacred extract` hands the scorer are recorded for each
size, then every size's batches are timed in turn, three rounds (one torch thread).

    python docs/results/extraction/masked_low_rank/time_pair_scorer.py WORK record   # once: the network
    python docs/results/extraction/batch_size/batch_sizes.py WORK 16 50 100 400
"""

import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "docs" / "results" / "extraction" / "masked_low_rank"))
from time_pair_scorer import SETS, recorded_batches  # noqa: E402


def main(work: Path, sizes: list[int]) -> None:
    from tacred.extraction.pipeline import DocumentExtractor, ExtractorSettings

    torch.set_num_threads(1)
    recorded = {}
    for size in sizes:
        settings = ExtractorSettings(ckpt_path=str(work / "paper" / "checkpoints" / "best.ckpt"), device="cpu",
                                     num_threads=1, batch_size=size)
        for name, source in SETS.items():
            extractor = DocumentExtractor(settings)
            recorded[size, name] = extractor.predictor.backend, recorded_batches(settings, extractor, source, work)
    for round_ in range(1, 4):
        for (size, name), (backend, batches) in recorded.items():
            sentences = sum(len(b["words"]) for b in batches)
            start = time.process_time()
            for b in batches:
                backend.pair_probabilities(b)
            ms = 1000 * (time.process_time() - start) / sentences
            print(f"round {round_}  {name:5}  batch_size {size:3}  {len(batches):3} batches  {ms:.3f} ms/sentence",
                  flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), [int(s) for s in sys.argv[2:]] or [16, 50, 100, 400])

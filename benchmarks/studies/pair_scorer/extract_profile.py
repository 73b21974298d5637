"""Where `tacred extract` spends its time outside spaCy and the relation model: cProfile over the extraction of 400
documents of five KBP37 test sentences with the benchmark's 300-d network (one torch thread), after 32 documents
of warm-up; prints tacred's own functions of extraction, inference and data by cumulative time (cProfile's times,
which its overhead inflates).

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the network
    [PYTHONPATH=CHECKOUT] python -m benchmarks.studies.pair_scorer.extract_profile WORK [--documents 400]
"""

import argparse
import cProfile
import io
import pstats
from pathlib import Path

import torch

from benchmarks import extract_throughput as bench
from benchmarks.studies.pair_scorer.time_pair_scorer import Sink, extractor, source_of

REPO = Path(__file__).resolve().parents[3]


def main(work: Path, documents: int = 400) -> None:
    import tacred
    from tacred.extraction.documents import Document
    from tacred.extraction.runner import run_extraction

    torch.set_num_threads(1)
    settings, ex = extractor(work)
    docs = bench._documents(source_of("kbp37") or work / "data", documents)
    run_extraction(settings, (Document(f"w{i}", t) for i, t in enumerate(docs[:32])), Sink(), 1, bench.CHUNK,
                   extractor=ex)
    profiler = cProfile.Profile()
    profiler.enable()
    run_extraction(settings, (Document(f"d{i}", t) for i, t in enumerate(docs)), Sink(), 1, bench.CHUNK,
                   extractor=ex)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(r"tacred/(extraction|inference|data)", 25)
    print(f"tacred: {Path(tacred.__file__).parent}")
    root = str(Path(tacred.__file__).parents[1]) + "/"
    for line in out.getvalue().splitlines():
        if line.strip() and not line.startswith(("   Ordered", "   List reduced")):
            print(line.replace(root, "").replace(str(REPO) + "/", ""))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--documents", type=int, default=400)
    args = parser.parse_args()
    main(args.work, args.documents)

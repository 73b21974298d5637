"""tacred extract's model time at 50, 200 and 1,000 pairs a forward pass (the 300-d paper network trained one epoch
on the demo corpus, 400 demo documents, one thread), twice in turn.

    [STOP_PID=PID] python -m benchmarks.studies.pair_scorer.batch_sweep [DOCUMENTS] [--quick]

STOP_PID: a process paused while it measures. DOCUMENTS: a documents file instead of the demo corpus. --quick: the
benchmark's quick network, three chunks of documents, one pass (a smoke run)."""

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path

import torch

from benchmarks import extract_throughput as et
from tacred.datasets.synthetic import write_corpus
from tacred.extraction.documents import Document
from tacred.extraction.output import Totals
from tacred.extraction.runner import DocumentExtractor, ExtractorSettings, run_extraction


class CountingSink:
    """An output that keeps nothing but the sentences written and the CPU clock at each chunk."""

    def __init__(self) -> None:
        self.sentences = 0
        self.stamps: list[tuple[float, int]] = []

    def done_chunks(self):
        return set()

    def write(self, done):
        self.sentences += sum(r.sentences for r in done.results)
        self.stamps.append((time.process_time(), self.sentences))

    def finish(self):
        return Totals()


def sweep(ckpt: Path, docs: list[str], passes: int = 2) -> None:
    for _ in range(passes):
        for size in (50, 200, 1000):
            settings = ExtractorSettings(ckpt_path=str(ckpt), device="cpu", num_threads=1, batch_size=size)
            ex = DocumentExtractor(settings)
            clock = et.ModelClock(ex.predictor)
            sink = CountingSink()
            run_extraction(settings, (Document(f"d{i}", t) for i, t in enumerate(docs)), sink, 1, et.CHUNK,
                           extractor=ex)
            (c0, s0), (c1, s1) = sink.stamps[0], sink.stamps[-1]
            print(f"bs {size}: {(s1 - s0) / (c1 - c0):.0f} sent/CPU-s, model "
                  f"{1000 * clock.seconds / sink.sentences:.3f} ms/sent", flush=True)


def main(documents: Path | None, quick: bool) -> None:
    work = Path(tempfile.mkdtemp(prefix="bsweep-"))
    write_corpus(work / "data", n_train=600, n_dev=100, n_test=200)
    ckpt = et._train("paper", work, work / "data", quick)
    torch.set_num_threads(1)
    docs = et._documents(documents or work / "data", 3 * et.CHUNK if quick else 400)  # rates count from the 2nd chunk
    stop_pid = int(os.environ.get("STOP_PID", "0"))
    if stop_pid:
        os.kill(stop_pid, signal.SIGSTOP)
    try:
        sweep(ckpt, docs, 1 if quick else 2)
    finally:
        if stop_pid:
            os.kill(stop_pid, signal.SIGCONT)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("documents", type=Path, nargs="?")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    main(args.documents, args.quick)

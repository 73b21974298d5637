"""tacred extract's model time at 50, 200 and 1,000 pairs a forward pass (the 300-d paper network trained one epoch
on the demo corpus, 400 demo documents, one thread), twice in turn.

    [STOP_PID=PID] python docs/results/extraction/batch_size/batch_sweep.py [DOCUMENTS]

STOP_PID: a process paused while it measures. DOCUMENTS: a documents file instead of the demo corpus."""

import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "benchmarks"))
import extract_throughput as et  # noqa: E402

from tacred.data.synthetic import write_corpus  # noqa: E402
from tacred.extraction.documents import Document  # noqa: E402
from tacred.extraction.output import Totals  # noqa: E402
from tacred.extraction.pipeline import DocumentExtractor, ExtractorSettings  # noqa: E402
from tacred.extraction.runner import run_extraction  # noqa: E402


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


def sweep(ckpt: Path, docs: list[str]) -> None:
    for _ in range(2):
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


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bsweep-"))
    write_corpus(work / "data", n_train=600, n_dev=100, n_test=200)
    ckpt = et._train("paper", work, work / "data", False)
    torch.set_num_threads(1)
    docs = et._documents(Path(sys.argv[1]) if len(sys.argv) > 1 else work / "data", 400)
    stop_pid = int(os.environ.get("STOP_PID", "0"))
    if stop_pid:
        os.kill(stop_pid, signal.SIGSTOP)
    try:
        sweep(ckpt, docs)
    finally:
        if stop_pid:
            os.kill(stop_pid, signal.SIGCONT)


if __name__ == "__main__":
    main()

"""tacred extract's model time at 50, 200 and 1,000 pairs a forward pass (the 300-d paper network trained one epoch
on the demo corpus, 400 demo documents, one thread), twice in turn. STOP_PID: a process paused while it measures."""
import sys, time, tempfile
from pathlib import Path
REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "benchmarks")); sys.path.insert(0, str(REPO))
import extract_throughput as et
from tacred.data.synthetic import write_corpus
import torch

work = Path(tempfile.mkdtemp(prefix="bsweep-"))
write_corpus(work / "data", n_train=600, n_dev=100, n_test=200)
ckpt = et._train("paper", work, work / "data", False)
torch.set_num_threads(1)
docs = et._documents(Path(sys.argv[1]) if len(sys.argv) > 1 else work / "data", 400)
from tacred.extraction.documents import Document
from tacred.extraction.output import Totals
from tacred.extraction.pipeline import DocumentExtractor, ExtractorSettings
from tacred.extraction.runner import run_extraction
import os, signal
stop_pid = int(os.environ.get("STOP_PID", "0"))
if stop_pid: os.kill(stop_pid, signal.SIGSTOP)
try:
    for rep in range(2):
        for bs in (50, 200, 1000):
            settings = ExtractorSettings(ckpt_path=str(ckpt), device="cpu", num_threads=1, batch_size=bs)
            ex = DocumentExtractor(settings)
            clock = et.ModelClock(ex.predictor)
            counted = {"s": 0}
            stamps = []
            class Sink:
                def done_chunks(self): return set()
                def write(self, done):
                    counted["s"] += sum(r.sentences for r in done.results)
                    stamps.append((time.process_time(), counted["s"]))
                def finish(self): return Totals()
            run_extraction(settings, (Document(f"d{i}", t) for i, t in enumerate(docs)), Sink(), 1, et.CHUNK, extractor=ex)
            (c0, s0), (c1, s1) = stamps[0], stamps[-1]
            print(f"bs {bs}: {(s1-s0)/(c1-c0):.0f} sent/CPU-s, model {1000*clock.seconds/counted['s']:.3f} ms/sent", flush=True)
finally:
    if stop_pid: os.kill(stop_pid, signal.SIGCONT)

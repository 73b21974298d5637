"""The torch profile of one version of tacred/models/pair_scoring.py over the recorded KBP37 batches (one thread):
its ten costliest operators by self CPU time.

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the batches
    python -m benchmarks.studies.pair_scorer.profile_pair_scorer WORK PAIR_SCORING_PY
"""

import pickle
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.studies.pair_scorer.ab_pair_scorer import extractor, load


def main(work: Path, path: str) -> None:
    torch.set_num_threads(1)
    version = load(path, "profiled_pair_scoring")
    _, ex = extractor(work)
    scorer = version.PairScorer(ex.predictor.backend.module.net.eval()).eval()
    batches = pickle.loads((work / "kbp37_batches.pkl").read_bytes())
    pairs = [version.SentencePairs(**{k: torch.from_numpy(v) for k, v in b.items()}) for b in batches]
    with torch.inference_mode():
        for p in pairs[:20]:
            scorer(p)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for p in pairs:
                scorer(p)
    print(path)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])

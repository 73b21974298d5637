"""The kernels Inductor generates for the pair scorer's compiled `_after_attention` (three demo batches), counted
from its generated code.

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the batches
    TORCH_LOGS=output_code python -m benchmarks.studies.pair_scorer.generated_kernels WORK [--backend inductor] 2>&1 \
        | grep -o -E 'extern_kernels\\.[a-z_]+|cpp_fused_[a-z_0-9]+' | sort | uniq -c"""

import argparse
from pathlib import Path

import torch

from benchmarks.studies.pair_scorer.compile_trial import batches, extractor
from tacred.models.pair_scoring import PairScorer


def main(work: Path, backend: str = "inductor") -> None:
    torch.set_num_threads(1)
    _, ex = extractor(work)
    scorer = PairScorer(ex.predictor.backend.module.net.eval()).eval()
    scorer._after_attention = torch.compile(scorer._after_attention, dynamic=True, backend=backend)
    with torch.inference_mode():
        for pairs in batches(work, "demo")[:3]:
            scorer(pairs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--backend", default="inductor", help="eager: Dynamo without Inductor (a smoke run)")
    args = parser.parse_args()
    main(args.work, args.backend)

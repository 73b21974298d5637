"""The kernels Inductor generates for the pair scorer's compiled `_after_attention` (three demo batches), counted
from its generated code.

    python docs/results/extraction/masked_low_rank/time_pair_scorer.py WORK record   # once: the batches
    TORCH_LOGS=output_code python docs/results/extraction/eager_limits/generated_kernels.py WORK 2>&1 \
        | grep -o -E 'extern_kernels\\.[a-z_]+|cpp_fused_[a-z_0-9]+' | sort | uniq -c"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_trial import batches, extractor  # noqa: E402

from tacred.models.pair_scoring import PairScorer  # noqa: E402


def main(work: Path) -> None:
    torch.set_num_threads(1)
    _, ex = extractor(work)
    scorer = PairScorer(ex.predictor.backend.module.net.eval()).eval()
    scorer._after_attention = torch.compile(scorer._after_attention, dynamic=True)
    with torch.inference_mode():
        for pairs in batches(work, "demo")[:3]:
            scorer(pairs)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

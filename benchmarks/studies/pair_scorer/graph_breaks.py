"""Where TorchDynamo breaks the graph of the pair scorer's `_attend_tables` (torch._dynamo.explain), on the first of
KBP37's recorded batches (entity masking: rewritten rows present).

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the batches
    python -m benchmarks.studies.pair_scorer.graph_breaks WORK

Prints the number of graphs and breaks, then each break's reason and the line it stopped at."""

import sys
from pathlib import Path

import torch
import torch._dynamo

from benchmarks.studies.pair_scorer.compile_trial import batches, extractor
from tacred.models.pair_scoring import PairScorer


def main(work: Path) -> None:
    torch.set_num_threads(1)
    _, ex = extractor(work)
    net = ex.predictor.backend.module.net.eval()
    scorer = PairScorer(net).eval()
    pairs = batches(work, "kbp37")[0]
    sent = pairs.sentence
    rows = (pairs.pair_words != pairs.words[sent]).nonzero(as_tuple=True)
    masked = (*rows, pairs.pair_words[rows])
    with torch.inference_mode():
        explained = torch._dynamo.explain(scorer._attend_tables)(
            pairs, sent, net.embed.bins(pairs.obj_positions), net.embed.bins(pairs.subj_positions), masked)
    print(f"{len(rows[0])} rewritten rows; {explained.graph_count} graphs, {explained.graph_break_count} breaks")
    for reason in explained.break_reasons:
        line = reason.user_stack[-1].line if reason.user_stack else ""
        print(f"- {str(reason.reason).splitlines()[0]}: {line}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Where the pair scorer's time goes, line by line: line_profiler (`pip install line_profiler`; not a tacred
dependency) over PairScorer's methods on the recorded KBP37 batches, one torch thread; prints the lines that took
more than 40 ms in all, after the share of the pairs' token rows that are padding (each batch is padded to its
longest sentence) in the recorded batches of both document sets.

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the batches
    python -m benchmarks.studies.pair_scorer.line_profile WORK [PAIR_SCORING_PY]
"""

import io
import pickle
import re
import sys
from pathlib import Path

import torch
from line_profiler import LineProfiler

from benchmarks.studies.pair_scorer.ab_pair_scorer import extractor, load

REPO = Path(__file__).resolve().parents[3]


def main(work: Path, path: str) -> None:
    torch.set_num_threads(1)
    for name in ("kbp37", "demo"):
        rows = real = 0
        for b in pickle.loads((work / f"{name}_batches.pkl").read_bytes()):
            rows += b["pair_words"].size
            real += int((~b["pad_mask"]).sum(1)[b["sentence"]].sum())
        print(f"{name}: {rows} token rows of pairs, {100 * (rows - real) / rows:.1f}% of them padding")
    version = load(path, "profiled_pair_scoring")
    _, ex = extractor(work)
    scorer = version.PairScorer(ex.predictor.backend.module.net.eval()).eval()
    batches = pickle.loads((work / "kbp37_batches.pkl").read_bytes())
    pairs = [version.SentencePairs(**{k: torch.from_numpy(v) for k, v in b.items()}) for b in batches]
    profiler = LineProfiler()
    cls = version.PairScorer
    for method in (cls.forward, cls._attend_tables, cls._after_attention, cls._masked_terms, cls._sentence_rows,
                   cls._word_rows):
        profiler.add_function(method)
    with torch.inference_mode():
        for p in pairs[:20]:
            scorer(p)
        profiler.enable()
        for p in pairs:
            scorer(p)
        profiler.disable()
    out = io.StringIO()
    profiler.print_stats(stream=out, output_unit=1e-3)
    print(f"{path}: {len(pairs)} batches; columns: line, hits, ms in all, ms a hit, % of its function, code")
    for line in out.getvalue().splitlines():
        if line.startswith("Total time") or line.startswith("Function"):
            print(line)
        fields = re.match(r"\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(.*)", line)
        if fields and float(fields.group(3)) > 40:
            print(line)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else str(REPO / "tacred" / "models" / "pair_scoring.py"))

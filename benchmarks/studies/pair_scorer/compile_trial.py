"""torch.compile (Inductor, CPU, dynamic shapes) on the pair scorer's two halves, on the recorded batches.

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the batches
    python -m benchmarks.studies.pair_scorer.compile_trial WORK [ROUNDS] [--backend inductor]

`_attend_tables` (everything up to the attention's output): compiled as it is and with Dynamo told to capture
data-dependent shapes and scalars (so that nonzero, unique and .numel() need not break the graph); prints the first
two lines of each failure. `_after_attention` (the feed-forward, the max-pool, the position-aware attention and the
classifier): compiled, warmed up on every batch once (the compile's seconds printed), then timed against the eager
scorer in one process, batch by batch in turns (contiguous_tail/ab_pair_scorer.py's `in_turns`), ROUNDS passes (default 3);
prints CPU ms per sentence, compiled/eager, the largest probability difference and the labels that agree.
`--backend eager`: Dynamo's graphs without Inductor's C++ compile (a smoke run: the figures measure nothing)."""

import argparse
import pickle
import time
from pathlib import Path

import torch
import torch._dynamo

from benchmarks.studies.pair_scorer.ab_pair_scorer import SETS, extractor, in_turns
from tacred.models.pair_scoring import PairScorer, SentencePairs


def batches(work: Path, name: str) -> list[SentencePairs]:
    recorded = pickle.loads((work / f"{name}_batches.pkl").read_bytes())
    return [SentencePairs(**{k: torch.from_numpy(v) for k, v in b.items()}) for b in recorded]


def attend_tables_trial(net, pairs: list[SentencePairs], backend: str = "inductor") -> None:
    for capture in (False, True):
        torch._dynamo.reset()
        torch._dynamo.config.capture_dynamic_output_shape_ops = capture
        torch._dynamo.config.capture_scalar_outputs = capture
        scorer = PairScorer(net).eval()
        scorer._attend_tables = torch.compile(scorer._attend_tables, dynamic=True, backend=backend)
        try:
            with torch.inference_mode():
                for p in pairs[:3]:
                    scorer(p)
            outcome = "compiled"
        except Exception as error:  # noqa: BLE001 - the failure is what this trial records
            lines = [line for line in str(error).splitlines() if line.strip()]
            outcome = f"{type(error).__name__}: {' '.join(lines[:2])}"
        print(f"_attend_tables, capture data-dependent shapes {capture}: {outcome}", flush=True)
    torch._dynamo.reset()
    torch._dynamo.config.capture_dynamic_output_shape_ops = False
    torch._dynamo.config.capture_scalar_outputs = False


def after_attention_trial(net, work: Path, rounds: int, backend: str = "inductor") -> None:
    scorers = {"eager": PairScorer(net).eval(), "compiled": PairScorer(net).eval()}
    scorers["compiled"]._after_attention = torch.compile(scorers["compiled"]._after_attention, dynamic=True,
                                                         backend=backend)
    with torch.inference_mode():
        for name in SETS:
            pairs = batches(work, name)
            sentences = sum(p.words.shape[0] for p in pairs)
            start, wall = time.process_time(), time.perf_counter()
            for p in pairs:
                scorers["compiled"](p)
            print(f"{name}: warm-up of the compiled scorer over {len(pairs)} batches {time.process_time() - start:.1f} "
                  f"CPU s ({time.perf_counter() - wall:.1f} s wall, compiles included)", flush=True)
            seconds, largest, agree, total = in_turns(scorers, pairs, rounds)
            ms = {k: 1000 * v / sentences / rounds for k, v in seconds.items()}
            print(f"{name}: {sentences} sentences; ms/sentence eager {ms['eager']:.3f}, compiled {ms['compiled']:.3f}, "
                  f"compiled/eager {seconds['compiled'] / seconds['eager']:.3f}; max |p_compiled - p_eager| "
                  f"{largest:.2e}, labels agree {agree}/{total}", flush=True)


def main(work: Path, rounds: int, backend: str = "inductor") -> None:
    torch.set_num_threads(1)
    _, ex = extractor(work)
    net = ex.predictor.backend.module.net.eval()
    print(f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}")
    attend_tables_trial(net, batches(work, "demo"), backend)
    after_attention_trial(net, work, rounds, backend)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("rounds", type=int, nargs="?", default=3)
    parser.add_argument("--backend", default="inductor")
    args = parser.parse_args()
    main(args.work, args.rounds, args.backend)

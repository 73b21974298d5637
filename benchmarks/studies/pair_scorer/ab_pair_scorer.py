"""Two versions of tacred/models/pair_scoring.py timed on the same recorded batches in one process, batch by batch
in turns (the order swapped every batch), so that the machine's drift, which moves whole runs by up to a third on
the project's 2-core machines, falls on both alike.

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the batches
    git show REV:tacred/models/pair_scoring.py > /tmp/old_pair_scoring.py
    python -m benchmarks.studies.pair_scorer.ab_pair_scorer WORK /tmp/old_pair_scoring.py \
        tacred/models/pair_scoring.py [ROUNDS]

Prints, per document set, each version's CPU milliseconds per sentence (one torch thread, ROUNDS passes over the
batches, default 3), their ratio, the largest probability difference between them and how many labels agree."""

import importlib.util
import pickle
import sys
import time
from pathlib import Path

import torch

from benchmarks.studies.pair_scorer.time_pair_scorer import SETS, extractor


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def in_turns(scorers: dict, pairs: list, rounds: int) -> tuple[dict, float, int, int]:
    """Two scorers (``{"old": ..., "new": ...}``, any two names) over ``pairs``, batch by batch in turns, the order
    swapped every batch, ``rounds`` passes: each one's CPU seconds, the largest difference of their probabilities
    and how many of the pairs' labels agree, of how many (the first pass)."""
    first, second = scorers
    seconds = {k: 0.0 for k in scorers}
    largest, agree, total = 0.0, 0, 0
    with torch.inference_mode():
        for rnd in range(rounds):
            for i, p in enumerate(pairs):
                out = {}
                for k in (first, second) if (i + rnd) % 2 == 0 else (second, first):
                    start = time.process_time()
                    out[k] = torch.softmax(scorers[k](p), dim=-1)
                    seconds[k] += time.process_time() - start
                if rnd == 0:
                    largest = max(largest, (out[first] - out[second]).abs().max().item())
                    agree += int((out[first].argmax(1) == out[second].argmax(1)).sum())
                    total += len(out[first])
    return seconds, largest, agree, total


def main(work: Path, old_path: str, new_path: str, rounds: int) -> None:
    torch.set_num_threads(1)
    versions = {"old": load(old_path, "old_pair_scoring"), "new": load(new_path, "new_pair_scoring")}
    _, ex = extractor(work)
    net = ex.predictor.backend.module.net.eval()
    scorers = {k: m.PairScorer(net).eval() for k, m in versions.items()}
    print(f"old: {old_path}\nnew: {new_path}")
    for name in SETS:
        batches = pickle.loads((work / f"{name}_batches.pkl").read_bytes())
        pairs = [versions["old"].SentencePairs(**{k: torch.from_numpy(v) for k, v in b.items()}) for b in batches]
        sentences = sum(p.words.shape[0] for p in pairs)
        seconds, largest, agree, total = in_turns(scorers, pairs, rounds)
        ms = {k: 1000 * v / sentences / rounds for k, v in seconds.items()}
        print(f"{name}: {sentences} sentences, {len(pairs)} batches; ms/sentence old {ms['old']:.3f}, new "
              f"{ms['new']:.3f}, new/old {seconds['new'] / seconds['old']:.3f}; max |p_new - p_old| {largest:.2e}, "
              f"labels agree {agree}/{total}", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 3)

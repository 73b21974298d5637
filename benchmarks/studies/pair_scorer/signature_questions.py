"""The candidate search's type check alone, before and after its answers were kept (SignatureFilter.pair_possible):
28,160 questions (every ordered pair of eight entity types, 440 times; KBP37's 2,000 test sentences ask 28,091 while
the benchmark's 300-d network extracts from them), asked of the benchmark's network's signatures, CPU milliseconds,
each version twice in turns.

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the network
    git show REV:tacred/extraction/signature_filter.py > /tmp/old_signature_filter.py
    python -m benchmarks.studies.pair_scorer.signature_questions WORK /tmp/old_signature_filter.py [--repeat 440]

"""

import argparse
import importlib.util
import itertools
import sys
import time
from pathlib import Path


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses read their module's namespace while the module runs
    spec.loader.exec_module(module)
    return module


def main(work: Path, old_path: str, repeat: int = 440) -> None:
    import tacred.extraction.preprocess as new
    from tacred.inference.api import open_model

    predictor = open_model(work / "paper" / "checkpoints" / "best.ckpt", device="cpu")
    signatures = getattr(predictor.encoder.vocab, "signatures", None)
    old = load(old_path, "old_signature_filter")
    types = ["PERSON", "ORGANIZATION", "LOCATION", "DATE", "MISC", "NUMBER", "CITY", "TITLE"]
    asked = list(itertools.product(types, types)) * repeat
    for name, module in (("before", old), ("after", new)) * 2:
        check = module.SignatureFilter(signatures, predictor.labels, predictor.encoder.no_relation)
        start = time.process_time()
        answers = [check.pair_possible(a, b, False) for a, b in asked]
        print(f"{name}: {1000 * (time.process_time() - start):.1f} ms for {len(asked)} questions, "
              f"{sum(answers)} possible")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("old_path")
    parser.add_argument("--repeat", type=int, default=440)
    args = parser.parse_args()
    main(args.work, args.old_path, args.repeat)

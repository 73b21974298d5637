"""Each variant of tacred/models/pair_scoring.py (``variants/VARIANT.diff``, written against 6c96b4f's file, which
later commits keep) timed against the checkout's own in one process on the recorded batches
(:mod:`.ab_pair_scorer`), one after another; ``chunked`` runs with CHUNK_ROWS set to the number after its colon.

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record   # once: the batches
    python -m benchmarks.studies.pair_scorer.run_ab WORK [ROUNDS] [--variants stacked_heads u_scale chunked:400 chunked:1000]

A variant whose diff no longer applies to the checkout's file is an error naming it: check out 6c96b4f's
tacred/models/pair_scoring.py to measure it."""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
VARIANTS = ("stacked_heads", "u_scale", "chunked:400", "chunked:1000")


def main(work: Path, rounds: int, variants: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.py"
        shutil.copy(REPO / "tacred" / "models" / "pair_scoring.py", base)
        for variant in variants:
            name, _, rows = variant.partition(":")
            patched = Path(tmp) / f"{name}.py"
            shutil.copy(base, patched)
            done = subprocess.run(["patch", "-s", str(patched), str(HERE / "variants" / f"{name}.diff")],
                                  capture_output=True, text=True, check=False)
            if done.returncode:
                raise SystemExit(f"variants/{name}.diff does not apply to tacred/models/pair_scoring.py: "
                                 f"{done.stdout}{done.stderr}")
            print(f"## {variant}", flush=True)
            env = {**os.environ, **({"CHUNK_ROWS": rows} if rows else {})}
            ran = subprocess.run([sys.executable, "-m", "benchmarks.studies.pair_scorer.ab_pair_scorer", str(work),
                                  str(base), str(patched), str(rounds)], cwd=REPO, env=env, capture_output=True,
                                 text=True, check=True)
            print("".join(line + "\n" for line in ran.stdout.splitlines() if line.startswith(("kbp37:", "demo:"))),
                  end="", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("rounds", type=int, nargs="?", default=3)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    args = parser.parse_args()
    main(args.work, args.rounds, args.variants)

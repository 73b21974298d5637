"""Run every benchmark and print its table (``make bench``); ``--quick`` is a seconds-long smoke test.

Each table names the machine it was measured on; ``--out FILE`` also writes the tables as Markdown.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data_pipeline  # noqa: E402
import end_to_end  # noqa: E402
import extract_throughput  # noqa: E402
import inference  # noqa: E402
import joint_cost  # noqa: E402
import relative_attention  # noqa: E402
import serving  # noqa: E402
import training  # noqa: E402
import transformer  # noqa: E402
from common import busy_warning, machine_line  # noqa: E402

BENCHMARKS: dict[str, Callable[[bool], str]] = {
    "attention": lambda quick: relative_attention.run(quick).render(),
    "training": lambda quick: training.run(quick).render(),
    "profile": lambda quick: training.profile_table(quick, steps=5 if quick else 40),
    "inference": lambda quick: inference.run(quick).render(),
    "data": lambda quick: data_pipeline.run(quick).render(),
    "end_to_end": lambda quick: end_to_end.run(quick).render(),
    "serving": lambda quick: serving.run(quick).render(),
    "transformer": lambda quick: transformer.run(quick).render(),
    "extract": lambda quick: extract_throughput.run(quick, rounds=3).render(),
    "joint": lambda quick: "\n".join(t.render() for t in joint_cost.run(quick)),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/run_all.py", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes and data: checks that everything runs")
    parser.add_argument("--only", nargs="+", choices=list(BENCHMARKS), default=list(BENCHMARKS),
                        help="run these benchmarks only (default: all, in this order)")
    parser.add_argument("--out", type=Path, default=None, help="also write the tables to this Markdown file")
    args = parser.parse_args(argv)
    header = f"# tacred benchmarks{' (quick mode: not a measurement)' if args.quick else ''}\n\n{machine_line()}\n"
    warning = busy_warning()
    if warning:
        header += f"\n{warning}\n"
    print(header, flush=True)
    parts = [header]
    start = time.perf_counter()
    for name in args.only:
        began = time.perf_counter()
        text = BENCHMARKS[name](args.quick)
        text += f"- ({name}: {time.perf_counter() - began:.0f} s)\n"
        print(text, flush=True)
        parts.append(text)
    footer = f"total: {time.perf_counter() - start:.0f} s"
    print(footer)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(parts) + f"\n{footer}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

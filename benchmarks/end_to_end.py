"""Benchmark 5: what a user sees. ``tacred fit`` and ``tacred test`` as separate processes, timed from outside.

Seconds per epoch = (wall of a 3-epoch fit − wall of a 1-epoch fit) / 2: training, validation, checkpoints and
everything else an epoch costs, without the start-up both runs share. Peak RSS is the operating system's
figure for each process (``os.wait4``). ``tacred test`` on the test split against the same on its first batch
(a file of 50 sentences): the difference gives sentences/s with start-up excluded, the short run the start-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    QUICK_FIT_ARGS,
    REPO,
    BenchData,
    Table,
    benchmark_data,
    machine_line,
    median,
    precision_notes,
    precisions,
    script_main,
)


@dataclass
class Process:
    """Wall seconds and peak resident memory (bytes) of one finished command."""

    wall_s: float
    peak_rss: int


def run_process(args: list[str], env: dict[str, str] | None = None) -> Process:
    """Run ``python -m tacred ARGS`` and measure it; its output is discarded unless it fails."""
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "tacred", *args], stdout=log, stderr=subprocess.STDOUT,
                                cwd=REPO, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            log.seek(0)
            raise RuntimeError(f"tacred {' '.join(args)} failed ({proc.returncode}):\n{log.read().decode()[-3000:]}")
    return Process(wall, usage.ru_maxrss * 1024)  # ru_maxrss is in KiB on Linux


def fit(data: BenchData, run_dir: Path, epochs: int, precision: str, threads: int, extra: list[str]) -> Process:
    return run_process([
        "fit", "--config", str(REPO / "configs" / "semeval.yaml"), "--data.data_dir", str(data.data_dir),
        "--data.labels", str(data.labels_file), "--run_dir", str(run_dir), "--resume", "never",
        "--trainer.max_epochs", str(epochs), "--trainer.precision", precision, "--num_threads", str(threads),
        *extra,
    ])


def test(ckpt: Path, out: Path, threads: int, extra: list[str]) -> Process:
    return run_process(["test", "--ckpt_path", str(ckpt), "--run_dir", str(out), "--num_threads", str(threads),
                        *extra])


def run(quick: bool = False, configs: list[tuple[str, int]] | None = None, repeats: int = 1) -> Table:
    """One row per (precision, threads): s/epoch, peak RSS of fit and test, test sentences/s and start-up."""
    # quick mode is a smoke test of the measurement: one row (each row is four processes of ~10 s start-up)
    notes = precision_notes(precisions(quick)) if configs is None else []
    configs = configs or ([("32-true", 2)] if quick else [(precision, 2) for precision in precisions(quick)])
    epochs = (1, 2) if quick else (1, 3)
    table = Table(
        "End to end, `tacred fit` / `tacred test` as a user runs them (configs/semeval.yaml, separate processes)",
        ["precision", "threads", f"fit {epochs[0]} epoch s", f"fit {epochs[1]} epochs s", "s/epoch", "fit peak RSS",
         f"dev F1 after {epochs[1]}", "test sentences/s", "test start-up s", "test peak RSS"],
    )
    with tempfile.TemporaryDirectory(prefix="tacred-bench-e2e-") as scratch:
        data = benchmark_data(quick, Path(scratch))
        examples = json.loads((data.data_dir / "test.json").read_text(encoding="utf-8"))
        n_test, batch = len(examples), 20 if quick else 50
        first_batch = Path(scratch) / "test_first_batch.json"
        first_batch.write_text(json.dumps(examples[:batch]), encoding="utf-8")
        extra = ["--data.batch_size", str(batch), *QUICK_FIT_ARGS] if quick else []
        for precision, threads in configs:
            short, long, full, one = [], [], [], []
            for r in range(repeats):  # alternate the two lengths, so a drift in the machine's speed hits both
                base = Path(scratch) / f"{precision}-{threads}-{r}"
                short.append(fit(data, base / "short", epochs[0], precision, threads, extra))
                long.append(fit(data, base / "long", epochs[1], precision, threads, extra))
                ckpt = base / "long" / "checkpoints" / "best.ckpt"
                full.append(test(ckpt, base / "test-full", threads, []))
                one.append(test(ckpt, base / "test-one", threads, ["--data.test_file", str(first_batch)]))
            per_epoch = median([(b.wall_s - a.wall_s) / (epochs[1] - epochs[0]) for a, b in zip(short, long, strict=True)])
            test_s = median([a.wall_s - b.wall_s for a, b in zip(full, one, strict=True)])
            table.add(precision, threads, median([p.wall_s for p in short]), median([p.wall_s for p in long]),
                      per_epoch, _mib(max(p.peak_rss for p in short + long)),
                      _last_dev_f1(Path(scratch) / f"{precision}-{threads}-0" / "long"),
                      (n_test - min(batch, n_test)) / max(test_s, 1e-9), median([p.wall_s for p in one]),
                      _mib(max(p.peak_rss for p in full)))
        table.notes += [*notes,
            machine_line(),
            f"data: {data.source}; random word vectors (no GloVe), as configs/semeval.yaml.",
            f"s/epoch = (wall of the {epochs[1]}-epoch fit − wall of the {epochs[0]}-epoch fit) / {epochs[1] - epochs[0]}: "
            "training, validation on dev, two checkpoint files, logging; start-up cancels out. "
            f"Median over {repeats} pair(s), the two lengths alternating.",
            "peak RSS: the largest resident set of the process (os.wait4), the most of the runs of the row.",
            f"test: `tacred test --ckpt_path best.ckpt` on the {n_test:,} test sentences vs the same on a file of "
            f"their first {batch}; sentences/s = the sentences beyond the first batch / the difference "
            "in wall time (start-up excluded); start-up = the wall time of the 1-batch run (imports, checkpoint, "
            "data, one batch, writing the predictions).",
        ]
    return table


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.0f} MiB"


def _last_dev_f1(run_dir: Path) -> str:
    """The dev F1 of the last epoch, from the run's metrics.csv."""
    from tacred.io import read_epoch_metrics

    values = read_epoch_metrics(run_dir / "metrics.csv", ["val/f1"]).series("val/f1")
    return f"{values[-1][1]:.4f}" if values else "–"


def main(argv: list[str] | None = None) -> int:
    return script_main(run, "benchmarks/end_to_end.py", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())

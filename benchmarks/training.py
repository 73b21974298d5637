"""Benchmark 2: end-to-end training throughput of the paper's model through the real ``tacred fit`` path.

The whole Lightning loop with data loading, checkpoints and validation runs in-process; a callback times each
training step and splits it into data + loop, forward, backward and gradient clipping + SGD step.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    QUICK_FIT_ARGS,
    REPO,
    BenchData,
    Table,
    benchmark_data,
    machine_line,
    precision_notes,
    precisions,
    quiet_stderr,
)

PHASES = ("data", "forward", "backward", "update")  # the four parts of a training step, in order


@dataclass
class EpochTiming:
    """Wall-clock seconds of one training epoch, split by phase; ``train_s`` excludes validation."""

    sentences: int = 0
    steps: int = 0
    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    train_s: float = 0.0
    train_cpu_s: float = 0.0  # CPU time of this process (all threads) over the same span: robust to other load
    epoch_s: float = 0.0  # train + validation + checkpoints, from the epoch's start to its end
    val_s: float = 0.0
    val_sentences: int = 0


class StepTimer(Callback):
    """Times every training step: data + loop (previous step's end → this step's start), forward (+ zero_grad),
    backward, update (gradient clipping, SGD step, logging). Validation and the sanity check are timed apart."""

    def __init__(self) -> None:
        self.epochs: list[EpochTiming] = []
        self._epoch_start = self._last = self._val_start = self._cpu_start = 0.0

    def _add(self, phase: str) -> None:
        now = time.perf_counter()
        self.epochs[-1].phases[phase] += now - self._last
        self._last = now

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self.epochs.append(EpochTiming())
        self._cpu_start = time.process_time()
        self._epoch_start = self._last = time.perf_counter()

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self._add("data")

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: torch.Tensor) -> None:
        self._add("forward")

    def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
        self._add("backward")

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self._add("update")
        epoch = self.epochs[-1]
        epoch.sentences += len(batch)
        epoch.steps += 1
        epoch.train_s = self._last - self._epoch_start
        epoch.train_cpu_s = time.process_time() - self._cpu_start

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        self._val_start = time.perf_counter()

    def on_validation_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int,
                                dataloader_idx: int = 0) -> None:
        if self.epochs and not trainer.sanity_checking:
            self.epochs[-1].val_sentences += len(batch)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if self.epochs and not trainer.sanity_checking:
            self.epochs[-1].val_s += time.perf_counter() - self._val_start

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self.epochs[-1].epoch_s = time.perf_counter() - self._epoch_start


class ProfileSteps(Callback):
    """Runs ``torch.profiler`` from the 2nd training step of epoch ``epoch`` (0-based) over ``steps`` steps, or
    to the epoch's end, and keeps the profile and the number of steps it covers."""

    def __init__(self, epoch: int = 1, steps: int = 40) -> None:
        self.epoch, self.steps = epoch, steps
        self.profile: torch.profiler.profile | None = None
        self.profiled = 0
        self._running = False

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if trainer.current_epoch == self.epoch and batch_idx == 1 and self.profile is None:
            self.profile = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            with quiet_stderr():
                self.profile.__enter__()
            self._running = True

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self._running:
            self.profiled += 1
            if self.profiled == self.steps:
                self._stop()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._running and self.profile is not None:
            with quiet_stderr():
                self.profile.__exit__(None, None, None)
            self._running = False


@contextlib.contextmanager
def _quiet_lightning() -> Iterator[None]:
    names = ("lightning.pytorch", "lightning.fabric", "lightning", "tacred")
    levels = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            for n, level in levels.items():
                logging.getLogger(n).setLevel(level)


def fit_args(data: BenchData, run_dir: Path, precision: str, threads: int, epochs: int, extra: list[str]) -> list[str]:
    """``tacred fit`` options: configs/semeval.yaml (the paper's model and recipe) on ``data``."""
    return [
        "--config", str(REPO / "configs" / "semeval.yaml"), "--data.data_dir", str(data.data_dir),
        "--data.labels", str(data.labels_file), "--run_dir", str(run_dir), "--resume", "never",
        "--trainer.max_epochs", str(epochs), "--trainer.precision", precision, "--num_threads", str(threads),
        "--trainer.enable_model_summary", "false", "--trainer.enable_progress_bar", "false", *extra,
    ]


def train(data: BenchData, precision: str, threads: int, epochs: int, callbacks: list[Callback],
          extra: list[str] | None = None) -> None:
    """Run ``tacred fit`` in this process (a fresh run folder in a temporary directory) with ``callbacks``."""
    from tacred.training import fit

    before = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="tacred-bench-") as tmp, _quiet_lightning():
        try:
            fit(args=fit_args(data, Path(tmp) / "run", precision, threads, epochs, extra or []), callbacks=callbacks)
        finally:
            torch.set_num_threads(before)


def run(quick: bool = False, epochs: int = 2, configs: list[tuple[str, int]] | None = None) -> Table:
    """Training throughput for each (precision, threads); the first epoch (warm-up) is not counted."""
    if epochs < 2:
        raise ValueError(f"epochs must be at least 2 (the first one is a warm-up), got {epochs}")
    notes = precision_notes(precisions(quick)) if configs is None else []
    configs = configs or [(precision, threads) for precision in precisions(quick) for threads in (1, 2)]
    with tempfile.TemporaryDirectory(prefix="tacred-bench-data-") as scratch:
        data = benchmark_data(quick, Path(scratch))
        table = Table(
            "Training throughput, `tacred fit --config configs/semeval.yaml` (paper model, batch 50)",
            ["precision", "threads", "train sentences/s", "sentences/CPU-s", "ms/step", "data+loop", "forward", "backward",
             "clip+SGD", "epoch s (train+val+ckpt)", "val sentences/s"],
        )
        for precision, threads in configs:
            timer = StepTimer()
            train(data, precision, threads, epochs, [timer], QUICK_FIT_ARGS if quick else None)
            measured = timer.epochs[1:]
            sentences = sum(e.sentences for e in measured)
            seconds = sum(e.train_s for e in measured)
            steps = sum(e.steps for e in measured)
            share = {p: sum(e.phases[p] for e in measured) / seconds for p in PHASES}
            val = sum(e.val_sentences for e in measured) / max(sum(e.val_s for e in measured), 1e-9)
            cpu = sum(e.train_cpu_s for e in measured)
            table.add(precision, threads, sentences / seconds, sentences / cpu, 1e3 * seconds / steps,
                      *(f"{100 * share[p]:.0f}%" for p in PHASES),
                      sum(e.epoch_s for e in measured) / len(measured), val)
        table.notes += [*notes,
            machine_line(),
            f"data: {data.source}.",
            f"{epochs} epochs per row; epoch 1 (warm-up) is not counted. train sentences/s = training sentences / "
            "wall time from the epoch's start to its last step (data loading included, validation excluded); "
            "sentences/CPU-s: the same sentences / the process's CPU time (all threads), which other load barely changes.",
            "step phases: data+loop = previous step's end → this step's start (batch fetch, Lightning's loop); "
            "forward includes zero_grad; clip+SGD = gradient clipping, the SGD step and logging.",
        ]
    return table


def profile_table(quick: bool = False, steps: int = 40, precision: str = "32-true", threads: int = 1,
                  rows: int = 15) -> str:
    """The ops that dominate ``steps`` training steps of epoch 2 (torch.profiler, self CPU time)."""
    with tempfile.TemporaryDirectory(prefix="tacred-bench-data-") as scratch:
        data = benchmark_data(quick, Path(scratch))
        profiler = ProfileSteps(epoch=1, steps=steps)
        train(data, precision, threads, 2, [profiler],
              ["--trainer.limit_train_batches", str(steps + 1), *(QUICK_FIT_ARGS if quick else [])])
    if profiler.profile is None:
        raise RuntimeError("the profiler never started: epoch 2 has fewer than 2 training steps")
    averages = profiler.profile.key_averages()
    text = averages.table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=48)
    return (f"### Profile of {profiler.profiled} training steps of epoch 2 ({precision}, {threads} thread(s))\n\n"
            f"```\n{text}```\n\n- {machine_line()}\n- data: {data.source}.\n"
            "- self CPU time per op over the whole Lightning loop (forward, backward, clipping, SGD, collation).\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/training.py", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny generated data (a smoke test, not a measurement)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per configuration; the first is not counted")
    parser.add_argument("--profile", action="store_true", help="print a torch.profiler table of training steps instead")
    parser.add_argument("--precision", default="32-true", help="with --profile: 32-true or bf16-mixed")
    parser.add_argument("--threads", type=int, default=1, help="with --profile: torch threads")
    parser.add_argument("--steps", type=int, default=40, help="with --profile: profiled steps")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile_table(args.quick, args.steps, args.precision, args.threads))
    else:
        print(run(args.quick, args.epochs).render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

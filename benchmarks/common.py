"""Shared helpers of the benchmarks: machine description, timing, peak memory, result tables and benchmark data.

Every table is printed with the machine it was measured on (cores, CPU model, torch version, threads, precision).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tacred.devices import BF16_FLAGS, cpu_flags

REPO = Path(__file__).resolve().parents[1]
SEMEVAL_DIR = REPO / "data" / "semeval"
SEMEVAL_SOURCE = REPO.parent / "shared" / "data" / "semeval2010_task8"
# Quick mode's network: small enough that the bf16-mixed rows take seconds on a CPU without bf16 instructions
# (the paper's network under bf16 emulation makes `--quick` minutes long); its figures measure nothing anyway.
QUICK_NETWORK = {"word_dim": 24, "ffn_dim": 16, "attention_dim": 16}
QUICK_FIT_ARGS = [arg for key, value in QUICK_NETWORK.items() for arg in (f"--model.network.{key}", str(value))]


# -- machine -------------------------------------------------------------------------------------------
def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux) or ``platform.processor()``."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


BF16_SKIPPED = ("bf16-mixed rows skipped: this CPU has no bf16 instructions (avx512_bf16 or AMX), where eager bf16 "
                "ran 10-50x slower than fp32 (docs/performance.md); TACRED_BENCH_BF16=1 measures them anyway.")


def precisions(quick: bool) -> tuple[str, ...]:
    """The precisions worth a row here: bf16-mixed only where the CPU has bf16 instructions, where
    ``TACRED_BENCH_BF16=1`` asks for it, or in quick mode (a smoke test of the bf16 code path, tiny network)."""
    bf16 = quick or os.environ.get("TACRED_BENCH_BF16") == "1" or bool(BF16_FLAGS & set(cpu_flags()))
    return ("32-true", "bf16-mixed") if bf16 else ("32-true",)


def precision_notes(kinds: tuple[str, ...]) -> list[str]:
    """The table note saying that bf16-mixed rows were skipped, when ``kinds`` (from :func:`precisions`) lacks them."""
    return [] if "bf16-mixed" in kinds else [BF16_SKIPPED]


def machine_line() -> str:
    """One line naming the machine; benchmark tables add their own threads and precision columns."""
    cores = os.cpu_count() or 0
    load = ", load {:.1f}/{:.1f}/{:.1f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else ""
    omp = f", OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}" if os.environ.get("OMP_WAIT_POLICY") else ""
    return (f"machine: {cores} cores, {cpu_model()} ({' '.join(cpu_flags()) or 'no avx flags found'}), "
            f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}), "
            f"Python {platform.python_version()}{load}{omp}")


def busy_warning() -> str | None:
    """A warning when other processes already keep the cores busy: timings then say little about the code."""
    if not hasattr(os, "getloadavg"):
        return None
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load < 0.75 * cores:
        return None
    return (f"WARNING: load average {load:.1f} on {cores} cores before starting: the figures below are slowed "
            "down by other processes; with 2 threads OpenMP's spinning makes it far worse (OMP_WAIT_POLICY=PASSIVE "
            "avoids that). Run on a quiet machine for numbers to publish.")


@contextlib.contextmanager
def num_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, then restore the previous number."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def autocast(precision: str) -> contextlib.AbstractContextManager:
    """``32-true`` → no autocast; ``bf16-mixed`` → CPU autocast to bfloat16 (what Lightning does)."""
    if precision == "bf16-mixed":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    if precision == "32-true":
        return contextlib.nullcontext()
    raise ValueError(f"precision must be '32-true' or 'bf16-mixed', got {precision!r}")


# -- measuring ---------------------------------------------------------------------------------------
def time_repeats(fn: Callable[[], object], repeats: int, warmup: int = 1) -> list[float]:
    """Wall-clock seconds of ``repeats`` calls of ``fn`` after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation between the closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of an empty list")
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Silence the profiler's own start/stop lines, which the C++ side writes straight to file descriptor 2."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def peak_cpu_memory(fn: Callable[[], object]) -> int:
    """Peak bytes held by tensors that ``fn`` allocates on the CPU, relative to its start.

    ``torch.profiler`` with ``profile_memory=True`` records every allocation and free of the CPU allocator
    (a ``[memory]`` event with a signed byte count); summing them in time order gives the live bytes at each
    moment, and the maximum is the peak. Tensors that existed before the call do not count, those freed
    inside it do — exactly the extra memory the call needs, independent of the allocator's caching.
    """
    from torch.profiler import ProfilerActivity, profile

    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for event in events:
        live += event.nbytes()
        peak = max(peak, live)
    return peak


# -- tables ------------------------------------------------------------------------------------------
@dataclass
class Table:
    """A titled Markdown table plus notes; ``render`` gives the text printed by the benchmarks."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: row has {len(cells)} cells, the table has {len(self.columns)} columns")
        self.rows.append([_cell(c) for c in cells])

    def render(self) -> str:
        widths = [max(len(c), *(len(r[i]) for r in self.rows)) for i, c in enumerate(self.columns)]
        line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"  # noqa: E731
        out = [f"### {self.title}", "", line(self.columns), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        out += [line(r) for r in self.rows]
        out += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(out).rstrip() + "\n"


def _cell(value: object) -> str:
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}" if value >= 1 else f"{value:.3g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def human_bytes(nbytes: float) -> str:
    """``1.5 KiB``, ``23.6 MiB``, ``1.2 GiB``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:,.1f} {unit}"
    return f"{nbytes:.0f} B"


# -- data --------------------------------------------------------------------------------------------
@dataclass
class BenchData:
    """The TACRED-format folder a benchmark reads and a sentence saying where it came from."""

    data_dir: Path
    source: str

    @property
    def labels_file(self) -> Path:
        return self.data_dir / "labels.json"


def benchmark_data(quick: bool, scratch: Path) -> BenchData:
    """SemEval-2010 converted to TACRED format (``data/semeval``, converted on first use when the raw
    data is beside the repository); otherwise, and always in quick mode, generated sentences of the same
    length distribution (log-normal fitted to SemEval: mean 19, clipped to 4–100 tokens)."""
    why = "quick mode"
    if not quick:
        why = f"SemEval data not found at {SEMEVAL_DIR} or {SEMEVAL_SOURCE}"
        if not (SEMEVAL_DIR / "train.json").is_file() and (SEMEVAL_SOURCE / "TRAIN_FILE.TXT").is_file():
            print(f"converting SemEval-2010 into {SEMEVAL_DIR} (once) ...", flush=True)
            done = subprocess.run([sys.executable, "-m", "tacred", "convert", "semeval2010", str(SEMEVAL_SOURCE),
                                   str(SEMEVAL_DIR)])
            if done.returncode != 0:
                why = f"converting {SEMEVAL_SOURCE} failed with exit status {done.returncode}"
        if (SEMEVAL_DIR / "train.json").is_file() and (SEMEVAL_DIR / "labels.json").is_file():
            return BenchData(SEMEVAL_DIR, f"SemEval-2010 Task 8 in TACRED format ({SEMEVAL_DIR})")
    sizes = (100, 60, 60) if quick else (6500, 1500, 2717)
    out = scratch / ("generated-quick" if quick else "generated")
    write_generated_data(out, *sizes)
    return BenchData(out, f"generated TACRED-format sentences, {sizes[0]}/{sizes[1]}/{sizes[2]}, "
                          f"log-normal lengths fitted to SemEval, mean 19, at most 100 tokens ({why})")


LABELS = ["no_relation"] + [f"rel_{k}" for k in range(18)]  # SemEval's 18 directed relations + Other


def generated_sentence_length(rng: random.Random) -> int:
    """Log-normal lengths clipped to [4, 100]: the fit to SemEval's training split (log-mean 2.87, log-sd 0.42,
    mean 19.3, max 97)."""
    return max(4, min(100, round(rng.lognormvariate(2.87, 0.42))))


def write_generated_data(out: Path, n_train: int, n_dev: int, n_test: int, seed: int = 0) -> None:
    """Random TACRED-format examples (Zipf-distributed words from a 17k vocabulary) plus ``labels.json``."""
    from tacred import constants as C

    if (out / "labels.json").is_file():
        return
    rng = random.Random(seed)
    vocab = [f"w{k}" for k in range(17_000)]
    weights = [1.0 / (k + 10) for k in range(len(vocab))]
    out.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("dev", n_dev), ("test", n_test)):
        examples = []
        for i in range(n):
            length = generated_sentence_length(rng)
            tokens = rng.choices(vocab, weights, k=length)
            s, o = rng.sample(range(length), 2)
            examples.append({
                "id": f"gen-{split}-{i}", "relation": rng.choice(LABELS), "token": tokens,
                "subj_start": s, "subj_end": s, "obj_start": o, "obj_end": o,
                "subj_type": "NOMINAL", "obj_type": "NOMINAL",
                "stanford_pos": rng.choices(C.POS_TAGS[:20], k=length), "stanford_ner": ["O"] * length,
            })
        (out / f"{split}.json").write_text(json.dumps(examples), encoding="utf-8")
    (out / "labels.json").write_text(json.dumps(LABELS), encoding="utf-8")


def run_worker(script: str, task: dict, env: dict[str, str] | None = None) -> dict:
    """One benchmark row in a fresh process (``python SCRIPT --worker TASK``), so its peak memory is its own: the JSON
    object the worker printed last. A failed row is an error naming the task and the worker's stderr."""
    done = subprocess.run([sys.executable, script, "--worker", json.dumps(task)], capture_output=True, text=True,
                          cwd=REPO, env=None if env is None else {**os.environ, **env})
    if done.returncode != 0:
        raise RuntimeError(f"benchmark row {task} failed (status {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def answered_as_worker(argv: list[str], worker: Callable[[dict], dict]) -> bool:
    """True when ``argv`` is ``--worker TASK`` (a row :func:`run_worker` asked for): the row ran here and its figures
    are printed as one JSON line."""
    if argv[:1] != ["--worker"]:
        return False
    print(json.dumps(worker(json.loads(argv[1]))))
    return True


def script_main(run: Callable[[bool], Table], prog: str, doc: str | None, argv: list[str] | None,
                quick_help: str = "tiny sizes (a smoke test, not a measurement)") -> int:
    """The command line of a single benchmark script: ``--quick`` and the printed table."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=doc)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    print(run(parser.parse_args(argv).quick).render())
    return 0

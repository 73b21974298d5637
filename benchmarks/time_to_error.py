"""Time to the first error: how long ``tacred`` takes to refuse a wrong option value, a missing file or a malformed
data file (a new process each time, median of ``--repeats``), and the error line it prints.

    python benchmarks/time_to_error.py [--repeats 3] [--repo CHECKOUT]   # CHECKOUT: another version's tree, to compare
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cases(work: Path, repo: Path) -> list[tuple[str, list[str]]]:
    """(what is wrong, the command's arguments); files the cases need are written into ``work``."""
    from tacred.datasets.synthetic import write_corpus

    bad = work / "bad_data"
    bad.mkdir(exist_ok=True)
    (bad / "train.json").write_text(json.dumps({"data": []}))
    write_corpus(work / "data", n_train=40, n_dev=10, n_test=10)
    records = json.loads((work / "data" / "train.json").read_text(encoding="utf-8"))
    broken = {"bad_json": json.dumps(records)[:-40],
              "missing_field": json.dumps([*records[:7], {k: v for k, v in records[7].items() if k != "relation"}]),
              "bad_span": json.dumps([*records[:3], {**records[3], "obj_end": 99}])}
    for name, text in broken.items():
        (work / name).mkdir(exist_ok=True)
        (work / name / "train.json").write_text(text, encoding="utf-8")
        (work / name / "dev.json").write_text(json.dumps(records[:10]), encoding="utf-8")
    demo = [str(repo / "configs" / "demo.yaml"), "--data.data_dir", str(work / "data"), "--run_dir", str(work / "run")]
    # a run folder as `tacred fit` leaves it (a real checkpoint, trained here for one epoch: reading it first would
    # show in the time), its config.yaml pointed at data with a bad test example
    import shutil

    import yaml

    from tacred.analysis.inspection import train_demo_model

    trained = train_demo_model(work / "trained", epochs=1, n_train=40, n_dev=10, n_test=10, word_dim=24).parents[1]
    run = work / "run_folder"
    shutil.copytree(trained, run, dirs_exist_ok=True)
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    config["data"]["data_dir"] = str(work / "bad_span")
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (work / "bad_span" / "test.json").write_text(broken["bad_span"], encoding="utf-8")
    return [
        ("a bad option value (--num_threads -1)", ["fit", "--config", *demo, "--num_threads", "-1"]),
        ("a bad trainer value (--trainer.max_epochs -3)", ["fit", "--config", *demo, "--trainer.max_epochs", "-3"]),
        ("a bad model value (--model.lr 0)", ["fit", "--config", *demo, "--model.lr", "0"]),
        ("a bad network value (...network.num_heads 7)", ["fit", "--config", *demo, "--model.network.num_heads", "7"]),
        ("a missing config file", ["fit", "--config", str(work / "missing.yaml")]),
        ("a missing data folder", ["fit", "--config", *demo, "--data.data_dir", str(work / "missing")]),
        ("a missing checkpoint (test)", ["test", "--ckpt_path", str(work / "missing.ckpt")]),
        ("a malformed data file (an object)", ["fit", "--config", *demo, "--data.data_dir", str(bad)]),
        ("a malformed data file (bad JSON)", ["fit", "--config", *demo, "--data.data_dir", str(work / "bad_json")]),
        ("an example without a field", ["fit", "--config", *demo, "--data.data_dir", str(work / "missing_field")]),
        ("an example with a span outside its sentence",
         ["fit", "--config", *demo, "--data.data_dir", str(work / "bad_span")]),
        ("a bad example, test of a run's checkpoint",
         ["test", "--ckpt_path", str(run / "checkpoints" / "last.ckpt")]),
    ]


def time_to_error(args: list[str], cwd: Path, repo: Path) -> tuple[float, int, str]:
    """Seconds until ``tacred ARGS`` (the package of ``repo``) exits, its status and its last line of standard
    error."""
    env = {**os.environ, "PYTHONPATH": str(repo), "WANDB_MODE": "offline", "HF_DATASETS_OFFLINE": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tacred", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    seconds = time.perf_counter() - start
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return seconds, done.returncode, lines[-1] if lines else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose tacred runs (default: this one)")
    args = parser.parse_args(argv)
    print(f"time to error of {args.repo}: median of {args.repeats} new processes each, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'case':<46} {'seconds':>8} {'status':>6}  error")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, command in cases(work, args.repo.resolve()):
            runs = [time_to_error(command, work, args.repo.resolve()) for _ in range(args.repeats)]
            seconds = statistics.median(r[0] for r in runs)
            print(f"{name:<46} {seconds:8.2f} {runs[-1][1]:>6}  {runs[-1][2][:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

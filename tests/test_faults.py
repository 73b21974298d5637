"""Recovery from faults: a fit killed with SIGKILL mid-run and started again with the same command ends exactly
like an uninterrupted run; a corrupt or missing checkpoint is a clear error (exit 2), never a silent fresh start."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.conftest import REPO, run_in_process

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "HF_DATASETS_OFFLINE": "1"}
# small and quick, but with real learning (dev F1 > 0) and lr decays from epoch 1 on, so a resumed run that
# lost the scheduler's state, the sampler's epoch or the dropout stream would drift visibly
FIT = ["--config", str(REPO / "configs" / "demo.yaml"), "--model.network.word_dim", "24",
       "--model.network.ffn_dim", "16", "--model.network.attention_dim", "16", "--trainer.enable_progress_bar",
       "false", "--trainer.enable_model_summary", "false", "--data.batch_size", "10", "--model.lr", "0.3",
       "--model.decay_start_epoch", "1", "--trainer.max_epochs", "4"]


def fit_command(data: Path, run: Path) -> list[str]:
    return [sys.executable, "-m", "tacred", "fit", *FIT, "--data.data_dir", str(data), "--run_dir", str(run)]


def val_by_epoch(run: Path) -> dict[int, tuple[str, str]]:
    """Epoch → (val/f1, val/loss) as written; a row repeated by the restarted run counts once (the last)."""
    with open(run / "metrics.csv", encoding="utf-8") as f:
        return {int(r["epoch"]): (r["val/f1"], r["val/loss"]) for r in csv.DictReader(f) if r.get("val/f1")}


def lr_by_epoch(run: Path) -> list[float]:
    ckpt = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    return [group["lr"] for group in ckpt["optimizer_states"][0]["param_groups"]]


def scores_on_test(run: Path, ckpt: str = "last.ckpt") -> dict:
    run_in_process("test", "--ckpt_path", str(run / "checkpoints" / ckpt), "--overwrite", "true")
    return json.loads((run / "test_metrics.json").read_text())


@pytest.fixture(scope="module")
def uninterrupted(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("uninterrupted")
    proc = subprocess.run(fit_command(demo_data, run), cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run


@pytest.mark.slow  # a fit subprocess (the uninterrupted run), killed and restarted
def test_a_run_killed_mid_training_resumes_and_ends_like_an_uninterrupted_one(uninterrupted, demo_data, tmp_path):
    run = tmp_path / "killed"
    last = run / "checkpoints" / "last.ckpt"
    proc = subprocess.Popen(fit_command(demo_data, run), cwd=REPO, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not last.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)  # epoch 0 is saved: this lands in a later epoch
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    killed_at = torch.load(last, map_location="cpu", weights_only=False)["epoch"]
    assert killed_at < 3, "the killed run had already saved its final epoch"

    again = subprocess.run(fit_command(demo_data, run), cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resuming from {last}" in again.stderr

    expected = val_by_epoch(uninterrupted)
    assert sorted(expected) == [0, 1, 2, 3]
    assert val_by_epoch(run) == expected  # every epoch's dev F1 and loss, to the last digit
    assert lr_by_epoch(run) == lr_by_epoch(uninterrupted)
    assert scores_on_test(run) == scores_on_test(uninterrupted)
    assert scores_on_test(run, "best.ckpt") == scores_on_test(uninterrupted, "best.ckpt")


@pytest.mark.slow  # a fit subprocess (the uninterrupted run), killed and restarted
def test_a_corrupt_last_checkpoint_stops_the_same_command_with_a_clear_error(uninterrupted, demo_data, tmp_path):
    run = tmp_path / "corrupt"
    (run / "checkpoints").mkdir(parents=True)
    good = (uninterrupted / "checkpoints" / "last.ckpt").read_bytes()
    last = run / "checkpoints" / "last.ckpt"
    last.write_bytes(good[: len(good) // 2])  # cut off while copying, say
    # the same command in this process: the subject is its answer, not the process
    ran = run_in_process(*fit_command(demo_data, run)[3:], check=False)
    assert ran.status == 2
    assert str(last) in ran.stderr and "corrupt" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert not (run / "metrics.csv").exists()  # nothing was trained from scratch
    assert last.read_bytes() == good[: len(good) // 2]  # and the file was left for the user to inspect


@pytest.mark.slow  # a fit subprocess (the uninterrupted run), killed and restarted
@pytest.mark.parametrize("problem", ["missing", "truncated", "empty"])
def test_a_bad_ckpt_path_is_a_clear_error(problem, uninterrupted, demo_data, tmp_path):
    path = tmp_path / f"{problem}.ckpt"
    if problem == "truncated":
        path.write_bytes((uninterrupted / "checkpoints" / "last.ckpt").read_bytes()[:2000])
    elif problem == "empty":
        path.write_bytes(b"")
    run = tmp_path / "run"
    ran = run_in_process(*fit_command(demo_data, run)[3:], "--ckpt_path", str(path), check=False)
    assert ran.status == 2, ran.stderr[-2000:]
    assert str(path) in ran.stderr and "Traceback" not in ran.stderr
    assert not (run / "checkpoints" / "last.ckpt").exists()

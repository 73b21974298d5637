"""A fit stopped inside an epoch resumes from the mid-epoch ``last.ckpt`` that ``--checkpoint_minutes`` writes, and
ends where an uninterrupted run ends: the same dev scores every epoch and the same weights."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.pytorch.callbacks import Callback

from tacred.training.resume import RESUME_KEY, resume_point
from tests.conftest import REPO, run_in_process

SMALL = ["--model.network.word_dim", "24", "--model.network.ffn_dim", "16", "--model.network.attention_dim", "16",
         "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false",
         "--data.batch_size", "20", "--trainer.max_epochs", "2"]


class CrashAt(Callback):
    """Stands for a crash (or SIGKILL) right after training batch ``batch`` of epoch ``epoch`` (both 0-based)."""

    def __init__(self, epoch: int, batch: int) -> None:
        self.epoch, self.batch = epoch, batch

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if trainer.current_epoch == self.epoch and batch_idx == self.batch:
            raise RuntimeError("simulated crash")


def fit(data: Path, run: Path, *extra: str, check: bool = True):
    return run_in_process("fit", "--config", str(REPO / "configs" / "demo.yaml"), "--data.data_dir", str(data),
                          "--run_dir", str(run), *SMALL, *extra, check=check)


def dev_rows(run: Path) -> list[tuple[str, str, str]]:
    with open(run / "metrics.csv", encoding="utf-8", newline="") as f:
        return [(r["epoch"], r["val/f1"], r["val/loss"]) for r in csv.DictReader(f) if r.get("val/f1")]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=False)["state_dict"]


@pytest.mark.slow  # four tiny trainings
def test_a_fit_stopped_inside_an_epoch_resumes_there_and_matches_an_uninterrupted_run(demo_data, tmp_path):
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    fit(demo_data, straight)
    # a checkpoint after every batch (any positive minutes: the interval has passed by the next batch), then a
    # crash after batch 5 of the second epoch (12 batches of 20 in 240 training examples)
    crash = f"--trainer.callbacks+={{'class_path': '{__name__}.CrashAt', 'init_args': {{'epoch': 1, 'batch': 5}}}}"
    crashed = fit(demo_data, stopped, "--checkpoint_minutes", "1e-9", crash, check=False)
    assert crashed.status != 0 and "simulated crash" in crashed.stderr
    state = torch.load(stopped / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    # the position as tacred writes it itself (tacred.training.callbacks.LastCheckpoint), not Lightning's loop state
    assert state["epoch"] == 1 and state[RESUME_KEY] == {"epoch": 1, "batches_done": 5, "epoch_batches": 12}

    # stopped again inside the same epoch, after its batch 8: the resumed fit counts on from the 5 batches done
    # (Lightning does not start that epoch again: no on_train_epoch_start) and its checkpoints say so
    crash = crash.replace("'batch': 5", "'batch': 8")
    again = fit(demo_data, stopped, "--checkpoint_minutes", "1e-9", crash, check=False)
    assert again.status != 0 and "simulated crash" in again.stderr
    assert "last.ckpt inside epoch 2, after 5 of its batches" in again.stderr
    state = torch.load(stopped / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert state[RESUME_KEY] == {"epoch": 1, "batches_done": 8, "epoch_batches": 12}

    resumed = fit(demo_data, stopped)
    assert "last.ckpt inside epoch 2, after 8 of its batches" in resumed.stderr
    # the resumed epoch's line shows its learning rate (its seconds count from the resume)
    line = next(x for x in resumed.stdout.splitlines() if x.startswith("epoch 2/2"))
    assert " lr " in line, line
    assert dev_rows(stopped) == dev_rows(straight)
    for name in ("last.ckpt", "best.ckpt"):
        ours, theirs = weights(stopped / "checkpoints" / name), weights(straight / "checkpoints" / name)
        assert ours.keys() == theirs.keys()
        assert all(torch.equal(ours[k], theirs[k]) for k in ours), name


def test_the_resume_point_is_read_from_tacreds_own_field():
    assert resume_point({"epoch": 1, RESUME_KEY: {"epoch": 1, "batches_done": 5, "epoch_batches": 12}}) == \
        "inside epoch 2, after 5 of its batches"
    assert resume_point({"epoch": 1, RESUME_KEY: {"epoch": 1, "batches_done": 12, "epoch_batches": 12}}) == \
        "after 2 finished epoch(s)"
    assert resume_point({"epoch": 0}) == "after 1 finished epoch(s)"  # written before tacred kept the field


def test_checkpoint_minutes_must_be_positive(demo_data, tmp_path):
    ran = fit(demo_data, tmp_path / "run", "--checkpoint_minutes", "0", check=False)
    assert ran.status == 2
    assert "--checkpoint_minutes 0: must be a number > 0 (or null: at epoch ends only)" in ran.stderr

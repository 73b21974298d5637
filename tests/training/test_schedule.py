"""DecayOnStall (tacred/training/schedule.py): start epoch, factor, previous vs best, patience; a cosine run that\nresumes keeps its schedule."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import torch

from tacred.training.schedule import DecayOnStall
from tests.conftest import REPO, run_in_process


def _run(scores: list[float], lr: float = 1.0, groups: int = 1, **kwargs: object) -> tuple[list[list[float]], DecayOnStall]:
    params = [[torch.nn.Parameter(torch.zeros(1))] for _ in range(groups)]
    opt = torch.optim.SGD([{"params": p, "lr": lr * (i + 1)} for i, p in enumerate(params)])
    rule = DecayOnStall(opt, **kwargs)
    lrs = []
    for score in scores:
        rule.step(score)
        lrs.append([g["lr"] for g in opt.param_groups])
    return lrs, rule


def test_no_decay_up_to_the_start_epoch_then_a_decay_at_every_stall() -> None:
    lrs, _ = _run([0.5, 0.4, 0.3, 0.2, 0.1], start_epoch=3, factor=0.5)
    # epochs 1-3: stalls are seen but the rule is not active yet; epochs 4 and 5 decay
    assert [lr[0] for lr in lrs] == [1.0, 1.0, 1.0, 0.5, 0.25]


def test_the_first_epoch_never_decays_and_an_equal_score_is_a_stall() -> None:
    lrs, _ = _run([0.0, 0.0, 0.1], start_epoch=0, factor=0.9)
    assert [lr[0] for lr in lrs] == [1.0, 0.9, pytest.approx(0.9)]


def test_the_factor_multiplies_every_parameter_group_and_get_last_lr_reports_it() -> None:
    lrs, rule = _run([0.5, 0.4], start_epoch=0, factor=0.8, groups=2)
    assert lrs[-1] == [0.8, pytest.approx(1.6)]
    assert rule.get_last_lr() == lrs[-1]


def test_previous_compares_with_the_last_epoch_best_with_the_best_so_far() -> None:
    scores = [0.7, 0.5, 0.6]  # epoch 3 beats epoch 2 but not epoch 1
    previous, _ = _run(scores, start_epoch=0, factor=0.5, compare="previous")
    best, _ = _run(scores, start_epoch=0, factor=0.5, compare="best")
    assert [lr[0] for lr in previous] == [1.0, 0.5, 0.5]
    assert [lr[0] for lr in best] == [1.0, 0.5, 0.25]


def test_patience_counts_stalls_in_a_row_and_an_improvement_resets_the_count() -> None:
    lrs, _ = _run([0.5, 0.4, 0.6, 0.5, 0.4, 0.3], start_epoch=0, factor=0.5, patience=2)
    # stall (1), improvement (reset), stall (1), stall (2: decay, reset), stall (1)
    assert [lr[0] for lr in lrs] == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5]


def test_stalls_before_the_start_epoch_count_towards_patience() -> None:
    lrs, _ = _run([0.5, 0.4, 0.3], start_epoch=2, factor=0.5, patience=2)
    assert [lr[0] for lr in lrs] == [1.0, 1.0, 0.5]


@pytest.mark.parametrize(("kwargs", "message"), [({"compare": "last"}, "compare must be 'previous' or 'best'"),
                                                 ({"patience": 0}, "patience must be at least 1")])
def test_bad_options_are_refused(kwargs: dict, message: str) -> None:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    with pytest.raises(ValueError, match=message):
        DecayOnStall(opt, **kwargs)


def lr_rows(run: Path) -> list[tuple[int, float, str]]:
    """(epoch, lr at its start, dev F1) from metrics.csv."""
    with open(run / "metrics.csv", encoding="utf-8", newline="") as f:
        return [(int(r["epoch"]), float(r["lr-SGD"]), r["val/f1"]) for r in csv.DictReader(f)]


@pytest.mark.slow  # two tiny trainings and a resumed one, in this process
def test_a_cosine_run_stopped_and_resumed_anneals_like_an_uninterrupted_one(demo_data: Path, tmp_path: Path) -> None:
    """``cosine`` is Lightning's to step (after an epoch's last batch): the epoch-end checkpoint holds the step, so
    the resumed run neither repeats nor skips one."""
    fit = ["fit", "--config", str(REPO / "configs" / "demo.yaml"), "--data.data_dir", str(demo_data),
           "--model.network.word_dim", "24", "--model.network.ffn_dim", "16", "--model.network.attention_dim", "16",
           "--model.lr_schedule", "cosine", "--trainer.max_epochs", "3"]
    straight_run = run_in_process(*fit, "--run_dir", str(tmp_path / "straight"))
    # stepped once an epoch: each epoch line shows the one rate the epoch trained at
    assert re.findall(r"  lr (\S+)  ", straight_run.stdout) == ["0.1", "0.075", "0.025"], straight_run.stdout
    run_in_process(*fit, "--run_dir", str(tmp_path / "resumed"), "--trainer.max_steps", "10")  # 2 epochs of 5 batches
    assert [epoch for epoch, _, _ in lr_rows(tmp_path / "resumed")] == [0, 1]
    run_in_process(*fit, "--run_dir", str(tmp_path / "resumed"))
    straight = lr_rows(tmp_path / "straight")
    assert [lr for _, lr, _ in straight] == pytest.approx([0.1, 0.075, 0.025])  # 0.1 (1 + cos(pi e / 3)) / 2
    assert lr_rows(tmp_path / "resumed") == straight
    for run in ("straight", "resumed"):
        ckpt = torch.load(tmp_path / run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
        assert ckpt["optimizer_states"][0]["param_groups"][0]["lr"] == pytest.approx(0.0, abs=1e-12)

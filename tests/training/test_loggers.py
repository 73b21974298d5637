"""ResumableCSVLogger (tacred/training/loggers.py): one metrics.csv row per epoch, continued by a resumed run, and
the hyperparameters in hparams.yaml as Lightning's CSV logger writes them."""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

from tacred.training.loggers import ResumableCSVLogger


def rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "metrics.csv", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_a_resumed_logger_continues_the_file_and_an_epoch_logged_again_replaces_its_row(tmp_path: Path) -> None:
    first = ResumableCSVLogger(save_dir=str(tmp_path), name="", version="")
    first.log_hyperparams({"lr": 0.1, "decay_start_epoch": 15})
    first.log_metrics({"lr-SGD": 0.1}, step=0)  # logged at an epoch's start, without an epoch: joins its row
    first.log_metrics({"epoch": 0, "val/f1": 0.5}, step=4)
    first.log_metrics({"epoch": 1, "val/f1": 0.25}, step=9)  # an epoch the restarted run repeats
    first.finalize("success")
    assert yaml.safe_load((tmp_path / "hparams.yaml").read_text()) == {"lr": 0.1, "decay_start_epoch": 15}

    again = ResumableCSVLogger(save_dir=str(tmp_path), name="", version="")
    again.log_metrics({"epoch": 1, "val/f1": 0.75}, step=9)
    again.log_metrics({"epoch": 2, "val/f1": 0.8}, step=14)
    again.finalize("success")
    assert [(r["epoch"], r["step"], r["val/f1"], r["lr-SGD"]) for r in rows(tmp_path)] == [
        ("0", "4", "0.5", "0.1"), ("1", "9", "0.75", ""), ("2", "14", "0.8", "")]

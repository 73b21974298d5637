"""What a run prints and leaves: one line per epoch, metrics.csv with one row per epoch (also across a resume), no
library noise, and test outputs that never replace earlier ones silently."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_in_process

SMALL = ["--model.network.word_dim", "24", "--model.network.ffn_dim", "16",
         "--model.network.attention_dim", "16"]
NOISE = ("Tip:", "litlogger", "LeafSpec", "weights_only", "Previous log files", "FLOPs", "Flops",
         "smaller than the logging interval", "Test metric", "Traceback")


def tacred(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "HF_DATASETS_OFFLINE": "1",
           "COLUMNS": "120"}
    proc = subprocess.run([sys.executable, "-m", "tacred", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"tacred {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def rows(run: Path) -> list[dict]:
    with open(run / "metrics.csv", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def runs(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The same 3-epoch run twice: straight through, and stopped after 2 epochs then resumed by the same command.
    The 2-epoch half runs in this process, with torch's thread count as a subprocess has it."""
    base = tmp_path_factory.mktemp("progress")
    fit = ["fit", "--config", "configs/demo.yaml", "--data.data_dir", str(demo_data), *SMALL]
    straight = tacred(*fit, "--run_dir", str(base / "straight"), "--trainer.max_epochs", "3",
                      "--trainer.enable_model_summary", "true")
    # the first half needs no process of its own: the straight run and the resumed one are a user's processes
    first = run_in_process(*fit, "--run_dir", str(base / "resumed"), "--trainer.max_epochs", "2")
    resumed = tacred(*fit, "--run_dir", str(base / "resumed"), "--trainer.max_epochs", "3")
    return {"base": base, "straight": straight, "first": first, "resumed": resumed}


@pytest.mark.slow  # three tiny trainings
def test_every_epoch_prints_one_line_with_loss_dev_scores_lr_and_time(runs):
    out = runs["straight"].stdout
    lines = [line for line in out.splitlines() if line.startswith("epoch ")]
    assert [line.split()[1] for line in lines] == ["1/3", "2/3", "3/3"]  # epochs count from 1
    pattern = r"epoch \d/3  train loss \d+\.\d{4}  dev P \d+\.\d\d R \d+\.\d\d F1 \d+\.\d\d \(best \d+\.\d\d @ \d\)  lr 0\.1  \d+\.\d s"
    assert all(re.fullmatch(pattern, line) for line in lines), lines
    table = rows(runs["base"] / "straight")
    for line, row in zip(lines, table, strict=True):  # the printed figures are the logged ones
        assert f"train loss {float(row['train/loss']):.4f}" in line
        assert f"F1 {100 * float(row['val/f1']):.2f}" in line


@pytest.mark.slow  # three tiny trainings
def test_metrics_csv_has_one_row_per_epoch_with_everything(runs):
    table = rows(runs["base"] / "straight")
    assert [int(r["epoch"]) for r in table] == [0, 1, 2]
    for row in table:
        for key in ("train/loss", "val/f1", "val/precision", "val/recall", "val/loss", "lr-SGD", "step"):
            assert row[key] != "", (key, row)


@pytest.mark.slow  # three tiny trainings
def test_a_resumed_run_extends_the_same_rows_and_matches_the_uninterrupted_one(runs):
    straight, resumed = rows(runs["base"] / "straight"), rows(runs["base"] / "resumed")
    assert straight == resumed  # the same numbers: printing and logging drew no random numbers
    assert "epoch 3/3" in runs["resumed"].stdout and "epoch 1/3" not in runs["resumed"].stdout


@pytest.mark.slow  # three tiny trainings
def test_the_readers_of_metrics_csv_still_work(runs):
    from tacred.analysis.inspection import read_training_curves
    from tacred.experiments.ablation import dev_f1_by_epoch

    run = runs["base"] / "straight"
    table = rows(run)
    assert dev_f1_by_epoch(run / "metrics.csv") == {i: float(r["val/f1"]) for i, r in enumerate(table)}
    curves = read_training_curves(run)
    assert curves.lr == [(0, 0.1), (1, 0.1), (2, 0.1)]
    assert [e for e, _ in curves.train_loss] == [0, 1, 2]


@pytest.mark.slow  # three tiny trainings
def test_runs_print_no_library_noise(runs):
    for name in ("straight", "first", "resumed"):
        text = runs[name].stdout + runs[name].stderr
        for noise in NOISE:
            assert noise not in text, (name, noise, text[-2000:])
    assert "Trainable params" in runs["straight"].stdout + runs["straight"].stderr  # the summary is still there


@pytest.mark.slow  # three tiny trainings
def test_test_outputs_are_never_overwritten_silently(runs):
    run = runs["base"] / "straight"
    ckpt = str(run / "checkpoints" / "best.ckpt")
    first = tacred("test", "--ckpt_path", ckpt)
    for noise in NOISE:
        assert noise not in first.stdout + first.stderr, noise
    assert "F1 (micro):" in first.stdout
    original = (run / "test_predictions.jsonl").read_text()
    # the noise above is what a user's process prints; the file names below need no process of their own
    second = run_in_process("test", "--ckpt_path", ckpt, "--model.no_relation_threshold", "5").stdout
    assert (run / "test_predictions.jsonl").read_text() == original
    assert f"predictions: {run / 'test_predictions-1.jsonl'}" in second
    assert json.loads((run / "test_metrics-1.json").read_text())["no_relation_threshold"] == 5
    assert "threshold" in (run / "test_score-1.txt").read_text()
    run_in_process("test", "--ckpt_path", ckpt, "--overwrite", "true", "--model.no_relation_threshold", "5")
    assert (run / "test_predictions.jsonl").read_text() != original
    assert not (run / "test_predictions-2.jsonl").exists()


def test_the_epoch_line_leaves_out_what_was_not_logged():
    from tacred.training.progress import epoch_line

    assert epoch_line(0, 5, {"train/loss": 1.5}, None, 2.04, None) == "epoch 1/5  train loss 1.5000  2.0 s"
    line = epoch_line(4, -1, {"val/f1": 0.5, "val/precision": 0.25, "val/recall": 1.0}, 0.09, 1.0, (-1, 0.6))
    assert line == "epoch 5  dev P 25.00 R 100.00 F1 50.00 (best 60.00)  lr 0.09  1.0 s"
    # a per-step schedule (a warm-up): where the epoch started and ended; unchanged, one value
    assert epoch_line(0, 5, {}, 0.0, 1.0, None, lr_end=2e-4) == "epoch 1/5  lr 0 -> 0.0002  1.0 s"
    assert epoch_line(0, 5, {}, 0.1, 1.0, None, lr_end=0.1) == "epoch 1/5  lr 0.1  1.0 s"


def test_the_model_summary_table_leaves_out_flops_and_keeps_the_totals():
    from tacred.training.progress import summary_table

    columns = [("", ["0", "1"]), ("Name", ["net", "scores"]), ("Type", ["RelationNetwork", "ModuleDict"]),
               ("Params", ["6.2 M", "0"]), ("Mode", ["train", "train"]), ("FLOPs", ["0", "0"])]
    table = summary_table(columns, 6_200_000, 6_000_000, 24.8, {"train": 39, "eval": 0}).splitlines()
    assert table[0].split(" | ")[1:] == ["Name  ", "Type           ", "Params", "Mode "]
    assert table[2].split(" | ") == ["0", "net   ", "RelationNetwork", "6.2 M ", "train"]
    assert "FLOP" not in "\n".join(table) and "Flops" not in "\n".join(table)
    assert table[-6:] == ["6.0 M     Trainable params", "200 K     Non-trainable params", "6.2 M     Total params",
                          "24.800    Total estimated model params size (MB)", "39        Modules in train mode",
                          "0         Modules in eval mode"]


def test_a_configured_model_summary_keeps_its_depth():
    from jsonargparse import Namespace

    from tacred.training.cli import summary_depth

    given = [Namespace(class_path="lightning.pytorch.callbacks.ModelSummary", init_args=Namespace(max_depth=3))]
    assert summary_depth(given) == 3
    assert summary_depth(None) == 1

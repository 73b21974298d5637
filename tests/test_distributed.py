"""Two-process CPU DDP (gloo): every dev/test example is scored exactly once, the synced scores equal those of the
single-process scorer on the gathered predictions, and a single-process test of the DDP-trained model agrees."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tacred.commands.score import main as score_main
from tests.conftest import REPO, run_in_process

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "HF_DATASETS_OFFLINE": "1"}
pytestmark = pytest.mark.slow  # two-process DDP fit and test, each ~15 s

DDP = ["--trainer.strategy", "ddp", "--trainer.devices", "2", "--trainer.accelerator", "cpu"]
SINGLE = ["--trainer.strategy", "auto", "--trainer.devices", "1", "--trainer.accelerator", "cpu"]
# 240 training examples in batches of 10: 24 batches, 12 per rank. 60 dev/test examples in batches of 25: 3
# batches, so rank 0 scores 2 and rank 1 one; uneven shards must still cover every example exactly once.
FIT = ["--config", "configs/demo.yaml", "--model.network.word_dim", "24",
       "--model.network.ffn_dim", "16", "--model.network.attention_dim", "16", "--trainer.enable_progress_bar",
       "false", "--trainer.enable_model_summary", "false", "--data.batch_size", "10", "--data.eval_batch_size",
       "25", "--model.lr", "0.5", "--trainer.max_epochs", "5"]


def tacred(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "tacred", *args], cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"tacred {' '.join(args)}:\n{proc.stderr[-3000:]}"
    return proc


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7)  # the metric reports float32


@pytest.fixture(scope="module")
def ddp_run(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("ddp")
    proc = tacred("fit", *FIT, *DDP, "--data.data_dir", str(demo_data), "--run_dir", str(run))
    assert "MEMBER: 2/2" in proc.stderr  # really two processes
    return run


@pytest.fixture(scope="module")
def ddp_tested(ddp_run: Path) -> Path:
    proc = tacred("test", "--ckpt_path", str(ddp_run / "checkpoints" / "last.ckpt"), *DDP)
    assert "MEMBER: 2/2" in proc.stderr
    return ddp_run


def test_ddp_test_scores_every_example_once_and_matches_the_official_scorer(ddp_tested, demo_data, capsys):
    ddp_run = ddp_tested
    gold = json.loads((demo_data / "test.json").read_text())
    predictions = [json.loads(line) for line in (ddp_run / "test_predictions.jsonl").read_text().splitlines()]
    assert len(predictions) == len(gold) == 60
    assert [p["id"] for p in predictions] == [g["id"] for g in gold]  # each once, in the split's order

    reported = rows(ddp_run / "test" / "metrics.csv")[-1]  # the metric synced across both processes
    assert score_main([str(demo_data / "test.json"), str(ddp_run / "test_predictions.jsonl"), "--json"]) == 0
    official = json.loads(capsys.readouterr().out)
    assert official["num_examples"] == 60
    for key in ("precision", "recall", "f1"):
        assert close(float(reported[f"test/{key}"]), official[key]), key
    assert json.loads((ddp_run / "test_metrics.json").read_text())["f1"] == official["f1"]


def test_a_single_process_test_of_the_ddp_model_gives_the_same_predictions_and_scores(ddp_tested, tmp_path):
    ddp_run = ddp_tested
    single = tmp_path / "single"
    # the single process needs no process of its own: the DDP runs above are the subprocesses under test
    run_in_process("test", "--ckpt_path", str(ddp_run / "checkpoints" / "last.ckpt"), *SINGLE, "--run_dir", str(single))
    ddp_pred = [json.loads(line) for line in (ddp_run / "test_predictions.jsonl").read_text().splitlines()]
    one_pred = [json.loads(line) for line in (single / "test_predictions.jsonl").read_text().splitlines()]
    assert [(p["id"], p["relation"]) for p in one_pred] == [(p["id"], p["relation"]) for p in ddp_pred]
    assert all(abs(a["probability"] - b["probability"]) < 1e-5 for a, b in zip(one_pred, ddp_pred, strict=True))
    ddp_scores, one_scores = rows(ddp_run / "test" / "metrics.csv")[-1], rows(single / "test" / "metrics.csv")[-1]
    for key in ("test/precision", "test/recall", "test/f1"):
        assert close(float(ddp_scores[key]), float(one_scores[key])), key
    assert math.isclose(float(ddp_scores["test/loss"]), float(one_scores["test/loss"]), rel_tol=1e-5)


def test_ddp_validation_equals_a_single_process_validation_of_the_same_weights(ddp_run, tmp_path):
    val = [r for r in rows(ddp_run / "metrics.csv") if r.get("val/f1")]
    assert [int(r["epoch"]) for r in val] == [0, 1, 2, 3, 4]
    train = [r for r in rows(ddp_run / "metrics.csv") if r.get("train/loss")]
    assert len(train) == 5 and all(float(r["train/loss"]) > 0 for r in train)
    single = tmp_path / "single"
    run_in_process("validate", "--ckpt_path", str(ddp_run / "checkpoints" / "last.ckpt"), *SINGLE, "--run_dir",
                   str(single))
    one = rows(single / "validate" / "metrics.csv")[-1]
    for key in ("val/precision", "val/recall", "val/f1"):
        assert close(float(val[-1][key]), float(one[key])), key
    assert math.isclose(float(val[-1]["val/loss"]), float(one["val/loss"]), rel_tol=1e-5)

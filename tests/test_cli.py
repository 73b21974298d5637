"""End to end through the real CLI: fit, then test and predict from the checkpoint alone; determinism; resuming."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.conftest import REPO, Ran, run_in_process

SMALL = ["--model.network.word_dim", "24", "--model.network.ffn_dim", "16",
         "--model.network.attention_dim", "16", "--trainer.enable_progress_bar", "false",
         "--trainer.enable_model_summary", "false"]


def fit(data: Path, run: Path, *extra: str) -> Ran:
    return run_in_process("fit", "--config", str(REPO / "configs" / "demo.yaml"), "--data.data_dir", str(data),
                          "--run_dir", str(run), *SMALL, *extra)


def val_rows(run: Path) -> list[dict]:
    with open(run / "metrics.csv") as f:
        return [r for r in csv.DictReader(f) if r.get("val/f1")]


@pytest.fixture(scope="module")
def trained(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("run")
    fit(demo_data, run, "--trainer.max_epochs", "2")
    return run


def test_fit_writes_config_checkpoints_and_dev_scores(trained):
    assert (trained / "config.yaml").is_file()
    assert (trained / "checkpoints" / "last.ckpt").is_file() and (trained / "checkpoints" / "best.ckpt").is_file()
    rows = val_rows(trained)
    assert [int(r["epoch"]) for r in rows] == [0, 1]
    assert all(0.0 <= float(r["val/f1"]) <= 1.0 for r in rows)


def test_test_from_the_checkpoint_alone_writes_predictions_and_the_official_report(trained, demo_data):
    printed = run_in_process("test", "--ckpt_path", str(trained / "checkpoints" / "last.ckpt")).stdout
    assert "Precision (micro):" in printed and "F1 (micro):" in printed
    predictions = [json.loads(line) for line in (trained / "test_predictions.jsonl").read_text().splitlines()]
    gold = json.loads((demo_data / "test.json").read_text())
    assert [p["id"] for p in predictions] == [g["id"] for g in gold]
    assert [p["gold"] for p in predictions] == [g["relation"] for g in gold]
    score = run_in_process("score", str(demo_data / "test.json"), str(trained / "test_predictions.jsonl")).stdout
    reported = (trained / "test_score.txt").read_text()
    assert score.strip().splitlines()[-1] in reported  # same F1 line as the independent scorer


def test_ckpt_path_restores_model_hyperparameters_and_says_which_given_options_it_replaced(trained, tmp_path):
    # LightningCLI applies a checkpoint's model hyperparameters over the command line; where outputs go is not one
    out = tmp_path / "outputs"
    ran = run_in_process("test", "--ckpt_path", str(trained / "checkpoints" / "last.ckpt"), "--model.lr", "0.5",
                         "--model.output_dir", str(out))
    assert "--model.lr is replaced by the checkpoint's own value" in ran.stderr
    assert "--model.output_dir" not in ran.stderr
    assert (out / "test_predictions.jsonl").is_file()


def test_testing_logs_no_hyperparameters_over_the_training_run(trained):
    # `tacred test` sets data.vocab_path to the checkpoint; the training run's recorded hyperparameters stay its own
    run_in_process("test", "--ckpt_path", str(trained / "checkpoints" / "last.ckpt"), "--overwrite", "true")
    logged = (trained / "test" / "hparams.yaml").read_text() if (trained / "test" / "hparams.yaml").exists() else ""
    assert (trained / "test" / "metrics.csv").is_file()
    assert "vocab_path" not in logged and "lr" not in logged


def test_predict_writes_every_label_probability(trained, demo_data):
    run_in_process("predict", "--ckpt_path", str(trained / "checkpoints" / "best.ckpt"))
    rows = [json.loads(line) for line in (trained / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == len(json.loads((demo_data / "test.json").read_text()))
    assert abs(sum(rows[0]["probabilities"].values()) - 1.0) < 1e-3
    assert rows[0]["relation"] == max(rows[0]["probabilities"], key=rows[0]["probabilities"].get)
    assert not (trained / "predict").exists()  # predict logs no metrics, so it leaves no log folder behind


def test_predict_raw_sentences_from_stdin(trained):
    text = "<subj>John Smith</subj> works for <obj>Acme Corp</obj> .\n<subj>Mary</subj> was born in <obj>Paris</obj> .\n"
    proc = run_in_process("predict", "--ckpt_path", str(trained / "checkpoints" / "last.ckpt"), "--sentences", "-",
                          "--output", "jsonl", stdin=text)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["subject"], r["object"]) for r in rows] == [("John Smith", "Acme Corp"), ("Mary", "Paris")]
    bad = run_in_process("predict", "--ckpt_path", str(trained / "checkpoints" / "last.ckpt"), "--sentences", "-",
                         stdin="no markers here\n", check=False)
    assert bad.status == 2 and "line 1" in bad.stderr


def test_predict_skips_and_reports_bad_lines_when_asked(trained):
    text = "<subj>John Smith</subj> works for <obj>Acme Corp</obj> .\nno markers here\n\n<subj>Mary</subj> was born in " \
           "<obj>Paris</obj> .\n"
    proc = run_in_process("predict", "--ckpt_path", str(trained), "--sentences", "-", "--skip_bad_lines", stdin=text)
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == ["line-1", "line-4"]
    assert "tacred predict: skipped <stdin>, line 2: no subject marker" in proc.stderr
    assert "tacred predict: 1 of 3 lines skipped, 2 predicted" in proc.stderr


def test_predict_writes_beside_the_checkpoint_wherever_it_was_copied(trained, tmp_path, monkeypatch):
    elsewhere = tmp_path / "handed_on"
    elsewhere.mkdir()
    (elsewhere / "model.ckpt").write_bytes((trained / "checkpoints" / "best.ckpt").read_bytes())
    monkeypatch.chdir(tmp_path)
    proc = run_in_process("predict", "--ckpt_path", str(elsewhere / "model.ckpt"))
    assert (elsewhere / "predictions.jsonl").is_file()
    assert f"predictions: {elsewhere / 'predictions.jsonl'}" in proc.stdout + proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["handed_on"]  # nothing under the current folder


def test_an_absent_accelerator_is_a_one_line_error(trained):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is present")
    proc = run_in_process("test", "--ckpt_path", str(trained), "--trainer.accelerator", "cuda", check=False)
    assert proc.status == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "tacred test: error: --trainer.accelerator 'cuda': CUDA is not available here")


def test_same_seed_same_metrics(demo_data, tmp_path):
    fit(demo_data, tmp_path / "a", "--trainer.max_epochs", "1")
    fit(demo_data, tmp_path / "b", "--trainer.max_epochs", "1")
    first, second = val_rows(tmp_path / "a"), val_rows(tmp_path / "b")
    assert len(first) == 1 and float(first[0]["val/f1"]) >= 0.0  # the epoch's dev row, with a dev F1
    assert first == second  # every logged value of that row, loss and learning rate included


def test_the_same_command_resumes_from_last_ckpt(demo_data, tmp_path):
    run = tmp_path / "run"
    fit(demo_data, run, "--trainer.max_epochs", "1")
    assert "resuming from" in fit(demo_data, run, "--trainer.max_epochs", "2").stderr
    assert [int(r["epoch"]) for r in val_rows(run)] == [0, 1]


def test_a_corrupt_checkpoint_is_a_clear_error(trained, tmp_path):
    broken = tmp_path / "broken.ckpt"
    broken.write_bytes((trained / "checkpoints" / "last.ckpt").read_bytes()[:1000])
    proc = run_in_process("test", "--ckpt_path", str(broken), check=False)
    assert proc.status == 2 and "corrupt" in proc.stderr and str(broken) in proc.stderr
    missing = run_in_process("test", "--ckpt_path", str(tmp_path / "nothere.ckpt"), check=False)
    assert missing.status == 2 and "nothere.ckpt" in missing.stderr


def test_print_config_shows_the_paper_hyperparameters():
    # `--run-dir` is `--run_dir`: every option is spelled with underscores and the hyphen spelling is accepted
    proc = run_in_process("fit", "--config", str(REPO / "configs" / "tacred.yaml"), "--run-dir", "runs/hyphenated",
                          "--print_config")
    assert "run_dir: runs/hyphenated" in proc.stdout
    for line in ("num_heads: 3", "ffn_dim: 130", "dropout: 0.4", "attention_dropout: 0.1", "lr: 0.1",
                 "batch_size: 50", "max_epochs: 60", "norm: batch", "activation: rrelu"):
        assert line in proc.stdout, line

"""TacredCLI (tacred/training/cli.py): a command line builds the parser of its own command only."""

from __future__ import annotations

from lightning.pytorch.cli import LightningCLI

from tacred.training.cli import TacredCLI


def test_a_command_line_gets_a_class_that_names_its_command_only() -> None:
    every = LightningCLI.subcommands()
    assert TacredCLI.subcommands() == every
    for command in every:
        cli = TacredCLI.__new__(TacredCLI, args=[command, "--config", "x.yaml"])  # what TacredCLI(args=...) makes
        assert isinstance(cli, TacredCLI) and cli.command == command
        assert cli.subcommands() == {command: every[command]}
        assert type(TacredCLI.__new__(TacredCLI, args=[command])) is type(cli)  # one class per command
    assert type(TacredCLI.__new__(TacredCLI, args=["--help"])) is TacredCLI  # no command: all of them
    assert type(TacredCLI.__new__(TacredCLI, args={"fit": {}})) is TacredCLI  # a parsed mapping: parsed as a whole


def test_tacred_test_reads_its_checkpoint_once(checkpoint, tmp_path, torch_loads) -> None:
    """The checks, the stored configuration, Lightning's hyperparameters, the vocabularies and the restore share one
    read of the --ckpt_path file (tacred.checkpoints.reading_once); the scores are those of a fresh read."""
    import json

    from tests.conftest import run_in_process

    run_in_process("test", "--ckpt_path", str(checkpoint), "--run_dir", str(tmp_path / "once"))
    assert torch_loads == [checkpoint], torch_loads
    from tacred.training import evaluate

    metrics = json.loads((tmp_path / "once" / "test_metrics.json").read_text())
    assert abs(metrics["f1"] - evaluate(checkpoint, "test").score().f1) < 1e-9


def test_tacred_predict_validate_and_a_run_folder_read_the_checkpoint_once(checkpoint, tmp_path, torch_loads) -> None:
    from tests.conftest import run_in_process

    run_in_process("predict", "--ckpt_path", str(checkpoint), "--run_dir", str(tmp_path / "predict"))
    assert (tmp_path / "predict" / "predictions.jsonl").is_file() and torch_loads == [checkpoint], torch_loads
    run_in_process("validate", "--ckpt_path", str(checkpoint), "--run_dir", str(tmp_path / "validate"))
    assert torch_loads == [checkpoint] * 2, torch_loads
    run_in_process("test", "--ckpt_path", str(checkpoint.parent.parent), "--run_dir", str(tmp_path / "folder"))
    assert len(torch_loads) == 3 and torch_loads[2].name == "best.ckpt", torch_loads


def test_evaluate_and_load_model_read_the_checkpoint_once(checkpoint, torch_loads) -> None:
    import json

    from tacred import load_model
    from tacred.training import evaluate

    evaluate(checkpoint, "test")
    assert torch_loads == [checkpoint], torch_loads
    example = json.loads((checkpoint.parents[2] / "data" / "test.json").read_text())[0]
    load_model(checkpoint, device="cpu").predict(example)
    assert torch_loads == [checkpoint] * 2, torch_loads


def test_a_split_file_on_the_command_line_is_relative_to_the_current_folder(checkpoint, tmp_path, monkeypatch) -> None:
    """`tacred predict --data.predict_file new.json` reads ./new.json, from any folder, whatever data_dir the
    checkpoint stores; with --data.data_dir on the same line the file is relative to that folder."""
    import json
    import shutil

    from tests.conftest import run_in_process

    data = checkpoint.parents[2] / "data"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy2(data / "test.json", elsewhere / "new.json")
    monkeypatch.chdir(elsewhere)
    run_in_process("predict", "--ckpt_path", str(checkpoint), "--data.predict_file", "new.json",
                   "--run_dir", str(tmp_path / "here"))
    rows = (tmp_path / "here" / "predictions.jsonl").read_text().splitlines()
    assert [json.loads(r)["id"] for r in rows] == [ex["id"] for ex in json.loads((data / "test.json").read_text())]
    monkeypatch.chdir(data.parent)
    run_in_process("predict", "--ckpt_path", str(checkpoint), "--data.predict_file", "data/test.json",
                   "--run_dir", str(tmp_path / "root"))
    assert (tmp_path / "root" / "predictions.jsonl").read_text() == "\n".join(rows) + "\n"
    run_in_process("predict", "--ckpt_path", str(checkpoint), "--data.data_dir", "data", "--data.predict_file",
                   "test.json", "--run_dir", str(tmp_path / "with_dir"))
    assert (tmp_path / "with_dir" / "predictions.jsonl").read_text() == "\n".join(rows) + "\n"
    missing = run_in_process("predict", "--ckpt_path", str(checkpoint), "--data.predict_file", "nothere.json",
                             check=False)
    assert missing.status == 2 and f"data file not found: {data.parent / 'nothere.json'}" in missing.stderr

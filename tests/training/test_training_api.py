"""``tacred.training.fit`` and ``evaluate`` as a user calls them from Python: the same run as ``tacred fit``, the run
folder back, a failed fit leaving the folder as it was, a fit in a subprocess, and the probabilities of ``tacred test``."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from lightning.pytorch.callbacks import Callback

from tacred.training import FitError, evaluate, fit
from tacred.training.api import fit_options
from tests.conftest import REPO, run_in_process

SMALL = ["--model.network.word_dim", "24", "--model.network.ffn_dim", "16", "--model.network.attention_dim", "16",
         "--trainer.max_epochs", "1"]


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tacred.datasets.synthetic import write_corpus

    folder = tmp_path_factory.mktemp("tiny")
    write_corpus(folder, seed=3, n_train=40, n_dev=12, n_test=12)
    return folder


@pytest.fixture(autouse=True)
def torch_threads(keep_torch_threads):
    """Every test here may run `tacred fit` in this process (configs/demo.yaml sets 1 thread)."""


def dev_rows(run: Path) -> list[dict[str, str]]:
    with open(run / "metrics.csv", newline="") as f:
        return [row for row in csv.DictReader(f) if row.get("val/f1")]


def test_the_options_come_in_order_and_a_mapping_is_a_config() -> None:
    assert fit_options(["a.yaml", {"model": {"lr": 0.3}}], ["--trainer.max_epochs", "2"], run_dir="r", seed=3,
                       resume="never") == [
        "--config", "a.yaml", "--config", "model:\n  lr: 0.3\n", "--seed_everything", "3", "--run_dir", "r",
        "--resume", "never", "--trainer.max_epochs", "2"]
    printed = run_in_process("fit", *fit_options({"model": {"lr": 0.3}, "trainer": {"max_epochs": 2}}),
                             "--print_config").stdout
    config = yaml.safe_load(printed)
    assert config["model"]["lr"] == 0.3 and config["trainer"]["max_epochs"] == 2


@pytest.mark.slow  # two 1-epoch trainings on 40 sentences
def test_fit_from_python_is_the_run_tacred_fit_makes(tiny_data: Path, tmp_path: Path) -> None:
    demo = REPO / "configs" / "demo.yaml"
    data = ["--data.data_dir", str(tiny_data)]
    run = fit([demo, {"model": {"lr": 0.2}}], [*data, *SMALL], run_dir=tmp_path / "py", seed=2)
    assert run == tmp_path / "py", "run_dir wins over the config file's (runs/demo)"
    assert {p.name for p in (run / "checkpoints").iterdir()} == {"best.ckpt", "last.ckpt"}
    assert yaml.safe_load((run / "config.yaml").read_text())["model"]["lr"] == 0.2

    override = tmp_path / "lr.yaml"
    override.write_text("model:\n  lr: 0.2\n")
    run_in_process("fit", "--config", str(demo), "--config", str(override), *data, *SMALL,
                   "--run_dir", str(tmp_path / "cli"), "--seed_everything", "2")
    assert dev_rows(run) == dev_rows(tmp_path / "cli"), "same seed, same options: the same run"
    config = (run / "config.yaml").read_text().replace(str(run), "RUN")
    assert config == (tmp_path / "cli" / "config.yaml").read_text().replace(str(tmp_path / "cli"), "RUN")


class StopAtStart(Callback):
    def on_train_start(self, trainer: object, pl_module: object) -> None:
        raise RuntimeError("stopped by the test")


def test_a_failed_fit_leaves_the_run_folder_as_it_was_unless_kept(tiny_data: Path, tmp_path: Path) -> None:
    demo, args = REPO / "configs" / "demo.yaml", ["--data.data_dir", str(tiny_data), *SMALL]
    with pytest.raises(RuntimeError, match="stopped by the test"):
        fit(demo, args, run_dir=tmp_path / "gone", callbacks=[StopAtStart()])
    assert not (tmp_path / "gone").exists(), "nothing was trained: the folder is removed again"
    with pytest.raises(RuntimeError, match="stopped by the test"):
        fit(demo, args, run_dir=tmp_path / "kept", callbacks=[StopAtStart()], keep_failed=True)
    assert (tmp_path / "kept" / "config.yaml").is_file()


def test_a_fit_in_a_subprocess_needs_its_run_folder_and_no_callbacks(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs the run folder"):
        fit(args=["--trainer.max_epochs", "1"], in_subprocess=True)
    with pytest.raises(ValueError, match="callbacks"):
        fit(run_dir=tmp_path, callbacks=[StopAtStart()], in_subprocess=True)
    with pytest.raises(ValueError, match="in_subprocess=True"):
        fit(run_dir=tmp_path, log=tmp_path / "fit.log")


def test_a_failed_fit_in_a_subprocess_is_a_fit_error_with_its_log(tmp_path: Path) -> None:
    """`python -m tacred fit` stops at the missing config file, before torch is imported (under a second)."""
    log = tmp_path / "fit.log"
    with pytest.raises(FitError) as failed:
        fit(tmp_path / "nothere.yaml", run_dir=tmp_path / "run", in_subprocess=True, log=log)
    assert failed.value.returncode == 2 and failed.value.log == log
    assert failed.value.command[1:4] == ["-m", "tacred", "fit"]
    lines = log.read_text().splitlines()
    assert lines[0] == "$ " + " ".join(failed.value.command)
    assert lines[-1] == f"tacred fit: error: --config {tmp_path / 'nothere.yaml'}: file not found"
    assert not (tmp_path / "run").exists()


def test_evaluate_gives_the_probabilities_tacred_test_writes(checkpoint: Path, tmp_path: Path) -> None:
    run_in_process("test", "--ckpt_path", str(checkpoint), "--run_dir", str(tmp_path))
    written = {row["id"]: row for row in map(json.loads, (tmp_path / "test_predictions.jsonl").read_text().splitlines())}
    result = evaluate(checkpoint.parents[1], "test")  # a run folder: its best.ckpt
    assert result.ids == list(written) and result.probs.shape == (len(written), len(result.labels))
    for i, ident in enumerate(result.ids):
        assert result.labels[result.pred[i]] == written[ident]["relation"]
        assert math.isclose(result.probs[i, result.pred[i]], written[ident]["probability"], abs_tol=1e-5), ident
    assert result.gold_names == [written[i]["gold"] for i in result.ids]
    assert math.isclose(result.score().f1, json.loads((tmp_path / "test_metrics.json").read_text())["f1"])
    assert result.source.startswith("test (") and len(result.examples) == len(result.ids)

    test_file = checkpoint.parents[2] / "data" / "test.json"
    from_file = evaluate(checkpoint, test_file, batch_size=7)
    np.testing.assert_allclose(from_file.probs, result.probs, atol=1e-6)
    assert from_file.source == f"predict ({test_file.resolve()})"


def test_evaluate_names_what_it_cannot_find(checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="'validation' is neither a split"):
        evaluate(checkpoint, "validation")
    with pytest.raises(FileNotFoundError, match="test data of"):
        evaluate(checkpoint, "test", data_dir=tmp_path)
    from tacred.checkpoints import CheckpointError

    with pytest.raises(CheckpointError, match="checkpoint not found"):
        evaluate(tmp_path / "none.ckpt")
    import torch

    from tacred.devices import DeviceError

    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="CUDA is not available"):
            evaluate(checkpoint, device="cuda")


@pytest.mark.slow  # trains 2 epochs on 120 generated sentences
def test_the_documented_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """docs/using.md's "Train and evaluate from Python", as a user runs it from a clone (configs/ beside it)."""
    text = (REPO / "docs" / "using.md").read_text(encoding="utf-8")
    [code] = re.findall(r"<!-- tested: fit-and-evaluate -->\n```python\n(.*?)```", text, re.S)
    (tmp_path / "configs").symlink_to(REPO / "configs")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/using.md", "exec"), {})  # noqa: S102 - the documented example
    out = capsys.readouterr().out.splitlines()  # an epoch line per epoch, then the example's two lines
    assert re.fullmatch(r"test F1 \d+\.\d on 40 examples", out[-2]), out
    assert out[-1].startswith("[")  # the most confident error, if the model made one
    assert (tmp_path / "runs" / "mini" / "checkpoints" / "best.ckpt").is_file()

"""``tacred ner train``'s training loop (:mod:`tacred.ner.loop`): the weights spaCy's own loop trains, and a
run killed after a checkpoint that the same command resumes to the weights of an unbroken run, inside an epoch, at
an epoch's end and with the transformer encoder's PyTorch weights; checkpoints that do not fit are refused."""

from __future__ import annotations

import json
import pickle
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tacred.commands.ner import main as ner_main
from tacred.datasets.conll04 import SPLITS
from tacred.ner import loop as ner_loop
from tacred.ner.training import train_ner
from tests.conftest import REPO
from tests.datasets.test_conll04 import KILL, WORKS, write
from tests.ner_training.test_training import MORE, release

SMALL_BATCHES = {"cnn": 20, "transformer": 3}  # words (cnn) or sentences a batch: many steps from a few sentences


def bigger_release(folder: Path, copies: int) -> Path:
    release(folder)
    write(folder / SPLITS["train"], [WORKS, KILL, *MORE] * copies)
    return folder


class Killed(Exception):
    """Stands for a SIGKILL right after the checkpoint the test names."""


def config_folders(tmp_path: Path, encoder: str, names: list[str]) -> dict[str, Path]:
    """One prepared NER folder (DocBins, base pipeline, config) copied under ``names``, each config given small
    batches so that an epoch has many steps."""
    prepared = tmp_path / "prepared"
    kwargs = {"encoder": "transformer"} if encoder == "transformer" else {}
    # prepared with its one or two batches an epoch (dev evaluated after the first step), then run with small ones
    train_ner(bigger_release(tmp_path / "data", 10), prepared, seed=5, max_epochs=2, eval_frequency=1, **kwargs)
    config = re.sub(r"(?m)^size = \d+$", f"size = {SMALL_BATCHES[encoder]}",
                    (prepared / "config.cfg").read_text(encoding="utf-8"))
    config = re.sub(r"(?m)^eval_frequency = \d+$", "eval_frequency = 4", config)
    folders = {}
    for name in names:
        folder = tmp_path / name
        shutil.copytree(prepared, folder, ignore=shutil.ignore_patterns("model-*", "training.json"))
        (folder / "config.cfg").write_text(config.replace(str(prepared), str(folder)), encoding="utf-8")
        folders[name] = folder
    return folders


def loop(folder: Path, **kwargs) -> dict:
    return ner_loop.train(folder / "config.cfg", folder, corpora=[folder / "train.spacy", folder / "dev.spacy"],
                          **kwargs)


def weights(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name / "ner" / "model").read_bytes() for name in ("model-best", "model-last")}


def kill_after(monkeypatch, checkpoints: int) -> None:
    written = []
    write_checkpoint = ner_loop._write_checkpoint

    def then_kill(*args) -> None:
        write_checkpoint(*args)
        written.append(1)
        if len(written) == checkpoints:
            raise Killed

    monkeypatch.setattr(ner_loop, "_write_checkpoint", then_kill)


@pytest.mark.slow
def test_the_loop_trains_the_weights_spacy_s_own_loop_trains(tmp_path: Path) -> None:
    """So the NERs trained before this loop are the NERs it trains (docs/results' NER F1s stand)."""
    from spacy.cli.train import train as spacy_train

    folders = config_folders(tmp_path, "cnn", ["ours", "spacy"])
    loop(folders["ours"])
    spacy_train(folders["spacy"] / "config.cfg", folders["spacy"])
    assert weights(folders["ours"]) == weights(folders["spacy"])
    metas = [json.loads((folders[k] / "model-best" / "meta.json").read_text())["performance"] for k in folders]
    assert metas[0] == metas[1]
    assert not (folders["ours"] / ner_loop.CHECKPOINT).exists()  # an ended run leaves no checkpoint


# 40 sentences of 6-9 words in batches of 20 words: 19 steps an epoch, so the 19th checkpoint ends epoch 1
@pytest.mark.slow
@pytest.mark.parametrize("checkpoints, epochs_started, done", [(5, 1, 5), (19, 1, 19), (23, 2, 4)])
def test_a_killed_training_resumes_from_its_checkpoint_to_the_weights_of_an_unbroken_run(
        tmp_path: Path, monkeypatch, caplog, checkpoints: int, epochs_started: int, done: int) -> None:
    folders = config_folders(tmp_path, "cnn", ["unbroken", "killed"])
    loop(folders["unbroken"])
    kill_after(monkeypatch, checkpoints)
    with pytest.raises(Killed):
        loop(folders["killed"], checkpoint_minutes=0)
    with open(folders["killed"] / ner_loop.CHECKPOINT / ner_loop.STATE, "rb") as handle:
        state = pickle.load(handle)
    assert (state["step"], len(state["orders"]), state["done"]) == (checkpoints - 1, epochs_started, done)
    monkeypatch.undo()
    with caplog.at_level("INFO", logger="tacred"):
        legs = loop(folders["killed"], checkpoint_minutes=0)
    assert legs["resumed_at_step"] == checkpoints
    assert f"at step {checkpoints} (epoch {epochs_started}, after {done} of its batches)" in caplog.text
    assert weights(folders["killed"]) == weights(folders["unbroken"])
    assert not (folders["killed"] / ner_loop.CHECKPOINT).exists()


@pytest.mark.slow
def test_a_killed_transformer_ner_resumes_to_the_weights_of_an_unbroken_run(tmp_path: Path, monkeypatch) -> None:
    """The encoder's PyTorch weights: their Adam moments keyed through the shim, torch's dropout generator."""
    folders = config_folders(tmp_path, "transformer", ["unbroken", "killed"])
    loop(folders["unbroken"])
    kill_after(monkeypatch, 3)
    with pytest.raises(Killed):
        loop(folders["killed"], checkpoint_minutes=0)
    monkeypatch.undo()
    assert loop(folders["killed"], checkpoint_minutes=0)["resumed_at_step"] == 3
    assert weights(folders["killed"]) == weights(folders["unbroken"])


@pytest.mark.slow
def test_tacred_ner_train_killed_mid_run_continues_when_run_again(tmp_path: Path, capsys) -> None:
    """The command itself, SIGKILLed once its first checkpoint is on disk, then run again with the same options."""
    data = bigger_release(tmp_path / "data", 40)  # 160 sentences: 2 steps an epoch, 60 in all
    args = ["train", "--data", str(data), "--seed", "3", "--max_epochs", "30", "--eval_frequency", "10"]
    assert ner_main([*args, "--out", str(tmp_path / "unbroken")]) == 0
    killed = tmp_path / "killed"
    command = [sys.executable, "-m", "tacred", "ner", *args, "--out", str(killed), "--checkpoint_minutes", "0"]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (killed / ner_loop.CHECKPOINT / ner_loop.STATE).exists() and time.monotonic() < deadline:
            assert process.poll() is None, "the training ended before its first checkpoint"
            time.sleep(0.02)
        assert process.poll() is None, "the training ended before it could be killed"
        process.kill()
    finally:
        process.wait()
    assert not (killed / "training.json").exists()
    capsys.readouterr()
    assert ner_main([*args, "--out", str(killed), "--checkpoint_minutes", "0"]) == 0
    record = json.loads((killed / "training.json").read_text())
    assert record["resumed_at_step"] >= 1
    assert weights(killed) == weights(tmp_path / "unbroken")
    unbroken = json.loads((tmp_path / "unbroken" / "training.json").read_text())
    assert record["dev_scores"] == unbroken["dev_scores"] and "resumed_at_step" not in unbroken


def test_a_checkpoint_written_for_another_config_is_refused_naming_it(tmp_path: Path, capsys) -> None:
    data, out = release(tmp_path / "data"), tmp_path / "ner"
    (out / ner_loop.CHECKPOINT).mkdir(parents=True)
    with open(out / ner_loop.CHECKPOINT / ner_loop.STATE, "wb") as handle:
        pickle.dump({"fingerprint": "another config's"}, handle)
    assert ner_main(["train", "--data", str(data), "--out", str(out), "--eval_frequency", "10"]) == 2
    err = capsys.readouterr().err
    assert f"{out / ner_loop.CHECKPOINT}: written for another config or corpus" in err
    assert "delete it to start over" in err
    assert not (out / "model-last").exists()  # nothing was trained over it


def test_an_unreadable_checkpoint_is_refused_naming_its_file(tmp_path: Path, capsys) -> None:
    data, out = release(tmp_path / "data"), tmp_path / "ner"
    (out / ner_loop.CHECKPOINT).mkdir(parents=True)
    (out / ner_loop.CHECKPOINT / ner_loop.STATE).write_bytes(b"cut off")
    assert ner_main(["train", "--data", str(data), "--out", str(out), "--eval_frequency", "10"]) == 2
    assert f"{out / ner_loop.CHECKPOINT / ner_loop.STATE}: cannot be read" in capsys.readouterr().err


def test_a_negative_checkpoint_interval_is_an_error(tmp_path: Path, capsys) -> None:
    assert ner_main(["train", "--data", str(tmp_path), "--out", str(tmp_path / "ner"),
                     "--checkpoint_minutes", "-1"]) == 2
    assert "--checkpoint_minutes -1.0: must be 0 or more" in capsys.readouterr().err

"""W&B tracking offline: configs/wandb.yaml gives an offline run with hyperparameters, per-epoch metrics and the test
tables, the run id survives into `tacred test`, no network access is attempted; logger defaults from the run folder."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from jsonargparse import Namespace

from tacred.evaluation.scoring import score
from tacred.training.tracking import RUN_ID_KEY, fill_logger_defaults, relation_rows, resume_wandb_run
from tests.conftest import REPO, run_in_process

SMALL = ["--model.network.word_dim", "24", "--model.network.ffn_dim", "16",
         "--model.network.attention_dim", "16", "--trainer.enable_progress_bar", "false",
         "--trainer.enable_model_summary", "false", "--data.batch_size", "20"]


def loggers(csv_dir: str | None = "", wandb_dir: str | None = None) -> list[Namespace]:
    return [Namespace(class_path="tacred.training.loggers.ResumableCSVLogger",
                      init_args=Namespace(save_dir=csv_dir, name="", version=None)),
            Namespace(class_path="lightning.pytorch.loggers.WandbLogger",
                      init_args=Namespace(save_dir=wandb_dir, dir=None, id=None, version=None, project="tacred"))]


def test_a_logger_list_gets_the_run_folder_where_unset(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_DIR", raising=False)
    fit, test = loggers(), loggers()
    fill_logger_defaults(fit, tmp_path, "fit")
    fill_logger_defaults(test, tmp_path, "test")
    assert fit[0].init_args.save_dir == str(tmp_path) and fit[0].init_args.version == ""  # RUN/metrics.csv
    assert test[0].init_args.version == "test"  # RUN/test/metrics.csv, the fit's file stays as it was
    assert fit[1].init_args.save_dir == str(tmp_path)
    given = loggers(csv_dir="elsewhere", wandb_dir="wb")
    fill_logger_defaults(given, tmp_path, "fit")
    assert given[0].init_args.save_dir == "elsewhere" and given[1].init_args.save_dir == "wb"
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb_dir"))
    with_env = loggers()
    fill_logger_defaults(with_env, tmp_path, "fit")
    assert with_env[1].init_args.save_dir is None  # WANDB_DIR decides


def test_the_wandb_run_id_comes_from_the_checkpoint_unless_given_or_set_by_a_sweep(monkeypatch):
    monkeypatch.delenv("WANDB_RUN_ID", raising=False)
    entries = loggers()
    resume_wandb_run(entries, {RUN_ID_KEY: "abc123"})
    assert entries[1].init_args.id == "abc123"
    given = loggers()
    given[1].init_args.version = "mine"
    resume_wandb_run(given, {RUN_ID_KEY: "abc123"})
    assert given[1].init_args.id is None
    monkeypatch.setenv("WANDB_RUN_ID", "sweep-trial")
    swept = loggers()
    resume_wandb_run(swept, {RUN_ID_KEY: "abc123"})
    assert swept[1].init_args.id is None


def test_relation_rows_carry_the_scorer_counts():
    rows = relation_rows(score(["a", "a", "no_relation"], ["a", "no_relation", "a"]))
    assert rows == [["a", 0.5, 0.5, 0.5, 2, 2, 1]]


class Listener:
    """A local TCP port that records every connection: W&B's API and proxies point here during the run."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.connections = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.sock.close()


def run_dirs(wandb_dir: Path) -> list[Path]:
    return sorted((wandb_dir / "wandb").glob("offline-run-*"))


@dataclass
class WandbRun:
    run: Path  # the tacred run folder
    wandb_dir: Path
    fit_output: str
    connections: int  # to W&B's API or a proxy, during both commands


@pytest.fixture(scope="module")
def wandb_run(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> WandbRun:
    """`tacred fit` (2 epochs, the best checkpoint logged as an artifact) then `tacred test` of its best checkpoint,
    offline, each in its own process with W&B's API and every proxy pointing at a local port that counts
    connections."""
    base = tmp_path_factory.mktemp("wandb")
    wandb_dir, run = base / "wandb_home", base / "my-run"
    wandb_dir.mkdir()
    config = base / "wandb.yaml"
    config.write_text((REPO / "configs" / "wandb.yaml").read_text().replace("log_model: false", "log_model: true"))
    listener = Listener()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(OMP_NUM_THREADS="1", HF_DATASETS_OFFLINE="1", WANDB_MODE="offline", WANDB_DIR=str(wandb_dir),
               WANDB_BASE_URL=listener.url, HTTP_PROXY=listener.url, HTTPS_PROXY=listener.url,
               http_proxy=listener.url, https_proxy=listener.url, NO_PROXY="")

    def tacred(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "tacred", *args], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    try:
        output = tacred("fit", "--config", "configs/demo.yaml", "--config", str(config), "--data.data_dir",
                        str(demo_data), "--run_dir", str(run), "--trainer.max_epochs", "2", *SMALL)
        tacred("test", "--ckpt_path", str(run / "checkpoints" / "best.ckpt"))
    finally:
        listener.close()
    return WandbRun(run, wandb_dir, output, listener.connections)


@pytest.mark.slow  # a W&B fit and test, each a subprocess
def test_an_offline_wandb_run_without_network(wandb_run: WandbRun):
    run, wandb_dir = wandb_run.run, wandb_run.wandb_dir
    assert wandb_run.connections == 0, "W&B tried to reach the network in offline mode"
    fit_run, test_run = run_dirs(wandb_dir)  # offline-run-<time>-<id>: in the order they ran
    run_id = fit_run.name.rsplit("-", 1)[1]
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)[RUN_ID_KEY] == run_id
    assert (run / "metrics.csv").is_file()  # the CSV logger of the list still writes into the run folder
    record = (fit_run / f"run-{run_id}.wandb").read_bytes()
    for key in (b"val/f1", b"val/loss", b"train/loss", b"lr-SGD", b"decay_start_epoch", b"batch_size"):
        assert key in record, key  # per-epoch metrics and hyperparameters

    assert test_run.name.endswith(run_id)  # the same W&B run continues
    assert (run / "test" / "metrics.csv").is_file()
    [table] = (test_run / "files" / "media" / "table" / "test").glob("relations_*.table.json")
    logged = json.loads(table.read_text())
    expected = json.loads((run / "test_metrics.json").read_text())["relations"]
    assert {row[0]: row[3] for row in logged["data"]} == {rel: r["f1"] for rel, r in expected.items()}
    assert list((test_run / "files" / "media" / "table" / "test").glob("confusion_matrix*.table.json"))


@pytest.mark.parametrize("name", ["wandb.yaml"])
def test_the_wandb_config_parses(name):
    printed = run_in_process("fit", "--config", str(REPO / "configs" / "tacred.yaml"), "--config",
                             str(REPO / "configs" / name), "--print_config").stdout
    assert "lightning.pytorch.loggers.WandbLogger" in printed and "project: tacred" in printed


def wandb_records(path: Path) -> list:
    """The protobuf records of an offline run's ``run-<id>.wandb`` file (a LevelDB-style log of 32 KiB blocks)."""
    import struct

    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    out, pos, block, pending = [], 7, 32768, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7]) if left >= 7 else (0, 0, 0)
        if left < 7 or (length == 0 and kind == 0):
            pos += left
            continue
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            record = pb.Record()
            record.ParseFromString(pending)
            out.append(record)
            pending = b""
    return out


@pytest.mark.slow  # a W&B fit and test, each a subprocess
def test_a_wandb_run_is_complete(wandb_run: WandbRun, demo_data):
    """The whole resolved config (network, trainer), name and tags, the best checkpoint as an artifact, and test
    metrics at the tested checkpoint's last training step without a rewrite of the run's config."""
    run = wandb_run.run
    assert "epoch 2/2" in wandb_run.fit_output  # the epoch lines still print beside W&B's own
    fit_run, test_run = run_dirs(wandb_run.wandb_dir)
    records = wandb_records(next(fit_run.glob("run-*.wandb")))
    [info] = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert info.display_name == "my-run" and list(info.tags) == ["tacred"]
    config_values = {u.key: json.loads(u.value_json) for r in records if r.WhichOneof("record_type") == "config"
                     for u in r.config.update}
    assert config_values["model"]["network"]["word_dim"] == 24 and config_values["model"]["network"]["num_heads"] == 3
    assert config_values["trainer"]["max_epochs"] == 2 and config_values["trainer"]["gradient_clip_val"] == 1.0
    assert config_values["data"]["data_dir"] == str(demo_data)
    artifacts = [r.artifact for r in records if r.WhichOneof("record_type") == "artifact"]
    assert any(a.type == "model" and "best" in a.aliases for a in artifacts)

    step = torch.load(run / "checkpoints" / "best.ckpt", weights_only=False)["global_step"]
    records = wandb_records(next(test_run.glob("run-*.wandb")))
    rewritten = [u.key for r in records if r.WhichOneof("record_type") == "config" for u in r.config.update if u.key]
    assert rewritten == []  # output_dir, vocab_path etc. of the training run stay as they were
    history = [{i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item} for r in records
               if r.WhichOneof("record_type") == "history"]
    [test_row] = [h for h in history if "test/f1" in h]
    assert test_row["trainer/global_step"] == step > 0
    assert test_row["test/f1"] == pytest.approx(json.loads((run / "test_metrics.json").read_text())["f1"])

"""Two-process CPU DDP (gloo): every dev/test example is scored exactly once, the synced scores equal those of the
single-process scorer on the gathered predictions, and a single-process test of the DDP-trained model agrees. Then
(``-m scale``) the documented multi-node launches, torchrun and a SLURM job, as two nodes on this machine: they train
and test as Lightning's own two-process DDP does."""

from __future__ import annotations

import csv
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from tacred.commands.score import main as score_main
from tests.conftest import REPO, doc_block, free_port, run_in_process

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "HF_DATASETS_OFFLINE": "1"}
pytestmark = pytest.mark.slow  # two-process DDP fit and test, each ~15 s

DDP = ["--trainer.strategy", "ddp", "--trainer.devices", "2", "--trainer.accelerator", "cpu"]
SINGLE = ["--trainer.strategy", "auto", "--trainer.devices", "1", "--trainer.accelerator", "cpu"]
# 240 training examples in batches of 10: 24 batches, 12 per rank. 60 dev/test examples in batches of 25: 3
# batches, so rank 0 scores 2 and rank 1 one; uneven shards must still cover every example exactly once.
TINY = {"trainer": {"max_epochs": 5}, "model": {"lr": 0.5, "network": {"word_dim": 24, "ffn_dim": 16, "attention_dim": 16}},
        "data": {"batch_size": 10, "eval_batch_size": 25}}
BEST = "best.ckpt"  # the checkpoint every test below evaluates


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
def tiny_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """configs/demo.yaml with TINY on top, as one file: the documented multi-node commands take one --config."""
    def merged(base: dict, top: dict) -> dict:
        return {**base, **{k: merged(base.get(k) or {}, v) if isinstance(v, dict) else v for k, v in top.items()}}

    path = tmp_path_factory.mktemp("config") / "tiny.yaml"
    path.write_text(yaml.safe_dump(merged(yaml.safe_load((REPO / "configs" / "demo.yaml").read_text()), TINY)))
    return path


@pytest.fixture(scope="module")
def ddp_run(demo_data: Path, tiny_config: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("ddp")
    proc = tacred("fit", "--config", str(tiny_config), *DDP, "--data.data_dir", str(demo_data), "--run_dir", str(run))
    assert "MEMBER: 2/2" in proc.stderr  # really two processes
    return run


@pytest.fixture(scope="module")
def ddp_tested(ddp_run: Path) -> Path:
    proc = tacred("test", "--ckpt_path", str(ddp_run / "checkpoints" / BEST), *DDP)
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
    run_in_process("test", "--ckpt_path", str(ddp_run / "checkpoints" / BEST), *SINGLE, "--run_dir", str(single))
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


def test_a_finished_ddp_command_leaves_no_process_group_for_the_exit(ddp_run: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Left to the interpreter's exit, gloo's threads can abort a process whose command succeeded (SIGABRT: a torchrun
    launch reported as failed); the command destroys its process group itself."""
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    destroyed = []
    real = torch.distributed.destroy_process_group
    monkeypatch.setattr(torch.distributed, "destroy_process_group",
                        lambda *a, **k: destroyed.append(torch.distributed.get_world_size()) or real(*a, **k))
    run_in_process("test", "--ckpt_path", str(ddp_run / "checkpoints" / BEST), "--trainer.strategy", "ddp",
                   "--trainer.devices", "1", "--trainer.accelerator", "cpu", "--run_dir", str(tmp_path / "out"))
    assert destroyed == [1]  # the command joined a process group (of one) and destroyed it
    assert not torch.distributed.is_initialized()
    assert (tmp_path / "out" / "test_predictions.jsonl").exists()


def test_a_torchrun_launch_with_fewer_devices_than_processes_is_one_line(ddp_run: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """torchrun's variables for 2 processes and a command that would run on one device: every process would test
    the whole split alone and write its own copy of the outputs."""
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")
    monkeypatch.setenv("WORLD_SIZE", "2")
    ran = run_in_process("test", "--ckpt_path", str(ddp_run / "checkpoints" / BEST), "--run_dir", str(tmp_path / "out"),
                         check=False)
    errors = [line for line in ran.stderr.splitlines() if "error" in line]
    assert ran.status == 2 and len(errors) == 1, ran.stderr
    assert errors[0].startswith("tacred test: error: torchrun started 2 processes, but --trainer.devices 1 × "
                                "--trainer.num_nodes 1 is 1: pass its --nproc_per_node as --trainer.devices")
    assert not (tmp_path / "out" / "test_predictions.jsonl").exists()

# -- the documented multi-node launches (docs/distributed.md), two "nodes" on this machine ------------------------
def on_nodes(block: str, env: dict[str, str], logs: Path, nodes: int = 2) -> list[str]:
    """Run a documented command once per node at the same time (``NODE_RANK`` 0, 1, ...); each node's stderr."""
    errs, procs = [logs / f"node{rank}.err" for rank in range(nodes)], []
    try:
        for rank, err in enumerate(errs):
            with open(err, "w") as f:
                procs.append(subprocess.Popen(["bash", "-euc", block], cwd=REPO, env={**env, "NODE_RANK": str(rank)},
                                              stdout=subprocess.DEVNULL, stderr=f, start_new_session=True))
        codes = [proc.wait(timeout=300) for proc in procs]
    finally:
        for proc in procs:  # a node that hangs: its whole process group (torchrun and its workers)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    texts = [err.read_text() for err in errs]
    assert codes == [0] * nodes, "\n".join(f"node {r}: exit {c}\n{t[-3000:]}" for r, (c, t) in enumerate(zip(codes, texts, strict=True)))
    return texts


def launch_env(tiny_config: Path, demo_data: Path, run: Path) -> dict[str, str]:
    """The variables the documented commands read, for one CPU process per node; tacred and torchrun on PATH."""
    return {**ENV, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{ENV.get('PATH', '')}", "CONFIG": str(tiny_config),
            "DATA": str(demo_data), "RUN_DIR": str(run), "ACCELERATOR": "cpu", "DEVICES": "1"}


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=False)["state_dict"]


def assert_trained_alike(run: Path, ddp_run: Path) -> None:
    """The same metrics, epoch by epoch, and the same weights, bit for bit, as Lightning's own DDP on one node."""
    assert (run / "metrics.csv").read_text() == (ddp_run / "metrics.csv").read_text()
    for name in ("last.ckpt", BEST):
        ours, theirs = weights(run / "checkpoints" / name), weights(ddp_run / "checkpoints" / name)
        assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours), name


@pytest.mark.scale
def test_two_nodes_started_by_torchrun_train_and_test_as_lightnings_own_ddp_does(
        ddp_tested: Path, tiny_config: Path, demo_data: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    env = {**launch_env(tiny_config, demo_data, run), "MASTER_ADDR": "127.0.0.1"}
    for name in ("torchrun-fit", "torchrun-test"):
        errs = on_nodes(doc_block("distributed.md", name), {**env, "MASTER_PORT": str(free_port())}, tmp_path)
        assert "GLOBAL_RANK: 0, MEMBER: 1/2" in errs[0] and "GLOBAL_RANK: 1, MEMBER: 2/2" in errs[1], name
    assert_trained_alike(run, ddp_tested)

    gold = json.loads((demo_data / "test.json").read_text())
    predictions = [json.loads(line) for line in (run / "test_predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in predictions] == [g["id"] for g in gold], "every test example once, in the split's order"
    assert not list(run.glob("test_*-*")), "the outputs are written once, by global rank 0"
    for name in ("test_predictions.jsonl", "test_metrics.json", "test_score.txt", "test/metrics.csv"):
        assert (run / name).read_text() == (ddp_tested / name).read_text(), name


def stand_in_srun(folder: Path) -> Path:
    """An ``srun`` for a job on this machine: SLURM_NTASKS copies of its command at once, each with the variables
    srun gives a task; fails when any task fails."""
    srun = folder / "srun"
    srun.write_text("""#!/usr/bin/env bash
set -u
pids=()
for ((task = 0; task < SLURM_NTASKS; task++)); do
  SLURM_PROCID=$task SLURM_LOCALID=$((task % SLURM_NTASKS_PER_NODE)) SLURM_NODEID=$((task / SLURM_NTASKS_PER_NODE)) \\
    SLURM_STEP_NUM_TASKS=$SLURM_NTASKS "$@" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
""")
    srun.chmod(0o755)
    return folder


def slurm_job_id() -> str:
    """A job id whose port (Lightning's SLURM environment: 15000 + its last four digits) is free here."""
    for job in random.sample(range(10000), 200):
        port = 15000 + job
        try:
            with socket.create_server(("127.0.0.1", port)):
                return f"77{job:04d}"
        except OSError:
            continue
    pytest.fail("no free port in 15000-24999 for a SLURM job id")


@pytest.mark.scale
def test_a_slurm_job_of_two_nodes_trains_as_lightnings_own_ddp_does(
        ddp_run: Path, tiny_config: Path, demo_data: Path, tmp_path: Path) -> None:
    script = doc_block("distributed.md", "slurm-fit")
    nodes = re.search(r"^#SBATCH --nodes=(\d+)", script, re.M).group(1)
    run = tmp_path / "run"
    env = launch_env(tiny_config, demo_data, run)
    # what sbatch sets for --nodes=2 --ntasks-per-node=1 (one CPU process per node instead of one task per GPU)
    env.update(PATH=f"{stand_in_srun(tmp_path)}{os.pathsep}{env['PATH']}", SLURM_JOB_ID=slurm_job_id(),
               SLURM_JOB_NAME="tacred", SLURM_NNODES=nodes, SLURM_JOB_NUM_NODES=nodes, SLURM_NTASKS_PER_NODE="1",
               SLURM_NTASKS=nodes, SLURM_NODELIST="127.0.0.1")
    err = on_nodes(script, env, tmp_path, nodes=1)[0]  # sbatch runs the script once; its srun starts the tasks
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in err
    assert_trained_alike(run, ddp_run)

"""A tuning study on a real PostgreSQL server: docs/distributed.md's worker command run by two workers against a
throwaway server of the test's own, one worker killed in the middle of a trial and started again; and the errors
of a wrong password or a missing database. Skipped where PostgreSQL is not installed (.ci/run installs it)."""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest

from tacred.commands import tune
from tests.conftest import doc_block, free_port
from tests.experiments.test_tuning import SPACE, tiny_space

pytestmark = [pytest.mark.slow, pytest.mark.scale]
BIN_DIRS = ("/usr/local/bin", *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True))  # Debian's, newest first
EPOCHS = 6  # per trial: the kill comes after the first, with five to go


@dataclass
class Server:
    port: int
    password: str
    user: str = "tacred"
    database: str = "tacred"

    def url(self, password: str | None = None, database: str | None = None) -> str:
        login = self.user if password is None else f"{self.user}:{password}"
        return f"postgresql://{login}@127.0.0.1:{self.port}/{database or self.database}"


def postgres_bin() -> Path | None:
    """The folder with initdb and pg_ctl: on PATH, in /usr/local/bin, or Debian's /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    for folder in ([Path(found).parent] if found else []) + [Path(d) for d in BIN_DIRS]:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def skip(reason: str) -> None:
    """Skip, except on CI: .ci/run installs PostgreSQL, so there a missing server is a failure, not a skip."""
    (pytest.fail if os.environ.get("CI") == "true" else pytest.skip)(reason)


def as_server_user() -> list[str]:
    """The prefix that runs a command as an unprivileged user: initdb and postgres refuse to run as root."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
    if runuser is None:
        skip("running as root and without runuser: initdb refuses root and no other user can be switched to")
    names = {p.pw_name for p in pwd.getpwall()}
    return [runuser, "-u", "postgres" if "postgres" in names else "nobody", "--"]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Server]:
    """A PostgreSQL server for this module: a new cluster in a temporary folder, on 127.0.0.1 only (no Unix socket)
    at a free port, password login; stopped and removed at the end."""
    folder = postgres_bin()
    if folder is None:
        skip("PostgreSQL is not installed (no initdb and pg_ctl on PATH, in /usr/local/bin or "
                    "/usr/lib/postgresql/*/bin); `apt-get install postgresql` (.ci/run does so on CI)")
    import psycopg

    prefix = as_server_user()
    # not under pytest's tmp_path: its folders are root's alone, and the server user must own the cluster's
    root = Path(tempfile.mkdtemp(prefix="tacred-postgres-"))
    server = Server(port=free_port(), password=secrets.token_hex(12))
    (root / "password").write_text(server.password)
    if prefix:
        shutil.chown(root, prefix[2])
        shutil.chown(root / "password", prefix[2])
    data, run = root / "data", lambda *cmd: subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=120)
    try:
        init = run(str(folder / "initdb"), "-D", str(data), "-U", server.user, "--pwfile", str(root / "password"),
                   "--auth-host", "scram-sha-256", "--auth-local", "reject", "-E", "UTF8", "--no-sync")
        assert init.returncode == 0, f"initdb failed:\n{init.stdout[-2000:]}{init.stderr[-2000:]}"
        options = f"-c listen_addresses=127.0.0.1 -p {server.port} -c unix_socket_directories= -c fsync=off"
        start = run(str(folder / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-w", "-t", "60",
                    "-o", options, "start")
        assert start.returncode == 0, f"pg_ctl start failed:\n{start.stderr}{(root / 'server.log').read_text()}"
        with psycopg.connect(server.url(server.password, "postgres"), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {server.database}")
        yield server
    finally:
        run(str(folder / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


def test_two_workers_share_a_study_and_a_worker_killed_mid_trial_is_retried_from_its_checkpoint(
        postgres: Server, demo_data: Path, tmp_path: Path) -> None:
    study_dir, trials_dir, n_trials = tmp_path / "study", tmp_path / "trials", 4
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONUNBUFFERED": "1", "WANDB_MODE": "offline", "SPACE": str(tiny_space(tmp_path, demo_data, EPOCHS)),
           "N_TRIALS": str(n_trials), "STUDY": "tiny", "STUDY_DIR": str(study_dir), "TRIALS_DIR": str(trials_dir),
           "PGHOST": "127.0.0.1", "PGPORT": str(postgres.port), "PGUSER": postgres.user,
           "PGPASSWORD": postgres.password, "PGDATABASE": postgres.database}
    # the documented command, with heartbeats every second so that the dead trial is retried within seconds
    command = doc_block("distributed.md", "postgres-tune").rstrip() + " --heartbeat 1 --grace 4"
    first = trials_dir / "trial_0000"
    workers: list[subprocess.Popen] = []

    def start(name: str) -> subprocess.Popen:
        with open(tmp_path / f"{name}.log", "w") as log:
            workers.append(subprocess.Popen(["bash", "-euc", command], cwd=tmp_path, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True))
        return workers[-1]

    def wait_for(path: Path, worker: subprocess.Popen) -> None:
        deadline = time.monotonic() + 180
        while not path.exists() and worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert path.exists(), f"{path} never appeared:\n{(tmp_path / 'a.log').read_text()[-3000:]}"

    try:
        killed = start("a")
        wait_for(first, killed)  # worker a runs trial 0; b starts after it, so trial 0 is a's
        start("b")
        wait_for(first / "checkpoints" / "last.ckpt", killed)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
        assert not (first / "fit.done").exists(), "the kill came after the trial had finished"
        start("a_again")
        codes = [worker.wait(timeout=300) for worker in workers[1:]]
    finally:
        for worker in workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
    logs = {name: (tmp_path / f"{name}.log").read_text() for name in ("a", "b", "a_again")}
    assert codes == [0, 0], "\n\n".join(f"{name}:\n{text[-3000:]}" for name, text in logs.items())

    # the study: trial 0 failed once and was retried with its parameters in its run folder
    trials = optuna.load_study(study_name="tiny", storage=postgres.url(postgres.password)).get_trials()
    failed = [t for t in trials if t.state.name == "FAIL"]
    finished = [t for t in trials if t.state.name == "COMPLETE"]
    assert [t.number for t in failed] == [0] and len(trials) == len(failed) + len(finished)
    retry = next(t for t in finished if t.user_attrs["trial"] == 0)
    assert retry.number > 0 and retry.params == failed[0].params
    assert retry.user_attrs["run_dir"] == failed[0].user_attrs["run_dir"] == str(first)
    resumed = re.findall(rf"resuming from {re.escape(str(first))}/checkpoints/last\.ckpt after (\d+) finished", "".join(logs.values()))
    assert len(resumed) == 1 and 1 <= int(resumed[0]) < EPOCHS, "retried from the dead worker's last.ckpt"
    # n_trials reached (a worker that started a trial before the other finished the last needed one completes it)
    labels = sorted(t.user_attrs["trial"] for t in finished)
    assert n_trials <= len(finished) <= n_trials + 1 and len(set(labels)) == len(labels), labels
    for label in labels:  # every run trained each epoch once: the retry went on from where the kill left it
        with open(trials_dir / f"trial_{label:04d}" / "metrics.csv", encoding="utf-8") as f:
            epochs = [int(row["epoch"]) for row in csv.DictReader(f) if row.get("val/f1")]
        assert epochs == list(range(EPOCHS)), (label, epochs)

    # the records in the study folder hold every trial
    records = json.loads((study_dir / "trials.json").read_text())
    assert sorted(r["user_attrs"]["trial"] for r in records) == labels
    assert {r["user_attrs"]["trial"]: r["value"] for r in records} == {t.user_attrs["trial"]: t.value for t in finished}
    with open(study_dir / "trials.csv", encoding="utf-8") as f:
        rows = sorted((int(r["number"]), r["state"]) for r in csv.DictReader(f))
    assert rows == sorted([(0, "FAIL")] + [(label, "COMPLETE") for label in labels])
    summary = (study_dir / "summary.md").read_text()
    assert f"Budget so far: {len(trials)} trials ({len(finished)} complete, 1 fail)" in summary
    assert (study_dir / "best.yaml").is_file()


@pytest.mark.parametrize("problem", ["wrong password in the URL", "wrong PGPASSWORD", "no such database"])
def test_a_storage_the_server_refuses_is_one_line_without_the_password(
        problem: str, postgres: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    wrong = "Not-" + postgres.password
    url, message = {
        "wrong password in the URL": (postgres.url(wrong), "password authentication failed"),
        "wrong PGPASSWORD": (postgres.url(), "password authentication failed"),
        "no such database": (postgres.url(postgres.password, "nope"), 'database "nope" does not exist'),
    }[problem]
    monkeypatch.setenv("PGPASSWORD", wrong)
    space = tmp_path / "space.yaml"
    space.write_text(json.dumps(SPACE))
    assert tune.main(["--space", str(space), "--storage", url, "--study_dir", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    shown = url.replace(f":{wrong}@", ":***@").replace(f":{postgres.password}@", ":***@")
    assert err.count("\n") == 1 and err.startswith(f"tacred tune: error: --storage {shown}: "), err
    assert message in err and postgres.password not in err and wrong not in err

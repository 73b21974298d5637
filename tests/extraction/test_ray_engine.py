"""``tacred extract --engine ray`` on a real two-node Ray cluster on 127.0.0.1 (a head and a worker node started with
``ray start``, one CPU each): the worker node is SIGKILLed in the middle of the run, and the output folder still equals
a single-process run's byte for byte (every chunk once, none missing). ``make test-scale`` installs ``tacred[ray]``;
elsewhere the test is skipped when Ray is missing."""

from __future__ import annotations

import contextlib
import json
import os
import random
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

import pytest

from tacred.serving.process import descendants
from tests.conftest import REPO, free_port, run_in_process

NODE = ["--num-cpus", "1", "--object-store-memory", str(200 * 2**20), "--disable-usage-stats",
        "--node-ip-address", "127.0.0.1"]
CHUNK = "4"
PEOPLE = ["Maria Lopez", "John Smith", "Barack Obama", "Satya Nadella", "Anna Berg", "Li Wei"]
ORGS = ["Acme Holdings", "Globex Corp", "Initech", "Microsoft", "the University of Chicago"]
PLACES = ["Chicago", "Seattle", "Hawaii", "Berlin", "Austin"]


def ray_program() -> str:
    found = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    if found is None or not _importable("ray.data"):
        (pytest.fail if os.environ.get("CI") == "true" else pytest.skip)(
            "Ray is not installed: pip install 'tacred[ray]' (make test-scale does)")
    return found


def _importable(module: str) -> bool:
    with contextlib.suppress(ImportError):
        __import__(module)
        return True
    return False


def ray_env(temp: str) -> dict[str, str]:
    """A clean environment for Ray: no cluster address inherited, the cluster's own token (Ray's token
    authentication, without reading or writing ~/.ray), no usage reports, and a dead node noticed within about 3 s
    (heartbeats every second, three missed) instead of Ray's default 30 s."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0", "RAY_health_check_period_ms": "1000",
            "RAY_health_check_timeout_ms": "1000", "RAY_health_check_failure_threshold": "3",
            "TMPDIR": temp, "OMP_NUM_THREADS": "1"}


@dataclass
class Cluster:
    address: str
    head: subprocess.Popen
    worker: subprocess.Popen
    temp: str
    env: dict[str, str]

    def ours(self) -> list[int]:
        """Every process of this cluster: the two ``ray start`` processes, what they started, and any process whose
        command line names this cluster's own temporary folder (Ray workers outlive a killed raylet briefly)."""
        pids = {self.head.pid, self.worker.pid, *descendants(self.head.pid), *descendants(self.worker.pid)}
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                with contextlib.suppress(OSError):
                    if self.temp.encode() in (proc / "cmdline").read_bytes():
                        pids.add(int(proc.name))
        return sorted(pids - {os.getpid()})


def wait_for(what: str, check, timeout: float, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise TimeoutError(f"waited {timeout:.0f} s for {what}")


def raylet_of(start: subprocess.Popen) -> int | None:
    """The raylet that a ``ray start`` process runs (its node is up once the raylet is)."""
    for pid in descendants(start.pid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet":
                return pid
    return None


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A head node and a worker node on 127.0.0.1, each in its own session; every process of it is stopped at the
    end (SIGTERM, then SIGKILL), pass or fail."""
    ray = ray_program()
    temp = tempfile.mkdtemp(prefix="tr", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = ray_env(temp)
    port = free_port()
    logs = [open(tmp_path / name, "w") for name in ("head.log", "worker.log")]  # noqa: SIM115 - closed below
    head = subprocess.Popen([ray, "start", "--head", "--block", "--port", str(port), "--include-dashboard", "false",
                             "--temp-dir", temp, *NODE], env=env, stdout=logs[0], stderr=subprocess.STDOUT,
                            start_new_session=True)
    worker = None
    try:
        wait_for("the head node's raylet", lambda: raylet_of(head), 90)
        worker = subprocess.Popen([ray, "start", "--block", "--address", f"127.0.0.1:{port}", *NODE], env=env,
                                  stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True)
        wait_for("the worker node's raylet", lambda: raylet_of(worker), 90)
        yield Cluster(f"127.0.0.1:{port}", head, worker, temp, env)
    finally:
        stop = Cluster("", head, worker or head, temp, env)
        pids = stop.ours()
        for start in (worker, head):
            if start is not None:
                with contextlib.suppress(ProcessLookupError):
                    start.send_signal(signal.SIGTERM)  # `ray start --block` stops its node on SIGTERM
        for start in (worker, head):
            if start is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    start.wait(timeout=5)  # it would drain for up to 30 s: nothing here needs draining
        for pid in set(pids) | set(stop.ours()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for log in logs:
            log.close()
        shutil.rmtree(temp, ignore_errors=True)
        def alive() -> list[int]:
            return [pid for pid in pids if Path(f"/proc/{pid}").exists() and _state(pid) != "Z"]

        with contextlib.suppress(TimeoutError):  # a SIGKILLed process takes a moment to go
            wait_for("the cluster's processes to end", lambda: not alive(), 15)
        assert not alive(), f"Ray processes left: {alive()}"


def _state(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return "Z"


def write_corpus(path: Path, documents: int) -> Path:
    """News-like documents of three sentences each about people, organisations and places, plus two bad ones."""
    rng = random.Random(7)
    lines = []
    for i in range(documents):
        sentences = []
        for _ in range(3):
            p, o, c = rng.choice(PEOPLE), rng.choice(ORGS), rng.choice(PLACES)
            sentences.append(rng.choice([f"{p}, the chief executive of {o}, said on Monday.",
                                         f"{p} was born in {c}.", f"{o} is based in {c}.", f"{p} joined {o} in 2001."]))
        lines.append(json.dumps({"id": f"doc-{i:04d}", "text": " ".join(sentences)}))
    lines.insert(documents // 2, json.dumps({"id": "empty", "text": ""}))
    lines.insert(documents // 3, json.dumps({"id": "binary", "text": "\x00\x01\x02" * 40}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def map_workers(start: subprocess.Popen) -> list[int]:
    """The Ray Data actors (``ray::MapWorker``) running on a node."""
    found = []
    for pid in descendants(start.pid):
        with contextlib.suppress(OSError):
            if b"MapWorker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
    return found


@pytest.mark.slow
@pytest.mark.scale
def test_a_two_node_ray_run_whose_worker_node_is_killed_equals_the_single_process_run(
        cluster: Cluster, checkpoint: Path, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 600)
    chunks = -(-602 // int(CHUNK))
    common = [str(corpus), "--ckpt_path", str(checkpoint), "--chunk_size", CHUNK]
    single = tmp_path / "single"
    begun = time.monotonic()
    run_in_process("extract", *common, "--output", str(single), "--num_threads", "1")
    print(f"single process: {time.monotonic() - begun:.0f} s")

    on_ray = tmp_path / "ray"
    log = open(tmp_path / "extract.log", "w")  # noqa: SIM115 - closed below
    started = time.monotonic()
    driver = subprocess.Popen([sys.executable, "-m", "tacred", "extract", *common, "--output", str(on_ray),
                               "--engine", "ray", "--address", cluster.address, "--workers", "2"],
                              cwd=REPO, env=cluster.env, stdout=log, stderr=subprocess.STDOUT)
    try:
        done = on_ray / "done"
        # the worker node's actor is up and a chunk has been finished since: it is in the middle of its work
        wait_for("an actor on the worker node", lambda: map_workers(cluster.worker), 120)
        before = len(list(done.glob("*.json"))) if done.is_dir() else 0
        wait_for("a chunk finished with both actors up", lambda: len(list(done.glob("*.json"))) > before, 60, 0.05)
        killed = [cluster.worker.pid, *descendants(cluster.worker.pid)]
        at_kill = len(list(done.glob("*.json")))
        for pid in killed:  # the whole node at once: ray start, raylet, its agents and its actor
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert at_kill < chunks, "the run ended before the worker node was killed"
        assert driver.wait(timeout=150) == 0, (tmp_path / "extract.log").read_text()[-3000:]
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        log.close()
    assert wait_for("the worker node's processes to end", lambda: not any(
        Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in killed), 15)
    assert files(on_ray) == files(single), "the Ray run's output differs from the single-process run's"
    summary = json.loads((on_ray / "summary.json").read_text())
    assert (summary["documents"], summary["skipped"]) == (601, 1)  # the empty document counts; the binary one not
    assert [json.loads(line)["id"] for line in (on_ray / "bad.jsonl").read_text().splitlines()] == ["binary"]
    print(f"ray: worker node killed with {at_kill} of {chunks} chunks done; {time.monotonic() - started:.0f} s "
          f"from the driver's start to its end")
    assert len(list((on_ray / "done").glob("*.json"))) == chunks


def test_an_address_without_the_ray_engine_or_with_no_cluster_is_a_one_line_error(checkpoint, tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl", 3)
    ran = run_in_process("extract", str(corpus), "--ckpt_path", str(checkpoint), "--address", "127.0.0.1:6379",
                         check=False)
    assert (ran.status, ran.stderr.strip().splitlines()[-1]) == (
        2, "tacred extract: error: --address is the Ray cluster of --engine ray; add --engine ray")
    port = free_port()  # nothing listens there
    ran = run_in_process("extract", str(corpus), "--ckpt_path", str(checkpoint), "--engine", "ray", "--address",
                         f"127.0.0.1:{port}", "--output", str(tmp_path / "out"), check=False)
    expected = (f"no Ray cluster answers at 127.0.0.1:{port} (Connection refused)" if _importable("ray.data")
                else "Ray is not installed")
    assert ran.status == 2 and expected in ran.stderr.strip().splitlines()[-1], ran.stderr


def test_chunks_are_handed_on_once_in_input_order_whatever_order_ray_returns_them():
    from tacred.extraction.documents import BadDocument, Document
    from tacred.extraction.output import Chunk
    from tacred.extraction.ray_engine import RayEngineError, _in_order

    chunks = [Chunk(k, [Document(f"d{k}", "text"), BadDocument(f"b{k}", "corpus", "binary data")]) for k in (3, 4, 5)]

    def row(k: int) -> dict:
        return {"index": k, "results": json.dumps([{"doc_id": f"d{k}", "sentences": 1, "pairs": 0, "mentions": [],
                                                    "error": None}])}

    handed = []
    _in_order(chunks, [row(5), row(3), row(5), row(4), row(3)], handed.append)  # a retried chunk comes twice
    assert [(d.index, [r.doc_id for r in d.results], [b.id for b in d.bad]) for d in handed] == [
        (3, ["d3"], ["b3"]), (4, ["d4"], ["b4"]), (5, ["d5"], ["b5"])]
    with pytest.raises(RayEngineError, match=r"no result for chunk\(s\) \[4\]"):
        _in_order(chunks, [row(3), row(5)], lambda done: None)

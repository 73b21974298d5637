"""``tacred extract --engine ray`` on a real two-node Ray cluster on 127.0.0.1 (a head and a worker node started with
``ray start``, one CPU each): the worker node is SIGKILLed in the middle of the run, and the run still writes every
mention of a single-process run once, none missing; a driver SIGKILLed mid-run is resumed by the same command, again
every mention once. The driver lists the corpus and never reads it (it is guarded, and the corpus is larger than the
driver's memory grows), and each actor loads the model once. ``make test-scale`` installs ``tacred[ray]``; elsewhere
the tests are skipped when Ray is missing."""

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
# relations for every candidate pair of the tiny test model, so that there are mentions to count
EXTRACT = ["--chunk_size", CHUNK, "--threshold", "0", "--no_signatures"]
LONG_LINES, LONG_CHARS = 150, 1_400_000  # long.jsonl: 210 MB of documents over --max_chars, read and skipped
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


# The driver of a Ray run, guarded (argv: corpus folder, report file, then `tacred extract`'s arguments): opening any
# file of the corpus raises (an audit hook sees every open of Python code), the functions that read documents raise,
# and the driver's peak memory is noted once Ray is up and at the end. The actors read the corpus in their own
# processes, where nothing is guarded.
GUARDED_DRIVER = r"""
import json, os, sys
corpus, report_path = os.path.realpath(sys.argv[1]), sys.argv[2]
report = {"opened": [], "called": []}

def peak_kb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if path == corpus or path.startswith(corpus + os.sep):
            report["opened"].append(path)
            raise PermissionError(f"the driver opened {path}")

sys.addaudithook(hook)
import tacred.extraction.documents as documents
import tacred.extraction.progress as progress
import tacred.extraction.ray_engine as engine

def refuse(name):
    def guarded(*args, **kwargs):
        report["called"].append(name)
        raise AssertionError(f"the driver called {name}")
    return guarded

for name in ("read_documents", "checked_text", "line_document", "jsonl_document", "parquet_documents",
             "file_document"):
    setattr(documents, name, refuse(name))
progress.count_documents = refuse("count_documents")
connect = engine.connect

def measured(address):
    found = connect(address)
    report["peak_kb_connected"] = peak_kb()
    return found

engine.connect = measured
from tacred.cli import main
try:
    status = main(["extract", *sys.argv[3:]])
finally:
    report["peak_kb_end"] = peak_kb()
    with open(report_path, "w") as out:
        json.dump(report, out)
sys.exit(status)
"""


def write_long(path: Path) -> int:
    """Documents longer than --max_chars: each is read and parsed where Ray reads, then skipped; the file's size."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(LONG_LINES):
            out.write(json.dumps({"id": f"long-{i:03d}", "text": "word " * (LONG_CHARS // 5)}) + "\n")
    return path.stat().st_size


def mentions(folder: Path) -> list[dict]:
    from tacred.extraction.output import read_mentions

    return list(read_mentions(folder))


# A mention's probability as the two engines write it (rounded to 6 decimals) may differ by one in the last place: the
# relation model's float32 scores of a pair move by a unit in the last place with the batch around it and the process
# that computes it (the tiny model's `Globex Corp per:stateorprovinces_of_residence John Smith` of doc-0297 gives
# 0.1068155095 in a chunk of 4 documents and 0.1068154722 alone, so 0.106816 or 0.106815)
PROBABILITY_PLACE = 1e-6


def same_mentions(got: list[dict], expected: list[dict]) -> None:
    """The same mentions in the same order, every field equal and the probabilities within their last place."""
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert {**a, "probability": None} == {**b, "probability": None}, f"mention {i}"
        assert abs(a["probability"] - b["probability"]) <= PROBABILITY_PLACE * 1.001, f"mention {i}: {a} != {b}"


def recorded_documents(folder: Path) -> list[str]:
    """Every document of the folder's records (extracted or skipped), one entry per time it was recorded."""
    found = []
    for record in sorted((folder / "done").glob("*.json")):
        data = json.loads(record.read_text())
        found += data["documents"] + [bad["id"] for bad in data["bad"]]
    return found


def loads(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "actors.log").read_text().splitlines()]


def done_count(folder: Path) -> int:
    return len(list((folder / "done").glob("*.json"))) if (folder / "done").is_dir() else 0


@pytest.mark.slow
@pytest.mark.scale
def test_a_two_node_ray_run_survives_a_killed_node_and_a_killed_driver_with_every_mention_once(
        cluster: Cluster, checkpoint: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    news = write_corpus(corpus / "news.jsonl", 600)
    long_bytes = write_long(corpus / "long.jsonl")
    blocks = -(-602 // int(CHUNK)) + -(-LONG_LINES // int(CHUNK))
    single = tmp_path / "single"
    begun = time.monotonic()
    run_in_process("extract", str(corpus), "--ckpt_path", str(checkpoint), *EXTRACT, "--output", str(single),
                   "--num_threads", "1")
    print(f"single process: {time.monotonic() - begun:.0f} s")
    expected = mentions(single)
    assert len(expected) > 1000

    # 1. two actors on two nodes; the worker node is SIGKILLed in the middle of the run
    on_ray, report = tmp_path / "ray", tmp_path / "driver.json"
    log = open(tmp_path / "extract.log", "w")  # noqa: SIM115 - closed below
    started = time.monotonic()
    driver = subprocess.Popen([sys.executable, "-c", GUARDED_DRIVER, str(corpus), str(report), str(corpus),
                               "--ckpt_path", str(checkpoint), *EXTRACT, "--output", str(on_ray), "--engine", "ray",
                               "--address", cluster.address, "--workers", "2"],
                              cwd=REPO, env=cluster.env, stdout=log, stderr=subprocess.STDOUT)
    try:
        # both actors have loaded the model (one on each node), and a block has been finished since: the worker
        # node's actor is in the middle of its work
        wait_for("an actor on the worker node", lambda: map_workers(cluster.worker), 120)
        wait_for("both actors to load the model", lambda: (on_ray / "actors.log").is_file()
                 and len(loads(on_ray)) >= 2, 120)
        before = done_count(on_ray)
        wait_for("a block finished with both actors up", lambda: done_count(on_ray) > before, 60, 0.05)
        killed = [cluster.worker.pid, *descendants(cluster.worker.pid)]
        at_kill = done_count(on_ray)
        for pid in killed:  # the whole node at once: ray start, raylet, its agents and its actor
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert at_kill < blocks, "the run ended before the worker node was killed"
        assert driver.wait(timeout=180) == 0, (tmp_path / "extract.log").read_text()[-3000:]
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        log.close()
    assert wait_for("the worker node's processes to end", lambda: not any(
        Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in killed), 15)
    print(f"ray: worker node killed with {at_kill} of {blocks} blocks done; {time.monotonic() - started:.0f} s "
          f"from the driver's start to its end")
    same_mentions(mentions(on_ray), expected)  # every mention once, in input order
    for name in ("summary.json", "bad.jsonl"):
        assert (on_ray / name).read_bytes() == (single / name).read_bytes(), name
    assert sorted(recorded_documents(on_ray)) == sorted(recorded_documents(single))  # every document once
    assert done_count(on_ray) == blocks
    loaded = run_in_process("kb", str(on_ray), "--db", str(tmp_path / "kb.duckdb"), "--query",
                            "SELECT count(*) AS n FROM mentions")  # the knowledge base reads the folder as it is
    assert json.loads(loaded.stdout.splitlines()[-1]) == {"n": len(expected)}
    # the model and spaCy are loaded once per actor: the two actors, and at most the killed one started again
    started_actors = loads(on_ray)
    assert len({(a["actor"], a["pid"]) for a in started_actors}) == len(started_actors)
    assert 2 <= len(started_actors) <= 3 and len({a["node"] for a in started_actors}) >= 2, started_actors
    # the driver listed the corpus and read none of it
    guard = json.loads(report.read_text())
    assert (guard["opened"], guard["called"]) == ([], [])
    grown = (guard["peak_kb_end"] - guard["peak_kb_connected"]) * 1024
    print(f"driver: peak memory grew by {grown / 2**20:.0f} MiB during the run; the corpus holds "
          f"{(long_bytes + news.stat().st_size) / 2**20:.0f} MiB")
    assert grown < long_bytes / 4

    # 2. the driver is SIGKILLed in the middle of a run on the surviving node; the same command resumes it
    ids = {json.loads(line)["id"] for line in news.read_text().splitlines()}
    news_blocks = -(-602 // int(CHUNK))
    resumed = tmp_path / "resumed"
    command = [sys.executable, "-m", "tacred", "extract", str(news), "--ckpt_path", str(checkpoint), *EXTRACT,
               "--output", str(resumed), "--engine", "ray", "--address", cluster.address, "--workers", "1"]
    with open(tmp_path / "first.log", "w") as first:
        driver = subprocess.Popen(command, cwd=REPO, env=cluster.env, stdout=first, stderr=subprocess.STDOUT)
        try:
            wait_for("five blocks done", lambda: done_count(resumed) >= 5, 150, 0.02)
            driver.kill()
        finally:
            driver.kill()
            driver.wait()
    finished = {p.name: p.stat().st_mtime_ns for p in (resumed / "done").glob("*.json")}
    assert len(finished) < news_blocks, "the first run ended before its driver was killed"
    again = subprocess.run(command, cwd=REPO, env=cluster.env, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stderr[-3000:]
    same_mentions(mentions(resumed), [m for m in expected if m["doc_id"] in ids])
    assert sorted(recorded_documents(resumed)) == sorted(ids) and done_count(resumed) == news_blocks
    # the blocks the killed run finished were skipped, not done again; one model load for each run's one actor
    assert {name: (resumed / "done" / name).stat().st_mtime_ns for name in finished} == finished
    assert len(loads(resumed)) == 2
    print(f"resumed: driver killed with {len(finished)} of {news_blocks} blocks done")


def test_the_ray_engine_refuses_an_address_alone_no_cluster_standard_input_and_no_output_folder_in_one_line(
        checkpoint, tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl", 3)
    ran = run_in_process("extract", str(corpus), "--ckpt_path", str(checkpoint), "--address", "127.0.0.1:6379",
                         check=False)
    assert (ran.status, ran.stderr.strip().splitlines()[-1]) == (
        2, "tacred extract: error: --address is the Ray cluster of --engine ray; add --engine ray")
    for given, message in ((["-", "--output", str(tmp_path / "o")], "--engine ray reads files, not standard input"),
                           ([str(corpus)], "--engine ray writes its shards into a folder: add --output DIR")):
        ran = run_in_process("extract", *given, "--ckpt_path", str(checkpoint), "--engine", "ray", check=False)
        assert ran.status == 2 and ran.stderr.strip().splitlines()[-1].startswith(
            f"tacred extract: error: {message}"), ran.stderr
    port = free_port()  # nothing listens there
    ran = run_in_process("extract", str(corpus), "--ckpt_path", str(checkpoint), "--engine", "ray", "--address",
                         f"127.0.0.1:{port}", "--output", str(tmp_path / "out"), check=False)
    expected = (f"no Ray cluster answers at 127.0.0.1:{port} (Connection refused)" if _importable("ray.data")
                else "Ray is not installed")
    assert ran.status == 2 and expected in ran.stderr.strip().splitlines()[-1], ran.stderr
    assert not (tmp_path / "out").exists()  # a failed run leaves no manifest that would lock the folder
    # a folder records its engine (the engines name their shards differently): the local engine refuses a Ray one
    from tacred.commands.extract import build_parser, manifest
    from tacred.extraction.output import ShardSink

    args = build_parser().parse_args([str(corpus), "--ckpt_path", str(checkpoint), "--engine", "ray", "--output",
                                      str(tmp_path / "out")])
    ShardSink(tmp_path / "out", "jsonl", manifest(args))
    assert json.loads((tmp_path / "out" / "extract.json").read_text())["engine"] == "ray"
    ran = run_in_process("extract", str(corpus), "--ckpt_path", str(checkpoint), "--output", str(tmp_path / "out"),
                         check=False)
    assert ran.status == 2 and "differs in engine" in ran.stderr, ran.stderr


def test_the_actor_pool_uses_every_cpu_of_the_cluster_by_default():
    from tacred.extraction.ray_engine import pool_size

    assert pool_size(8, 4, None, None) == (8, 1)  # one single-threaded actor per CPU
    assert pool_size(8, 4, 2, None) == (2, 4)  # the CPUs shared out, at most one node's
    assert pool_size(8, 8, 2, None) == (2, 4)
    assert pool_size(8, 4, 1, None) == (1, 4)
    assert pool_size(8, 4, None, 2) == (4, 2)
    assert pool_size(2, 1, 5, None) == (5, 1)


@pytest.mark.scale  # Ray is installed for `make test-scale` only
def test_the_ray_reader_cuts_each_file_into_the_blocks_a_local_run_reads_and_skips_finished_ones(tmp_path):
    """:class:`DocumentBlocks` (without a cluster) against the local reader, file by file, for every format."""
    pytest.importorskip("ray.data")
    from types import SimpleNamespace

    import pyarrow as pa
    import pyarrow.fs
    import pyarrow.parquet as pq

    from tacred.extraction.documents import read_documents
    from tacred.extraction.output import chunked
    from tacred.extraction.ray_stages import DocumentBlocks, SourceFile

    jsonl = tmp_path / "a.jsonl"
    jsonl.write_bytes(b'{"id": "x", "text": "Ann met Bo."}\n\n{"text": "Li is here."}\nnot json\n[1]\n'
                      b'{"id": 3, "text": 5}\n{"text": "\\u0000"}\r\n{"text": "' + b"long " * 30 + b'"}\n'
                      b'{"text": "last one"}')
    lines = tmp_path / "b.txt"
    lines.write_bytes(b"one\n\n  \n\xff bad\ntwo\r\nthree\nfour\nfive")
    text = tmp_path / "c.txt"
    text.write_text("A whole file.\n")
    parquet = tmp_path / "d.parquet"
    pq.write_table(pa.table({"text": ["p0", None, "p\x002", "p3", "p4"], "id": [None, "n1", None, "i3", None]}),
                   parquet, row_group_size=2)
    reader = SimpleNamespace(chunk_size=3, max_chars=100, text_column="text", id_column="id")
    for path, kind in ((jsonl, "jsonl"), (lines, "lines"), (text, "text"), (parquet, "parquet")):
        local = [(c.index, c.items) for c in chunked(read_documents([path], lines=kind == "lines", max_chars=100), 3)]
        assert local, path
        for finished in (set(), {1}, {0, 2}):
            with pyarrow.fs.LocalFileSystem().open_input_file(str(path)) as f:
                found = list(DocumentBlocks._blocks(reader, f, SourceFile(0, str(path), kind), finished))
            assert found == [(k, items) for k, items in local if k not in finished], (path, finished)

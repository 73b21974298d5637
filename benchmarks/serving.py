"""Benchmark 5: ``tacred serve`` under a short, bounded load on 127.0.0.1: requests/s and p50/p99 latency.

The paper's model with random weights (speed does not depend on them) is saved as a checkpoint and served by
``tacred serve`` in a child process; client threads send one TACRED example per request (no spaCy on the server)
until a fixed number of requests or a time limit is reached, whichever comes first. Loopback only.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import QUICK_NETWORK, Table, benchmark_data, machine_line, median, percentile, script_main  # noqa: E402

from tacred.data.datamodule import TacredDataModule  # noqa: E402
from tacred.models.config import NetworkConfig  # noqa: E402
from tacred.models.module import RelationExtractor  # noqa: E402
from tacred.serving import serve_in_background  # noqa: E402


def random_checkpoint(data_dir: Path, labels: Path, out: Path, network: NetworkConfig | None = None) -> Path:
    """A checkpoint of the paper's model (or ``network``) with random weights, loadable by ``tacred serve``."""
    dm = TacredDataModule(data_dir=str(data_dir), labels=str(labels), entity_masking=False)
    torch.manual_seed(0)
    model = RelationExtractor(vocab=dm.vocab, network=network or NetworkConfig())
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams),
                "tacred_vocab": model.vocab.to_dict()}, out)
    return out


def load(url: str, bodies: list[str], clients: int, max_requests: int, max_seconds: float) -> tuple[list[float], float, int]:
    """Send requests from ``clients`` threads; return latencies (s), the wall time and the count of errors."""
    import requests

    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    counter = iter(range(max_requests))
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        with requests.Session() as session:
            while time.monotonic() < deadline:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                start = time.perf_counter()
                response = session.post(f"{url}/predict", data=bodies[i % len(bodies)], timeout=30,
                                        headers={"Content-Type": "application/json"})
                elapsed = time.perf_counter() - start
                with lock:
                    latencies.append(elapsed)
                    errors[0] += response.status_code != 200

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, time.perf_counter() - start, errors[0]


def run(quick: bool = False) -> Table:
    """Requests/s and latency for 1, 8 and 32 concurrent clients, batching up to 32 requests."""
    max_requests, max_seconds = (40, 10.0) if quick else (2000, 30.0)
    table = Table("Serving: tacred serve on 127.0.0.1, one TACRED example per request, 1 worker, 1 thread",
                  ["clients", "requests", "requests/s", "p50 ms", "p99 ms", "errors"])
    with tempfile.TemporaryDirectory(prefix="tacred-bench-serve-") as scratch:
        data = benchmark_data(quick, Path(scratch))
        ckpt = random_checkpoint(data.data_dir, data.labels_file, Path(scratch) / "model.ckpt",
                                 NetworkConfig(**QUICK_NETWORK) if quick else None)
        examples = json.loads((data.data_dir / "test.json").read_text(encoding="utf-8"))
        bodies = [json.dumps(ex) for ex in examples]
        with serve_in_background(str(ckpt), extra=["--num_threads", "1", "--max_batch_size", "32",
                                                   "--batch_timeout", "0.002"]) as url:
            load(url, bodies, 4, 40, 10.0)  # warm-up
            for clients in (1, 8, 32):
                latencies, wall, errors = load(url, bodies, clients, max_requests, max_seconds)
                table.add(clients, len(latencies), len(latencies) / wall, 1e3 * median(latencies),
                          1e3 * percentile(latencies, 99), errors)
    table.notes += [
        machine_line(),
        f"data: {data.source}.",
        f"each row: at most {max_requests} requests or {max_seconds:.0f} s; latency is the client's (HTTP round trip, "
        "JSON, queueing, batching and the forward pass); --max_batch_size 32 --batch_timeout 0.002; client threads "
        "share the machine with the server.",
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    return script_main(run, "benchmarks/serving.py", __doc__, argv, quick_help="a few requests (a smoke test)")


if __name__ == "__main__":
    raise SystemExit(main())

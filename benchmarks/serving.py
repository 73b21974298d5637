"""Benchmark 5: ``tacred serve`` under a short, bounded load on 127.0.0.1: requests/s and p50/p99 latency, then a
soak with a quarter of the requests malformed or oversized: no 5xx answer, memory flat, latency and throughput.

The paper's model with random weights (speed does not depend on them) is saved as a checkpoint and served by
``tacred serve`` (default limits) in a child process; client threads send one TACRED example per request (no spaCy
on the server) until a fixed number of requests or a time limit is reached, whichever comes first. Loopback only.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import QUICK_NETWORK, Table, benchmark_data, machine_line, median, percentile  # noqa: E402

from tacred.models.config import NetworkConfig  # noqa: E402
from tacred.serving.process import rss_mib, serve_in_background  # noqa: E402
from tacred.training.datamodule import TacredDataModule  # noqa: E402
from tacred.training.module import RelationExtractor  # noqa: E402


def random_checkpoint(data_dir: Path, labels: Path, out: Path, network: NetworkConfig | None = None) -> Path:
    """A checkpoint of the paper's model (or ``network``) with random weights, loadable by ``tacred serve``."""
    dm = TacredDataModule(data_dir=str(data_dir), labels=str(labels), entity_masking=False)
    torch.manual_seed(0)
    model = RelationExtractor(vocab=dm.vocab, network=network or NetworkConfig())
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams),
                "tacred_vocab": model.vocab.to_dict()}, out)
    return out


def load(url: str, bodies: list[bytes], clients: int, max_requests: int, max_seconds: float,
         ) -> tuple[list[float], float, Counter]:
    """Send ``bodies`` in turn from ``clients`` threads; return latencies (s), the wall time and the count of each
    HTTP status (``"refused"`` where the connection failed)."""
    import requests

    latencies: list[float] = []
    statuses: Counter = Counter()
    lock = threading.Lock()
    counter = iter(range(max_requests))
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        session = requests.Session()
        while time.monotonic() < deadline:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            start = time.perf_counter()
            try:
                status: int | str = session.post(f"{url}/predict", data=bodies[i % len(bodies)], timeout=60,
                                                 headers={"Content-Type": "application/json"}).status_code
            except requests.ConnectionError:
                status = "refused"
                session.close()
                session = requests.Session()
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)
                statuses[status] += 1
        session.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, time.perf_counter() - start, statuses


def bad_bodies(good: dict) -> list[bytes]:
    """One request of each kind that the server must refuse with 4xx: not JSON, no markers, an unknown form, too
    many tokens, too many inputs, a body over 1 MiB."""
    return [
        b'{"text": ',
        json.dumps({"text": "a sentence without markers"}).encode(),
        json.dumps({"sentence": "an unknown form"}).encode(),
        json.dumps(dict(good, token=["w"] * 600, stanford_pos=["NN"] * 600, stanford_ner=["O"] * 600)).encode(),
        json.dumps([good] * 65).encode(),
        json.dumps({"text": "x" * (2**20 + 10)}).encode(),
    ]


def soak_mix(good: list[bytes], bad: list[bytes], size: int = 400) -> list[bytes]:
    """``size`` bodies, one in four bad (each bad kind in turn)."""
    return [bad[(i // 4) % len(bad)] if i % 4 == 3 else good[i % len(good)] for i in range(size)]


def soak(url: str, tree: Callable[[], list[int]], bodies: list[bytes], requests_n: int, clients: int,
         max_seconds: float) -> Table:
    """The soak: warm-up (every kind of request), memory, ``requests_n`` requests, memory again."""
    load(url, bodies, clients, min(2000, requests_n), max_seconds)
    time.sleep(1)
    before = sum(rss_mib(pid) for pid in tree())
    latencies, wall, statuses = load(url, bodies, clients, requests_n, max_seconds)
    time.sleep(1)
    after = sum(rss_mib(pid) for pid in tree())
    by_class = Counter(f"{s // 100}xx" if isinstance(s, int) else s for s in statuses.elements())
    table = Table(f"Serving soak: {len(latencies):,} requests from {clients} clients, one in four malformed or "
                  "oversized", ["requests", "2xx", "4xx", "5xx", "refused", "p50 ms", "p99 ms", "requests/s",
                                "RSS after warm-up MiB", "RSS after soak MiB", "RSS change"])
    table.add(len(latencies), by_class["2xx"], by_class["4xx"], by_class["5xx"], by_class["refused"],
              1e3 * median(latencies), 1e3 * percentile(latencies, 99), len(latencies) / wall, before, after,
              f"{100 * (after - before) / before:+.1f}%")
    table.notes += [f"answers by status: {dict(sorted((str(k), v) for k, v in statuses.items()))}",
                    "RSS: the server's processes together (main, manager, model worker, HTTP server), from /proc; "
                    f"at most {requests_n:,} requests or {max_seconds:.0f} s."]
    return table


def run(quick: bool = False, soak_requests: int | None = None, soak_clients: int = 16) -> Tables:
    """Requests/s and latency for 1, 8 and 32 concurrent clients, batching up to 32 requests; then the soak."""
    max_requests, max_seconds = (40, 10.0) if quick else (2000, 30.0)
    soak_requests = soak_requests or (400 if quick else 20_000)
    table = Table("Serving: tacred serve on 127.0.0.1, one TACRED example per request, 1 worker, 1 thread",
                  ["clients", "requests", "requests/s", "p50 ms", "p99 ms", "errors"])
    with tempfile.TemporaryDirectory(prefix="tacred-bench-serve-") as scratch:
        data = benchmark_data(quick, Path(scratch))
        ckpt = random_checkpoint(data.data_dir, data.labels_file, Path(scratch) / "model.ckpt",
                                 NetworkConfig(**QUICK_NETWORK) if quick else None)
        examples = json.loads((data.data_dir / "test.json").read_text(encoding="utf-8"))
        bodies = [json.dumps(ex).encode() for ex in examples]
        with serve_in_background(str(ckpt), extra=["--num_threads", "1", "--max_batch_size", "32",
                                                   "--batch_timeout", "0.002"]) as served:
            url = served.url
            load(url, bodies, 4, 40, 10.0)  # warm-up
            for clients in (1, 8, 32):
                latencies, wall, statuses = load(url, bodies, clients, max_requests, max_seconds)
                table.add(clients, len(latencies), len(latencies) / wall, 1e3 * median(latencies),
                          1e3 * percentile(latencies, 99), sum(v for k, v in statuses.items() if k != 200))
            mix = soak_mix(bodies, bad_bodies(examples[0]))
            soaked = soak(url, served.tree, mix, soak_requests, soak_clients, 120.0 if quick else 900.0)
    table.notes += [
        machine_line(),
        f"data: {data.source}.",
        f"each row: at most {max_requests} requests or {max_seconds:.0f} s; latency is the client's (HTTP round trip, "
        "JSON, queueing, batching and the forward pass); --max_batch_size 32 --batch_timeout 0.002; client threads "
        "share the machine with the server.",
    ]
    soaked.notes.append(machine_line())
    return Tables([table, soaked])


class Tables(list):
    """Several tables printed one after the other."""

    def render(self) -> str:
        return "\n".join(t.render() for t in self)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="benchmarks/serving.py", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a few requests (a smoke test, not a measurement)")
    parser.add_argument("--soak_requests", type=int, default=None, help="requests of the soak (default 20,000)")
    parser.add_argument("--soak_clients", type=int, default=16, help="client threads of the soak (default 16)")
    args = parser.parse_args(argv)
    print(run(args.quick, args.soak_requests, args.soak_clients).render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

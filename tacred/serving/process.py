"""``tacred serve`` as a child process, for tests and benchmarks: start it on 127.0.0.1, wait for ``/health``, read
the memory of its processes, stop it with a signal and check that no process of it is left."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now."""
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (Linux: ``/proc/PID/task/*/children``)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                kids = [int(k) for k in task.read_text().split()]
                found += kids
                todo += kids
    return found


def rss_mib(pid: int) -> float:
    """Resident memory of one process in MiB (``VmRSS``), 0 when it is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (``/proc/PID/stat``), 0 when it is gone."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


@dataclass
class Served:
    url: str
    process: subprocess.Popen

    def tree(self) -> list[int]:
        """The server's process and all its descendants."""
        return [self.process.pid, *descendants(self.process.pid)]


@contextlib.contextmanager
def serve_in_background(ckpt_path: str, port: int | None = None, extra: Sequence[str] = (), startup_timeout: float = 120,
                        log_path: str | None = None) -> Iterator[Served]:
    """Run ``tacred serve`` on 127.0.0.1 in a child process (its own process group) and yield it once ``/health``
    answers. On exit it gets SIGTERM (as ``kill PID`` sends), then its whole group SIGKILL if anything is left."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(log_path or os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen([sys.executable, "-m", "tacred", "serve", "--ckpt_path", str(ckpt_path), "--host",
                             "127.0.0.1", "--port", str(port), *extra], stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"tacred serve exited with status {proc.returncode} before answering /health")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"tacred serve did not answer {url}/health within {startup_timeout:.0f} s")
            time.sleep(0.25)
        yield Served(url, proc)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of its group
        proc.wait(timeout=15)
        log.close()

"""Running a LitServer until SIGTERM or SIGINT, and leaving no process behind.

LitServe shuts its processes down on KeyboardInterrupt only, so SIGTERM (``kill PID``, what Docker and systemd send)
used to end the main process alone while its model worker, HTTP server and manager processes lived on and kept
answering. Here both signals become KeyboardInterrupt in the main process, LitServe's own shutdown runs, and any child
process still alive after it is terminated (then killed).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import signal
import sys
from typing import Any

_MAIN_PID = os.getpid()
_STOPPING = False


def _interrupt(signum: int, frame: Any) -> None:
    global _STOPPING
    if os.getpid() != _MAIN_PID:  # a forked child (LitServe's HTTP server re-raises the signal it caught): just end
        raise SystemExit(0)
    _STOPPING = True
    raise KeyboardInterrupt


class ShutdownRace(logging.Filter):
    """Drops LitServe's "Monitoring worker crashed" once a stop has begun: its monitoring thread polls a shutdown
    flag that lives in the manager process, and when the manager is gone first the poll fails with a broken pipe,
    which says nothing about the server (a stop that is going as it should)."""

    def filter(self, record: logging.LogRecord) -> bool:
        lost = record.exc_info is not None and isinstance(record.exc_info[1], (BrokenPipeError, EOFError,
                                                                               ConnectionError))
        return not (_STOPPING and lost and record.getMessage() == "Monitoring worker crashed")


def stop_children(grace_s: float = 5.0) -> None:
    """Terminate every child process of this one that is still alive, then kill those that do not stop."""
    children = mp.active_children()
    for child in children:
        with contextlib.suppress(Exception):
            child.terminate()
    for child in children:
        child.join(timeout=grace_s)
        if child.is_alive():
            with contextlib.suppress(Exception):
                child.kill()
                child.join(timeout=grace_s)


def run_until_stopped(server: Any, host: str, port: int, log_level: str = "warning") -> int:
    """``server.run(...)`` until SIGTERM or SIGINT; 0 after a clean stop, 1 when the model worker failed to start."""
    global _MAIN_PID, _STOPPING
    _MAIN_PID, _STOPPING = os.getpid(), False
    logging.getLogger("litserve.server").addFilter(ShutdownRace())  # kept: the thread may log after run() returns
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    status = 0
    try:
        server.run(host=host, port=port, generate_client_file=False, log_level=log_level, num_api_servers=1)
    except KeyboardInterrupt:
        pass
    except RuntimeError as err:  # LitServe: "One or more workers failed to start"
        print(f"tacred serve: error: {err} (the lines above say why)", file=sys.stderr)
        status = 1
    finally:
        for sig in previous:  # a second signal must not cut the shutdown short
            signal.signal(sig, signal.SIG_IGN)
        stop_children()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("tacred serve: stopped", file=sys.stderr, flush=True)
    return status

"""tacred/serving/loop.py replaces LitServe's batching loop through names LitServe keeps private: pyproject.toml pins
LitServe to the versions tested, and these tests fail loudly, naming what changed, when a LitServe version moves them."""

from __future__ import annotations

import importlib.metadata
import inspect
import re

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.conftest import REPO


def pinned_range() -> SpecifierSet:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^serve = \["litserve([^"]+)"\]', text, re.M)
    assert found, "pyproject.toml: the serve extra no longer names litserve with a version range"
    return SpecifierSet(found.group(1))


def test_the_installed_litserve_is_in_the_pinned_range_and_the_range_is_bounded():
    pinned = pinned_range()
    installed = Version(importlib.metadata.version("litserve"))
    assert installed in pinned, f"litserve {installed} is outside the range pyproject.toml pins ({pinned})"
    assert any(s.operator in ("<", "<=", "==") for s in pinned), f"litserve {pinned}: no upper bound"


def test_the_private_names_the_quiet_loop_uses_are_there_as_it_uses_them():
    from litserve.loops import base
    from litserve.loops.simple_loops import BatchedLoop
    from litserve.utils import LitAPIStatus, LoopResponseType

    version = importlib.metadata.version("litserve")
    assert hasattr(base, "_SENTINEL_VALUE"), f"litserve {version}: litserve.loops.base._SENTINEL_VALUE is gone"
    assert isinstance(getattr(base, "_StopLoopError", None), type) and issubclass(base._StopLoopError, Exception), (
        f"litserve {version}: litserve.loops.base._StopLoopError is gone or no longer an exception")
    assert list(inspect.signature(BatchedLoop.get_batch_requests).parameters) == [
        "self", "lit_api", "request_queue", "transport"], f"litserve {version}: BatchedLoop.get_batch_requests changed"
    assert list(inspect.signature(BatchedLoop.put_response).parameters) == [
        "self", "transport", "response_queue_id", "uid", "response_data", "status", "response_type"], (
        f"litserve {version}: BatchedLoop.put_response changed")
    assert hasattr(LitAPIStatus, "START") and hasattr(LoopResponseType, "REGULAR"), f"litserve {version}: statuses moved"


def test_the_quiet_loop_is_the_batched_loop_with_only_its_wait_replaced():
    from litserve.loops.simple_loops import BatchedLoop

    from tacred.serving.loop import QuietBatchedLoop

    assert issubclass(QuietBatchedLoop, BatchedLoop)
    assert [n for n, v in vars(QuietBatchedLoop).items() if callable(v)] == ["get_batch_requests"]


def test_the_monitoring_threads_broken_pipe_on_a_stop_is_dropped_and_nothing_else() -> None:
    """LitServe's monitoring thread polls a shutdown flag held by its manager process; when a stop ends the manager
    first, the poll's broken pipe was logged as a traceback. The filter drops that record during a stop only."""
    import inspect
    import logging

    from litserve.server import LitServer

    from tacred.serving import lifecycle

    assert "Monitoring worker crashed" in inspect.getsource(LitServer._start_worker_monitoring)

    def record(message: str, error: BaseException) -> logging.LogRecord:
        return logging.LogRecord("litserve.server", logging.ERROR, __file__, 1, message, None,
                                 (type(error), error, None))

    race = lifecycle.ShutdownRace()
    broken = record("Monitoring worker crashed", BrokenPipeError(32, "Broken pipe"))
    assert race.filter(broken), "kept while the server runs: then it is a real failure"
    try:
        lifecycle._STOPPING = True
        assert not race.filter(broken)
        assert race.filter(record("Monitoring worker crashed", ValueError("a real bug")))
        assert race.filter(record("something else", BrokenPipeError(32, "Broken pipe")))
    finally:
        lifecycle._STOPPING = False

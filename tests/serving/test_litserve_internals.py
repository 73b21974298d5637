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

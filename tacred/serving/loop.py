"""LitServe's batching loop without busy-waiting: an idle ``tacred serve`` uses next to no CPU.

LitServe's own loop asks its request queue (a ``multiprocessing.Manager`` queue, one round trip to the manager
process per call) for a request every millisecond, also when no request comes: about a fifth of a core, idle. This
loop blocks on the queue until a request arrives (waking once a second), then gathers more for up to
``batch_timeout`` seconds or ``max_batch_size`` requests, as LitServe does.
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from litserve.loops.base import _SENTINEL_VALUE, _StopLoopError
from litserve.loops.simple_loops import BatchedLoop
from litserve.utils import LitAPIStatus, LoopResponseType

IDLE_WAKE_S = 1.0


class QuietBatchedLoop(BatchedLoop):
    def get_batch_requests(self, lit_api: Any, request_queue: Any, transport: Any) -> tuple[list, list]:
        payloads: list = []
        timed_out: list = []
        deadline = None
        while len(payloads) < lit_api.max_batch_size:
            wait = IDLE_WAKE_S if deadline is None else deadline - time.monotonic()
            if wait <= 0:
                break
            try:
                request = request_queue.get(timeout=wait)
            except Empty:
                break
            if request == _SENTINEL_VALUE:
                raise _StopLoopError()
            deadline = deadline or time.monotonic() + lit_api.batch_timeout
            response_queue_id, uid, timestamp, x_enc = request
            self.put_response(transport, response_queue_id, uid, (), LitAPIStatus.START, LoopResponseType.REGULAR)
            if lit_api.request_timeout not in (-1, False) and time.monotonic() - timestamp > lit_api.request_timeout:
                timed_out.append((response_queue_id, uid))
            else:
                payloads.append((response_queue_id, uid, x_enc))
        return payloads, timed_out

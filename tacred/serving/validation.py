"""What every endpoint of ``tacred serve`` checks before the model sees a request: the body's size and JSON (an ASGI
middleware), the number of inputs in a list, and the answer for a bad request or a bad input of a list."""

import json
from collections.abc import Iterator
from typing import Any

from starlette.responses import JSONResponse

from tacred.inference.input_rules import MAX_TOKENS  # noqa: F401 - the one default of every way to predict

MAX_BODY_BYTES = 2**20  # 1 MiB: 64 inputs of 512 tokens in JSON take ~0.3 MB
MAX_BATCH_INPUTS = 64


class Rejected:
    """A request that failed validation: carried through the batch untouched, answered with ``status``."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail

    def response(self) -> JSONResponse:
        return JSONResponse({"detail": self.detail}, status_code=self.status)


def request_items(request: Any, max_inputs: int) -> "tuple[list[Any], bool] | Rejected":
    """The inputs of a request body (one input, or a list of them) and whether it was one input; a list that is
    empty or longer than ``max_inputs`` is rejected whole (422)."""
    single = not isinstance(request, list)
    items = [request] if single else request
    if not items:
        return Rejected(422, "the request holds an empty list")
    if len(items) > max_inputs:
        return Rejected(422, f"the request holds {len(items)} inputs, more than the limit of {max_inputs} per "
                             "request (--max_batch_inputs)")
    return items, single


class Bad:
    """An input of a request that cannot be worked on, with what is wrong with it."""

    def __init__(self, message: str) -> None:
        self.message = message


class Decoded:
    """A valid request: each input's work (a TACRED dict, a text) or :class:`Bad`, whether it was one input (not a
    list), and later the answer of each input."""

    def __init__(self, inputs: list[Any], single: bool) -> None:
        self.inputs = inputs
        self.single = single
        self.answers: list[Any] = []

    def work(self) -> list[Any]:
        """The inputs to work on, in order."""
        return [item for item in self.inputs if not isinstance(item, Bad)]

    def answer(self, results: Iterator[Any]) -> None:
        """Fill :attr:`answers` from ``results``, an iterator over the answers of :meth:`work` in order (an answer
        may be :class:`Bad` too: the work failed); a bad input's answer is ``{"index": i, "error": message}``."""
        self.answers = [item if isinstance(item, Bad) else next(results) for item in self.inputs]

    def response(self) -> Any:
        """The list of answers; for one input its answer, or 422 with the message when it is bad."""
        if self.single and isinstance(self.answers[0], Bad):
            return Rejected(422, self.answers[0].message).response()
        answers = [{"index": i, "error": a.message} if isinstance(a, Bad) else a for i, a in enumerate(self.answers)]
        return answers if not self.single else answers[0]


class JsonBodyCheck:
    """ASGI middleware for ``POST /predict`` and ``POST /extract``: a body over ``max_body_bytes`` gets 413 (judged
    by its Content-Length before it is read, else while it is read) and one that is not JSON 400, each with a JSON
    ``detail``; LitServe would answer both with a plain-text 500."""

    def __init__(self, app: Any, paths: tuple[str, ...] = ("/predict", "/extract"),
                 max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.paths = paths
        self.max_body_bytes = max_body_bytes

    async def _reject(self, scope: dict, receive: Any, send: Any, status: int, detail: str) -> None:
        await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        too_big = f"the request body is larger than the limit of {self.max_body_bytes} bytes (--max_body_bytes)"
        declared = dict(scope["headers"]).get(b"content-length", b"").decode("latin-1")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._reject(scope, receive, send, 413, too_big)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body_bytes:
                await self._reject(scope, receive, send, 413, too_big)
                return
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            json.loads(body)
        except (ValueError, RecursionError) as err:
            await self._reject(scope, receive, send, 400, f"the request body is not JSON: {err}")
            return
        # the body is JSON whatever the client said (curl -d sends a form type): LitServe then parses it as JSON
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-type"]
        scope = {**scope, "headers": [*headers, (b"content-type", b"application/json")]}
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

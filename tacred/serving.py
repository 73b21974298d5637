"""An HTTP prediction server on LitServe: ``POST /predict`` with the inputs of :mod:`tacred.api`, dynamic batching.

A request body is one input (``{"text": "<subj>…</subj> … <obj>…</obj>"}``, an OpenNRE dict, a TACRED dict) or a
list of them; the answer is one prediction object or a list. Requests are batched across clients (LitServe's
``max_batch_size``/``batch_timeout``); a bad request gets HTTP 400 (not JSON) or 422 (not a valid input) with a
``detail`` message and never disturbs the other requests of its batch.
"""

import contextlib
import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import litserve as ls
from starlette.requests import Request
from starlette.responses import JSONResponse

log = logging.getLogger(__name__)

MAX_ITEMS_PER_REQUEST = 1000


class _Rejected:
    """A request that failed validation: carried through the batch untouched, answered with ``status``."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail


class _Decoded:
    """A valid request: its TACRED dicts, whether it was one input (not a list), and later its predictions."""

    def __init__(self, examples: list[dict[str, Any]], single: bool) -> None:
        self.examples = examples
        self.single = single
        self.predictions: list[dict[str, Any]] = []


class RelationAPI(ls.LitAPI):
    """LitServe's API object: one :class:`tacred.api.Predictor` per worker process."""

    def __init__(self, ckpt_path: str, threshold: float | str | None = None, spacy_model: str | None = None,
                 num_threads: int | None = None, max_batch_size: int = 32, batch_timeout: float = 0.005) -> None:
        super().__init__(max_batch_size=max_batch_size, batch_timeout=batch_timeout)
        self.ckpt_path = ckpt_path
        self.threshold = threshold
        self.spacy_model = spacy_model
        self.num_threads = num_threads
        self.spacy_problem: str | None = None

    def setup(self, device: str) -> None:
        import torch

        from tacred.api import load_model
        from tacred.data.spacy_pipeline import SpacyModelError

        if self.num_threads:
            torch.set_num_threads(self.num_threads)
        self.predictor = load_model(self.ckpt_path, device=device, threshold=self.threshold,
                                    spacy_model=self.spacy_model)
        try:
            self.predictor.nlp  # noqa: B018 - load spaCy now, not on the first request with raw text
        except SpacyModelError as err:
            self.spacy_problem = str(err)
            log.warning("raw text cannot be served: %s (TACRED dicts still can)", err)

    # annotated as Request (a real class, not a string: LitServe reads the signature) for a parsed JSON body
    def decode_request(self, request: Request) -> "_Decoded | _Rejected":
        from tacred.api import InputError
        from tacred.data.spacy_pipeline import SpacyModelError

        single = not isinstance(request, list)
        items = [request] if single else request
        if not items:
            return _Rejected(422, "the request holds an empty list")
        if len(items) > MAX_ITEMS_PER_REQUEST:
            return _Rejected(413, f"at most {MAX_ITEMS_PER_REQUEST} inputs per request, found {len(items)}")
        try:
            return _Decoded(self.predictor.to_examples(items), single)
        except InputError as err:
            return _Rejected(422, str(err))
        except SpacyModelError as err:
            return _Rejected(503, f"this server cannot annotate raw text: {err}; send TACRED dicts")

    def batch(self, inputs: list[Any]) -> list[Any]:
        return inputs

    def predict(self, x: "list[_Decoded | _Rejected]") -> "list[_Decoded | _Rejected]":
        """One forward pass over every example of every valid request in the batch."""
        examples = [ex for request in x if isinstance(request, _Decoded) for ex in request.examples]
        predictions = iter(self.predictor.predict_examples(examples))
        for request in x:
            if isinstance(request, _Decoded):
                request.predictions = [next(predictions).to_dict() for _ in request.examples]
        return x

    def unbatch(self, output: list[Any]) -> list[Any]:
        return output

    def encode_response(self, output: "_Decoded | _Rejected") -> Any:
        if isinstance(output, _Rejected):
            return JSONResponse({"detail": output.detail}, status_code=output.status)
        return output.predictions[0] if output.single else output.predictions


class JsonBodyCheck:
    """ASGI middleware: a ``POST`` body that is not JSON gets 400 with a message (LitServe would answer 500)."""

    def __init__(self, app: Any, path: str = "/predict") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            json.loads(body)
        except ValueError as err:
            await JSONResponse({"detail": f"the request body is not JSON: {err}"}, status_code=400)(scope, receive, send)
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


def build_server(ckpt_path: str, *, threshold: float | str | None = None, spacy_model: str | None = None,
                 num_threads: int | None = None, max_batch_size: int = 32, batch_timeout: float = 0.005,
                 workers: int = 1, accelerator: str = "auto", timeout: float = 30) -> ls.LitServer:
    """The LitServer for a checkpoint (``server.run(host=..., port=...)`` starts it)."""
    api = RelationAPI(ckpt_path, threshold=threshold, spacy_model=spacy_model, num_threads=num_threads,
                      max_batch_size=max_batch_size, batch_timeout=batch_timeout)
    return ls.LitServer(api, accelerator=accelerator, workers_per_device=workers, timeout=timeout,
                        max_payload_size=10 * 2**20, middlewares=[JsonBodyCheck],
                        model_metadata={"checkpoint": str(ckpt_path)})


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now."""
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve_in_background(ckpt_path: str, port: int | None = None, extra: Sequence[str] = (), startup_timeout: float = 120,
                        log_path: str | None = None) -> Iterator[str]:
    """Run ``tacred serve`` on 127.0.0.1 in a child process (its own process group) and yield its base URL once
    ``/health`` answers; the whole group is stopped on exit. For tests and benchmarks."""
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

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
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        log.close()

"""An HTTP prediction server on LitServe: ``POST /predict`` with the inputs of :mod:`tacred.inference.api`, dynamic batching.

A request body is one input (``{"text": "<subj>…</subj> … <obj>…</obj>"}``, an OpenNRE dict, a TACRED dict) or a
list of them; the answer is one prediction object or a list. Requests are batched across clients (LitServe's
``max_batch_size``/``batch_timeout``). Every bad request gets a JSON ``{"detail": ...}`` and never disturbs the other
requests of its batch: 413 for a body over ``max_body_bytes``, 400 for a body that is not JSON, 422 for an input the
model cannot read, one over ``max_tokens`` tokens or a list over ``max_batch_inputs`` inputs.
"""

import json
import logging
from collections.abc import Callable
from typing import Any

import litserve as ls
from starlette.requests import Request
from starlette.responses import JSONResponse

from tacred.inference.input_rules import MAX_TOKENS  # the one default of every way to predict
from tacred.serving.loop import QuietBatchedLoop

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 2**20  # 1 MiB: 64 inputs of 512 tokens in JSON take ~0.3 MB
MAX_BATCH_INPUTS = 64


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
    """LitServe's API object: one :class:`tacred.inference.api.Predictor` per worker process."""

    def __init__(self, ckpt_path: str, threshold: float | str | None = None, spacy_model: str | None = None,
                 num_threads: int | None = None, max_batch_size: int = 32, batch_timeout: float = 0.005,
                 max_tokens: int = MAX_TOKENS, max_batch_inputs: int = MAX_BATCH_INPUTS) -> None:
        super().__init__(max_batch_size=max_batch_size, batch_timeout=batch_timeout, loop=QuietBatchedLoop())
        self.ckpt_path = ckpt_path
        self.threshold = threshold
        self.spacy_model = spacy_model
        self.num_threads = num_threads
        self.max_tokens = max_tokens
        self.max_batch_inputs = max_batch_inputs

    def setup(self, device: str) -> None:
        from tacred.data.spacy_pipeline import SpacyModelError
        from tacred.inference.api import load_model

        if self.num_threads:
            import torch

            torch.set_num_threads(self.num_threads)
        self.predictor = load_model(self.ckpt_path, device=device, threshold=self.threshold,
                                    spacy_model=self.spacy_model, max_tokens=self.max_tokens)
        try:
            self.predictor.nlp  # noqa: B018 - load spaCy now, not on the first request with raw text
        except SpacyModelError as err:
            log.warning("raw text cannot be served: %s (TACRED dicts still can)", err)

    # annotated as Request (a real class, not a string: LitServe reads the signature) for a parsed JSON body
    def decode_request(self, request: Request) -> "_Decoded | _Rejected":
        from tacred.data.spacy_pipeline import SpacyModelError
        from tacred.inference.api import InputError

        single = not isinstance(request, list)
        items = [request] if single else request
        if not items:
            return _Rejected(422, "the request holds an empty list")
        if len(items) > self.max_batch_inputs:
            return _Rejected(422, f"the request holds {len(items)} inputs, more than the limit of "
                                  f"{self.max_batch_inputs} per request (--max_batch_inputs)")
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
    """ASGI middleware for ``POST /predict``: a body over ``max_body_bytes`` gets 413 (judged by its Content-Length
    before it is read, else while it is read) and one that is not JSON 400, each with a JSON ``detail``; LitServe
    would answer both with a plain-text 500."""

    def __init__(self, app: Any, path: str = "/predict", max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.path = path
        self.max_body_bytes = max_body_bytes

    async def _reject(self, scope: dict, receive: Any, send: Any, status: int, detail: str) -> None:
        await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
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


class TacredServer(ls.LitServer):
    """LitServer that calls ``on_ready`` once the model workers are ready, right before the HTTP server starts."""

    on_ready: Callable[[], None] | None = None

    def verify_worker_status(self) -> None:
        super().verify_worker_status()
        if self.on_ready is not None:
            self.on_ready()


def build_server(ckpt_path: str, *, threshold: float | str | None = None, spacy_model: str | None = None,
                 num_threads: int | None = None, max_batch_size: int = 32, batch_timeout: float = 0.005,
                 workers: int = 1, device: str = "auto", timeout: float = 30, max_body_bytes: int = MAX_BODY_BYTES,
                 max_tokens: int = MAX_TOKENS, max_batch_inputs: int = MAX_BATCH_INPUTS) -> TacredServer:
    """The LitServer for a checkpoint (``server.run(host=..., port=...)`` starts it); ``device``: already resolved
    (``cpu``, ``cuda``, ``cuda:N``; :func:`tacred.devices.torch_device`)."""
    api = RelationAPI(ckpt_path, threshold=threshold, spacy_model=spacy_model, num_threads=num_threads,
                      max_batch_size=max_batch_size, batch_timeout=batch_timeout, max_tokens=max_tokens,
                      max_batch_inputs=max_batch_inputs)
    accelerator, _, index = device.partition(":")
    return TacredServer(api, accelerator=accelerator, devices=[int(index)] if index else "auto",
                        workers_per_device=workers, timeout=timeout,
                        middlewares=[(JsonBodyCheck, {"max_body_bytes": max_body_bytes})],
                        model_metadata={"checkpoint": str(ckpt_path)})

"""An HTTP server on LitServe: ``POST /predict`` with the inputs of :mod:`tacred.inference.api`, ``POST /extract`` with
raw text, dynamic batching.

A request body is one input or a list of them; the answer is one object or a list with an entry per input.
``/predict`` takes a marked sentence (``{"text": "<subj>…</subj> … <obj>…</obj>"}``), an OpenNRE dict or a TACRED
dict and answers a prediction; ``/extract`` takes a text (a string, or ``{"text": ..., "id": ...}``) and answers
the relations found in it (:mod:`tacred.extraction.pipeline`). Requests are batched across clients (LitServe's
``max_batch_size``/``batch_timeout``). A bad request gets a JSON ``{"detail": ...}`` and never disturbs the other
requests of its batch: 413 for a body over ``max_body_bytes``, 400 for a body that is not JSON, 422 for one input the
model cannot read (over ``max_tokens`` tokens, say) or a list over ``max_batch_inputs`` inputs. In a list, a bad input
gets its own entry ``{"index": i, "error": ...}`` and the others their answers (status 200).
"""

import logging
from collections.abc import Callable
from typing import Any

import litserve as ls
from starlette.requests import Request

from tacred.serving.loop import QuietBatchedLoop
from tacred.serving.validation import (
    MAX_BATCH_INPUTS,
    MAX_BODY_BYTES,
    MAX_TOKENS,
    Bad,
    Decoded,
    JsonBodyCheck,
    Rejected,
    request_items,
)

log = logging.getLogger(__name__)


class ModelAPI(ls.LitAPI):
    """One :class:`tacred.inference.api.Predictor` per worker process, requests batched as they come."""

    def __init__(self, ckpt_path: str, threshold: float | str | None = None, spacy_model: str | None = None,
                 num_threads: int | None = None, max_batch_size: int = 32, batch_timeout: float = 0.005,
                 max_tokens: int = MAX_TOKENS, max_batch_inputs: int = MAX_BATCH_INPUTS, api_path: str = "/predict",
                 precision: str | None = None) -> None:
        super().__init__(max_batch_size=max_batch_size, batch_timeout=batch_timeout, loop=QuietBatchedLoop(),
                         api_path=api_path)
        self.ckpt_path = ckpt_path
        self.threshold = threshold
        self.spacy_model = spacy_model
        self.num_threads = num_threads
        self.max_tokens = max_tokens
        self.max_batch_inputs = max_batch_inputs
        self.precision = precision

    def setup(self, device: str) -> None:
        from tacred.inference.api import open_model
        from tacred.text.spacy_pipeline import SpacyModelError

        if self.num_threads:
            import torch

            torch.set_num_threads(self.num_threads)
        self.predictor = open_model(self.ckpt_path, device=device, threshold=self.threshold,
                                    spacy_model=self.spacy_model, max_tokens=self.max_tokens, precision=self.precision)
        if getattr(self.predictor, "kind", None) == "joint":
            return  # a joint model answers /extract only (RelationAPI.decode_request says so)
        try:
            self.predictor.spacy_pipeline()  # load spaCy now, not on the first request with raw text
        except SpacyModelError as err:
            log.warning("raw text cannot be served: %s (TACRED dicts still can)", err)

    def batch(self, inputs: list[Any]) -> list[Any]:
        return inputs

    def unbatch(self, output: list[Any]) -> list[Any]:
        return output

    def encode_response(self, output: "Decoded | Rejected") -> Any:
        return output.response()


class RelationAPI(ModelAPI):
    """``POST /predict``: marked sentences, OpenNRE or TACRED dicts → predictions."""

    # annotated as Request (a real class, not a string: LitServe reads the signature) for a parsed JSON body
    def decode_request(self, request: Request) -> "Decoded | Rejected":
        from tacred.inference.api import InputError
        from tacred.text.spacy_pipeline import SpacyModelError

        if getattr(self.predictor, "kind", None) == "joint":
            return Rejected(422, f"{self.ckpt_path} is a joint entity-and-relation model: it reads raw text, "
                                 "POST /extract")
        found = request_items(request, self.max_batch_inputs)
        if isinstance(found, Rejected):
            return found
        items, single = found
        try:
            read = self.predictor.to_examples_each(items)
        except SpacyModelError as err:
            return Rejected(503, f"this server cannot annotate raw text: {err}; send TACRED dicts")
        return Decoded([Bad(str(r)) if isinstance(r, InputError) else r for r in read], single)

    def predict(self, x: "list[Decoded | Rejected]") -> "list[Decoded | Rejected]":
        """One forward pass over every example of every valid request in the batch."""
        examples = [ex for request in x if isinstance(request, Decoded) for ex in request.work()]
        predictions = iter(p.to_dict() for p in self.predictor.predict_examples(examples)) if examples else iter(())
        for request in x:
            if isinstance(request, Decoded):
                request.answer(predictions)
        return x


class ExtractAPI(ModelAPI):
    """``POST /extract``: raw texts (a string, or ``{"text": ..., "id": ...}``) → what ``tacred extract`` finds in
    each as a document (:class:`tacred.extraction.DocumentExtractor`): its mentions, sentences and candidate pairs."""

    signatures = True  # filter by the model's relation signatures, as tacred extract does by default

    def setup(self, device: str) -> None:
        from tacred.extraction.runner import DocumentExtractor, ExtractorSettings
        from tacred.text.spacy_pipeline import SpacyModelError

        settings = ExtractorSettings(str(self.ckpt_path), device=device, threshold=self.threshold,
                                     spacy_model=self.spacy_model, max_tokens=self.max_tokens,
                                     num_threads=self.num_threads, signatures=self.signatures,
                                     precision=self.precision)
        self.extractor: DocumentExtractor | None = None
        try:
            self.extractor = DocumentExtractor(settings)
        except SpacyModelError as err:
            self.unavailable = f"this server cannot annotate raw text: {err}"
            log.warning("/extract cannot be served: %s", err)

    def decode_request(self, request: Request) -> "Decoded | Rejected":
        if self.extractor is None:
            return Rejected(503, self.unavailable)
        found = request_items(request, self.max_batch_inputs)
        if isinstance(found, Rejected):
            return found
        items, single = found
        max_chars = self.extractor.settings.max_chars
        return Decoded([_document(item, i, "input" if single else f"input {i}", max_chars)
                        for i, item in enumerate(items)], single)

    def predict(self, x: "list[Decoded | Rejected]") -> "list[Decoded | Rejected]":
        """spaCy and the model over every document of every valid request in the batch."""
        assert self.extractor is not None, "decode_request rejects every request without an extractor"
        work = [(where, doc) for request in x if isinstance(request, Decoded) for where, doc in request.work()]
        results = self.extractor.process_many([doc for _, doc in work]) if work else []
        answers = iter(Bad(f"{where}: {r.error}") if r.error is not None else r.answer()
                       for (where, _), r in zip(work, results, strict=True))
        for request in x:
            if isinstance(request, Decoded):
                request.answer(answers)
        return x


def _document(item: Any, index: int, where: str, max_chars: int) -> "tuple[str, Any] | Bad":
    """One input of ``/extract`` as ``(where, Document)`` (the id defaults to ``#index``), or what is wrong with it:
    the checks of ``tacred extract`` (binary data, more than ``max_chars`` characters) included."""
    from tacred.extraction.documents import BadDocument, checked_text

    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, dict):
        return Bad(f"{where}: expected a string or an object with 'text', found {type(item).__name__}")
    if set(item) - {"text", "id"} or "text" not in item:
        return Bad(f"{where}: expected an object with 'text' (and an optional 'id'), found the keys {sorted(item)}")
    if not isinstance(item["text"], str):
        return Bad(f"{where}: 'text' must be a string, found {type(item['text']).__name__}")
    ident = item.get("id", f"#{index}")
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        return Bad(f"{where}: 'id' must be a string or an integer, found {ident!r}")
    doc = checked_text(item["text"].encode("utf-8", "surrogatepass"), str(ident), "request", max_chars)
    return Bad(f"{where}: {doc.reason}") if isinstance(doc, BadDocument) else (where, doc)


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
                 max_tokens: int = MAX_TOKENS, max_batch_inputs: int = MAX_BATCH_INPUTS,
                 signatures: bool = True, precision: str | None = None) -> TacredServer:
    """The LitServer for a checkpoint (``server.run(host=..., port=...)`` starts it); ``device``: already resolved
    (``cpu``, ``cuda``, ``cuda:N``; :func:`tacred.devices.torch_device`); ``precision``: see
    :func:`tacred.load_model`."""
    options = dict(threshold=threshold, spacy_model=spacy_model, num_threads=num_threads, max_batch_size=max_batch_size,
                   batch_timeout=batch_timeout, max_tokens=max_tokens, max_batch_inputs=max_batch_inputs,
                   precision=precision)
    extract = ExtractAPI(ckpt_path, **options, api_path="/extract")
    extract.signatures = signatures
    apis = [RelationAPI(ckpt_path, **options), extract]
    accelerator, _, index = device.partition(":")
    return TacredServer(apis, accelerator=accelerator, devices=[int(index)] if index else "auto",
                        workers_per_device=workers, timeout=timeout,
                        middlewares=[(JsonBodyCheck, {"max_body_bytes": max_body_bytes})],
                        model_metadata={"checkpoint": str(ckpt_path)})

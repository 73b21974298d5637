"""A joint entity-and-relation checkpoint → a folder that runs without torch (:mod:`tacred.inference.onnx_joint`).

The network becomes two ONNX graphs, because the entity decoding between them is data-dependent Python:
``model.onnx`` (word pieces → every span's label probabilities and each word's vector, one encoder pass) and
``relations.onnx`` (those word vectors and the found entity pairs → each relation's probability). ``predictor.json``
and ``tokenizer.json`` keep the types, the tokenizer, the widest span, the type pairs each relation may take and the
dev threshold; ``weights.pt``, ``network.json`` and ``config.yaml`` the PyTorch model; ``README.md`` is the card.
ONNX Runtime is checked against PyTorch on sentences before the folder is kept (:func:`agreement`).
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from tacred.data.joint_batching import JOINT_KEY, EncodedSentence, collate, piece_arrays
from tacred.errors import ExportError
from tacred.inference.joint import JointPredictor
from tacred.inference.model_card import ModelCard
from tacred.inference.onnx_backend import PREDICTOR_FILE
from tacred.inference.onnx_joint import (
    RELATION_INPUTS,
    RELATION_OUTPUT,
    RELATIONS_GRAPH,
    SPAN_INPUTS,
    SPAN_OUTPUTS,
    TOKENIZER_FILE,
    OnnxJointPredictor,
    allowed_names,
)
from tacred.models.joint import JointEncoded, JointNetwork
from tacred.models.joint_decoding import SentenceFound, entity_pairs

if TYPE_CHECKING:
    from tacred.inference.sources import ModelSource

OPSET = 18  # ScatterElements with reduction "max" (each word's max over its pieces) came in opset 18

# a few sentences that every check reads besides the run's own: a one-word sentence pads the words up to the widest
# span (the span graph's loop was traced that wide), a sentence without entities leaves the relation graph unused
PROBE_SENTENCES = (
    "Maria Lopez , the chief executive of Acme Holdings , lives in Boston .",
    "John Smith works for the United Nations in New York .",
    "Peter van Dam killed Tom Baker last year .",
    "Globex said on Monday that it would move its offices to Cape Town .",
    "the weather was fine .",
    "Oslo",
)


class SpanGraph(nn.Module):
    """``model.onnx``: the encoder pass and the span classifier (:meth:`JointNetwork.encode_pieces`,
    :meth:`JointNetwork.span_logits`), the span labels' softmax, and the word vectors the relation graph reads."""

    def __init__(self, net: JointNetwork) -> None:
        super().__init__()
        self.net = net

    def forward(self, input_ids: torch.Tensor, pad_mask: torch.Tensor, piece_words: torch.Tensor,
                shapes: torch.Tensor, present: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        enc = self.net.encode_pieces(input_ids, pad_mask, piece_words, shapes, present)
        return torch.softmax(self.net.span_logits(enc).float(), dim=-1), enc.words  # (B, M, W, E + 1), (B, W, H)


class RelationGraph(nn.Module):
    """``relations.onnx``: :meth:`JointNetwork.relation_logits` of entity pairs and their sigmoid (the allowed types
    are applied after it, from ``predictor.json``)."""

    def __init__(self, net: JointNetwork) -> None:
        super().__init__()
        self.net = net

    def forward(self, words: torch.Tensor, pairs: torch.Tensor, pair_types: torch.Tensor) -> torch.Tensor:
        enc = JointEncoded(words, words[:, 0], words.new_zeros(0))  # the relation step reads the words alone
        return torch.sigmoid(self.net.relation_logits(enc, pairs, pair_types).float())  # (P, R)


def export_graphs(net: JointNetwork, sample: list[EncodedSentence], pad_id: int, folder: Path) -> None:
    """Trace both graphs on ``sample`` (a few sentences) with dynamic batch, piece, word and pair axes."""
    arrays = piece_arrays(sample, pad_id, min_words=net.max_width)
    args = tuple(torch.from_numpy(arrays[name]) for name in SPAN_INPUTS)
    pieces, words = {0: "batch", 1: "pieces"}, {0: "batch", 1: "words"}
    span_axes = {"input_ids": pieces, "pad_mask": pieces, "piece_words": pieces, "shapes": pieces, "present": words,
                 "span_probabilities": {0: "batch", 2: "words"}, "words": words}
    # three pairs of the first sentence: head before tail, after it, and overlapping
    pairs = torch.tensor([[0, 0, 1, 1, 2], [0, 1, 2, 0, 1], [0, 0, 2, 1, 2]])
    pair_types = torch.zeros((3, 2), dtype=torch.long)
    with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
        # what the tracer warns of is constant for every input: transformers' mask length check, the span loop's
        # branch for sentences narrower than the widest span (inputs are padded to that width), and the relation
        # step's branch for no pairs (ONNX Runtime is not called then); pair and word indices are never negative
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message=r"Exporting aten::index operator of advanced indexing")
        warnings.filterwarnings("ignore", message=r"Constant folding - Only steps=1")
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=r".*legacy TorchScript-based ONNX")
        spans = SpanGraph(net).eval()
        torch.onnx.export(spans, args, str(folder / "model.onnx"), input_names=list(SPAN_INPUTS),
                          output_names=list(SPAN_OUTPUTS), dynamic_axes=span_axes, opset_version=OPSET, dynamo=False)
        torch.onnx.export(RelationGraph(net).eval(), (spans(*args)[1], pairs, pair_types),
                          str(folder / RELATIONS_GRAPH), input_names=list(RELATION_INPUTS),
                          output_names=[RELATION_OUTPUT],
                          dynamic_axes={"words": words, "pairs": {0: "pairs"}, "pair_types": {0: "pairs"},
                                        RELATION_OUTPUT: {0: "pairs"}}, opset_version=OPSET, dynamo=False)
    _loosen_branch_shapes(folder / "model.onnx")


def _loosen_branch_shapes(path: Path) -> None:
    """Drop the shapes written on the outputs of ``If`` branches: torch's scatter_reduce export wraps the scatter in
    an ``If`` (for inputs of rank 0) whose other branch it labels with a wrong rank, which ONNX Runtime would warn
    of at every run. The shapes are annotations only; ONNX Runtime infers them anew."""
    import onnx

    model = onnx.load(str(path))
    for node in model.graph.node:
        if node.op_type == "If":
            for attribute in node.attribute:
                for output in attribute.g.output:
                    output.type.tensor_type.ClearField("shape")
    onnx.save(model, str(path))


def check_sentences(facts: dict[str, Any], split_file: str | Path | None,
                    predictor: JointPredictor) -> tuple[list[EncodedSentence], str]:
    """The sentences ONNX Runtime is checked on (``split_file`` in SpERT's layout, else the run's test file, else
    its dev file, when found; and :data:`PROBE_SENTENCES`), encoded, and what they are; sentences longer than the
    encoder reads are left out."""
    from tacred.datasets.spert_layout import read_sentences

    if split_file is None:
        data = (facts["config"].get("data") or {}).get("init_args") or facts["config"].get("data") or {}
        folder = Path(data.get("data_dir") or ".")
        for name in (data.get("test_file"), data.get("dev_file")):
            if isinstance(name, str) and (folder / name).is_file():
                split_file = folder / name
                break
    words = [list(s.tokens) for s in read_sentences(split_file)] if split_file is not None else []
    encoded = [e for e in (predictor.encode(w) for w in words + [p.split() for p in PROBE_SENTENCES]) if e]
    source = f"{split_file} and " if split_file is not None else ""
    return encoded, f"{source}{len(PROBE_SENTENCES)} probe sentences"


def _decisions(found: SentenceFound, threshold: float) -> tuple:
    """What a sentence's result says, without probabilities: the entities and each pair's relation kept."""
    kept = []
    for (h, t), row in zip(found.pairs, np.asarray(found.probs), strict=True):
        if row.size and row.max() >= threshold:
            kept.append((h, t, int(row.argmax())))
    return tuple((s, e, k) for s, e, k, _ in found.entities), tuple(kept)


def agreement(torch_model: JointPredictor, onnx_model: OnnxJointPredictor,
              encoded: list[EncodedSentence]) -> dict[str, Any]:
    """ONNX Runtime beside PyTorch over ``encoded``: the largest absolute difference of a span's label probability
    (every span of every sentence), of a relation's probability (the pairs of the entities PyTorch found), and the
    share of sentences whose entities and kept relations are the same."""
    span_diff = relation_diff = 0.0
    same = 0
    net = torch_model.net
    for chunk in torch_model.batches(encoded):
        sentences = [encoded[i] for i in chunk]
        batch = collate(sentences, chunk, net.max_width, len(torch_model.labels), torch_model.pad_id)
        with torch.no_grad():
            expected = torch.softmax(net.span_logits(net.encode(batch)).float(), dim=-1).numpy()  # (B, M, W, E + 1)
        found = torch_model.find(sentences, None)
        spans, words, counts = onnx_model.encoder_pass(sentences)
        m, w = expected.shape[1:3]
        valid = np.arange(w)[None, None, :] + np.arange(1, m + 1)[None, :, None] <= counts[:, None, None]
        span_diff = max(span_diff, float(np.abs(spans[:, :, :w] - expected)[valid].max()))
        entities = [f.entities for f in found]
        pairs, pair_types, _ = entity_pairs(entities)
        if len(pairs):
            got = onnx_model.relation_probabilities(words, pairs, pair_types)
            relation_diff = max(relation_diff, float(np.abs(got - torch.cat([f.probs for f in found]).numpy()).max()))
        onnx_found = onnx_model.decode(spans, words, counts)
        same += sum(_decisions(a, torch_model.threshold) == _decisions(b, torch_model.threshold)
                    for a, b in zip(found, onnx_found, strict=True))
    return {"span_max_abs_diff": span_diff, "relation_max_abs_diff": relation_diff,
            "onnx_max_abs_diff": max(span_diff, relation_diff), "same_results": same / max(len(encoded), 1)}


def write_joint(out: Path, final: Path, fmt: str, ckpt: dict[str, Any], source: ModelSource, facts: dict[str, Any],
                split_file: str | Path | None, tolerance: float) -> dict[str, Any]:
    """The files of a joint model's export folder, written into ``out`` (which becomes ``final``); with
    ``fmt="onnx"`` the two graphs, checked: an :class:`~tacred.errors.ExportError` when a probability differs from
    PyTorch's by more than ``tolerance``."""
    import yaml

    predictor = JointPredictor(ckpt, source.path, device="cpu")
    types, saved = predictor.types, ckpt[JOINT_KEY]
    allowed = predictor.net.allowed.cpu().numpy()
    torch.save(predictor.net.state_dict(), out / "weights.pt")
    (out / "network.json").write_text(json.dumps(dict(facts["hyper_parameters"]), indent=1, default=str),
                                      encoding="utf-8")
    (out / "config.yaml").write_text(yaml.safe_dump(facts["config"], sort_keys=False), encoding="utf-8")
    tokenizer = dict(saved["tokenizer"])
    (out / TOKENIZER_FILE).write_text(tokenizer.pop("tokenizer_json"), encoding="utf-8")
    meta = {"format": 1, "kind": "joint", "types": types.to_dict(), "max_width": predictor.max_width,
            "threshold": predictor.threshold, "tokenizer": tokenizer,
            "allowed": allowed_names(allowed, types.entities, types.relations)}
    (out / PREDICTOR_FILE).write_text(json.dumps(meta, indent=1, ensure_ascii=False), encoding="utf-8")
    summary: dict[str, Any] = {"format": fmt, "folder": str(final), "kind": "joint", "onnx_max_abs_diff": None,
                               "checked_on": None, "quantization": None}
    if fmt == "onnx":
        start = time.perf_counter()
        encoded, checked_on = check_sentences(facts, split_file, predictor)
        export_graphs(predictor.net, encoded[:4], predictor.pad_id, out)
        from tacred.inference.api import open_model

        found = agreement(predictor, open_model(out, device="cpu"), encoded)
        summary.update(found, checked_on=checked_on, examples=len(encoded),
                       seconds=round(time.perf_counter() - start, 2))
        if not found["onnx_max_abs_diff"] <= tolerance:
            raise ExportError(f"ONNX Runtime differs from PyTorch by {found['onnx_max_abs_diff']:.3g} (> "
                              f"{tolerance:g}; spans {found['span_max_abs_diff']:.3g}, relations "
                              f"{found['relation_max_abs_diff']:.3g}) on {checked_on}")
    parameters = sum(p.numel() for p in predictor.net.parameters())
    joint_card(source.path, facts, predictor, parameters, summary).write(out / "README.md")
    (out / "export.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def joint_card(ckpt_path: Path, facts: dict[str, Any], predictor: JointPredictor, parameters: int,
               summary: dict[str, Any]) -> ModelCard:
    """``README.md`` of a joint model's export folder: files, data, recipe, scores, intended use and limits."""
    config = facts["config"]
    data = (config.get("data") or {}).get("init_args") or {}
    model = (config.get("model") or {}).get("init_args") or {}
    trainer = config.get("trainer") or {}
    hp = facts["hyper_parameters"]
    encoder = hp.get("transformer_config") or {}
    types = predictor.types
    files = [
        "- `model.onnx`: word pieces → spans; inputs `input_ids`, `piece_words` (each piece's word, -1 for special",
        "  pieces) and `shapes` (int64, batch × pieces), `pad_mask` (bool, True at padding), `present` (bool, batch ×",
        f"  words, at least {predictor.max_width}); outputs `span_probabilities` (batch × width × words × entity types",
        "  + none) and `words` (each word's vector, batch × words × hidden).",
        "- `relations.onnx`: `words` and entity pairs `pairs` (pair × (sentence, head start, head end, tail start,",
        "  tail end), ends exclusive) and `pair_types` → `relation_probabilities` (pair × relations).",
        "- `predictor.json`: types, widest span, threshold, tokenizer settings and the type pairs each relation may",
        "  take; `tokenizer.json`: the tokenizer. `tacred.load_model(folder)` runs both graphs with ONNX Runtime",
        "  alone, without torch, decoding entities as the PyTorch model does (`.extract(text)`, `tacred extract`).",
        "- `weights.pt`: the PyTorch state dict of `JointNetwork`; `network.json`: its hyperparameters and encoder",
        "  configuration; `config.yaml`: the whole resolved training configuration; `export.json`: this export's check.",
    ]
    training_data = [
        f"- Training data: `{data.get('data_dir')}` (train `{data.get('train_file')}`, dev `{data.get('dev_file')}`, "
        f"test `{data.get('test_file')}`), SpERT's JSON layout.",
        f"- Entity types: {', '.join(types.entities)}; relations: {', '.join(types.relations)}; spans up to "
        f"{predictor.max_width} words.",
    ]
    epochs_done = None if facts["epoch"] is None else int(facts["epoch"]) + 1
    recipe = [
        f"- Network: a {encoder.get('model_type')} encoder ({encoder.get('num_hidden_layers')} layers, hidden "
        f"{encoder.get('hidden_size')}; from `{hp.get('pretrained')}`) with span and pair classifiers after SpERT "
        f"(Eberts & Ulges, 2020); {parameters:,} parameters.",
        f"- Training: AdamW lr {model.get('lr')} (heads {model.get('head_lr')}), warm-up {model.get('warmup_ratio')}, "
        f"batch {data.get('batch_size')}, seed {config.get('seed_everything')}, precision "
        f"{trainer.get('precision') or '32-true'}; this checkpoint after {epochs_done} of {trainer.get('max_epochs')} "
        "epochs.",
    ]
    scores = [f"- Relation threshold {predictor.threshold:g} (a probability, chosen on dev)."]
    if facts["best_dev_f1"] is not None:
        scores.append(f"- Best dev strict relation micro-F1 during training: {100 * facts['best_dev_f1']:.2f}")
    test = facts["test"] or {}
    if isinstance(test.get("strict"), dict) and isinstance(test.get("entities"), dict):
        scores.append(f"- Test (from `{facts['test_metrics_file']}`; it belongs to this checkpoint only if `tacred "
                      f"test` was run on it): strict relation micro-F1 {test['strict']['micro']['f1']:.2f}, entity "
                      f"micro-F1 {test['entities']['micro']['f1']:.2f}")
    if summary["onnx_max_abs_diff"] is not None:
        scores.append(f"- ONNX Runtime vs PyTorch on {summary['checked_on']}: largest absolute difference of a span's "
                      f"probability {summary['span_max_abs_diff']:.2e}, of a relation's "
                      f"{summary['relation_max_abs_diff']:.2e}; the same entities and relations in "
                      f"{summary['same_results']:.2%} of the sentences.")
    limits = [
        "- Finds entities of the types above in English sentences given as words, and relations between them; spaCy",
        "  cuts raw text into sentences and words. A sentence longer than the encoder reads is skipped.",
        "- Probabilities are not calibrated; scores above were measured on the named data only and will be lower on",
        "  other text.",
    ]
    return ModelCard(
        "Joint entity and relation model (tacred)",
        ["Entities and relations from one encoder pass a sentence, trained with the `tacred` package. Exported from",
         f"`{ckpt_path}`."],
        {"Files": files, "Data": training_data, "Recipe": recipe, "Scores": scores,
         "Intended use and limits": limits})

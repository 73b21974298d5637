"""A folder to hand on: the network as ONNX, its weights, vocabularies, configuration and a model card.

``model.onnx`` takes the six (B, T) arrays of :class:`tacred.inference.encoding.WordEncoder` (``words``, ``pos``,
``ner``, ``subj_positions``, ``obj_positions`` as int64, ``pad_mask`` as bool, True at padding) and returns
``probabilities`` (B, L); a transformer's takes the arrays of :class:`tacred.inference.encoding.MarkedEncoder`
instead (``input_ids`` and ``pad_mask`` (B, T), ``subj_marker`` and ``obj_marker`` (B,)). ``tacred.load_model(folder)``
reads such a folder and predicts with ONNX Runtime alone (:class:`~tacred.inference.onnx_backend.OnnxBackend`):
this module imports torch only to write a folder.
A joint entity-and-relation checkpoint is exported as two graphs by :mod:`tacred.inference.joint_export`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tacred.errors import ExportError
from tacred.inference.model_card import ModelCard
from tacred.inference.onnx_backend import PREDICTOR_FILE

if TYPE_CHECKING:
    from tacred.data.batching import EncodedSplit
    from tacred.data.examples import Example
    from tacred.data.vocab import Vocabularies
    from tacred.inference.sources import ModelSource

__all__ = ["ExportError", "export_folder"]
OPSET = 17


def batch_inputs(batch: Any) -> dict[str, np.ndarray]:
    """The ONNX model's inputs for a batch (a :class:`~tacred.data.batching.Batch` or a transformer's
    :class:`~tacred.data.markers.MarkedBatch`)."""
    from tacred.data.features import WORD_INPUTS
    from tacred.data.markers import MARKED_INPUTS, MarkedBatch

    names = MARKED_INPUTS if isinstance(batch, MarkedBatch) else WORD_INPUTS
    return {name: getattr(batch, name).numpy() for name in names}


def export_onnx(model: Any, data: EncodedSplit, path: Path) -> None:
    """Trace the network on a small batch of ``data`` with dynamic batch and length axes."""
    import torch

    from tacred.inference.trained import probability_network

    sample = data.collate(list(range(min(4, len(data)))))
    wrapper = probability_network(model.net).eval()
    names = wrapper.inputs
    args = tuple(getattr(sample, name) for name in names)
    dynamic = {name: {0: "batch"} if getattr(sample, name).ndim == 1 else {0: "batch", 1: "length"} for name in names}
    with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
        # the transformer's graph: transformers compares the mask's length with the input's in Python (equal for
        # every input: a constant is right), and the marker positions it gathers are never negative
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message=r"Exporting aten::index operator of advanced indexing")
        torch.onnx.export(wrapper, args, str(path), input_names=list(names), output_names=["probabilities"],
                          dynamic_axes=dynamic | {"probabilities": {0: "batch"}}, opset_version=OPSET, dynamo=False)


def torch_probabilities(model: Any, data: EncodedSplit, batch_size: int = 50) -> np.ndarray:
    """PyTorch's label probabilities over ``data`` (float32, in ``data``'s order): computed once per export, for the
    float32 graph's check and the quantized graph's alike."""
    import torch

    from tacred.data.batching import BucketBatchSampler

    out = np.zeros((len(data), len(model.vocab.labels.itos)), dtype=np.float32)
    model.eval()
    for indices in BucketBatchSampler(data.lengths, batch_size, shuffle=False):
        with torch.inference_mode():
            out[list(indices)] = torch.softmax(model(data.collate(indices)).logits.float(), dim=-1).numpy()
    return out


def onnx_agreement(expected: np.ndarray, data: EncodedSplit, path: Path, batch_size: int = 50) -> dict[str, Any]:
    """ONNX Runtime's probabilities beside PyTorch's (``expected``, from :func:`torch_probabilities`) over ``data``:
    the largest absolute difference, the share of examples whose most probable label is the same, and both label
    sequences (in ``data``'s order)."""
    import onnxruntime as ort

    from tacred.data.batching import BucketBatchSampler

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = np.zeros_like(expected)
    for indices in BucketBatchSampler(data.lengths, batch_size, shuffle=False):
        got[list(indices)] = session.run(["probabilities"], batch_inputs(data.collate(indices)))[0]
    ours, theirs = got.argmax(-1), expected.argmax(-1)
    return {"max_abs_diff": float(np.abs(got - expected).max()) if len(data) else 0.0,
            "agreement": float((ours == theirs).mean()) if len(data) else 1.0,
            "onnx_labels": ours, "torch_labels": theirs}


QUANTIZATIONS = ("int8",)


def quantize_onnx(source: Path, target: Path) -> None:
    """ONNX Runtime's dynamic int8 quantization: weights of MatMul/Gemm stored as int8 with one scale per output
    channel, activations quantized on the fly per batch; embeddings, norms and the softmax stay float32 (one scale per
    channel keeps more labels than one per tensor: docs/results/semeval_glove/int8_export/)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = logging.getLogger()  # the quantizer advises its own pre-processing step on the root logger, every time
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        quiet.setLevel(level)


def _run_facts(ckpt_path: Path, ckpt: Mapping[str, Any]) -> dict[str, Any]:
    """What the checkpoint says about its training run: config, hyperparameters, epochs, best dev F1, test scores
    beside it."""
    import yaml

    config = yaml.safe_load(ckpt.get("tacred_config") or "{}") or {}
    best = None
    for key, state in (ckpt.get("callbacks") or {}).items():
        if str(key).startswith("ModelCheckpoint") and state.get("best_model_score") is not None:
            best = float(state["best_model_score"])
    metrics_file = ckpt_path.parent.parent / "test_metrics.json"
    test = json.loads(metrics_file.read_text(encoding="utf-8")) if metrics_file.is_file() else None
    return {"config": config, "hyper_parameters": dict(ckpt.get("hyper_parameters") or {}), "epoch": ckpt.get("epoch"), "global_step": ckpt.get("global_step"),
            "best_dev_f1": best, "test": test, "test_metrics_file": str(metrics_file) if test else None}


def model_card(ckpt_path: Path, facts: Mapping[str, Any], labels: Sequence[str], parameters: int,
               onnx_diff: float | None, onnx_split: str | None, summary: Mapping[str, Any] | None = None) -> ModelCard:
    """``README.md`` of an exported folder: files, data, recipe, scores, intended use and limits."""
    config = facts["config"]
    data = config.get("data") or {}
    model = config.get("model") or {}
    trainer = config.get("trainer") or {}
    net = model.get("network") or {}
    test = facts["test"]
    epochs_done = None if facts["epoch"] is None else int(facts["epoch"]) + 1
    files = [
        ("- `model.onnx`: the network; inputs `input_ids` (int64, batch × length), `pad_mask` (bool, True at padding), "
         "`subj_marker` and `obj_marker` (int64, batch: the positions of `@` and `#`); output `probabilities` (batch "
         "× labels)." if net.get("encoder") == "transformer" else
         "- `model.onnx`: the network; inputs `words`, `pos`, `ner`, `subj_positions`, `obj_positions` (int64, batch ×"
         " length) and `pad_mask` (bool, True at padding); output `probabilities` (batch × labels)."),
        "- `weights.pt`: the PyTorch state dict (`torch.load(..., weights_only=True)`); `network.json`: the network",
        "  configuration and training hyperparameters; `config.yaml`: the whole resolved training configuration.",
        "- `vocab.json`: words, POS and NER tags, labels and the featurisation switches; `labels.json`: the labels in",
        "  output order.",
        "- `predictor.json`: how inputs are encoded for the network (`encoder`); `tacred.load_model(folder)` predicts",
        "  with ONNX Runtime alone, without torch: the inputs, errors and prediction objects of `load_model` on a",
        "  checkpoint.",
    ]
    training_data = [
        f"- Training data: `{data.get('data_dir')}` (train `{data.get('train_file', 'train.json')}`, dev "
        f"`{data.get('dev_file', 'dev.json')}`, test `{data.get('test_file', 'test.json')}`), TACRED JSON format.",
        f"- {len(labels)} labels; `{labels[0] if labels else ''}` … (see `labels.json`); entity masking "
        f"{'on' if data.get('entity_masking', True) else 'off'}; word vectors "
        f"{'from ' + str(data['glove_path']) if data.get('glove_path') else 'random (no GloVe)'}.",
    ]
    recipe = [
        (f"- Network: the pretrained transformer `{net.get('pretrained')}` with typed entity markers (Zhou & Chen, "
         f"2021); {parameters:,} parameters." if net.get("encoder") == "transformer" else
         f"- Network: word {net.get('word_dim')}-d, POS {net.get('pos_dim')}-d, NER {net.get('ner_dim')}-d, encoder "
         f"`{net.get('encoder')}` ({net.get('num_layers')} layer(s), {net.get('num_heads')} heads, feed-forward "
         f"{net.get('ffn_dim')}), position encoding `{net.get('position_encoding')}`, position-aware attention "
         f"{'on' if net.get('position_aware', True) else 'off'}; {parameters:,} parameters."),
        (f"- Training: AdamW lr {model.get('lr')}, linear warm-up over {model.get('warmup_ratio')} of the steps then "
         "linear decay" if model.get("optimizer") == "adamw" else
         f"- Training: SGD lr {model.get('lr')}, decay ×{model.get('decay_factor')} from epoch "
         f"{model.get('decay_start_epoch')}")
        + f", batch {data.get('batch_size')}, gradient clipping "
        f"{trainer.get('gradient_clip_val')}, seed {config.get('seed_everything')}, precision "
        f"{trainer.get('precision') or '32-true'}; this checkpoint after {epochs_done} of {trainer.get('max_epochs')} epochs.",
    ]
    scores = []
    if facts["best_dev_f1"] is not None:
        scores.append(f"- Best dev F1 during training (official TACRED scorer, micro): {100 * facts['best_dev_f1']:.2f}")
    if test:
        scores.append(f"- Test (from `{facts['test_metrics_file']}`): P {100 * test['precision']:.2f}, "
                      f"R {100 * test['recall']:.2f}, F1 {100 * test['f1']:.2f}"
                      + (f"; SemEval macro-F1 {100 * test['semeval']['macro_f1']:.2f}"
                         if isinstance(test.get("semeval"), dict) and "macro_f1" in test["semeval"] else ""))
        scores.append("  (the run's `test_metrics.json`: it belongs to this checkpoint only if `tacred test` was run on it).")
    else:
        scores.append("- No test scores found beside the checkpoint (run `tacred test --ckpt_path CKPT` first).")
    if onnx_diff is not None:
        scores.append(f"- ONNX Runtime vs PyTorch on `{onnx_split}`: largest absolute difference of a "
                      f"probability {onnx_diff:.2e}" + (" (the float32 graph, before quantization)." if
                                                         (summary or {}).get("quantization") else "."))
    if (summary or {}).get("quantization"):
        q = summary
        scores.append(f"- `model.onnx` is quantized ({q['quantization']}, dynamic: int8 weights, activations quantized "
                      f"per batch): its most probable label is PyTorch's for {q['quantized_agreement']:.2%} of those "
                      f"examples (largest probability difference {q['quantized_max_abs_diff']:.2e})"
                      + (f"; micro F1 {100 * q['quantized_f1']:.2f} against PyTorch's {100 * q['torch_f1']:.2f}."
                         if q.get("quantized_f1") is not None else "."))
    limits = [
        "- Classifies the relation between one marked subject and one marked object of a single English sentence into",
        "  the labels above, or `no_relation`. It does not find entities: both arguments must be given.",
        "- Inputs must be tokenised and tagged as in training (Stanford/Penn POS, Stanford NER); `tacred`'s spaCy",
        "  annotation approximates CoreNLP, and predictions on text unlike the training data are less reliable.",
        "- Probabilities are not calibrated. Scores above were measured on the named data only; expect lower figures",
        "  on other genres. Models trained on LDC's TACRED inherit its licence terms.",
    ]
    return ModelCard(
        "Relation extraction model (tacred)",
        ["Position-aware self-attention with relative positional encodings (Bilan & Roth, 2018), trained with the",
         f"`tacred` package. Exported from `{ckpt_path}`."],
        {"Files": files, "Data": training_data, "Recipe": recipe, "Scores": scores,
         "Intended use and limits": limits})


def export_folder(ckpt_path: str | Path | ModelSource, out: str | Path, fmt: str = "onnx",
                  split_file: str | Path | None = None, tolerance: float = 1e-5, overwrite: bool = False,
                  quantize: str | None = None, min_agreement: float = 0.95) -> dict[str, Any]:
    """Write the hand-on folder for a model (``ckpt_path``: a checkpoint, a run folder or a shipped model's name);
    with ``fmt="onnx"`` also ``model.onnx``, checked against PyTorch on ``split_file`` (default: the run's test split
    when it is found). Returns a summary (files, ONNX difference).
    A joint entity-and-relation checkpoint is written by :func:`tacred.inference.joint_export.write_joint` (two
    graphs; ``split_file`` in SpERT's layout; no ``quantize``).

    ``quantize="int8"``: ``model.onnx`` is the float32 graph, once checked, quantized by :func:`quantize_onnx`; the
    export fails unless the quantized graph's most probable label is PyTorch's on at least ``min_agreement`` of the
    examples checked. The summary gives both graphs' agreement and, where the examples carry gold labels, the micro F1
    of PyTorch and of the quantized graph (official TACRED scorer)."""
    from tacred.inference.sources import ModelSource, model_checkpoint, resolve_model
    from tacred.inference.trained import TrainedNetwork

    out = Path(out)
    if fmt not in ("onnx", "torch"):
        raise ExportError(f"unknown format {fmt!r} (onnx or torch)")
    if quantize is not None and (fmt != "onnx" or quantize not in QUANTIZATIONS):
        raise ExportError(f"quantize {quantize!r}: only {', '.join(QUANTIZATIONS)}, with the onnx format")
    if not 0.0 <= min_agreement <= 1.0:
        raise ExportError(f"min_agreement {min_agreement!r}: a share of examples in [0, 1]")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise ExportError(f"{out} exists and is not empty; choose another --out or pass --overwrite")
    # a checkpoint, a run folder or a shipped model's name, read as load_model reads it
    source = ckpt_path if isinstance(ckpt_path, ModelSource) else resolve_model(ckpt_path)
    ckpt_path = source.path
    ckpt = model_checkpoint(source)  # read once: the network, its vocabularies and the run's facts come from it
    facts = _run_facts(ckpt_path, ckpt)
    source = replace(source, contents=ckpt)
    joint = source.model_kind == "joint"
    if joint and quantize is not None:
        raise ExportError(f"--quantize {quantize}: a joint entity-and-relation model is exported in float32 only; "
                          "leave out --quantize")
    model = None if joint else TrainedNetwork.from_contents(ckpt, ckpt_path)
    # written beside `out` and moved into place when complete: a failed export leaves nothing half-written
    final, out = out, out.with_name(f".{out.name}.partial")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    try:
        if joint:  # entities and relations: two graphs and the decoding between them (inference.joint_export)
            from tacred.inference.joint_export import write_joint

            summary = write_joint(out, final, fmt, ckpt, source, facts, split_file, tolerance)
        else:
            summary = _write(out, final, fmt, model, source, facts, split_file, tolerance, quantize, min_agreement)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)
    os.replace(out, final)
    summary["files"] = sorted(p.name for p in final.iterdir())
    return summary


def _write(out: Path, final: Path, fmt: str, model: Any, source: ModelSource, facts: dict[str, Any],
           split_file: str | Path | None, tolerance: float, quantize: str | None = None,
           min_agreement: float = 0.95) -> dict[str, Any]:
    """The files of an export folder, written into ``out`` (which becomes ``final``)."""
    import torch
    import yaml

    from tacred.data.batching import encode_split, probe_examples
    from tacred.data.examples import load_examples
    from tacred.inference.sources import EXPORT_VOCAB, THRESHOLD_FILE

    vocab: Vocabularies = model.vocab
    torch.save(model.net.state_dict(), out / "weights.pt")
    vocab.save(out / EXPORT_VOCAB)
    (out / "labels.json").write_text(json.dumps(vocab.labels.itos, ensure_ascii=False, indent=0), encoding="utf-8")
    (out / "network.json").write_text(json.dumps(dict(facts["hyper_parameters"]), indent=1, default=str),
                                      encoding="utf-8")
    encoder = source.encoder_kind
    predictor = {"format": 1, "encoder": encoder, "output": "probabilities"}
    (out / PREDICTOR_FILE).write_text(json.dumps(predictor | ({"quantization": quantize} if quantize else {})),
                                      encoding="utf-8")
    (out / "config.yaml").write_text(yaml.safe_dump(facts["config"], sort_keys=False), encoding="utf-8")
    tuned = source.tuned_threshold  # `tacred threshold tune`'s, used by load_model on the folder too
    if tuned is not None:
        shutil.copy2(tuned, out / THRESHOLD_FILE)
    from tacred.ner.training import NER_FOLDER, saved_ner

    ner = saved_ner(source.ner_folders)  # `tacred ner train`'s, used by load_model too
    if ner is not None:
        shutil.copytree(ner, out / NER_FOLDER)
    summary: dict[str, Any] = {"format": fmt, "folder": str(final), "onnx_max_abs_diff": None, "checked_on": None,
                               "quantization": quantize}
    if fmt == "onnx":
        if split_file is None:
            data_cfg = facts["config"].get("data") or {}
            guess = Path(data_cfg.get("data_dir") or ".") / (data_cfg.get("test_file") or "test.json")
            split_file = guess if guess.is_file() else None
        if split_file is not None:
            examples = load_examples(Path(split_file), strict=True).examples
            examples = [ex if ex.relation in vocab.labels else _relabelled(ex, vocab.no_relation) for ex in examples]
        else:  # nothing to compare on: a few synthetic sentences still check the graph
            examples = probe_examples(vocab)
        data = encode_split(examples, vocab, source=str(split_file or "probe sentences"))
        start = time.perf_counter()
        export_onnx(model, data, out / "model.onnx")
        expected = torch_probabilities(model, data)
        diff = onnx_agreement(expected, data, out / "model.onnx")["max_abs_diff"]
        summary.update(onnx_max_abs_diff=diff, checked_on=str(split_file or f"{len(data)} probe sentences"),
                       examples=len(data), seconds=round(time.perf_counter() - start, 2))
        if not diff <= tolerance:
            raise ExportError(f"ONNX Runtime differs from PyTorch by {diff:.3g} (> {tolerance:g}) on {split_file}")
        if quantize:
            summary.update(_quantized(model, data, expected, out, min_agreement, checked=split_file is not None))
    parameters = sum(p.numel() for p in model.net.parameters())
    model_card(source.path, facts, vocab.labels.itos, parameters, summary["onnx_max_abs_diff"],
               summary["checked_on"], summary).write(out / "README.md")
    (out / "export.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def _quantized(model: Any, data: EncodedSplit, expected: np.ndarray, out: Path, min_agreement: float,
               checked: bool) -> dict[str, Any]:
    """Replace the checked float32 ``model.onnx`` by its int8 form and measure what that changed."""
    from tacred.evaluation.scoring import score

    full = out / "model.fp32.onnx"
    os.replace(out / "model.onnx", full)
    quantize_onnx(full, out / "model.onnx")
    full.unlink()
    found = onnx_agreement(expected, data, out / "model.onnx")
    result: dict[str, Any] = {"quantized_agreement": found["agreement"], "quantized_max_abs_diff": found["max_abs_diff"],
                              "torch_f1": None, "quantized_f1": None}
    if checked:  # the check file's gold labels (unknown labels were relabelled no_relation, as in the check)
        itos, no_rel = model.vocab.labels.itos, model.vocab.no_relation
        gold = [itos[i] for i in data.labels.tolist()]
        result["torch_f1"] = score(gold, [itos[i] for i in found["torch_labels"]], no_rel).f1
        result["quantized_f1"] = score(gold, [itos[i] for i in found["onnx_labels"]], no_rel).f1
    if found["agreement"] < min_agreement:
        raise ExportError(f"the int8 model predicts PyTorch's label for {found['agreement']:.2%} of the "
                          f"{len(data)} examples checked (< {min_agreement:.2%}); export without --quantize, or lower "
                          "--min_agreement")
    return result


def _relabelled(ex: Example, label: str) -> Example:
    from dataclasses import replace

    return replace(ex, relation=label)

"""What ``test`` and ``predict`` leave behind: prediction files and the official-style score report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from tacred.datasets.conversion import unconverted_gold
from tacred.evaluation.scoring import (
    format_report,
    format_semeval_report,
    over_release,
    score,
    semeval_macro_f1,
)
from tacred.evaluation.threshold import apply_threshold, format_comparison, micro_scores
from tacred.io import prediction_record, write_json, write_jsonl, write_text_atomic


def stack_outputs(outputs: list[tuple[torch.Tensor, torch.Tensor]], num_labels: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The (index, probabilities) of every batch of an epoch as two tensors (N,) and (N, L); empty ones for none."""
    if not outputs:
        return torch.empty(0, dtype=torch.long), torch.empty(0, num_labels)
    return torch.cat([i for i, _ in outputs]), torch.cat([p for _, p in outputs])


def gather_outputs(module: Any, index: torch.Tensor, probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Collect (index, probabilities) from every process (``LightningModule.all_gather``); each example must appear
    exactly once. Shards may differ in size: each is padded to the largest (index -1) and the padding dropped."""
    if module.trainer.world_size == 1:
        return index, probs
    sizes = module.all_gather(torch.tensor(index.numel(), device=module.device))  # (W,)
    n = int(sizes.max())
    padded_index = torch.full((n,), -1, dtype=torch.long)
    padded_index[: index.numel()] = index
    padded_probs = torch.zeros(n, probs.shape[-1], dtype=probs.dtype)
    padded_probs[: index.numel()] = probs
    all_index = module.all_gather(padded_index.to(module.device)).cpu().reshape(-1)  # (W * n,)
    all_probs = module.all_gather(padded_probs.to(module.device)).cpu().reshape(-1, probs.shape[-1])  # (W * n, L)
    keep = all_index >= 0
    return all_index[keep], all_probs[keep]


def _ordered(module: Any, split: str, index: torch.Tensor, probs: torch.Tensor) -> tuple[Any, torch.Tensor]:
    data = module.trainer.datamodule.encoded(split)
    if index.numel() != len(data) or set(index.tolist()) != set(range(len(data))):
        raise RuntimeError(f"{split}: scored {index.numel()} predictions for {len(data)} examples "
                           f"({len(set(index.tolist()))} distinct); every example must be scored exactly once")
    order = torch.argsort(index)
    return data, probs[order]


def decisions(module: Any, probs: torch.Tensor) -> torch.Tensor:
    """Predicted label ids (N,): the argmax, or the model's no-relation threshold when it has one."""
    return apply_threshold(probs, module.vocab.no_relation_id, getattr(module, "no_relation_threshold", None))


def is_semeval_label_set(labels: list[str], no_relation: str) -> bool:
    """SemEval-2010 Task 8 style labels (``Type(e1,e2)``): the official macro-F1 is reported as well."""
    directed = [lab for lab in labels if lab != no_relation]
    return bool(directed) and all(lab.endswith(("(e1,e2)", "(e2,e1)")) for lab in directed)


def _decided(module: Any, split: str, index: torch.Tensor, probs: torch.Tensor) -> tuple[Any, torch.Tensor, list[str], list[int]] | None:
    """On rank 0: the split, its probabilities in split order, the label names and the decided label ids."""
    index, probs = gather_outputs(module, index, probs)
    if module.trainer.global_rank != 0:
        return None
    data, probs = _ordered(module, split, index, probs)
    return data, probs, module.vocab.labels.itos, decisions(module, probs).tolist()


def output_dir(module: Any) -> Path:
    out = Path(getattr(module, "output_dir", None) or module.trainer.default_root_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out


def fresh_names(folder: Path, names: list[str], overwrite: bool = False) -> list[Path]:
    """``folder/name`` for each name, or, when any of them exists and not ``overwrite``, the same names with the
    first suffix ``-1``, ``-2``, ... that none of them has yet: outputs of one command share a suffix."""
    paths = [folder / name for name in names]
    n = 0
    while not overwrite and any(p.exists() for p in paths):
        n += 1
        paths = [folder / f"{Path(name).stem}-{n}{Path(name).suffix}" for name in names]
    return paths


def write_test_outputs(module: Any, index: torch.Tensor, probs: torch.Tensor) -> None:
    """Write ``test_predictions.jsonl``, ``test_score.txt`` and ``test_metrics.json``; print the report."""
    decided = _decided(module, "test", index, probs)
    if decided is None:
        return
    data, probs, labels, best = decided
    gold = [labels[i] for i in data.labels.tolist()]
    pred = [labels[i] for i in best]
    out = output_dir(module)
    pred_path, score_path, metrics_path = fresh_names(
        out, ["test_predictions.jsonl", "test_score.txt", "test_metrics.json"], getattr(module, "overwrite_outputs", False))
    rows = probs.tolist()
    write_jsonl(pred_path, (prediction_record(ident, labels, rows[i], best[i], gold=gold[i])
                            for i, ident in enumerate(data.ids)))
    result = score(gold, pred, no_relation=module.vocab.no_relation)
    report, metrics = format_report(result), result.to_dict()
    threshold = getattr(module, "no_relation_threshold", None)
    if threshold is not None:  # show what the threshold changed
        nr = module.vocab.no_relation_id
        untuned = micro_scores(probs.argmax(dim=-1).numpy(), data.labels, nr)
        report += "\n\n" + format_comparison(threshold, untuned, micro_scores(best, data.labels, nr), "test")
        if isinstance(threshold, np.ndarray):  # per relation: label → threshold, None where switched off
            threshold = {label: (None if np.isposinf(t) else float(t))
                         for label, t in zip(labels, threshold.tolist(), strict=True) if label != module.vocab.no_relation}
        metrics.update(no_relation_threshold=threshold, untuned=vars(untuned))
    directed = is_semeval_label_set(labels, module.vocab.no_relation)
    if directed:
        official = semeval_macro_f1(gold, pred, other=module.vocab.no_relation)
        report += "\n\n" + format_semeval_report(official)
        metrics["semeval"] = official.to_dict()
    unconverted = unconverted_gold(module.trainer.datamodule.path("test"), len(gold))
    if unconverted:
        text, metrics["release"] = release_scores(gold, pred, unconverted, module.vocab.no_relation, directed)
        report += "\n\n" + text
    write_text_atomic(score_path, report + "\n")
    write_json(metrics_path, metrics, newline=False)
    from tacred.training.tracking import log_test_results

    log_test_results(module.loggers, result, gold, pred, labels)  # W&B table and confusion matrix, if logging there
    print(report)
    print(f"predictions: {pred_path}\nreport: {score_path}\nmetrics: {metrics_path}")


def release_scores(gold: list[str], pred: list[str], unconverted: list[str], no_relation: str,
                   directed: bool) -> tuple[str, dict[str, Any]]:
    """The report lines and metrics over every sentence of the release, the unconvertible ones counted as
    ``no_relation`` predictions (:func:`tacred.evaluation.scoring.over_release`)."""
    all_gold, all_pred = over_release(gold, pred, unconverted, no_relation)
    whole = score(all_gold, all_pred, no_relation=no_relation)
    metrics: dict[str, Any] = {"sentences": len(all_gold), "unconverted": len(unconverted),
                               "precision": whole.precision, "recall": whole.recall, "f1": whole.f1}
    lines = [f"Over all {len(all_gold)} sentences of the release ({len(unconverted)} could not be converted and count "
             f"as {no_relation} predictions; conversion.json):",
             f"Precision (micro): {whole.precision:.3%}", f"   Recall (micro): {whole.recall:.3%}",
             f"       F1 (micro): {whole.f1:.3%}"]
    if directed:
        macro = semeval_macro_f1(all_gold, all_pred, other=no_relation)
        metrics["semeval_macro_f1"] = macro.macro_f1
        lines.append(f"Macro-F1, direction counted (excluding {no_relation}): {macro.macro_f1:.2%}")
    return "\n".join(lines), metrics


def write_predictions(module: Any, index: torch.Tensor, probs: torch.Tensor) -> None:
    """Write ``predictions.jsonl``: id, predicted relation, its probability and every label's probability."""
    decided = _decided(module, "predict", index, probs)
    if decided is None:
        return
    data, probs, labels, chosen = decided
    [path] = fresh_names(output_dir(module), ["predictions.jsonl"], getattr(module, "overwrite_outputs", False))
    rows = probs.tolist()
    write_jsonl(path, (prediction_record(ident, labels, rows[i], chosen[i], every_label=True)
                       for i, ident in enumerate(data.ids)))
    print(f"predictions: {path}")

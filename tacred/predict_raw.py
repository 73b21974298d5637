"""``tacred predict --ckpt_path X --sentences FILE|-``: relations for raw sentences, annotated with spaCy."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import torch


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tacred predict --sentences",
        description="Predict the relation between the marked subject and object of raw sentences, e.g. "
                    "'<subj>Bill Gates</subj> founded <obj>Microsoft</obj> .' (one per line; see tacred annotate).",
    )
    p.add_argument("--ckpt_path", required=True, help="checkpoint of a trained model (vocabularies included)")
    p.add_argument("--sentences", required=True, help="file of sentences, or - for standard input")
    p.add_argument("--format", choices=("marked", "offsets"), default="marked",
                   help="marked sentences (default) or JSON Lines with character offsets")
    p.add_argument("--output", choices=("table", "jsonl"), default="table", help="readable table or JSON Lines")
    p.add_argument("--spacy-model", default=None, help="spaCy pipeline (default: the installed English model)")
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--threshold", default=None,
                   help="no-relation threshold t (a number or a threshold.json from `tacred threshold tune`); "
                        "off by default")
    return p


def predict_examples(model: torch.nn.Module, examples: Sequence[dict], batch_size: int = 50) -> torch.Tensor:
    """Probabilities (N, L) for TACRED-format dicts, in input order."""
    from tacred.data.batching import EncodedSplit
    from tacred.data.examples import Example

    data = EncodedSplit([Example.from_dict(ex, i) for i, ex in enumerate(examples)], model.vocab, source="input")
    return model.split_probabilities(data, batch_size)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from tacred.checkpoints import CheckpointError
    from tacred.data.annotate import AnnotationError, annotate_marked, annotate_offsets
    from tacred.data.spacy_pipeline import SpacyModelError, load_spacy
    from tacred.errors import read_text
    from tacred.models.module import RelationExtractor
    from tacred.threshold import ThresholdError, apply_threshold, load_threshold

    try:
        source = "<stdin>" if args.sentences == "-" else args.sentences
        lines = read_text(args.sentences).splitlines()
        model = RelationExtractor.from_checkpoint(args.ckpt_path)
        nlp = load_spacy(args.spacy_model)
        threshold = load_threshold(args.threshold) if args.threshold is not None else None
        annotate = annotate_marked if args.format == "marked" else annotate_offsets
        examples = annotate(lines, nlp=nlp, source=source)
    except (AnnotationError, CheckpointError, SpacyModelError, ThresholdError, FileNotFoundError) as err:
        print(f"tacred predict: error: {err}", file=sys.stderr)
        return 2
    if not examples:
        print(f"tacred predict: error: {source} holds no sentence", file=sys.stderr)
        return 2
    for ex in examples:
        ex["relation"] = model.vocab.no_relation  # unknown; the scorer never sees it
    probs = predict_examples(model, examples, args.batch_size)
    decided = apply_threshold(probs, model.vocab.no_relation_id, threshold).tolist()
    labels = model.vocab.labels.itos
    for ex, row, best in zip(examples, probs.tolist(), decided, strict=True):
        subj = " ".join(ex["token"][ex["subj_start"] : ex["subj_end"] + 1])
        obj = " ".join(ex["token"][ex["obj_start"] : ex["obj_end"] + 1])
        if args.output == "jsonl":
            print(json.dumps({"id": ex["id"], "subject": subj, "object": obj, "relation": labels[best],
                              "probability": round(row[best], 6),
                              "probabilities": {lab: round(p, 6) for lab, p in zip(labels, row, strict=True)}}))
        else:
            print(f"{ex['id']}\t{labels[best]}\t{row[best]:.3f}\t{subj} -> {obj}")
    return 0

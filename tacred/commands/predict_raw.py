"""``tacred predict --ckpt_path X --sentences FILE|-``: relations for raw sentences, annotated with spaCy.

The input is read and checked (markers, offsets) before the model and spaCy are loaded, so a bad line is reported at
once. The options of ``tacred predict`` that mean something here are accepted under their usual names
(``--num_threads``, ``--model.no_relation_threshold``, ``--data.batch_size``, ``--data.spacy_model``, ``--run_dir``,
``--model.output_dir``, ``--trainer.accelerator``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tacred.errors import OneLineParser

# the raw-sentence options, shown by `tacred predict --help` too (see TacredCLI._prepare_subcommand_parser)
RAW_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--sentences", {"help": "raw sentences instead of a split: a file, or - for standard input; one marked "
                             "sentence per line, e.g. '<subj>Bill Gates</subj> founded <obj>Microsoft</obj> .'"}),
    ("--format", {"choices": ("marked", "offsets"), "default": "marked",
                  "help": "with --sentences: marked sentences (default) or JSON Lines with character offsets"}),
    ("--output", {"choices": ("table", "jsonl"), "default": "table",
                  "help": "with --sentences: a readable table (default) or JSON Lines with every label's probability"}),
    ("--overwrite", {"action": "store_true",
                     "help": "replace an existing predictions file instead of writing predictions-1.jsonl, ..."}),
)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="tacred predict --sentences",
        description="Predict the relation between the marked subject and object of raw sentences, e.g. "
                    "'<subj>Bill Gates</subj> founded <obj>Microsoft</obj> .' (one per line; see tacred annotate).",
    )
    p.add_argument("--ckpt_path", required=True, help="checkpoint of a trained model (vocabularies included)")
    for name, kwargs in RAW_OPTIONS:
        p.add_argument(name, **({"required": True} if name == "--sentences" else {}), **kwargs)
    p.add_argument("--spacy_model", "--data.spacy_model", dest="spacy_model", default=None,
                   help="spaCy pipeline (default: the installed English model)")
    p.add_argument("--batch_size", "--data.batch_size", "--data.eval_batch_size", dest="batch_size", type=int,
                   default=50)
    p.add_argument("--threshold", "--model.no_relation_threshold", dest="threshold", default=None,
                   help="no-relation threshold t (a number or a threshold.json from `tacred threshold tune`); "
                        "off by default")
    p.add_argument("--num_threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--run_dir", "--model.output_dir", dest="out_dir", default=None,
                   help="also write predictions.jsonl into this folder (never over an existing file without "
                        "--overwrite)")
    p.add_argument("--trainer.accelerator", dest="accelerator", default="cpu", choices=("cpu", "gpu", "cuda", "auto"),
                   help="where the model runs (default cpu)")
    p.add_argument("--seed_everything", type=int, default=None, help="accepted for symmetry; prediction is deterministic")
    return p


def predict_examples(model: Any, examples: Sequence[dict], batch_size: int = 50) -> Any:
    """Probabilities (N, L) for TACRED-format dicts, in input order."""
    from tacred.data.batching import encode_split
    from tacred.data.examples import Example

    data = encode_split([Example.from_dict(ex, i) for i, ex in enumerate(examples)], model.vocab, source="input")
    return model.split_probabilities(data, batch_size)


def _check_lines(lines: list[str], fmt: str, source: str) -> None:
    """Parse every line's markers or offsets without spaCy: errors come before anything slow is loaded."""
    from tacred.data.annotate import AnnotationError, MarkerError, parse_markers, parse_offsets

    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            if fmt == "marked":
                parse_markers(line.rstrip("\r\n"))
            else:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    raise MarkerError(f"invalid JSON ({err.msg} at column {err.colno})") from err
                parse_offsets(record)
        except MarkerError as err:
            raise AnnotationError(source, n, str(err)) from err


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from tacred.data.annotate import AnnotationError
    from tacred.errors import TacredError, read_text

    source = "<stdin>" if args.sentences == "-" else args.sentences
    try:
        if args.batch_size < 1 or (args.num_threads is not None and args.num_threads < 1):
            raise ValueError("--batch_size and --num_threads must be at least 1")
        lines = read_text(args.sentences, "sentences").splitlines()
        _check_lines(lines, args.format, source)
        if not any(line.strip() for line in lines):
            raise ValueError(f"{source} holds no sentence")
        if not Path(args.ckpt_path).is_file():
            raise FileNotFoundError(f"checkpoint not found: {args.ckpt_path}")
    except (AnnotationError, TacredError, OSError, ValueError) as err:
        print(f"tacred predict: error: {err}", file=sys.stderr)
        return 2
    return _predict(args, lines, source)


def _predict(args: argparse.Namespace, lines: list[str], source: str) -> int:
    import torch

    from tacred.checkpoints import CheckpointError
    from tacred.data.annotate import AnnotationError, annotate_marked, annotate_offsets
    from tacred.data.spacy_pipeline import SpacyModelError, load_spacy
    from tacred.io import prediction_record, write_jsonl
    from tacred.models.module import RelationExtractor
    from tacred.threshold import ThresholdError, apply_threshold, load_threshold

    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    device = "cuda" if args.accelerator in ("gpu", "cuda") or (args.accelerator == "auto" and torch.cuda.is_available()) \
        else "cpu"
    try:
        threshold = load_threshold(args.threshold) if args.threshold is not None else None
        model = RelationExtractor.from_checkpoint(args.ckpt_path, map_location=device)
        nlp = load_spacy(args.spacy_model)
        annotate = annotate_marked if args.format == "marked" else annotate_offsets
        examples = annotate(lines, nlp=nlp, source=source)
    except (AnnotationError, CheckpointError, SpacyModelError, ThresholdError, FileNotFoundError) as err:
        print(f"tacred predict: error: {err}", file=sys.stderr)
        return 2
    for ex in examples:
        ex["relation"] = model.vocab.no_relation  # unknown; the scorer never sees it
    probs = predict_examples(model, examples, args.batch_size)
    decided = apply_threshold(probs, model.vocab.no_relation_id, threshold).tolist()
    labels = model.vocab.labels.itos
    records = []
    for ex, row, best in zip(examples, probs.tolist(), decided, strict=True):
        subj = " ".join(ex["token"][ex["subj_start"] : ex["subj_end"] + 1])
        obj = " ".join(ex["token"][ex["obj_start"] : ex["obj_end"] + 1])
        records.append(prediction_record(ex["id"], labels, row, best, context={"subject": subj, "object": obj},
                                         every_label=True))
    for rec in records:
        if args.output == "jsonl":
            print(json.dumps(rec))
        else:
            print(f"{rec['id']}\t{rec['relation']}\t{rec['probability']:.3f}\t{rec['subject']} -> {rec['object']}")
    if args.out_dir:
        from tacred.reports import fresh_names

        [path] = fresh_names(Path(args.out_dir), ["predictions.jsonl"], args.overwrite)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(path, records)
        print(f"predictions: {path}", file=sys.stderr)
    return 0

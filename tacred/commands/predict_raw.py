"""``tacred predict --ckpt_path X --sentences FILE|-``: relations for raw sentences, annotated with spaCy.

The input is read and checked (markers, offsets) before the model and spaCy are loaded, so a bad line is reported at
once; ``--skip_bad_lines`` reports each bad line (with its number) and predicts the others. The sentences go through
the Python API (:func:`tacred.load_model`, ``Predictor.predict``; no Lightning) as marked strings or offsets records.
The options of ``tacred predict`` that mean something here are accepted under their usual names (``--num_threads``,
``--model.no_relation_threshold``, ``--data.batch_size``, ``--data.spacy_model``, ``--run_dir``,
``--model.output_dir``, ``--trainer.accelerator``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.commands.parsing import OneLineParser

if TYPE_CHECKING:
    from tacred.inference.outputs import Prediction
    from tacred.inference.predictor import Predictor

FILE_MODE = """Predicting a TACRED file instead (Lightning; the same checkpoint):
  tacred predict --ckpt_path CKPT --data.predict_file FILE [--run_dir DIR] [--overwrite true]
writes predictions.jsonl (per example: id, relation, probability, probabilities) into the run folder of the
checkpoint (RUN/ for RUN/checkpoints/best.ckpt; --run_dir to choose another) and prints its path; an earlier file is
kept (predictions-1.jsonl, ...) unless --overwrite true. Every Lightning option (trainer, model, data):
  tacred predict --help all"""


def _precision(value: str) -> str | None:
    """``--precision`` as :func:`tacred.devices.check_precision` reads it (Lightning's ``bf16-mixed`` and ``32-true``
    too), an argparse error otherwise."""
    from tacred.devices import DeviceError, check_precision

    try:
        return check_precision(value)
    except DeviceError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def build_parser() -> argparse.ArgumentParser:
    from tacred.devices import DEVICE_HELP, PRECISION_HELP

    p = OneLineParser(
        prog="tacred predict --sentences",
        description="Predict the relation between the marked subject and object of raw sentences, one per line, e.g.\n"
                    "  <subj>Bill Gates</subj> founded <obj>Microsoft</obj> .\n"
                    "(see tacred annotate). Prints one line per sentence: id, relation, probability, subject -> object.\n"
                    "Relations in plain text without markers: tacred extract.",
        epilog=FILE_MODE, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--ckpt_path", required=True,
                   help="checkpoint of a trained model, its run folder (best.ckpt, else last.ckpt), an exported folder or the "
                        "name of a shipped model (`tacred models`)")
    p.add_argument("--sentences", required=True,
                   help="a file of sentences, or - for standard input; one marked sentence per line, e.g. "
                        "'<subj>Bill Gates</subj> founded <obj>Microsoft</obj> .'")
    p.add_argument("--format", choices=("marked", "offsets"), default="marked",
                   help="marked sentences (default) or JSON Lines with character offsets "
                        '{"text": ..., "subj": [start, end], "obj": [start, end]}')
    p.add_argument("--output", choices=("table", "jsonl"), default="table",
                   help="a readable table (default) or JSON Lines with every label's probability")
    p.add_argument("--skip_bad_lines", action="store_true",
                   help="report each line that cannot be read (with its number) and predict the others, instead of "
                        "stopping at the first")
    p.add_argument("--run_dir", "--model.output_dir", dest="out_dir", default=None, metavar="DIR",
                   help="also write predictions.jsonl into this folder (never over an existing file without "
                        "--overwrite) and print its path")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing predictions file instead of writing predictions-1.jsonl, ...")
    p.add_argument("--threshold", "--model.no_relation_threshold", dest="threshold", default=None,
                   help="no-relation threshold t (a number or a threshold.json from `tacred threshold tune`); "
                        "off by default")
    p.add_argument("--device", "--trainer.accelerator", dest="device", default="auto", help=DEVICE_HELP)
    p.add_argument("--precision", "--trainer.precision", dest="precision", default=None, type=_precision,
                   metavar="{32,bf16}", help=PRECISION_HELP)
    p.add_argument("--spacy_model", "--data.spacy_model", dest="spacy_model", default=None,
                   help="spaCy pipeline (default: the installed English model)")
    p.add_argument("--batch_size", "--data.batch_size", "--data.eval_batch_size", dest="batch_size", type=int,
                   default=50)
    p.add_argument("--num_threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--seed_everything", type=int, default=None, help="accepted for symmetry; prediction is deterministic")
    return p


def _check_lines(lines: list[str], fmt: str, source: str) -> list[tuple[int, str]]:
    """Parse every line's markers or offsets without spaCy, so that errors come before anything slow is loaded:
    ``(line number, problem)`` of each bad line."""
    from tacred.datasets.annotate import MarkerError, offsets_line, parse_markers, parse_offsets
    from tacred.inference.inputs import InputError, check_marked

    bad = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            if fmt == "marked":
                check_marked(parse_markers(line.rstrip("\r\n")))
            else:
                check_marked(parse_offsets(offsets_line(line, n))[0])
        except (MarkerError, InputError) as err:
            bad.append((n, str(err)))
    return bad


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from tacred.datasets.annotate import AnnotationError
    from tacred.errors import ConfigError, TacredError, read_text, report

    source = "<stdin>" if args.sentences == "-" else args.sentences
    try:
        if args.batch_size < 1 or (args.num_threads is not None and args.num_threads < 1):
            raise ConfigError("--batch_size and --num_threads must be at least 1")
        lines = read_text(args.sentences, "sentences").splitlines()
        if not any(line.strip() for line in lines):
            raise TacredError(f"{source} holds no sentence")
        bad = _check_lines(lines, args.format, source)
        if bad and not args.skip_bad_lines:
            raise AnnotationError(source, *bad[0])
        from tacred.inference.api import resolve_model

        resolve_model(args.ckpt_path)  # a missing path, or an unknown model name (the error lists the shipped ones)
    except TacredError as err:
        return report("predict", err)
    except (OSError, ValueError) as err:
        return report("predict", TacredError(str(err)))  # printed as str() gives it, as this command always has
    for n, problem in bad:
        print(f"tacred predict: skipped {source}, line {n}: {problem}", file=sys.stderr)
        lines[n - 1] = ""  # blank lines are skipped, and the others keep their numbers
    return _predict(args, lines, source, skipped=len(bad))


def _inputs(lines: list[str], fmt: str, source: str, skip: bool) -> tuple[list[Any], list[int]]:
    """The non-blank lines as inputs of the Python API (:meth:`Predictor.predict`): marked sentences, or offsets
    records, each with the id ``line-N`` unless its record gives one, and their line numbers. An id that repeats an
    earlier line's is an error; with ``skip`` that line is reported and left out (blanked in ``lines``)."""
    from tacred.datasets.annotate import AnnotationError
    from tacred.io import json_line

    inputs, numbers, first = [], [], {}
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        item = {"text": line.rstrip("\r\n")} if fmt == "marked" else json_line(line, n)
        ident = (None if item.get("id") is None else str(item["id"])) or f"line-{n}"
        if ident in first:
            error = AnnotationError(source, n, f"id {ident!r} repeats the id of line {first[ident]}; ids must be unique")
            if not skip:
                raise error
            print(f"tacred predict: skipped {error}", file=sys.stderr)
            lines[n - 1] = ""
            continue
        first[ident] = n
        inputs.append({**item, "id": ident})
        numbers.append(n)
    return inputs, numbers


def _predictions(predictor: Predictor, inputs: list[Any], numbers: list[int], lines: list[str], source: str,
                 skip: bool) -> list[Prediction]:
    """The predictions of ``inputs``; an input that spaCy cannot tokenise as marked is an error naming its line, or
    with ``skip`` reported and left out (blanked in ``lines``) before the others are predicted again."""
    from tacred.datasets.annotate import AnnotationError
    from tacred.inference.inputs import InputError

    while True:
        try:
            return predictor.predict(inputs)  # type: ignore[return-value]  # a list for a list
        except InputError as err:
            if err.item is None:
                raise
            error = AnnotationError(source, numbers[err.item], err.problem)
            if not skip:
                raise error from None
            print(f"tacred predict: skipped {error}", file=sys.stderr)
            lines[numbers[err.item] - 1] = ""
            del inputs[err.item], numbers[err.item]


def _predict(args: argparse.Namespace, lines: list[str], source: str, skipped: int) -> int:
    from tacred.errors import TacredError, report
    from tacred.inference.api import open_model
    from tacred.training.quiet import tacred_log_lines

    given = sum(1 for line in lines if line.strip())
    try:
        with tacred_log_lines():
            if args.num_threads:
                import torch

                torch.set_num_threads(args.num_threads)
            predictor = open_model(args.ckpt_path, device=args.device, threshold=args.threshold,
                                   spacy_model=args.spacy_model, batch_size=args.batch_size, precision=args.precision)
            inputs, numbers = _inputs(lines, args.format, source, args.skip_bad_lines)
            predictions = _predictions(predictor, inputs, numbers, lines, source, args.skip_bad_lines)
    except TacredError as err:  # AnnotationError and SpacyModelError among them
        return report("predict", err)
    except FileNotFoundError as err:
        return report("predict", TacredError(str(err)))  # printed as str() gives it, as this command always has
    skipped += given - sum(1 for line in lines if line.strip())  # left out by _inputs and _predictions
    records = []
    for prediction in predictions:
        record = prediction.to_dict()
        records.append({"id": record["id"], "subject": record["subject"], "object": record["object"],
                        "relation": record["relation"], "probability": round(record["probability"], 6),
                        "probabilities": {k: round(v, 6) for k, v in record["probabilities"].items()}})
    for rec in records:
        if args.output == "jsonl":
            print(json.dumps(rec))
        else:
            print(f"{rec['id']}\t{rec['relation']}\t{rec['probability']:.3f}\t{rec['subject']} -> {rec['object']}")
    if args.out_dir:
        from tacred.io import write_jsonl
        from tacred.training.reports import fresh_names

        [path] = fresh_names(Path(args.out_dir), ["predictions.jsonl"], args.overwrite)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(path, records)
        print(f"predictions: {path}", file=sys.stderr)
    if skipped:
        total = sum(1 for line in lines if line.strip()) + skipped
        print(f"tacred predict: {skipped} of {total} lines skipped, {len(records)} predicted", file=sys.stderr)
    return 0

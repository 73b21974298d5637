"""``tacred export --ckpt_path X --format onnx --out DIR``: a folder to hand on (ONNX, weights, vocabularies, card)."""

from __future__ import annotations

import argparse
import json

from tacred.commands.parsing import OneLineParser

HELP = "Export a trained model: ONNX (checked against PyTorch), weights, vocabularies, config and a model card."


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="tacred export", description=HELP,
        epilog="The folder holds model.onnx (with --format onnx), weights.pt, vocab.json, labels.json, network.json, "
               "config.yaml, README.md (the model card: data, recipe, scores, intended use and limits) and "
               "export.json. The ONNX graph is run with ONNX Runtime on --check_file (default: the run's test split) "
               "and the export fails if any probability differs from PyTorch's by more than --tolerance. A joint "
               "entity-and-relation model's folder holds two graphs instead (model.onnx: spans, relations.onnx: "
               "entity pairs), predictor.json and tokenizer.json; its check compares every span's and relation's "
               "probability on --check_file in SpERT's layout (default: the run's test file) and a few probe "
               "sentences.")
    p.add_argument("--ckpt_path", required=True, help="checkpoint of a trained model, its run folder (best.ckpt, "
                                                      "else last.ckpt) or a shipped model's name (kbp37)")
    p.add_argument("--out", required=True, help="folder to write (must be new or empty unless --overwrite)")
    p.add_argument("--format", choices=("onnx", "torch"), default="onnx",
                   help="onnx (default): model.onnx as well; torch: weights and vocabularies only")
    p.add_argument("--check_file", default=None,
                   help="TACRED JSON (SpERT's layout for a joint model) to compare ONNX Runtime with PyTorch on "
                        "(default: the run's test file if found)")
    p.add_argument("--tolerance", type=float, default=1e-5, help="largest allowed absolute difference (default 1e-5)")
    p.add_argument("--quantize", choices=("int8",), default=None,
                   help="int8: model.onnx with int8 weights (ONNX Runtime's dynamic quantization; about 4x smaller "
                        "and faster on CPUs), checked against PyTorch's labels on --check_file; not for a joint "
                        "model")
    p.add_argument("--min_agreement", type=float, default=0.95,
                   help="with --quantize: fail unless the quantized model predicts PyTorch's label for at least "
                        "this share of the checked examples (default 0.95)")
    p.add_argument("--overwrite", action="store_true", help="write into a non-empty --out folder")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.checkpoints import CheckpointError
    from tacred.data.examples import DataFormatError
    from tacred.datasets.spert_layout import SpertLayoutError
    from tacred.errors import TacredError, report

    try:
        from tacred.inference.export import ExportError, export_folder
    except ImportError as err:  # pragma: no cover - torch.onnx is part of torch
        return report("export", TacredError(str(err)))
    try:
        if args.format == "onnx":
            import onnxruntime  # noqa: F401
    except ImportError:
        return report("export", TacredError("ONNX Runtime is not installed; in a clone of tacred: "
                                            "pip install -e '.[export]'"))
    from tacred.inference.api import resolve_model
    from tacred.inference.shipped import UnknownModelError
    from tacred.training.quiet import tacred_log_lines

    try:
        with tacred_log_lines():
            source = resolve_model(args.ckpt_path)  # a checkpoint, a run folder or a shipped model's name
        summary = export_folder(source, args.out, fmt=args.format, split_file=args.check_file,
                                tolerance=args.tolerance, overwrite=args.overwrite, quantize=args.quantize,
                                min_agreement=args.min_agreement)
    except (CheckpointError, DataFormatError, ExportError, SpertLayoutError, UnknownModelError) as err:
        return report("export", err)
    except FileNotFoundError as err:
        return report("export", TacredError(str(err)))  # printed as str() gives it, as this command always has
    if summary["onnx_max_abs_diff"] is not None and summary.get("kind") == "joint":
        print(f"ONNX Runtime vs PyTorch on {summary['checked_on']} ({summary['examples']} sentences): largest "
              f"absolute difference {summary['span_max_abs_diff']:.2e} (span probabilities), "
              f"{summary['relation_max_abs_diff']:.2e} (relation probabilities); the same entities and relations "
              f"in {summary['same_results']:.2%} of the sentences")
    elif summary["onnx_max_abs_diff"] is not None:
        print(f"ONNX Runtime vs PyTorch on {summary['checked_on']} ({summary['examples']} examples): "
              f"largest absolute difference {summary['onnx_max_abs_diff']:.2e}")
    if summary["quantization"]:
        f1 = ("" if summary["quantized_f1"] is None else
              f"; micro F1 {100 * summary['quantized_f1']:.2f} (PyTorch {100 * summary['torch_f1']:.2f})")
        print(f"{summary['quantization']} model: PyTorch's label for {summary['quantized_agreement']:.2%} of the "
              f"examples{f1}")
    print(f"exported to {summary['folder']}: {', '.join(summary['files'])}")
    keys = ("format", "onnx_max_abs_diff", "quantization", "quantized_agreement", "quantized_f1", "torch_f1")
    print(json.dumps({k: summary[k] for k in keys if k in summary}))
    return 0

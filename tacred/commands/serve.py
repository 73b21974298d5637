"""``tacred serve --ckpt_path X``: the model behind an HTTP endpoint (LitServe), ``POST /predict`` and ``GET /health``."""

from __future__ import annotations

import argparse
import sys

from tacred.errors import OneLineParser

HELP = "Serve a trained model over HTTP (LitServe): POST /predict, GET /health."

EPILOG = """example:
  tacred serve --ckpt_path runs/demo/checkpoints/best.ckpt --port 8000 &
  curl -s localhost:8000/predict -H 'Content-Type: application/json' \\
       -d '{"text": "<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said ."}'

A body is one input or a list of inputs: {"text": MARKED}, {"text", "subj": [s, e], "obj": [s, e]} (characters),
{"token": [...], "h": {"pos": [s, e]}, "t": {"pos": [s, e]}} (OpenNRE, tokens), or a TACRED example. The answer is
{"relation", "probability", "probabilities", "subject", "object", "id"} per input. Bad input: HTTP 400/422 with
{"detail": message}."""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="tacred serve", description=HELP, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ckpt_path", required=True, help="checkpoint of a trained model (vocabularies included)")
    p.add_argument("--host", default="127.0.0.1", choices=("127.0.0.1", "0.0.0.0", "::"),
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface)")
    p.add_argument("--port", type=int, default=8000, help="TCP port, 1024-65535 (default 8000)")
    p.add_argument("--max_batch_size", type=int, default=32, help="requests combined into one forward pass")
    p.add_argument("--batch_timeout", type=float, default=0.005,
                   help="seconds to wait for more requests before running a batch (default 0.005)")
    p.add_argument("--workers", type=int, default=1, help="model processes per device (default 1)")
    p.add_argument("--accelerator", default="cpu", choices=("cpu", "cuda", "mps", "auto"))
    p.add_argument("--num_threads", type=int, default=None, help="torch CPU threads per worker")
    p.add_argument("--threshold", default=None,
                   help="no-relation threshold (a number or a threshold.json from `tacred threshold tune`)")
    p.add_argument("--spacy_model", default=None, help="spaCy pipeline for raw text (default: the installed English one)")
    p.add_argument("--timeout", type=float, default=30, help="seconds a request may wait before HTTP 504")
    p.add_argument("--log_level", default="warning", choices=("debug", "info", "warning", "error"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 1024 <= args.port <= 65535:
        print(f"tacred serve: error: --port must lie in 1024-65535, got {args.port}", file=sys.stderr)
        return 2
    for name in ("max_batch_size", "workers", "num_threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            print(f"tacred serve: error: --{name} must be at least 1, got {value}", file=sys.stderr)
            return 2
    from tacred.checkpoints import CheckpointError, read_checkpoint
    from tacred.threshold import ThresholdError, load_threshold

    try:
        read_checkpoint(args.ckpt_path)  # a clear error now rather than a worker that fails to start
        if args.threshold is not None:
            load_threshold(args.threshold)
    except (CheckpointError, ThresholdError, FileNotFoundError) as err:
        print(f"tacred serve: error: {err}", file=sys.stderr)
        return 2
    try:
        from tacred.serving import build_server
    except ImportError as err:
        print(f"tacred serve: error: LitServe is not installed ({err}); pip install 'tacred[serve]'", file=sys.stderr)
        return 2
    server = build_server(args.ckpt_path, threshold=args.threshold, spacy_model=args.spacy_model,
                          num_threads=args.num_threads, max_batch_size=args.max_batch_size,
                          batch_timeout=args.batch_timeout, workers=args.workers, accelerator=args.accelerator,
                          timeout=args.timeout)
    print(f"tacred serve: {args.ckpt_path} on http://{args.host}:{args.port}/predict (GET /health)", flush=True)
    server.run(host=args.host, port=args.port, generate_client_file=False, log_level=args.log_level,
               num_api_servers=1)
    return 0

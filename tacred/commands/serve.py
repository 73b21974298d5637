"""``tacred serve --ckpt_path X|--model NAME``: the model behind HTTP endpoints (LitServe): ``POST /predict``, ``POST /extract``,
``GET /health``."""

from __future__ import annotations

import argparse
import sys

from tacred.commands.parsing import OneLineParser

HELP = "Serve a trained model over HTTP (LitServe): POST /predict, POST /extract (raw text), GET /health."

EPILOG = """example:
  tacred serve --ckpt_path runs/demo --port 8000 &
  curl -s localhost:8000/predict -H 'Content-Type: application/json' \\
       -d '{"text": "<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said ."}'

A body is one input or a list of inputs: {"text": MARKED}, {"text", "subj": [s, e], "obj": [s, e]} (characters),
{"token": [...], "h": {"pos": [s, e]}, "t": {"pos": [s, e]}} (OpenNRE, tokens), or a TACRED example. The answer is
{"relation", "probability", "probabilities", "subject", "object", "id"} per input. POST /extract takes raw text
(a string or {"text", "id"}, or a list of them) and answers {"id", "sentences", "pairs", "mentions"} per text,
as tacred extract finds them. Bad input, each with
{"detail": message}: 413 (body over --max_body_bytes), 400 (not JSON), 422 (one input the model cannot read, over
--max_tokens, or a list over --max_batch_inputs); in a list, a bad input gets its own entry {"index", "error"}.
SIGTERM or Ctrl+C stops the server and every process it started."""


def build_parser() -> argparse.ArgumentParser:
    from tacred.devices import DEVICE_HELP, PRECISION_HELP, PRECISIONS
    from tacred.inference.input_rules import MAX_TOKENS

    p = OneLineParser(prog="tacred serve", description=HELP, epilog=EPILOG,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ckpt_path", "--model", dest="ckpt_path", required=True,
                   help="checkpoint of a trained model, its run folder (best.ckpt, else last.ckpt), an exported folder "
                        "or the name of a model shipped with tacred (kbp37; `tacred models` lists them)")
    p.add_argument("--host", default="127.0.0.1", choices=("127.0.0.1", "0.0.0.0", "::"),
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface)")
    p.add_argument("--port", type=int, default=8000, help="TCP port, 1024-65535 (default 8000)")
    p.add_argument("--device", "--accelerator", dest="device", default="auto", help=DEVICE_HELP)
    p.add_argument("--precision", default=None, choices=PRECISIONS, help=PRECISION_HELP)
    p.add_argument("--max_batch_size", type=int, default=32, help="requests combined into one forward pass")
    p.add_argument("--batch_timeout", type=float, default=0.005,
                   help="seconds to wait for more requests before running a batch (default 0.005)")
    p.add_argument("--max_body_bytes", type=int, default=2**20, help="largest request body (default 1 MiB): else 413")
    p.add_argument("--max_tokens", type=int, default=MAX_TOKENS,
                   help=f"most tokens per input (default {MAX_TOKENS}; TACRED's and SemEval's longest sentences have under 100; "
                        "memory grows with the square of the length): else 422")
    p.add_argument("--max_batch_inputs", type=int, default=64, help="most inputs in one request (default 64): else 422")
    p.add_argument("--workers", type=int, default=1, help="model processes per device (default 1)")
    p.add_argument("--num_threads", type=int, default=None, help="torch CPU threads per worker")
    p.add_argument("--threshold", default=None,
                   help="no-relation threshold (a number or a threshold.json from `tacred threshold tune`)")
    p.add_argument("--spacy_model", default=None, help="spaCy pipeline for raw text (default: the installed English one)")
    p.add_argument("--no_signatures", action="store_true",
                   help="/extract keeps pairs and relations that the model's relation signatures rule out")
    p.add_argument("--timeout", type=float, default=30, help="seconds a request may wait before HTTP 504")
    p.add_argument("--log_level", default="warning", choices=("debug", "info", "warning", "error"))
    return p


def port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (None when it can), checked as uvicorn binds (SO_REUSEADDR)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as err:
            return err.strerror or str(err)
    return None


def _check(args: argparse.Namespace) -> str:
    """Every option and file checked before a process starts; the model path to serve."""
    from tacred.checkpoints import read_checkpoint
    from tacred.devices import model_device, model_precision
    from tacred.errors import ConfigError
    from tacred.evaluation.decision import describe_threshold, load_threshold  # numpy only: torch loads later
    from tacred.inference.api import resolve_model
    from tacred.inference.shipped import shipped_info

    if not 1024 <= args.port <= 65535:
        raise ConfigError(f"--port must lie in 1024-65535, got {args.port}")
    for name in ("max_batch_size", "workers", "num_threads", "max_body_bytes", "max_tokens", "max_batch_inputs"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ConfigError(f"--{name} must be at least 1, got {value}")
    problem = port_in_use(args.host, args.port)
    if problem:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {problem} (another server?); choose another "
                          "--port")
    source = resolve_model(args.ckpt_path)  # a mistyped model before anything heavy loads
    from tacred.devices import check_device_name
    from tacred.text.spacy_pipeline import check_spacy_name

    check_device_name(args.device)
    check_spacy_name(args.spacy_model)
    if args.threshold is not None:
        load_threshold(args.threshold)
    # the rule load_model follows: ONNX Runtime's view of CUDA for an exported folder, torch's for a checkpoint
    args.device = model_device(args.device, onnx=source.kind == "export")[0]
    model_precision(args.precision, args.device, onnx=source.kind == "export", source=source, warn=False)
    if source.kind == "checkpoint":
        read_checkpoint(source.path)  # a clear error now rather than a worker that fails to start
    elif source.kind == "shipped":
        shipped_info(str(source))
    model = str(source)
    if args.threshold is None:  # a tuned threshold.json beside the model, as load_model takes it
        args.threshold = source.tuned_threshold
        if args.threshold is not None:
            print(f"tacred serve: no-relation threshold {describe_threshold(load_threshold(args.threshold))} from {args.threshold} "
                  "(--threshold 0: the plain argmax)", file=sys.stderr)
    return model


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.errors import TacredError, report
    from tacred.training.quiet import tacred_log_lines

    try:
        with tacred_log_lines():
            model = _check(args)
    except TacredError as err:
        return report("serve", err)
    except FileNotFoundError as err:
        return report("serve", TacredError(str(err)))  # printed as str() gives it, as this command always has
    try:
        from tacred.serving.server import build_server
    except ImportError as err:
        return report("serve", TacredError(f"LitServe is not installed ({err}); in a clone of tacred: "
                                           "pip install -e '.[serve]'"))
    server = build_server(model, threshold=args.threshold, spacy_model=args.spacy_model, num_threads=args.num_threads,
                          max_batch_size=args.max_batch_size, batch_timeout=args.batch_timeout, workers=args.workers,
                          device=args.device, timeout=args.timeout, max_body_bytes=args.max_body_bytes,
                          max_tokens=args.max_tokens, max_batch_inputs=args.max_batch_inputs,
                          signatures=not args.no_signatures, precision=args.precision)
    server.on_ready = lambda: print(f"tacred serve: {model} on {args.device}, listening on "
                                    f"http://{args.host}:{args.port}/predict and /extract (GET /health); stop with Ctrl+C or "
                                    "SIGTERM", flush=True)
    from tacred.serving.lifecycle import run_until_stopped

    return run_until_stopped(server, host=args.host, port=args.port, log_level=args.log_level)

"""``tacred extract FILE|- --ckpt_path X``: relations in plain text, as JSON Lines (see :mod:`tacred.inference.extract`)."""

from __future__ import annotations

import argparse
import json
import sys

from tacred.commands.parsing import OneLineParser

HELP = "Find relations in plain text: spaCy's entities, every candidate pair predicted, JSON Lines out."

EPILOG = """Each non-blank line of the input is one text (it may hold several sentences). For every relation found:
  {"id": "line-N", "relation": ..., "probability": ...,
   "subject": {"text", "start", "end", "type"}, "object": {...}}
with character offsets into the line (end-exclusive). Candidates: for a TACRED model (per:/org: relations) subjects
are PERSON and ORGANIZATION entities and objects entities of the types the model knows; for any other model (e.g.
SemEval) every ordered pair of nominals (named entities and head nouns). Pairs stay within a sentence; at most
--max_pairs per line, the closest together first (a line with more says so on standard error). A pair is reported
when the model decides a relation for it (the no-relation rule with --threshold)."""


def build_parser() -> argparse.ArgumentParser:
    from tacred.devices import DEVICE_HELP

    p = OneLineParser(prog="tacred extract", description=HELP, epilog=EPILOG,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="a text file (one text per line), or - for standard input")
    p.add_argument("--ckpt_path", required=True,
                   help="checkpoint of a trained model, its run folder (best.ckpt, else last.ckpt) or an exported folder")
    p.add_argument("--max_pairs", type=int, default=100, help="candidate pairs predicted per line (default 100)")
    p.add_argument("--threshold", default=None,
                   help="no-relation threshold (a number or a threshold.json from `tacred threshold tune`)")
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--spacy_model", default=None, help="spaCy pipeline (default: the installed English model)")
    p.add_argument("--batch_size", type=int, default=50, help="pairs per forward pass (default 50)")
    p.add_argument("--max_tokens", type=int, default=512, help="longer sentences are skipped (default 512)")
    p.add_argument("--num_threads", type=int, default=None, help="torch CPU threads")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.errors import ConfigError, TacredError, read_text

    source = "<stdin>" if args.input == "-" else args.input
    try:
        for name in ("max_pairs", "batch_size", "max_tokens", "num_threads"):
            value = getattr(args, name)
            if value is not None and value < 1:
                raise ConfigError(f"--{name} must be at least 1, got {value}")
        lines = read_text(args.input, "text").splitlines()
        texts = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
        if not texts:
            raise ConfigError(f"{source} holds no text")
    except (TacredError, OSError) as err:
        from tacred.errors import one_line

        print(f"tacred extract: error: {one_line(err)}", file=sys.stderr)
        return 2
    return _extract(args, texts, source)


def _extract(args: argparse.Namespace, texts: list[tuple[int, str]], source: str) -> int:
    from tacred.data.spacy_pipeline import SpacyModelError
    from tacred.errors import TacredError
    from tacred.inference.api import load_model
    from tacred.training.quiet import tacred_log_lines

    with tacred_log_lines():
        try:
            if args.num_threads:
                import torch

                torch.set_num_threads(args.num_threads)
            predictor = load_model(args.ckpt_path, device=args.device, threshold=args.threshold,
                                   spacy_model=args.spacy_model, batch_size=args.batch_size, max_tokens=args.max_tokens)
            predictor.nlp  # noqa: B018 - a missing spaCy model is an error before any text is read
        except (SpacyModelError, TacredError, FileNotFoundError) as err:
            print(f"tacred extract: error: {err}", file=sys.stderr)
            return 2
        from tacred.inference.extract import extract_relations

        found = extract_relations(predictor, [text for _, text in texts], args.max_pairs,
                                  names=[f"{source}, line {n}" for n, _ in texts])
    count = 0
    for (n, _), relations in zip(texts, found, strict=True):
        for relation in relations:
            print(json.dumps({"id": f"line-{n}", **relation.to_dict()}, ensure_ascii=False))
            count += 1
    print(f"tacred extract: {count} relation(s) in {len(texts)} line(s) of {source}", file=sys.stderr)
    return 0

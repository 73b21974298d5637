"""``tacred annotate``: raw sentences with marked subject/object (or character offsets) → TACRED JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tacred.commands.parsing import OneLineParser
from tacred.errors import read_text, report

HELP = "Turn raw sentences with marked subject/object into TACRED JSON with spaCy."

EPILOG = """\
marked (default): one sentence per line, e.g.
  <subj>Bill Gates</subj> founded <obj>Microsoft</obj> .
  <subj:PERSON>Bill Gates</subj> founded <obj:ORGANIZATION>Microsoft</obj> .
  <e1>...</e1> and <e2>...</e2> are synonyms of <subj>/<obj>.
offsets: JSON Lines {"text": ..., "subj": [start, end], "obj": [start, end]} (end-exclusive character
  offsets; optional "id", "subj_type", "obj_type", "relation").
Blank lines are skipped; ids default to line-<n>; the relation is no_relation unless given; a type not
given is the span's spaCy NER (mapped to TACRED's set) when it is one entity, else NOMINAL."""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="tacred annotate", description=HELP, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", nargs="?", default="-", metavar="INPUT|-", help="input file (default: stdin)")
    parser.add_argument("--format", choices=("marked", "offsets"), default="marked",
                        help="input format (default: marked)")
    parser.add_argument("--output", "-o", default=None, metavar="FILE", help="output file (default: stdout)")
    parser.add_argument("--spacy_model", default=None, metavar="NAME",
                        help="spaCy pipeline (default: the first installed en_core_web_* model)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.datasets.annotate import AnnotationError, annotate_marked, annotate_offsets
    from tacred.text.spacy_pipeline import SpacyModelError, load_spacy

    try:
        source = "<stdin>" if args.input == "-" else args.input
        lines = read_text(args.input).splitlines()
        nlp = load_spacy(args.spacy_model)
        annotate = annotate_marked if args.format == "marked" else annotate_offsets
        examples = annotate(lines, nlp=nlp, source=source)
        # A JSON list with one example per line: valid TACRED JSON that is still easy to read and diff.
        text = "[\n" + ",\n".join(json.dumps(ex, ensure_ascii=False) for ex in examples) + "\n]\n"
        if args.output is None:
            sys.stdout.write(text)
        else:
            Path(args.output).write_text(text, encoding="utf-8")
    except (AnnotationError, SpacyModelError, OSError, UnicodeDecodeError) as err:
        return report("annotate", err)
    if args.output is not None:
        print(f"wrote {len(examples)} examples to {args.output}", file=sys.stderr)
    return 0

"""``tacred score GOLD PRED``: the official TACRED scorer on label files, optionally with the
SemEval-2010 Task 8 official macro-F1.
"""

from __future__ import annotations

import argparse
import json
import sys

from tacred.commands.parsing import OneLineParser
from tacred.constants import NO_RELATION
from tacred.data.labels import read_label_file
from tacred.errors import report
from tacred.evaluation.scoring import (
    check_predicted_labels,
    format_report,
    format_semeval_report,
    read_aligned,
    score,
    semeval_macro_f1,
)

HELP = "Score predictions with the official TACRED scorer (micro P/R/F1, no_relation ignored)."


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="tacred score", description=HELP,
        epilog="GOLD and PRED may each be a TACRED JSON file (list of examples with 'relation' and 'id'), "
               "a JSON Lines file ({\"id\": ..., \"relation\": ...} per line, as written by predict) or a "
               "text file with one label per line. When both have ids they are aligned by id, "
               "otherwise by position.")
    parser.add_argument("gold", metavar="GOLD", help="gold labels")
    parser.add_argument("pred", metavar="PRED", help="predicted labels")
    parser.add_argument("--no_relation", default=NO_RELATION, metavar="LABEL",
                        help=f"the label ignored by the scorer (default: {NO_RELATION}; 'Other' for raw SemEval)")
    parser.add_argument("--semeval", action="store_true",
                        help="also print SemEval-2010 Task 8's official macro-F1 (directed labels, Other excluded)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    parser.add_argument("--labels", metavar="FILE", default=None,
                        help="JSON list of the allowed labels (default: TACRED's, Re-TACRED's or SemEval's when the "
                             "gold labels fit one of them, else the gold labels); other predicted labels are errors")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        gold, pred = read_aligned(args.gold, args.pred)
        labels = read_label_file(args.labels) if args.labels else None
        check_predicted_labels(gold, pred, args.pred, no_relation=args.no_relation, labels=labels)
        result = score(gold, pred, no_relation=args.no_relation)
        semeval = semeval_macro_f1(gold, pred, other=args.no_relation) if args.semeval else None
    except (OSError, ValueError) as err:
        return report("score", err)
    if args.no_relation not in gold:
        print(f"tacred score: warning: no gold label is {args.no_relation!r}; every label counts as a "
              f"relation (set --no_relation?)", file=sys.stderr)
    if args.json:
        out = {"num_examples": len(gold), "no_relation": args.no_relation, **result.to_dict()}
        if semeval is not None:
            out["semeval"] = semeval.to_dict()
        print(json.dumps(out, indent=2))
        return 0
    print(format_report(result))
    if semeval is not None:
        print()
        print(format_semeval_report(semeval))
    return 0

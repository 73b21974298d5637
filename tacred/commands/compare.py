"""``tacred compare SPEC``: the five-seed results of this application's recipes beside published figures, written
from the stored runs (``summary.json`` and ``comparison.md``), each recipe against its target."""

from __future__ import annotations

import argparse

from tacred.commands.parsing import OneLineParser
from tacred.errors import report
from tacred.experiments import comparison, end_to_end

HELP = "Tabulate stored five-seed results beside published figures (summary.json, comparison.md)."
EPILOG = """\
SPEC is a YAML file: `results` (a folder written by `tacred ablate`), `seeds` (how many make a row complete),
`models` (key, name, inputs, and a `variant` folder or `candidates`, of which the highest mean dev F1 over seeds is
taken; optional `target`: macro_f1, max_std, vote_macro_f1) and `published` (name, inputs, macro_f1, source).
Nothing is trained: the same stored runs always give the same files. A spec with an `end_to_end` section is an
end-to-end table (`tacred end-to-end --help`): end_to_end_summary.json and end_to_end.md from its stored records, in
its `out` or --out, and none when no row has a record.

example: tacred compare docs/results/semeval_glove/comparison.yaml --readme README.md
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="tacred compare", description=HELP, epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spec", metavar="SPEC", help="the comparison's YAML spec")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="where to write (default: the spec's folder; an end-to-end spec's own 'out')")
    parser.add_argument("--readme", default=None, metavar="FILE",
                        help="also put the table into FILE between its '<!-- tacred compare: start -->' and "
                             "'<!-- tacred compare: end -->' lines")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        kind = end_to_end if end_to_end.is_end_to_end(args.spec) else comparison
        paths = kind.compare(args.spec, args.out, args.readme)
    except (OSError, ValueError) as err:
        return report("compare", err)
    print(paths[1].read_text(), end="")
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0

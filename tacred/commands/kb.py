"""``tacred kb MENTIONS... --db FILE``: mention files into a DuckDB knowledge base (see :mod:`tacred.extraction.knowledge_base`)."""

from __future__ import annotations

import argparse
import json
import sys

from tacred.commands.parsing import OneLineParser

HELP = "Load extracted mentions into a DuckDB knowledge base (mentions and triples) and query it with SQL."

EPILOG = """examples:
  tacred kb extracted/ --db kb.duckdb        # every *.jsonl and *.parquet shard of the folder
  tacred kb --db kb.duckdb --query "SELECT subject, relation, object, mentions FROM triples LIMIT 10"

Tables: mentions (one row per mention: doc_id, sentence, sentence_text, subject, subject_start, subject_end,
subject_type, the same for object, relation, probability, evidence, subject_key, object_key, source, mention_id) and
triples (subject, subject_type, relation, object, object_type, mentions, documents, best_probability,
mean_probability, best_mention_id, doc_ids, mention_ids, subject_key, object_key). Loading is idempotent: a mention
is keyed by its document, sentence, both spans and relation, and loading it again replaces it. Keys are surface forms
normalised by the macro surface_key(text): Unicode NFC, lower case, white space collapsed to one space, trimmed.
--query prints one JSON object per row."""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="tacred kb", description=HELP, epilog=EPILOG,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mentions", nargs="*", help="mention files (.jsonl, .parquet) or folders of them")
    p.add_argument("--db", required=True, help="the DuckDB database file (created when missing)")
    p.add_argument("--query", default=None, help="SQL to run after loading (read-only); rows as JSON Lines")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.errors import TacredError, report

    if not args.mentions and args.query is None:
        return report("kb", TacredError("nothing to do: give mention files or folders to load, or --query (see "
                                        "tacred kb --help)"))
    try:
        import duckdb
    except ImportError as err:
        return report("kb", TacredError(f"DuckDB is not installed ({err}); pip install 'tacred[kb]'"))
    from tacred.extraction.knowledge_base import load_mentions, query

    try:
        if args.mentions:
            summary = load_mentions(args.db, args.mentions)
            print(f"tacred kb: {summary.line(args.db)}", file=sys.stderr)
        if args.query is not None:
            columns, rows = query(args.db, args.query)
            for row in rows:
                print(json.dumps(dict(zip(columns, row, strict=True)), ensure_ascii=False, default=str))
    except (TacredError, OSError) as err:
        return report("kb", err)
    except duckdb.Error as err:  # a bad --query, or a database DuckDB cannot open: the user's to fix
        return report("kb", TacredError(str(err)))
    return 0

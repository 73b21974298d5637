"""``tacred score-extraction GOLD [PRED ...]``: relations that ``tacred extract`` found in raw text, scored strictly
against CoNLL04 gold sentences (SpERT's layout); optionally the NER of stock spaCy or of a file of entities."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tacred.commands.parsing import OneLineParser
from tacred.errors import TacredError, report

HELP = "Score relations extracted from raw text against CoNLL04 gold sentences (strict, as SpERT)."


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="tacred score-extraction", description=HELP,
        epilog="GOLD: a CoNLL04 file in SpERT's layout (e.g. ../shared/data/conll04/conll04_test.json). PRED: what "
               "tacred extract wrote (JSON Lines or Parquet files, or its --output folder) from "
               "documents/<GOLD's stem>.jsonl of `tacred convert conll04` (ids <stem>-<index>, tokens joined by "
               "spaces). Strict: both argument spans, both types (extract's types mapped: PERSON -> Peop, "
               "ORGANIZATION -> Org, LOCATION -> Loc, any other -> Other; spans widened to whole gold tokens) and the relation right, head and tail in "
               "order; boundaries: types ignored; macro: mean of the relations' P, R and F1. --entities FILE: JSON "
               "Lines {\"doc_id\", \"entities\": [{\"start\", \"end\", \"type\"}]} (character offsets; CoNLL04, "
               "spaCy or extract types; spaCy's CARDINAL and ORDINAL are not entities).")
    parser.add_argument("gold", metavar="GOLD", help="CoNLL04 sentences (SpERT's JSON layout)")
    parser.add_argument("pred", metavar="PRED", nargs="*", help="mention files or folders written by tacred extract")
    ner = parser.add_mutually_exclusive_group()
    ner.add_argument("--spacy_ner", metavar="MODEL", default=None,
                        help="also score the entities this spaCy pipeline (a name, or a folder such as a NER trained "
                             "by tacred ner train: RUN/ner/model-best) finds in the gold sentences (spaCy's labels "
                             "mapped to CoNLL04's types; a trained NER's CoNLL04 types kept)")
    ner.add_argument("--entities", metavar="FILE", default=None,
                     help="also score these entities (NER; instead of --spacy_ner)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.pred and not args.spacy_ner and not args.entities:
        return report("score-extraction", TacredError("nothing to score: give PRED, --spacy_ner or --entities"))
    from tacred.datasets.conll04 import CoNLL04Error, read_conll04, spacy_entities
    from tacred.evaluation.end_to_end import (
        ExtractionScoreError,
        entity_file,
        format_scores,
        gold_documents,
        predicted_relations,
        score_entities,
        score_relations,
    )
    from tacred.extraction.mention_files import MentionFileError, mention_rows
    from tacred.text.spacy_pipeline import SpacyModelError, load_spacy

    result: dict[str, Any] = {"gold": args.gold}
    try:
        sentences = read_conll04(args.gold)
        stem = Path(args.gold).stem
        gold = gold_documents(sentences, stem)
        if args.pred:
            pred, repeated = predicted_relations(mention_rows(args.pred), gold)
            result.update(pred=args.pred, relations=score_relations(gold, pred), repeated=repeated)
        if args.spacy_ner or args.entities:
            if args.entities:
                entities, source = entity_file(args.entities, gold), args.entities
            else:
                nlp = load_spacy(args.spacy_ner)
                entities, source = spacy_entities(sentences, stem, nlp), f"spaCy {args.spacy_ner}"
            result.update(ner_source=source, entities=score_entities(gold, entities))
    except (CoNLL04Error, ExtractionScoreError, MentionFileError, SpacyModelError, OSError, ValueError) as err:
        return report("score-extraction", err)
    print(json.dumps(result, indent=1) if args.json else format_scores(result))
    return 0

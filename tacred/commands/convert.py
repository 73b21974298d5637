"""``tacred convert``: SemEval-2010 Task 8, KBP37 or CoNLL04 release files → TACRED JSON (spaCy), or the synthetic demo
corpus."""

from __future__ import annotations

import argparse
import sys

from tacred.commands.parsing import OneLineParser
from tacred.errors import ConfigError, TacredError, report

HELP = "Convert public data (SemEval-2010 Task 8, KBP37, CoNLL04) or generate the demo corpus in TACRED format."


def build_parser() -> argparse.ArgumentParser:
    from tacred.datasets.conll04 import MAX_ENTITIES, MAX_PAIRS

    parser = OneLineParser(prog="tacred convert", description=HELP)
    sub = parser.add_subparsers(dest="source", required=True, metavar="{semeval2010,kbp37,conll04,synthetic}")
    sem = sub.add_parser(
        "semeval2010", help="SemEval-2010 Task 8 (TRAIN_FILE.TXT, TEST_FILE_FULL.TXT) tokenised by spaCy",
        description="Writes OUT/train.json, dev.json (a seeded sample of the training file), test.json, "
                    "labels.json (19 labels), conversion.json and README.",
    )
    sem.add_argument("src", metavar="SRC", help="folder holding TRAIN_FILE.TXT and TEST_FILE_FULL.TXT")
    sem.add_argument("out", metavar="OUT", help="output folder")
    sem.add_argument("--dev_size", type=int, default=1500, help="training sentences moved to dev (default: 1500)")
    sem.add_argument("--seed", type=int, default=0, help="seed of the dev sample (default: 0)")
    sem.add_argument("--spacy_model", default=None, metavar="NAME",
                     help="spaCy pipeline (default: the first installed en_core_web_* model)")
    sem.add_argument("--batch_size", type=int, default=256, help="sentences per nlp.pipe batch (default: 256)")
    kbp = sub.add_parser(
        "kbp37", help="KBP37 (train.txt, dev.txt, test.txt): TACRED's KBP slot relations, tagged by spaCy",
        description="Writes OUT/train.json, dev.json, test.json (the release's own splits and tokens), labels.json "
                    "(37 labels), conversion.json (with every sentence that cannot be converted) and README.",
    )
    kbp.add_argument("src", metavar="SRC", help="folder holding train.txt, dev.txt and test.txt")
    kbp.add_argument("out", metavar="OUT", help="output folder")
    kbp.add_argument("--spacy_model", default=None, metavar="NAME",
                     help="spaCy pipeline (default: the first installed en_core_web_* model)")
    kbp.add_argument("--batch_size", type=int, default=256, help="sentences per nlp.pipe batch (default: 256)")
    con = sub.add_parser(
        "conll04", help="CoNLL04 in SpERT's layout (conll04_{train,dev,test}.json): every ordered entity pair",
        description="Writes OUT/train.json, dev.json, test.json (every ordered pair of distinct entities of a "
                    "sentence: its relation or no_relation; Peop/Org/Loc/Other typed PERSON/ORGANIZATION/LOCATION/"
                    "MISC), labels.json (6 labels), documents/conll04_<split>.jsonl (the sentences as tacred "
                    "extract input, for tacred score-extraction), conversion.json and README.",
    )
    con.add_argument("src", metavar="SRC", help="folder holding conll04_train.json, conll04_dev.json, conll04_test.json")
    con.add_argument("out", metavar="OUT", help="output folder")
    con.add_argument("--spacy_model", default=None, metavar="NAME",
                     help="spaCy pipeline (default: the first installed en_core_web_* model)")
    con.add_argument("--batch_size", type=int, default=256, help="sentences per nlp.pipe batch (default: 256)")
    con.add_argument("--max_entities", type=int, default=MAX_ENTITIES,
                     help=f"a sentence with more entities is refused: its ordered pairs grow as the square (default: "
                          f"{MAX_ENTITIES})")
    con.add_argument("--max_pairs", type=int, default=MAX_PAIRS,
                     help=f"a release that converts to more examples is refused (default: {MAX_PAIRS:,})")
    for release in (sem, kbp, con):
        release.add_argument("--overwrite", action="store_true",
                             help="replace the converted release OUT already holds (default: refuse such an OUT)")
    syn = sub.add_parser("synthetic", help="the generated demo corpus (no external data)")
    syn.add_argument("out", metavar="OUT", help="output folder")
    syn.add_argument("--seed", type=int, default=13, help="generator seed (default: 13)")
    syn.add_argument("--n_train", type=int, default=3000, help="training examples (default: 3000)")
    syn.add_argument("--n_dev", type=int, default=600, help="dev examples (default: 600)")
    syn.add_argument("--n_test", type=int, default=600, help="test examples (default: 600)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.source == "synthetic":
        from tacred.datasets.synthetic import write_corpus

        try:
            paths = write_corpus(args.out, seed=args.seed, n_train=args.n_train, n_dev=args.n_dev,
                                 n_test=args.n_test)
        except (OSError, ValueError) as err:
            return report("convert", err)
        for name, path in paths.items():
            print(f"{name}: {path}")
        return 0

    if args.batch_size < 1:
        return report("convert", ConfigError(f"--batch_size must be at least 1, got {args.batch_size}"))
    from tacred.datasets.conversion import check_output_folder
    from tacred.io import left_as_found

    try:
        for flag in ("max_entities", "max_pairs"):
            if getattr(args, flag, 1) < 1:
                raise ConfigError(f"--{flag} must be at least 1, got {getattr(args, flag)}")
        check_output_folder(args.out, args.overwrite)
    except TacredError as err:
        return report("convert", err)
    convert = {"kbp37": _kbp37, "conll04": _conll04, "semeval2010": _semeval}[args.source]
    try:
        with left_as_found(args.out):  # a conversion that fails leaves OUT as it found it
            return convert(args)
    except (TacredError, OSError) as err:
        return report("convert", err)


def _semeval(args: argparse.Namespace) -> int:
    from tacred.datasets.semeval import write_release

    # the release is checked whole before spaCy loads
    info = write_release(args.src, args.out, dev_size=args.dev_size, seed=args.seed, nlp=args.spacy_model,
                         batch_size=args.batch_size)
    sizes = info["sizes"]
    print(f"SemEval-2010 Task 8 -> {args.out} with spaCy {info['spacy_model']} in {info['seconds']:.1f} s")
    for name in ("train", "dev", "test"):
        counts = info["label_counts"][name]
        print(f"{name:5s} {sizes[name]:6d} examples, {counts.get('no_relation', 0)} no_relation")
    print(f"labels {info['labels']} (labels.json)")
    return 0


def _kbp37(args: argparse.Namespace) -> int:
    from tacred.datasets.kbp37 import write_release

    # the release is checked whole before spaCy loads
    info = write_release(args.src, args.out, nlp=args.spacy_model, batch_size=args.batch_size)
    print(f"KBP37 -> {args.out} with spaCy {info['spacy_model']} in {info['seconds']:.1f} s")
    for name in ("train", "dev", "test"):
        counts, lost = info["label_counts"][name], info["unconverted"][name]
        print(f"{name:5s} {info['sizes'][name]:6d} examples, {counts.get('no_relation', 0)} no_relation; "
              f"{len(lost)} of {info['sentences'][name]} sentences not convertible (conversion.json)")
        for row in lost:
            print(f"  {row['file']}, line {row['line']}, id {row['id']}: {row['problem']}", file=sys.stderr)
    print(f"labels {info['labels']} (labels.json)")
    return 0


def _conll04(args: argparse.Namespace) -> int:
    from tacred.datasets.conll04 import write_release

    # the release is checked whole before spaCy loads
    info = write_release(args.src, args.out, nlp=args.spacy_model, batch_size=args.batch_size,
                         max_entities=args.max_entities, max_pairs=args.max_pairs)
    print(f"CoNLL04 -> {args.out} with spaCy {info['spacy_model']} in {info['seconds']:.1f} s")
    for name in ("train", "dev", "test"):
        size, positives = info["sizes"][name], info["positives"][name]
        print(f"{name:5s} {size:6d} examples ({positives} relations, {size - positives} no_relation) from "
              f"{info['sentences'][name]} sentences ({info['sentences_without_pairs'][name]} with fewer than two "
              "entities)")
    print(f"labels {info['labels']} (labels.json); documents for tacred extract in {args.out}/documents/")
    return 0

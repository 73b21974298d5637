"""``tacred extract SOURCE... --ckpt_path X|--model NAME [--output DIR]``: relations in documents, as JSON Lines on standard
output or resumable shards in a folder (see :mod:`tacred.extraction`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tacred.commands.parsing import OneLineParser

HELP = "Find relations in documents (text, JSON Lines, Parquet, stdin): mentions out as JSON Lines or shards."

EPILOG = """Sources: text files (one document per file; --lines: one per non-blank line, id FILE:LINE), folders of
them (sorted, recursive), JSON Lines (*.jsonl: {"id": ..., "text": ...}), Parquet (*.parquet: --text_column and
--id_column) or - for standard input (one document per line, or JSON Lines with --input_format jsonl).
Each relation found is one record:
  {"doc_id", "sentence", "sentence_text", "subject": {"text", "start", "end", "type"}, "object": {...},
   "relation", "probability", "evidence"}
with character offsets into the document (end-exclusive). Candidates: for a TACRED model (per:/org: relations)
subjects are PERSON and ORGANIZATION entities and objects entities of the types the model knows; for any other
model every pair of nominals. Labels with a direction (R(e1,e2)/R(e2,e1)) are asked in both orders and reported
once as R(subject, object) (evidence: both orders, averaged). Relation signatures (TAC KBP's slot schema for
per:/org: relations, else type pairs learned in training with support) drop pairs and relations that the
arguments' types rule out (--no_signatures keeps them). Bad documents (undecodable, binary,
longer than --max_chars) are skipped and reported. With --output DIR the run is resumable: run the same command
again after an interruption; DIR gets parts/, done/, bad.jsonl and summary.json. --engine ray runs one Ray Data
pipeline (a local Ray, or the cluster at --address; pip install 'tacred[ray]'): Ray reads the files, a pool of
actors (each loading the model and spaCy once) extracts them block by block, and Ray writes each block's mentions
into --output DIR (required; sources and DIR on storage every node sees); the same mentions as a local run, shards
named per input file and block (parts/part-FILE-BLOCK.*), resumed by the same command with --engine ray."""


def build_parser() -> argparse.ArgumentParser:
    from tacred.devices import DEVICE_HELP, PRECISION_HELP, PRECISIONS
    from tacred.extraction.runner import CHUNK_SIZE
    from tacred.inference.input_rules import MAX_CHARACTERS, MAX_PAIRS, MAX_TOKENS

    p = OneLineParser(prog="tacred extract", description=HELP, epilog=EPILOG,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sources", nargs="+", help="files, folders or - for standard input")
    p.add_argument("--ckpt_path", "--model", dest="ckpt_path", required=True,
                   help="checkpoint of a trained model, its run folder (best.ckpt, else last.ckpt), an exported folder "
                        "or the name of a model shipped with tacred (kbp37; `tacred models` lists them)")
    p.add_argument("--output", default=None, help="a folder for resumable shards (default: JSON Lines on stdout)")
    p.add_argument("--format", default="jsonl", choices=("jsonl", "parquet"), help="shard format (default jsonl)")
    p.add_argument("--input_format", default="auto", choices=("auto", "text", "lines", "jsonl", "parquet"),
                   help="read every file as this (default: by suffix)")
    p.add_argument("--lines", action="store_true", help="text files hold one document per line")
    p.add_argument("--text_column", default="text", help="JSON Lines key or Parquet column of the text (default text)")
    p.add_argument("--id_column", default="id", help="JSON Lines key or Parquet column of the id (default id)")
    p.add_argument("--max_chars", type=int, default=MAX_CHARACTERS,
                   help=f"longer documents are skipped and reported (default {MAX_CHARACTERS})")
    p.add_argument("--workers", type=int, default=None,
                   help="processes, each with its own model and spaCy (default 1; with --engine ray: Ray actors, "
                        "default the cluster's CPUs / --num_threads)")
    p.add_argument("--engine", default="local", choices=("local", "ray"),
                   help="local: this machine's processes (default); ray: Ray Data actors on a local Ray or a cluster")
    p.add_argument("--address", default=None,
                   help="with --engine ray: the Ray cluster to join (HOST:PORT of its head, or auto; default: start "
                        "Ray on this machine)")
    p.add_argument("--chunk_size", type=int, default=CHUNK_SIZE, help=f"documents per shard (default {CHUNK_SIZE})")
    p.add_argument("--no_signatures", action="store_true",
                   help="keep pairs and relations that the model's relation signatures rule out")
    p.add_argument("--max_pairs", type=int, default=MAX_PAIRS,
                   help=f"candidate pairs predicted per document (default {MAX_PAIRS})")
    p.add_argument("--threshold", default=None,
                   help="no-relation threshold (a number or a threshold.json from `tacred threshold tune`)")
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--precision", default=None, choices=PRECISIONS, help=PRECISION_HELP)
    p.add_argument("--spacy_model", default=None, help="spaCy pipeline (default: the installed English model)")
    p.add_argument("--ner", default="auto", metavar="auto|stock|PATH",
                   help="where the entities come from: auto (default: the trained NER saved with the model, RUN/ner, "
                        "when there is one, else the spaCy pipeline's own), stock (the spaCy pipeline's own), or the "
                        "folder of a NER trained by `tacred ner train`")
    p.add_argument("--one_sentence", action="store_true",
                   help="each document is one sentence (text already split, e.g. a sentence a line with --lines): "
                        "no sentence splitting")
    p.add_argument("--batch_size", type=int, default=50, help="pairs per forward pass (default 50)")
    p.add_argument("--max_tokens", type=int, default=MAX_TOKENS,
                   help=f"longer sentences are skipped (default {MAX_TOKENS})")
    p.add_argument("--num_threads", type=int, default=None,
                   help="torch CPU threads per worker (default: this machine's cores shared out among the "
                        "workers; with --engine ray: 1, one actor per CPU of the cluster, or with --workers the "
                        "cluster's CPUs shared out, at most one node's; a Ray actor reserves as many CPUs as threads)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.errors import ConfigError, TacredError, report
    from tacred.extraction.documents import check_sources

    try:
        for name in ("max_pairs", "batch_size", "max_tokens", "num_threads", "workers", "chunk_size", "max_chars"):
            value = getattr(args, name)
            if value is not None and value < 1:
                raise ConfigError(f"--{name} must be at least 1, got {value}")
        if args.sources.count("-") > 1:
            raise ConfigError("standard input (-) can be read once")
        check_sources(args.sources)
        if args.address is not None and args.engine != "ray":
            raise ConfigError("--address is the Ray cluster of --engine ray; add --engine ray")
        if args.engine == "ray" and args.output is None:
            raise ConfigError("--engine ray writes its shards into a folder: add --output DIR (on storage every "
                              "node of the cluster sees)")
        if args.engine == "ray" and "-" in args.sources:
            raise ConfigError("--engine ray reads files, not standard input (-): save the input to a file, or leave "
                              "out --engine ray")
        check_model(args.ckpt_path, args.ner)
        from tacred.devices import check_device_name
        from tacred.text.spacy_pipeline import check_spacy_name

        check_device_name(args.device)  # before torch and spaCy load (seconds)
        check_spacy_name(args.spacy_model)
    except TacredError as err:
        return report("extract", err)
    return _extract(args)


def check_model(model: str, ner: str) -> None:
    """The model and the NER named on the command line, found before the output folder is touched or anything loads
    (a mistyped name must not leave a manifest that locks the folder)."""
    from tacred.inference.api import resolve_model
    from tacred.ner.training import model_folder

    resolve_model(model)
    if ner not in ("auto", "stock"):
        model_folder(ner)


def finished_chunk(added: set[Path]) -> bool:
    """Whether a failed run finished a chunk (``done/part-*.json``): the output folder is then kept to resume."""
    return any(p.parent.name == "done" and p.suffix == ".json" for p in added)


# options added after output folders existed: recorded only when set, so a folder written before them resumes
LATER_FLAGS = ("one_sentence", "precision")


def manifest(args: argparse.Namespace) -> dict[str, object]:
    """What decides an output folder's contents: a rerun resumes only with the same values."""
    import os

    keys = ("input_format", "lines", "text_column", "id_column", "max_chars", "chunk_size", "no_signatures",
            "max_pairs", "threshold", "max_tokens", "spacy_model", "ner", "format")
    # the engines name their shards differently (by chunk; by file and block), so a folder is resumed by its own
    engine = {"engine": "ray"} if args.engine == "ray" else {}
    return {"sources": [s if s == "-" else os.path.abspath(s) for s in args.sources],
            "ckpt_path": os.path.abspath(args.ckpt_path) if os.path.exists(args.ckpt_path) else args.ckpt_path,
            **{k: getattr(args, k) for k in keys}, **engine,
            **{k: getattr(args, k) for k in LATER_FLAGS if getattr(args, k)}}


def _extract(args: argparse.Namespace) -> int:
    from concurrent.futures.process import BrokenProcessPool

    from tacred.errors import TacredError, report
    from tacred.extraction.documents import read_documents
    from tacred.extraction.output import ShardSink, StdoutSink
    from tacred.extraction.progress import Progress, count_documents
    from tacred.extraction.ray_engine import RayPipelineError
    from tacred.extraction.runner import DocumentExtractor, ExtractorSettings, run_extraction
    from tacred.io import left_as_found
    from tacred.training.quiet import tacred_log_lines

    settings = ExtractorSettings(
        ckpt_path=args.ckpt_path, device=args.device, threshold=args.threshold, spacy_model=args.spacy_model,
        batch_size=args.batch_size, max_tokens=args.max_tokens, max_pairs=args.max_pairs,
        signatures=not args.no_signatures, num_threads=args.num_threads, max_chars=args.max_chars, ner=args.ner,
        one_sentence=args.one_sentence, precision=args.precision)
    with tacred_log_lines():
        try:
            # a run that fails before its first chunk is done leaves --output as it found it (no manifest behind)
            with left_as_found(args.output, keep=finished_chunk):
                sink = StdoutSink() if args.output is None else ShardSink(args.output, args.format, manifest(args))
                # loaded here even with workers (then dropped): a bad checkpoint or spaCy model is an error up front
                extractor = DocumentExtractor(settings)
                if args.engine == "ray":  # the driver lists the files; Ray reads them (Ray Data's progress bars)
                    from tacred.extraction.ray_engine import run_on_ray

                    del extractor  # each actor loads its own
                    totals = run_on_ray(settings, args.sources, sink, fmt=args.input_format, lines=args.lines,
                                        text_column=args.text_column, id_column=args.id_column,
                                        chunk_size=args.chunk_size, address=args.address, workers=args.workers)
                else:
                    done = sink.done_chunks()
                    total = count_documents(args.sources, args.input_format, args.lines) if sys.stderr.isatty() else None
                    progress = Progress(total, done=min(len(done) * args.chunk_size, total or 0))
                    documents = read_documents(args.sources, text_column=args.text_column, id_column=args.id_column,
                                               fmt=args.input_format, lines=args.lines, max_chars=args.max_chars)
                    workers = args.workers or 1
                    totals = run_extraction(settings, documents, sink, workers, args.chunk_size, progress,
                                            extractor if workers == 1 else None)
        except RayPipelineError as err:
            report("extract", err)
            return 1  # the pipeline failed, not the input
        except (TacredError, FileNotFoundError) as err:
            return report("extract", err)
        except BrokenProcessPool as err:
            again = "; run the same command to go on where it stopped" if args.output else ""
            report("extract", TacredError(f"a worker process died ({err}){again}"))
            return 1
        except KeyboardInterrupt:
            again = " (run the same command to go on where it stopped)" if args.output else ""
            print(f"tacred extract: interrupted{again}", file=sys.stderr)
            return 130
    where = "standard output" if args.output is None else args.output
    print(f"tacred extract: {totals.line()}; to {where}", file=sys.stderr)
    return 0


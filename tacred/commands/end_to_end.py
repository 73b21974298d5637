"""``tacred end-to-end SPEC``: every finished seed of a sweep's recipes extracted from raw text and scored strictly
(CoNLL04), then the table beside published end-to-end systems."""

from __future__ import annotations

import argparse
import time

from tacred.commands.parsing import OneLineParser
from tacred.errors import report

HELP = "Score a sweep's runs end to end from raw text (NER per seed, tacred extract, strict F1) and tabulate them."
EPILOG = """\
SPEC is a YAML file (e.g. docs/results/conll04/end_to_end.yaml) with an `end_to_end` section: `results` and
`runs_dir` (the `tacred ablate --out` and `--runs_dir` of the relation models' sweep), `gold` (the gold test file,
SpERT's layout), `train_data` (the release folder the NER trains on), `documents` and `data_dir` (what `tacred
convert conll04` wrote), `ner_epochs` and `operating_point` (argmax, dev_f1 or dev_p80: which the table shows),
`out` (the folder of the table, relative to SPEC's folder as `results` is; --out in its place);
then `models` (key, name, inputs, variant, seeds: N for seeds 1 to N or a list of seeds, optional target: micro_f1,
ner_f1; `variants: [A, B]` in place of `variant` where a recipe's seeds were trained under several of the sweep's
variants, each seed from the one that trained it; optional ner: KEY; `config: FILE` for a joint entity-and-relation
model, whose seeds train here with `tacred fit --config FILE` into RUNS/VARIANT/seed_S, resumed where they stopped,
then extract with --one_sentence at the argmax, dev_f1 and dev_p80 thresholds) and `published` (name, inputs, ner_f1, relation_f1, average: micro|macro, source). Optional
`ners` (key, name, args: options of `tacred ner train`, e.g. [--encoder, transformer, --pretrained, mpnet]): a NER
trained once a seed under RUNS/ner/KEY/seed_S and used by every row that names it (ner: KEY), whose extractions go
to RUNS/VARIANT/seed_S/ner_KEY/ and whose record is end_to_end_ner_KEY.json; rows without one train their own.

For each run whose `tacred ablate` result is in and that has no OUT/VARIANT/seed_S/end_to_end.json yet: a NER
trained on the dataset's own entities with the run's seed (RUNS/VARIANT/seed_S/ner, `tacred ner train`); a
no-relation threshold chosen for F1 on the gold dev pairs and per-relation thresholds chosen there for precision >=
0.8 (threshold_dev_f1.json, threshold_dev_p80.json: `tacred threshold tune`); `tacred extract` over the documents
with the run's tested checkpoint and that NER at each operating point: the argmax, dev_f1 and dev_p80
(extracted_POINT/); the strict scores of each and the NER's F1 on the gold test sentences (end_to_end.json; an
operating point missing from an older record is added to it). A step whose output is there is not repeated, so the
same command goes on where it stopped; runs not trained yet, and trained runs whose checkpoint is not in RUNS
(checkpoints are not committed: retrain the seed into RUNS with the sweep's command and a scratch --out), are listed
and left for later. Then end_to_end_summary.json and end_to_end.md in `out` (mean ± sample std over seeds), as
`tacred compare SPEC` writes them from the stored records alone; none when no row has a record yet (an error).
The spec's input paths, --seeds and --num_threads are checked before the first NER trains.

example: tacred end-to-end docs/results/conll04/end_to_end.yaml --readme README.md
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="tacred end-to-end", description=HELP, epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spec", metavar="SPEC", help="the end-to-end spec (YAML)")
    parser.add_argument("--only", nargs="+", metavar="KEY", help="only these models (their keys in SPEC)")
    parser.add_argument("--seeds", nargs="+", type=int, metavar="S",
                        help="only these seeds (default: each model's seeds), e.g. one process per core")
    parser.add_argument("--num_threads", type=int, default=1,
                        help="torch threads of tacred extract and of the NER's own score, kept in each record (default 1)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="start no seed after SECONDS")
    parser.add_argument("--table_only", action="store_true", help="only tabulate the stored records")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="where end_to_end.md and end_to_end_summary.json go (default: the spec's 'out')")
    parser.add_argument("--readme", default=None, metavar="FILE",
                        help="also put the table into FILE between its '<!-- tacred compare MARKER: start -->' and "
                             "'<!-- tacred compare MARKER: end -->' lines (MARKER: the spec's marker)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.errors import ConfigError
    from tacred.experiments.end_to_end import (
        EndToEndError,
        check_inputs,
        checkpoint_of,
        compare,
        finished,
        load_spec,
        run_seed,
        seed_variant,
        table_folder,
        trained,
    )

    started = time.monotonic()
    try:
        if args.num_threads < 1:
            raise ConfigError(f"--num_threads {args.num_threads}: must be at least 1")
        if args.timeout is not None and not args.timeout >= 0:
            raise ConfigError(f"--timeout {args.timeout:g}: must be 0 seconds or more")
        bad = [s for s in args.seeds or () if s < 1]
        if bad:
            raise ConfigError(f"--seeds {' '.join(map(str, bad))}: seeds are positive numbers")
        spec = load_spec(args.spec)
        table_folder(spec, args.out)  # known before any work: where the table will go
        keys = {m.key for m in spec.models}
        unknown = sorted(set(args.only or ()) - keys)
        if unknown:
            raise EndToEndError(f"--only {' '.join(unknown)}: no such model in {args.spec} ({', '.join(sorted(keys))})")
        chosen = [m for m in spec.models if not args.only or m.key in args.only]
        stray = sorted(set(args.seeds or ()) - {s for m in chosen for s in m.seeds})
        if stray:
            raise ConfigError(f"--seeds {' '.join(map(str, stray))}: not a seed of "
                              f"{'the chosen models' if args.only else 'any model'} in {args.spec}")
        waiting, gone, checked = [], [], False
        for model in spec.models if not args.table_only else ():
            if args.only and model.key not in args.only:
                continue
            for seed in [s for s in args.seeds if s in model.seeds] if args.seeds else model.seeds:
                if finished(spec, model, seed):
                    continue
                name = f"{seed_variant(spec, model, seed)} seed {seed}"
                if args.timeout is not None and time.monotonic() - started > args.timeout:
                    print(f"{name}: not started (--timeout {args.timeout:g} s reached)")
                    continue
                if model.config is not None:  # a joint model: trained here, then extracted and scored
                    from tacred.experiments.joint_seeds import run_joint_seed

                    print(f"{name}: training (tacred fit, resumed where it stopped), extraction and score ...",
                          flush=True)
                    print(f"{name}: {run_joint_seed(spec, model, seed, num_threads=args.num_threads)}", flush=True)
                    continue
                if not trained(spec, model, seed):
                    waiting.append(name)
                    continue
                checkpoint = checkpoint_of(spec, model, seed)
                if not checkpoint.exists():
                    gone.append(f"{name} ({checkpoint})")
                    continue
                if not checked:  # the inputs every step reads, before the first NER trains
                    check_inputs(spec)
                    checked = True
                print(f"{name}: NER, extraction and score ...", flush=True)
                print(f"{name}: {run_seed(spec, model, seed, num_threads=args.num_threads)}", flush=True)
        if waiting:
            print("not trained yet (no tacred ablate result): " + ", ".join(waiting))
        if gone:
            print("trained, but the checkpoint is not here (checkpoints are not committed): " + ", ".join(gone) +
                  "; retrain those seeds into the runs folder with the sweep's tacred ablate command and a scratch "
                  "--out (deterministic on the same kernels), then run this again")
        paths = compare(args.spec, args.out, args.readme)
    except (EndToEndError, OSError, ValueError) as err:
        return report("end-to-end", err)
    print(paths[1].read_text(encoding="utf-8"), end="")
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0

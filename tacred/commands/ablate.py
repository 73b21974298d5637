"""``tacred ablate``: train and test every variant × seed as subprocesses, then tabulate test P/R/F1 like the
paper's Table 3 (see ``EPILOG`` for resuming and job arrays)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from tacred.commands.parsing import OneLineParser
from tacred.errors import TacredError, report
from tacred.experiments.ablation import (
    FIT_DONE_FILE,
    RESULT_FILE,
    AblationError,
    RunResult,
    Variant,
    claim_run,
    dev_f1_by_epoch,
    earlier_seconds,
    find_variants,
    fit_options,
    load_results,
    probe_batch,
    release_run,
    run_dir,
    summarize,
    trainable_parameters,
    write_result,
    write_tables,
)
from tacred.io import write_json

HELP = "train and test each ablation variant over several seeds and tabulate P/R/F1 (the paper's Table 3)"
EPILOG = """\
Each run is `tacred fit` in RUNS/<variant>/seed_<S>/ (log: fit.log), then the chosen checkpoint predicts the
test split in-process (fp32) and OUT/<variant>/seed_<S>/ gets result.json (scores, dev F1 per epoch, resolved
config, code commit, test predictions) and test_probabilities.npz. RUNS defaults to OUT; keep OUT in git and
RUNS (checkpoints) elsewhere. A run with a result.json is skipped, a finished fit (fit.done) is not repeated,
and an interrupted fit resumes from its last.ckpt; delete a result to redo it.

Tables (from the stored results alone, no training): OUT/table.md, table.tex, table.csv, f1.png with mean ± std
over seeds, Δ F1 and a paired approximate-randomization p-value against --reference over the test examples;
summary.json (per variant: F1 per seed, both ensembles over seeds, where dev F1 plateaus) and dev_curves.png.
A row marked † had not settled: its mean dev F1 was more than 1 point below its best in one of its last 10 epochs.

Several processes (e.g. one per core, `make results-semeval`) may run the same command: each takes the next
run nobody holds (RUNS/<variant>/seed_<S>/claim.json; a claim whose process died is taken over and resumed).
--timeout T: no run starts after T seconds, so a machine about to go away leaves no half-trained run behind
(its checkpoints are not in git); the same command later goes on.

Independent jobs (e.g. a cluster array): `tacred ablate ARGS --list` prints 'VARIANT SEED todo|done' per run;
job k runs `tacred ablate ARGS --only VARIANT --seeds SEED`; afterwards `tacred ablate --out OUT --table_only`.

example: tacred ablate --config configs/tacred.yaml --variants_dir configs/ablations --seeds 1 2 3 \\
           --out runs/ablate --extra --data.data_dir data/tacred --data.glove_path glove.840B.300d.txt
"""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="tacred ablate", description=HELP + ".", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", nargs="+", metavar="YAML",
                   help="base config(s) every variant overrides, applied in order, e.g. configs/semeval.yaml "
                        "configs/semeval/paper.yaml (a dataset's config, then a tuned recipe)")
    p.add_argument("--variants", nargs="+", default=[], metavar="YAML", help="variant override files (table rows)")
    p.add_argument("--variants_dir", help="every *.yaml in this folder is a variant, e.g. configs/ablations")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3], help="seeds per variant (default: 1 2 3)")
    p.add_argument("--out", default="runs/ablate", help="results folder: result.json per run, tables (default: runs/ablate)")
    p.add_argument("--runs_dir", help="training run folders with checkpoints and logs (default: OUT)")
    p.add_argument("--resamples", type=int, default=10_000,
                   help="approximate-randomization resamples of the significance column (default: 10000)")
    p.add_argument("--only", nargs="+", metavar="VARIANT", help="run only these variants (by file name)")
    p.add_argument("--max_epochs", type=int, help="override trainer.max_epochs of every variant")
    p.add_argument("--checkpoint", choices=("best", "last"), default="best",
                   help="test the best-dev checkpoint (default) or the last epoch's, as Bilan & Roth report")
    p.add_argument("--reference", default="final", help="variant the Δ F1 column compares with (default: final)")
    p.add_argument("--published", action="store_true", help="add the paper's published TACRED F1 as a column")
    p.add_argument("--table_only", action="store_true", help="only render the tables from stored result.json files")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="start no run after this many seconds (runs under way finish); run the same command again later")
    p.add_argument("--list", action="store_true", help="print 'VARIANT SEED STATUS' per run and exit (for job arrays)")
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                   help="everything after it is passed to tacred fit, e.g. --extra --data.data_dir D (must come last)")
    return p


def count_parameters(checkpoint: Path) -> int:
    """Trainable parameters (those that receive gradients) of the model saved in ``checkpoint``."""
    from tacred.training.module import RelationExtractor

    model = RelationExtractor.from_checkpoint(checkpoint)
    v = model.vocab
    if v.tokenizer is not None:  # the transformer: two probe sentences through its own tokenizer
        from tacred.data.batching import encode_split, probe_examples

        return trainable_parameters(model.net, encode_split(probe_examples(v)[:2], v, "probe").collate([0, 1]))
    return trainable_parameters(model.net, probe_batch(len(v.words), len(v.pos), len(v.ner), len(v.labels)))


def _failed(variant: Variant, seed: int, command: str, log: Path, lines: int = 15) -> AblationError:
    """The error for a failed subprocess: which run, which log, and the log's last lines."""
    tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:] if log.is_file() else []
    return AblationError("\n".join([f"{variant.name} seed {seed}: tacred {command} failed; see {log}:", *tail]))


def evaluate_run(checkpoint: Path) -> Any:
    """The checkpoint's test probabilities (:func:`tacred.training.evaluate`, fp32), on the GPU where there is one
    (where the fit's ``accelerator: auto`` trained): a base-size encoder scored on the CPU of a GPU machine, beside
    other sweeps, takes minutes."""
    from tacred.training import evaluate

    return evaluate(checkpoint, "test", device="auto")


def run_one(args: argparse.Namespace, variant: Variant, seed: int) -> RunResult:
    """Fit (unless ``fit.done``), predict the test split and store ``result.json`` for one variant and seed."""
    import yaml

    from tacred.experiments.results import git_commit, provenance, save_probabilities, test_record
    from tacred.training.api import FitError, fit, fit_command

    run = run_dir(args.runs_dir or args.out, variant.name, seed)
    run.mkdir(parents=True, exist_ok=True)
    done = run / FIT_DONE_FILE
    commands: list[list[str]] = []
    if done.is_file():
        fit_info = json.loads(done.read_text(encoding="utf-8"))
    else:
        resumed = (run / "checkpoints" / "last.ckpt").is_file()
        earlier = earlier_seconds(run)  # a resumed run's seconds count every leg, not only this one
        options = fit_options(args.config, variant, seed, run, args.max_epochs, args.extra)
        started = provenance()  # the code and environment the fit starts with
        start = time.perf_counter()
        try:
            fit(args=options, in_subprocess=True, log=run / "fit.log")  # a crash stays in its process and log
        except FitError:
            raise _failed(variant, seed, "fit", run / "fit.log") from None
        fit_info = {"seconds": earlier + time.perf_counter() - start, "resumed": resumed,
                    "command": fit_command(options), **started}
        write_json(done, fit_info)
    commands.append(fit_info["command"])
    checkpoint = run / "checkpoints" / f"{args.checkpoint}.ckpt"
    if not checkpoint.is_file():
        raise AblationError(f"{variant.name} seed {seed}: the fit left no {checkpoint}")
    start = time.perf_counter()
    evaluation = evaluate_run(checkpoint)
    record = test_record(evaluation)
    test_seconds = time.perf_counter() - start
    dev = dev_f1_by_epoch(run / "metrics.csv")
    if not dev:
        raise AblationError(f"{variant.name} seed {seed}: {run / 'metrics.csv'} holds no dev F1")
    result = RunResult(
        variant=variant.name, seed=seed, precision=float(record["precision"]), recall=float(record["recall"]),
        f1=float(record["f1"]), dev_f1=max(dev.values()) if args.checkpoint == "best" else dev[max(dev)],
        parameters=count_parameters(checkpoint), epochs=len(dev), seconds=round(fit_info["seconds"] + test_seconds, 1),
        checkpoint=args.checkpoint, resumed=bool(fit_info["resumed"]), semeval_macro_f1=record["semeval_macro_f1"],
    )
    config_path = run / "config.yaml"
    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) if config_path.is_file() else None
    results = run_dir(args.out, variant.name, seed)
    results.mkdir(parents=True, exist_ok=True)
    save_probabilities(results, evaluation)
    write_result(results, result, commands=commands, recipe=[*map(str, args.config), str(variant.path)],
                 commit=fit_info.get("commit") or git_commit(), environment=fit_info.get("environment"),
                 dev_curve=[dev[e] for e in sorted(dev)], config=config, test=record["test"],
                 training_precision=str(((config or {}).get("trainer") or {}).get("precision") or "32-true"))
    return result


def render(args: argparse.Namespace, names: list[str] | None) -> int:
    from dataclasses import replace

    from tacred.experiments.per_relation import write_per_relation
    from tacred.experiments.results import (
        CURVES_FILE,
        dev_curves,
        plot_dev_curves,
        settled,
        significance,
        write_summary,
    )

    results = load_results(args.out, names)
    if not results:
        return report("ablate", TacredError(f"no {RESULT_FILE} under {args.out}"))
    variants = list(dict.fromkeys(r.variant for r in results))
    tests = significance(args.out, variants, args.reference, args.resamples)
    curves = dev_curves(args.out, variants)
    rows = [replace(row, settled=settled(curves[row.variant])) if row.variant in curves else row
            for row in summarize(results, args.reference, tests)]
    paths = write_tables(args.out, rows, args.reference, args.published)
    paths += write_per_relation(args.out, [row.variant for row in rows])
    paths.append(write_summary(args.out, results))
    picture = plot_dev_curves(args.out, variants, Path(args.out) / CURVES_FILE)
    print(paths[0].read_text(encoding="utf-8"), end="")
    print("tables: " + ", ".join(str(p) for p in [*paths, *([picture] if picture else [])]))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        variants = find_variants(args.variants, args.variants_dir) if args.variants or args.variants_dir else []
        sweep = [v.name for v in variants]  # the table's rows, also when this job runs --only some of them
        if args.only:
            unknown = sorted(set(args.only) - {v.name for v in variants})
            if unknown:
                raise AblationError(f"--only {' '.join(unknown)}: no such variant among {[v.name for v in variants]}")
            variants = [v for v in variants if v.name in args.only]
        if args.table_only:
            return render(args, [v.name for v in variants] if variants else None)
        if not variants:
            raise AblationError("give --variants FILE ... or --variants_dir DIR")
        jobs = [(v, s) for v in variants for s in dict.fromkeys(args.seeds)]
        if args.list:
            for v, s in jobs:
                print(v.name, s, "done" if (run_dir(args.out, v.name, s) / RESULT_FILE).is_file() else "todo")
            return 0
        if not args.config:
            raise AblationError("--config: give the base config every variant overrides, e.g. configs/tacred.yaml")
        for path in args.config:
            if not Path(path).is_file():
                raise AblationError(f"--config: base config not found: {path}")
    except AblationError as err:
        return report("ablate", err)
    failed, started, stopped = [], time.monotonic(), False
    for i, (variant, seed) in enumerate(jobs, start=1):
        tag = f"[{i}/{len(jobs)}] {variant.name} seed {seed}"
        if (run_dir(args.out, variant.name, seed) / RESULT_FILE).is_file():
            print(f"{tag}: done before, skipped", flush=True)
            continue
        if args.timeout is not None and time.monotonic() - started >= args.timeout:
            print(f"{tag}: not started (--timeout {args.timeout:g} s reached); the same command goes on later", flush=True)
            stopped = True
            break
        run = run_dir(args.runs_dir or args.out, variant.name, seed)
        holder = claim_run(run)
        if holder is not None:
            print(f"{tag}: run by another process ({holder}), skipped", flush=True)
            continue
        if (run_dir(args.out, variant.name, seed) / RESULT_FILE).is_file():  # finished while this process looked
            release_run(run)
            print(f"{tag}: done before, skipped", flush=True)
            continue
        print(f"{tag}: training ...", flush=True)
        try:
            r = run_one(args, variant, seed)
        except (AblationError, OSError, KeyError, ValueError) as err:
            print(f"{tag}: FAILED: {err}", file=sys.stderr, flush=True)
            failed.append(tag)
            continue
        finally:
            release_run(run)
        print(f"{tag}: test P {100 * r.precision:.1f} R {100 * r.recall:.1f} F1 {100 * r.f1:.1f} "
              f"(dev F1 {100 * r.dev_f1:.1f}, {r.epochs} epochs, {r.seconds:.0f} s)", flush=True)
    status = 0 if stopped and not load_results(args.out, sweep) else render(args, sweep)  # nothing to tabulate yet
    if failed:
        print(f"tacred ablate: {len(failed)} run(s) failed: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return status

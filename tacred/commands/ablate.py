"""``tacred ablate``: train and test every variant × seed as subprocesses, then tabulate test P/R/F1 like the
paper's Table 3 (see ``EPILOG`` for resuming and job arrays)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tacred.ablation import (
    FIT_DONE_FILE,
    RESULT_FILE,
    AblationError,
    RunResult,
    Variant,
    dev_f1_by_epoch,
    find_variants,
    fit_command,
    load_results,
    probe_batch,
    run_dir,
    summarize,
    test_command,
    trainable_parameters,
    write_result,
    write_tables,
    write_text_atomic,
)
from tacred.errors import report

HELP = "train and test each ablation variant over several seeds and tabulate P/R/F1 (the paper's Table 3)"
EPILOG = """\
Each run is `tacred fit` + `tacred test` in OUT/<variant>/seed_<S>/ (logs: fit.log, test.log). A run with a
result.json is skipped, a finished fit (fit.done) is not repeated, and an interrupted fit resumes from its
last.ckpt; delete a run folder to redo it. Tables: OUT/table.md, table.tex, table.csv, f1.png.

Independent jobs (e.g. a cluster array): `tacred ablate ARGS --list` prints 'VARIANT SEED todo|done' per run;
job k runs `tacred ablate ARGS --only VARIANT --seeds SEED`; afterwards `tacred ablate --out OUT --table-only`.

example: tacred ablate --config configs/tacred.yaml --variants-dir configs/ablations --seeds 1 2 3 \\
           --out runs/ablate --extra --data.data_dir data/tacred --data.glove_path glove.840B.300d.txt
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tacred ablate", description=HELP + ".", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="base config every variant overrides, e.g. configs/tacred.yaml")
    p.add_argument("--variants", nargs="+", default=[], metavar="YAML", help="variant override files (table rows)")
    p.add_argument("--variants-dir", help="every *.yaml in this folder is a variant, e.g. configs/ablations")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3], help="seeds per variant (default: 1 2 3)")
    p.add_argument("--out", default="runs/ablate", help="sweep folder (default: runs/ablate)")
    p.add_argument("--only", nargs="+", metavar="VARIANT", help="run only these variants (by file name)")
    p.add_argument("--max-epochs", type=int, help="override trainer.max_epochs of every variant")
    p.add_argument("--checkpoint", choices=("best", "last"), default="best",
                   help="test the best-dev checkpoint (default) or the last epoch's, as Bilan & Roth report")
    p.add_argument("--reference", default="final", help="variant the Δ F1 column compares with (default: final)")
    p.add_argument("--published", action="store_true", help="add the paper's published TACRED F1 as a column")
    p.add_argument("--table-only", action="store_true", help="only render the tables from stored result.json files")
    p.add_argument("--list", action="store_true", help="print 'VARIANT SEED STATUS' per run and exit (for job arrays)")
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                   help="everything after it is passed to tacred fit, e.g. --extra --data.data_dir D (must come last)")
    return p


def run_command(cmd: Sequence[str], log: Path) -> int:
    """Run a subprocess with stdout and stderr appended to ``log``; returns its exit status."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.setdefault("WANDB_MODE", "offline")
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        return subprocess.run(list(cmd), stdout=f, stderr=subprocess.STDOUT, env=env, check=False).returncode


def count_parameters(checkpoint: Path) -> int:
    """Trainable parameters (those that receive gradients) of the model saved in ``checkpoint``."""
    from tacred.models.module import RelationExtractor

    model = RelationExtractor.from_checkpoint(checkpoint)
    v = model.vocab
    return trainable_parameters(model.net, probe_batch(len(v.words), len(v.pos), len(v.ner), len(v.labels)))


def _failed(variant: Variant, seed: int, command: str, log: Path, lines: int = 15) -> AblationError:
    """The error for a failed subprocess: which run, which log, and the log's last lines."""
    tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:] if log.is_file() else []
    return AblationError("\n".join([f"{variant.name} seed {seed}: tacred {command} failed; see {log}:", *tail]))


def run_one(args: argparse.Namespace, variant: Variant, seed: int) -> RunResult:
    """Fit (unless ``fit.done``), test and store ``result.json`` for one variant and seed."""
    run = run_dir(args.out, variant.name, seed)
    run.mkdir(parents=True, exist_ok=True)
    done = run / FIT_DONE_FILE
    commands: list[list[str]] = []
    if done.is_file():
        fit_info = json.loads(done.read_text(encoding="utf-8"))
    else:
        resumed = (run / "checkpoints" / "last.ckpt").is_file()
        cmd = fit_command(args.config, variant, seed, run, args.max_epochs, args.extra)
        start = time.perf_counter()
        if run_command(cmd, run / "fit.log"):
            raise _failed(variant, seed, "fit", run / "fit.log")
        fit_info = {"seconds": time.perf_counter() - start, "resumed": resumed, "command": cmd}
        write_text_atomic(done, json.dumps(fit_info, indent=1) + "\n")
    commands.append(fit_info["command"])
    checkpoint = run / "checkpoints" / f"{args.checkpoint}.ckpt"
    if not checkpoint.is_file():
        raise AblationError(f"{variant.name} seed {seed}: the fit left no {checkpoint}")
    cmd = test_command(checkpoint, run)
    commands.append(cmd)
    start = time.perf_counter()
    if run_command(cmd, run / "test.log"):
        raise _failed(variant, seed, "test", run / "test.log")
    test_seconds = time.perf_counter() - start
    metrics_path = run / "test_metrics.json"
    if not metrics_path.is_file():
        raise AblationError(f"{variant.name} seed {seed}: tacred test wrote no {metrics_path}")
    metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    dev = dev_f1_by_epoch(run / "metrics.csv")
    if not dev:
        raise AblationError(f"{variant.name} seed {seed}: {run / 'metrics.csv'} holds no dev F1")
    result = RunResult(
        variant=variant.name, seed=seed, precision=float(metrics["precision"]), recall=float(metrics["recall"]),
        f1=float(metrics["f1"]), dev_f1=max(dev.values()) if args.checkpoint == "best" else dev[max(dev)],
        parameters=count_parameters(checkpoint), epochs=len(dev), seconds=round(fit_info["seconds"] + test_seconds, 1),
        checkpoint=args.checkpoint, resumed=bool(fit_info["resumed"]),
    )
    write_result(run, result, commands=commands)
    return result


def render(args: argparse.Namespace, names: list[str] | None) -> int:
    results = load_results(args.out, names)
    if not results:
        print(f"tacred ablate: error: no {RESULT_FILE} under {args.out}", file=sys.stderr)
        return 2
    paths = write_tables(args.out, summarize(results, args.reference), args.reference, args.published)
    print(paths[0].read_text(encoding="utf-8"), end="")
    print("tables: " + ", ".join(str(p) for p in paths))
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
            raise AblationError("give --variants FILE ... or --variants-dir DIR")
        jobs = [(v, s) for v in variants for s in dict.fromkeys(args.seeds)]
        if args.list:
            for v, s in jobs:
                print(v.name, s, "done" if (run_dir(args.out, v.name, s) / RESULT_FILE).is_file() else "todo")
            return 0
        if not args.config or not Path(args.config).is_file():
            raise AblationError(f"--config: base config not found: {args.config}")
    except AblationError as err:
        return report("ablate", err)
    failed = []
    for i, (variant, seed) in enumerate(jobs, start=1):
        tag = f"[{i}/{len(jobs)}] {variant.name} seed {seed}"
        if (run_dir(args.out, variant.name, seed) / RESULT_FILE).is_file():
            print(f"{tag}: done before, skipped", flush=True)
            continue
        print(f"{tag}: training ...", flush=True)
        try:
            r = run_one(args, variant, seed)
        except (AblationError, OSError, KeyError, ValueError) as err:
            print(f"{tag}: FAILED: {err}", file=sys.stderr, flush=True)
            failed.append(tag)
            continue
        print(f"{tag}: test P {100 * r.precision:.1f} R {100 * r.recall:.1f} F1 {100 * r.f1:.1f} "
              f"(dev F1 {100 * r.dev_f1:.1f}, {r.epochs} epochs, {r.seconds:.0f} s)", flush=True)
    status = render(args, sweep)
    if failed:
        print(f"tacred ablate: {len(failed)} run(s) failed: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return status

"""``tacred tune``: an Optuna study over training hyperparameters, every trial a ``tacred fit`` run scored on dev."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from tacred.commands.parsing import OneLineParser

HELP = "search training hyperparameters on dev with Optuna (resumable; several processes may share a study)"
EPILOG = """\
The study lives in an RDB storage: by default an SQLite file TRIALS_DIR/study.db, so running the same command
again continues it (a trial whose process died is retried with the same parameters and resumes from its
last.ckpt once --grace seconds have passed). After every trial STUDY_DIR/trials.json records the finished
trials as data; a new, empty storage is seeded from it, so a study kept in git continues on a fresh clone. Several processes or machines run trials of one study in parallel
when they share one --storage URL (postgresql://USER@HOST:PORT/DATABASE, the password in PGPASSWORD; see
docs/distributed.md); with one --trials_dir that all of them read, a dead worker's trial resumes from its
last.ckpt in whichever worker retries it. --n_trials is the total number of finished (complete or pruned) trials
the study should reach.

Outputs in STUDY_DIR: best.yaml (the best trial's parameters as a config file), trials.csv, summary.md,
trials.json.

A study ranks its trials by one training seed; when its best trials lie closer together than the spread over
seeds, the top of that ranking is partly luck. --recheck K trains the K best complete trials again with each
of --recheck_seeds (dev only; run folders TRIALS_DIR/recheck/trial_N/seed_S; finished ones are kept, an
interrupted one resumes, several processes share the work) and ranks them by the mean value over all their
seeds: recheck.md, recheck.json and, once every run is in, recheck_best.yaml.

example: tacred tune --space configs/tune/semeval_paper.yaml --n_trials 30 --study_dir runs/tune/paper
         tacred fit --config configs/semeval.yaml --config runs/tune/paper/best.yaml --run_dir runs/best
"""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="tacred tune", description=HELP + ".", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--space", required=True, help="search space YAML (e.g. configs/tune/semeval_paper.yaml)")
    p.add_argument("--config", action="append", default=[], help="further config for every trial (repeatable)")
    p.add_argument("--study_name", help="name of the study in the storage (default: the space file's name)")
    p.add_argument("--study_dir", help="study folder: study.db and summaries (default: runs/tune/STUDY_NAME)")
    p.add_argument("--trials_dir", help="where trial run folders go (default: STUDY_DIR/trials)")
    p.add_argument("--storage", help="Optuna RDB storage URL (default: sqlite:///TRIALS_DIR/study.db)")
    p.add_argument("--n_trials", type=int, default=20, help="finished trials the study should have (default: 20)")
    p.add_argument("--timeout", type=float, help="stop starting new trials after this many seconds")
    p.add_argument("--heartbeat", type=int, default=60, help="seconds between a running trial's heartbeats")
    p.add_argument("--grace", type=int, default=180,
                   help="seconds without a heartbeat after which a trial counts as dead and is retried")
    p.add_argument("--summary_only", action="store_true",
                   help="only write best.yaml, trials.csv, summary.md (and recheck.md from recheck.json)")
    p.add_argument("--recheck", type=int, default=0, metavar="K",
                   help="then train the K best complete trials with --recheck_seeds too and rank them by the mean "
                        "value over seeds (recheck.md, recheck_best.yaml)")
    p.add_argument("--recheck_seeds", type=int, nargs="+", default=[2, 3], metavar="SEED",
                   help="training seeds of the re-check besides the study's own (default: 2 3)")
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                   help="everything after it is passed to every tacred fit (must come last)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.errors import report
    from tacred.experiments.tuning import SearchSpace, TuneError

    try:
        return run(args, SearchSpace.load(args.space))
    except TuneError as err:
        return report("tune", err)


def run(args: argparse.Namespace, space: Any) -> int:
    import optuna

    from tacred.experiments.tuning import TuneError
    from tacred.training.quiet import tacred_log_lines

    if args.n_trials < 1:
        raise TuneError(f"--n_trials must be at least 1; got {args.n_trials}")
    if args.recheck < 0:
        raise TuneError(f"--recheck must be 0 (none) or more trials; got {args.recheck}")
    if args.timeout is not None and args.timeout <= 0:
        raise TuneError(f"--timeout must be positive; got {args.timeout}")
    for path in [*space.configs, *args.config]:
        if not Path(path).is_file():
            raise TuneError(f"config {path}: file not found")
    name = args.study_name or Path(args.space).stem
    study_dir = Path(args.study_dir or Path("runs") / "tune" / name)
    study_dir.mkdir(parents=True, exist_ok=True)
    trials_dir = Path(args.trials_dir) if args.trials_dir else study_dir / "trials"
    trials_dir.mkdir(parents=True, exist_ok=True)
    storage = args.storage or f"sqlite:///{trials_dir / 'study.db'}"

    optuna.logging.set_verbosity(optuna.logging.INFO)
    with tacred_log_lines():
        return _optimize(args, space, name, study_dir, trials_dir, storage)


def _optimize(args: argparse.Namespace, space: Any, name: str, study_dir: Path, trials_dir: Path,
              storage: str) -> int:
    from optuna.study import MaxTrialsCallback
    from optuna.trial import TrialState

    from tacred.experiments.tuning import (
        Objective,
        best_trial,
        build_sampler,
        import_trials,
        open_study,
        trial_label,
        write_study_files,
    )
    from tacred.experiments.tuning.study import shown_url

    study = open_study(name, storage, space, heartbeat=args.heartbeat, grace=args.grace)
    imported = import_trials(study, study_dir / "trials.json")
    if imported:
        print(f"study {name!r}: seeded a new storage with {imported} finished trials from {study_dir}/trials.json",
              file=sys.stderr)
    study.sampler = build_sampler(space.sampler, offset=len(study.get_trials(deepcopy=False)))
    finished = (TrialState.COMPLETE, TrialState.PRUNED)
    done = len(study.get_trials(deepcopy=False, states=finished))
    started = time.monotonic()
    objective = Objective(space, trials_dir, configs=args.config, extra=args.extra)
    if not args.summary_only and done < args.n_trials:
        print(f"study {name!r} ({shown_url(storage)}): {done} of {args.n_trials} trials finished; trials in {trials_dir}",
              file=sys.stderr)

        def record(study: object, trial: object) -> None:  # results as data after every trial
            write_study_files(study, space, args.space, study_dir)

        study.optimize(objective, timeout=args.timeout, gc_after_trial=True,
                       callbacks=[MaxTrialsCallback(args.n_trials, states=finished), record])
    paths = write_study_files(study, space, args.space, study_dir)
    if args.recheck:
        paths += _recheck(args, space, study, objective, study_dir, trials_dir, started)
    best = best_trial(study)
    if best is None:
        print(f"study {name!r}: no trial has completed yet", file=sys.stderr)
        return 0
    print(f"best trial {trial_label(best)}: {space.describe()} {100 * best.value:.2f}  "
          f"({best.user_attrs.get('run_dir', '')})")
    for key, value in best.params.items():
        print(f"  {key}: {value}")
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def _recheck(args: argparse.Namespace, space: Any, study: Any, objective: Any, study_dir: Path, trials_dir: Path,
             started: float) -> list[Path]:
    from tacred.experiments.tuning.recheck import (
        RECHECK_FILES,
        load_recheck,
        ranked,
        recheck,
        write_recheck_files,
    )

    if args.summary_only:
        records = study_dir / RECHECK_FILES[2]
        if not records.is_file():
            return []
        rows, missing = load_recheck(records)
    else:
        left = None if args.timeout is None else max(args.timeout - (time.monotonic() - started), 0.0)
        rows, missing = recheck(study, space, objective, trials_dir, args.recheck, args.recheck_seeds, left)
    paths = write_recheck_files(study, space, args.space, study_dir, rows, missing)
    top = ranked(rows)
    if missing:
        print(f"re-check: {len(missing)} run(s) still to do; the same command goes on with them", file=sys.stderr)
    elif top:
        values = ", ".join(f"{100 * v:.2f}" for _, v in sorted(top[0].values.items()))
        print(f"re-checked best: trial {top[0].trial}, mean {100 * top[0].mean:.2f} over seeds ({values})")
    return paths

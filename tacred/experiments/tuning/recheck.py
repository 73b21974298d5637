"""Re-checking a study's best trials with more training seeds before one becomes a recipe.

A study ranks its trials by one training seed, and when its best trials lie closer together than the spread over
seeds, the top of that ranking is partly the luckiest draw (the winner's curse). ``tacred tune --recheck K`` trains
the K best complete trials again with further seeds (dev only, the study's own objective), ranks them by the mean
value over all their seeds and writes the winner as ``recheck_best.yaml``. Its records are data like the study's:
``recheck.json`` (every value per trial and seed) and ``recheck.md``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacred.experiments.ablation import (
    FIT_DONE_FILE,
    claim_run,
    dev_f1_by_epoch,
    earlier_seconds,
    release_run,
)
from tacred.experiments.ensemble import mean_std
from tacred.experiments.tuning.records import best_trial, format_value, trial_label, write_trial_config
from tacred.experiments.tuning.space import SearchSpace, TuneError
from tacred.io import write_json, write_text_atomic

RECHECK_FILES = ("recheck_best.yaml", "recheck.md", "recheck.json")


@dataclass
class Rechecked:
    """One trial's value (the study's objective) for every training seed it has."""

    trial: int
    params: dict[str, Any]
    values: dict[int, float]

    @property
    def mean(self) -> float:
        return mean_std(list(self.values.values()))[0]

    @property
    def std(self) -> float:
        return mean_std(list(self.values.values()))[1]


def candidates(study: Any, k: int) -> list[Any]:
    """The ``k`` complete trials with the highest values, best first."""
    import optuna

    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    return sorted(done, key=lambda t: -t.value)[:k]


def run_dir(trials_dir: Path, trial: int, seed: int) -> Path:
    return trials_dir / "recheck" / f"trial_{trial:04d}" / f"seed_{seed}"


def recheck(study: Any, space: SearchSpace, objective: Any, trials_dir: Path, k: int, seeds: Sequence[int],
            timeout: float | None = None) -> tuple[list[Rechecked], list[str]]:
    """Train the ``k`` best trials with every seed of ``seeds`` that they lack (a finished fit is kept, an
    interrupted one resumes; several processes share the work through claim files) and return each trial's values,
    with what is still missing (held by another process, or not started within ``timeout`` seconds). The values
    are read after this process's last fit, so the last process of several to finish records every run."""
    from tacred.experiments.results import provenance
    from tacred.training import fit

    started, trials = time.monotonic(), candidates(study, k)
    jobs = [(t, s) for t in trials for s in dict.fromkeys(s for s in seeds if s != space.seed)]
    unstarted: dict[Path, str] = {}
    for trial, seed in jobs:
        run = run_dir(trials_dir, trial_label(trial), seed)
        if (run / FIT_DONE_FILE).is_file():
            continue
        if timeout is not None and time.monotonic() - started >= timeout:
            unstarted[run] = "not started: --timeout reached"
            continue
        holder = claim_run(run)
        if holder is not None:
            unstarted[run] = f"run by {holder}"
            continue
        try:
            if not (run / FIT_DONE_FILE).is_file():  # finished while this process looked
                print(f"re-check trial {trial_label(trial)} seed {seed}: training in {run} ...", file=sys.stderr,
                      flush=True)
                start, started = time.perf_counter() - earlier_seconds(run), provenance()
                fit(args=objective.fit_args(dict(trial.params), run, seed=seed), keep_failed=True)
                write_json(run / FIT_DONE_FILE, {"seconds": round(time.perf_counter() - start, 1), **started})
        finally:
            release_run(run)
    rows = {trial_label(t): Rechecked(trial_label(t), dict(t.params), {space.seed: float(t.value)}) for t in trials}
    missing = []
    for trial, seed in jobs:
        row, run = rows[trial_label(trial)], run_dir(trials_dir, trial_label(trial), seed)
        if not (run / FIT_DONE_FILE).is_file():
            missing.append(f"trial {row.trial} seed {seed} ({unstarted.get(run, 'unfinished')})")
            continue
        scores = dev_f1_by_epoch(run / "metrics.csv")
        if not scores:
            raise TuneError(f"{run}/metrics.csv: no dev F1 was logged")
        row.values[seed] = space.score(scores)
    return list(rows.values()), missing


def _seeds(rows: Sequence[Rechecked]) -> list[int]:
    """Every seed any trial of the re-check has."""
    return sorted({s for r in rows for s in r.values})


def ranked(rows: Sequence[Rechecked]) -> list[Rechecked]:
    """Trials by their mean value over seeds, best first; only trials that have every seed of the re-check."""
    seeds = _seeds(rows)
    return sorted((r for r in rows if sorted(r.values) == seeds), key=lambda r: -r.mean)


def render(study: Any, space: SearchSpace, rows: Sequence[Rechecked], missing: Sequence[str]) -> str:
    seeds, top = _seeds(rows), ranked(rows)
    names = [p.name for p in space.parameters]
    best = best_trial(study)
    lines = [f"# Re-check of study `{study.study_name}`: {_its_best(len(rows))} with seeds "
             f"{', '.join(map(str, seeds))}", "",
             f"Value: {space.describe()} (dev split only); the study ranked its trials by seed {space.seed} alone. "
             "Here they are ranked by their mean value over the seeds.", "",
             "| trial | " + " | ".join(f"seed {s}" for s in seeds) + " | mean ± std | "
             + " | ".join(f"`{n.split('.')[-1]}`" for n in names) + " |",
             "|---:|" + "---:|" * (len(seeds) + 1) + "---:|" * len(names)]
    for r in [*top, *(r for r in rows if r not in top)]:
        cells = [f"{100 * r.values[s]:.2f}" if s in r.values else "" for s in seeds]
        mean = f"{100 * r.mean:.2f} ± {100 * r.std:.2f}" if r in top else "(incomplete)"
        lines.append(f"| {r.trial} | " + " | ".join(cells) + f" | {mean} | "
                     + " | ".join(format_value(r.params.get(n, "")) for n in names) + " |")
    if missing:
        lines += ["", "Still to run: " + "; ".join(missing) + ". The same command goes on with them."]
    elif top:
        lines += ["", f"Best by the mean over seeds: trial {top[0].trial} ({100 * top[0].mean:.2f}; "
                      f"`recheck_best.yaml`). Best by seed {space.seed} alone: trial "
                      f"{trial_label(best) if best is not None else '-'}."]
    return "\n".join([*lines, ""])


def _its_best(n: int) -> str:
    return "its best trial" if n == 1 else f"its {n} best trials"


def write_recheck_files(study: Any, space: SearchSpace, space_path: str, out: Path, rows: Sequence[Rechecked],
                        missing: Sequence[str]) -> list[Path]:
    """``recheck.json`` and ``recheck.md`` in ``out``, and ``recheck_best.yaml`` (a config file for ``tacred fit
    --config``) once every trial has every seed."""
    paths = [out / name for name in RECHECK_FILES]
    top = ranked(rows)
    if top and not missing:
        which = "the only trial re-checked" if len(rows) == 1 else f"the highest of the {len(rows)} trials re-checked"
        write_trial_config(paths[0], f"Trial {top[0].trial} of study {study.study_name!r}: {100 * top[0].mean:.2f}, the "
                           f"mean over seeds {', '.join(map(str, sorted(top[0].values)))} of the {space.describe()},\n"
                           f"{which} with {space_path}. Train with it:", space, top[0].params)
    else:
        paths[0].unlink(missing_ok=True)  # an earlier re-check's choice no longer stands
    write_text_atomic(paths[1], render(study, space, rows, missing))
    write_json(paths[2], {"seed_of_the_study": space.seed, "objective": space.describe(), "missing": list(missing),
                          "trials": [{"trial": r.trial, "params": r.params,
                                      "values": {str(s): v for s, v in sorted(r.values.items())}} for r in rows]})
    return [p for p in paths if p.exists()]


def load_recheck(path: Path) -> tuple[list[Rechecked], list[str]]:
    """The trials of an earlier ``recheck.json`` and what it still lacked."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = [Rechecked(int(t["trial"]), dict(t["params"]), {int(s): float(v) for s, v in t["values"].items()})
                for t in data["trials"]]
        return rows, [str(m) for m in data["missing"]]
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise TuneError(f"{path}: cannot read the re-check records ({err})") from err

"""Hyperparameter search with Optuna: a YAML search space, every trial an ordinary ``tacred fit`` run folder,
and the study in an RDB storage (SQLite by default) so that a killed study resumes and several processes or
machines can share one study. Trials are scored on dev only; test data is never read."""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tacred.ablation import dev_f1_by_epoch, write_text_atomic

log = logging.getLogger(__name__)

PARAM_TYPES = ("float", "int", "categorical")
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "hyperband", "none")
OBJECTIVES = ("last", "best")
STUDY_FILES = ("best.yaml", "trials.csv", "summary.md", "trials.json")
FINISHED = ("COMPLETE", "PRUNED")


class TuneError(ValueError):
    """A search space, option or study that cannot be used (the message names it)."""


@dataclass(frozen=True)
class Param:
    """One searched option: ``name`` is the dotted CLI key (``model.lr``), the rest says how Optuna draws it."""

    name: str
    type: str
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()

    def suggest(self, trial: Any) -> Any:
        if self.type == "categorical":
            return trial.suggest_categorical(self.name, list(self.choices))
        if self.type == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high), step=int(self.step or 1), log=self.log)
        return trial.suggest_float(self.name, self.low, self.high, step=self.step, log=self.log)


def _param(name: str, spec: Any, source: str) -> Param:
    where = f"{source}: parameters.{name}"
    if not isinstance(spec, dict):
        raise TuneError(f"{where}: expected a mapping such as {{type: float, low: 0.01, high: 1.0, log: true}}")
    unknown = set(spec) - {"type", "low", "high", "step", "log", "choices"}
    if unknown:
        raise TuneError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    kind = spec.get("type")
    if kind not in PARAM_TYPES:
        raise TuneError(f"{where}: type must be one of {', '.join(PARAM_TYPES)}; got {kind!r}")
    if kind == "categorical":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise TuneError(f"{where}: a categorical parameter needs a non-empty list 'choices'")
        if any(not isinstance(c, str | int | float | bool) and c is not None for c in choices):
            raise TuneError(f"{where}: choices must be numbers, strings, booleans or null")
        return Param(name, kind, choices=tuple(choices))
    low, high = spec.get("low"), spec.get("high")
    for key, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise TuneError(f"{where}: '{key}' must be a finite number; got {value!r}")
    if low > high:
        raise TuneError(f"{where}: low ({low}) is above high ({high})")
    step, use_log = spec.get("step"), spec.get("log", False)
    if not isinstance(use_log, bool):
        raise TuneError(f"{where}: 'log' must be true or false; got {use_log!r}")
    if use_log and low <= 0:
        raise TuneError(f"{where}: a log-scale range needs low > 0; got {low}")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int | float) or step <= 0):
        raise TuneError(f"{where}: 'step' must be a positive number; got {step!r}")
    if step is not None and use_log:
        raise TuneError(f"{where}: 'step' and 'log' cannot be combined (Optuna draws either on a grid or on a log scale)")
    if kind == "int" and any(isinstance(v, float) and not v.is_integer() for v in (low, high, step or 1)):
        raise TuneError(f"{where}: an int parameter needs whole numbers for low, high and step")
    return Param(name, kind, float(low), float(high), None if step is None else float(step), use_log)


@dataclass(frozen=True)
class SearchSpace:
    """A study's definition: base configs, fixed overrides, searched parameters, the sampler and the pruner."""

    parameters: tuple[Param, ...]
    configs: tuple[str, ...] = ()
    fixed: dict[str, Any] = field(default_factory=dict)
    seed: int = 1  # the training seed of every trial: trials differ only in their hyperparameters
    metric: str = "val/f1"
    objective: str = "last"  # "last": mean dev F1 of the last ``window`` epochs (what a last-epoch test sees); "best"
    window: int = 3
    sampler: dict[str, Any] = field(default_factory=dict)
    pruner: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> SearchSpace:
        path = Path(path)
        if not path.is_file():
            raise TuneError(f"search space {path}: file not found")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as err:
            raise TuneError(f"search space {path}: not valid YAML ({str(err).splitlines()[0]})") from err
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "search space") -> SearchSpace:
        if not isinstance(data, dict):
            raise TuneError(f"{source}: expected a mapping with 'parameters'")
        unknown = set(data) - {"parameters", "configs", "fixed", "seed", "metric", "objective", "window", "sampler",
                               "pruner"}
        if unknown:
            raise TuneError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}")
        params = data.get("parameters")
        if not isinstance(params, dict) or not params:
            raise TuneError(f"{source}: 'parameters' must map option names (e.g. model.lr) to their ranges")
        configs = data.get("configs") or []
        if isinstance(configs, str):
            configs = [configs]
        if not isinstance(configs, list) or not all(isinstance(c, str) for c in configs):
            raise TuneError(f"{source}: 'configs' must be a list of config file paths")
        fixed = data.get("fixed") or {}
        if not isinstance(fixed, dict):
            raise TuneError(f"{source}: 'fixed' must map option names to values")
        both = sorted(set(fixed) & set(params))
        if both:
            raise TuneError(f"{source}: {', '.join(both)} is both fixed and searched")
        seed = data.get("seed", 1)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TuneError(f"{source}: 'seed' must be an integer; got {seed!r}")
        objective, window = data.get("objective", "last"), data.get("window", 3)
        if objective not in OBJECTIVES:
            raise TuneError(f"{source}: 'objective' must be one of {', '.join(OBJECTIVES)}; got {objective!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise TuneError(f"{source}: 'window' must be a positive integer; got {window!r}")
        sampler, pruner = data.get("sampler") or {}, data.get("pruner") or {}
        for key, spec, names in (("sampler", sampler, SAMPLERS), ("pruner", pruner, PRUNERS)):
            if not isinstance(spec, dict) or spec.get("name", names[0]) not in names:
                raise TuneError(f"{source}: '{key}' must be a mapping whose 'name' is one of {', '.join(names)}")
        return cls(tuple(_param(str(k), v, source) for k, v in params.items()), tuple(configs), dict(fixed),
                   seed, str(data.get("metric", "val/f1")), objective, window, dict(sampler), dict(pruner))

    def score(self, dev_f1: dict[int, float]) -> float:
        """The trial's value from its dev F1 per epoch."""
        if self.objective == "best":
            return max(dev_f1.values())
        last = [dev_f1[e] for e in sorted(dev_f1)[-self.window:]]
        return sum(last) / len(last)

    def describe(self) -> str:
        if self.objective == "best":
            return f"best {self.metric} over the epochs of a trial"
        return f"mean {self.metric} of the last {self.window} epochs of a trial"


def override_args(values: dict[str, Any]) -> list[str]:
    """``{"model.lr": 0.3}`` → ``["--model.lr", "0.3"]`` (values as YAML, which the CLI parses back)."""
    args = []
    for key, value in values.items():
        text = value if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True).strip()
        args += [f"--{key}", text.removesuffix("\n...").strip()]
    return args


def nested(values: dict[str, Any]) -> dict[str, Any]:
    """``{"model.network.dropout": 0.3}`` → ``{"model": {"network": {"dropout": 0.3}}}`` (a config file's layout)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def build_sampler(spec: dict[str, Any], offset: int = 0) -> Any:
    """The sampler of ``spec``; its seed is moved on by ``offset`` (the trials the study has), so that a resumed
    study draws new parameters instead of replaying the ones its first process drew."""
    import optuna

    options = {k: v for k, v in spec.items() if k != "name"}
    if options.get("seed") is not None:
        options["seed"] = int(options["seed"]) + offset
    try:
        if spec.get("name", "tpe") == "random":
            return optuna.samplers.RandomSampler(**options)
        return optuna.samplers.TPESampler(**options)
    except TypeError as err:
        raise TuneError(f"sampler {spec}: {err}") from err


def build_pruner(spec: dict[str, Any]) -> Any:
    import optuna

    options = {k: v for k, v in spec.items() if k != "name"}
    name = spec.get("name", "median")
    try:
        if name == "none":
            return optuna.pruners.NopPruner()
        if name == "hyperband":
            return optuna.pruners.HyperbandPruner(**options)
        return optuna.pruners.MedianPruner(**options)
    except TypeError as err:
        raise TuneError(f"pruner {spec}: {err}") from err


def open_study(name: str, storage_url: str, space: SearchSpace, heartbeat: int = 60, grace: int = 180,
               max_retry: int = 3) -> Any:
    """Create or load the study. A trial whose process died stops sending heartbeats; after ``grace`` seconds
    the next process to start a trial marks it failed and retries it with the same parameters."""
    import optuna
    from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            storage = RDBStorage(storage_url, heartbeat_interval=heartbeat, grace_period=grace,
                                 heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=max_retry))
    except Exception as err:  # SQLAlchemy raises many kinds: a bad URL, a missing driver, no server
        raise TuneError(f"--storage {storage_url}: cannot open ({type(err).__name__}: {err})") from err
    return optuna.create_study(study_name=name, storage=storage, direction="maximize", load_if_exists=True,
                               sampler=build_sampler(space.sampler), pruner=build_pruner(space.pruner))


def run_number(trial: Any) -> int:
    """The trial whose run folder this trial uses: a retry continues its original's folder (and last.ckpt)."""
    import optuna
    from optuna.storages import RetryHeartbeatStaleTrialCallback

    frozen = next(t for t in trial.study.get_trials(deepcopy=False) if t.number == trial.number)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        history = RetryHeartbeatStaleTrialCallback.retry_history(frozen)
    return history[0] if history else trial.number


@dataclass
class Objective:
    """Trains one trial in-process through the ``tacred fit`` CLI and returns its score (:meth:`SearchSpace.score`)."""

    space: SearchSpace
    trials_dir: Path
    configs: Sequence[str] = ()
    extra: Sequence[str] = ()

    def fit_args(self, params: dict[str, Any], run_dir: Path) -> list[str]:
        configs = [*self.space.configs, *self.configs]
        return ["fit", *(a for c in configs for a in ("--config", c)), *override_args(self.space.fixed),
                *override_args(params), "--seed_everything", str(self.space.seed), "--run_dir", str(run_dir),
                "--resume", "auto", *self.extra]

    def __call__(self, trial: Any) -> float:
        from optuna_integration import PyTorchLightningPruningCallback

        from tacred.lightning_cli import TacredCLI

        params = {p.name: p.suggest(trial) for p in self.space.parameters}
        run_dir = self.trials_dir / f"trial_{run_number(trial):04d}"
        trial.set_user_attr("run_dir", str(run_dir))
        log.info("trial %d (%s): %s", trial.number, run_dir, json.dumps(params))
        start = time.perf_counter()
        pruning = PyTorchLightningPruningCallback(trial, monitor=self.space.metric)
        warnings.filterwarnings("ignore", message=".*LightningCLI's args parameter is intended.*")
        try:
            TacredCLI(args=self.fit_args(params, run_dir), trainer_defaults={"callbacks": [pruning]})
        finally:
            trial.set_user_attr("seconds", round(time.perf_counter() - start, 1))
        scores = dev_f1_by_epoch(run_dir / "metrics.csv")
        if not scores:
            raise TuneError(f"{run_dir}/metrics.csv: no dev F1 was logged")
        trial.set_user_attr("epochs", max(scores) + 1)
        trial.set_user_attr("best_dev_f1", max(scores.values()))
        return self.space.score(scores)


def trial_rows(study: Any) -> list[dict[str, Any]]:
    """One row per trial: number, state, best dev F1, epochs trained, seconds, run folder and parameters."""
    rows = []
    for t in study.get_trials(deepcopy=False):
        steps = t.intermediate_values
        rows.append({"number": t.number, "state": t.state.name, "value": t.value,
                     "epochs": t.user_attrs.get("epochs", (max(steps) + 1) if steps else 0),
                     "seconds": t.user_attrs.get("seconds"), "run_dir": t.user_attrs.get("run_dir", ""),
                     "best_dev_f1": t.user_attrs.get("best_dev_f1", max(steps.values()) if steps else None),
                     "params": dict(t.params)})
    return rows


def best_trial(study: Any) -> Any | None:
    import optuna

    done = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))]
    return max(done, key=lambda t: t.value) if done else None


def render_trials_csv(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["number", "state", "value", "best_dev_f1", "epochs", "seconds", *names])
    for r in rows:
        value = "" if r["value"] is None else f"{r['value']:.6f}"
        best = "" if r["best_dev_f1"] is None else f"{r['best_dev_f1']:.6f}"
        writer.writerow([r["number"], r["state"], value, best, r["epochs"], r["seconds"] or "",
                         *(r["params"].get(n, "") for n in names)])
    return buf.getvalue()


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def render_summary(study: Any, space: SearchSpace, space_path: str, rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown summary: the budget, the best trial, and the ten best trials."""
    best = best_trial(study)
    states: dict[str, int] = {}
    for r in rows:
        states[r["state"]] = states.get(r["state"], 0) + 1
    epochs = sum(r["epochs"] for r in rows)
    hours = sum(r["seconds"] or 0 for r in rows) / 3600
    lines = [f"# Study `{study.study_name}`", "",
             f"Search space: `{space_path}` (base configs: {', '.join(f'`{c}`' for c in space.configs) or 'none'}; "
             f"training seed {space.seed}; objective: {space.describe()}, dev split only).",
             "", f"Budget so far: {len(rows)} trials ({', '.join(f'{n} {s.lower()}' for s, n in sorted(states.items()))}), "
             f"{epochs} epochs trained, {hours:.1f} h of training.", ""]
    if best is None:
        return "\n".join([*lines, "No trial has completed yet.", ""])
    lines += [f"Best: trial {best.number}, value {100 * best.value:.2f} (best dev F1 "
              f"{100 * best.user_attrs.get('best_dev_f1', best.value):.2f}; `{best.user_attrs.get('run_dir', '')}`)",
              "", "| parameter | value |", "|---|---|"]
    lines += [f"| `{k}` | {_fmt(v)} |" for k, v in best.params.items()]
    names = [p.name for p in space.parameters]
    top = sorted((r for r in rows if r["value"] is not None), key=lambda r: -r["value"])[:10]
    lines += ["", "Ten best trials:", "",
              "| trial | state | value | best dev F1 | epochs | "
              + " | ".join(f"`{n.split('.')[-1]}`" for n in names) + " |",
              "|---:|---|---:|---:|---:|" + "---:|" * len(names)]
    for r in top:
        best_f1 = "" if r["best_dev_f1"] is None else f"{100 * r['best_dev_f1']:.2f}"
        lines.append(f"| {r['number']} | {r['state'].lower()} | {100 * r['value']:.2f} | {best_f1} | {r['epochs']} | "
                     + " | ".join(_fmt(r["params"].get(n, "")) for n in names) + " |")
    return "\n".join([*lines, ""])


def export_trials(study: Any) -> list[dict[str, Any]]:
    """Every finished trial as plain data: parameters with their distributions, dev F1 per epoch, the value."""
    from optuna.distributions import distribution_to_json

    return [{"number": t.number, "state": t.state.name, "value": t.value, "params": t.params,
             "distributions": {k: json.loads(distribution_to_json(d)) for k, d in t.distributions.items()},
             "intermediate_values": {str(k): v for k, v in sorted(t.intermediate_values.items())},
             "user_attrs": t.user_attrs}
            for t in study.get_trials(deepcopy=False) if t.state.name in FINISHED]


def import_trials(study: Any, path: Path) -> int:
    """Seed a study that has no trials yet with the finished trials of an earlier export (``trials.json``), so a
    study continues from committed results on a fresh machine. Returns how many were added."""
    import optuna
    from optuna.distributions import json_to_distribution

    if not path.is_file() or study.get_trials(deepcopy=False):
        return 0
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
        trials = [optuna.trial.create_trial(
            state=optuna.trial.TrialState[r["state"]], value=r["value"], params=r["params"],
            distributions={k: json_to_distribution(json.dumps(d)) for k, d in r["distributions"].items()},
            intermediate_values={int(k): v for k, v in r["intermediate_values"].items()},
            user_attrs=r.get("user_attrs", {})) for r in records]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise TuneError(f"{path}: cannot read the exported trials ({err}); move it away to start afresh") from err
    study.add_trials(trials)
    return len(trials)


def write_study_files(study: Any, space: SearchSpace, space_path: str, out: Path) -> list[Path]:
    """``best.yaml`` (the best trial's parameters, a config file for ``tacred fit --config``), ``trials.csv``,
    ``summary.md`` and ``trials.json`` (every finished trial, from which a new storage is seeded) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = trial_rows(study)
    names = [p.name for p in space.parameters]
    paths = [out / name for name in STUDY_FILES]
    best = best_trial(study)
    if best is not None:
        configs = " ".join(f"--config {c}" for c in space.configs)
        header = (f"# Best trial {best.number} of study {study.study_name!r} ({space.describe()}: "
                  f"{100 * best.value:.2f}),\n"
                  f"# searched with {space_path}. Train with it:\n"
                  f"#   tacred fit {configs} --config {paths[0]} --seed_everything 1 --run_dir RUN\n")
        write_text_atomic(paths[0], header + yaml.safe_dump(nested({**space.fixed, **best.params}), sort_keys=False))
    write_text_atomic(paths[1], render_trials_csv(rows, names))
    write_text_atomic(paths[2], render_summary(study, space, space_path, rows))
    write_text_atomic(paths[3], json.dumps(export_trials(study), indent=1) + "\n")
    return [p for p in paths if p.exists()]

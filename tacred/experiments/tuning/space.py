"""The search space of ``tacred tune``: a YAML file naming base configs, fixed overrides, the searched options with
their ranges, the training seed, the objective, the sampler and the pruner."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tacred.errors import TacredError

PARAM_TYPES = ("float", "int", "categorical")
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "hyperband", "none")
OBJECTIVES = ("last", "best")


class TuneError(TacredError, ValueError):
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

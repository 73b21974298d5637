"""The Optuna side of ``tacred tune``: sampler, pruner, an RDB-backed study with heartbeat retries, and the
objective that trains one trial in-process with :func:`tacred.training.fit`."""

from __future__ import annotations

import json
import logging
import re
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacred.experiments.ablation import dev_f1_by_epoch, earlier_seconds
from tacred.experiments.tuning.records import OFFSET
from tacred.experiments.tuning.space import SearchSpace, TuneError, override_args

log = logging.getLogger(__name__)


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

    sampler, pruner = build_sampler(space.sampler), build_pruner(space.pruner)
    try:
        with warnings.catch_warnings(), schema_lock(storage_url):
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            storage = RDBStorage(storage_url, heartbeat_interval=heartbeat, grace_period=grace,
                                 heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=max_retry))
            return optuna.create_study(study_name=name, storage=storage, direction="maximize", load_if_exists=True,
                                       sampler=sampler, pruner=pruner)
    except Exception as err:  # SQLAlchemy raises many kinds: a bad URL, a missing driver, no server, a password
        raise storage_error(storage_url, err) from err


@contextmanager
def schema_lock(url: str) -> Iterator[None]:
    """On PostgreSQL, one worker at a time opens the storage: Optuna creates its tables on first use, and workers
    started together on an empty database would otherwise fail on each other's half-made tables (optuna#1092)."""
    if not url.startswith("postgresql"):
        yield
        return
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as connection:  # a session-level lock, released when this connection closes
            connection.exec_driver_sql(f"SELECT pg_advisory_lock({SCHEMA_LOCK})")
            yield
    finally:
        engine.dispose()


SCHEMA_LOCK = 0x7AC3ED  # the advisory lock's key: any number other programs on the database leave alone
# scheme://user:PASSWORD@, up to the last "@": more than SQLAlchemy reads where a password has an unquoted "@"
_PASSWORD = re.compile(r"^([\w+]+://[^:/@]*:)(.*)@")


def shown_url(url: str) -> str:
    """``url`` as messages and logs show it: a password in it replaced by ``***`` (SQLAlchemy's URL syntax)."""
    return _PASSWORD.sub(r"\1***@", url)


def storage_error(url: str, err: Exception) -> TuneError:
    """A one-line error for a storage that cannot be opened: what is wrong with it, never its password."""
    shown = shown_url(url)
    if type(err).__name__ in ("ArgumentError", "NoSuchModuleError"):
        return TuneError(f"--storage {shown}: not a database URL SQLAlchemy reads (e.g. sqlite:///PATH or "
                         "postgresql://USER@HOST:PORT/DATABASE)")
    if isinstance(err, ImportError):
        return TuneError(f"--storage {shown}: its database driver is not installed (postgresql:// needs psycopg 3, "
                         "which `pip install 'tacred[tune]'` brings; mysql:// needs mysqlclient)")
    reason = str(getattr(err, "orig", None) or err)  # the driver's own words, without SQLAlchemy's SQL and link
    password = _PASSWORD.match(url)
    if password and password.group(2):  # the drivers known here never say it; others might
        reason = re.sub(rf"(?<!\w){re.escape(password.group(2))}(?!\w)", "***", reason)
    return TuneError(f"--storage {shown}: cannot open the study's database ({' '.join(reason.split())})")


def run_number(trial: Any) -> int:
    """The trial whose run folder this trial uses: a retry continues its original's folder (and last.ckpt)."""
    import optuna
    from optuna.storages import RetryHeartbeatStaleTrialCallback

    frozen = next(t for t in trial.study.get_trials(deepcopy=False) if t.number == trial.number)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        history = RetryHeartbeatStaleTrialCallback.retry_history(frozen)
    return history[0] if history else trial.number


def run_label(trial: Any) -> int:
    """The label (:func:`tacred.experiments.tuning.records.trial_label`) and run folder number of the trial about to run: after
    every label of the study's seed records, and a retry's is its original's."""
    return int(trial.study.user_attrs.get(OFFSET, 0)) + run_number(trial)


@dataclass
class Objective:
    """Trains one trial in-process with :func:`tacred.training.fit` and returns its score (:meth:`SearchSpace.score`)."""

    space: SearchSpace
    trials_dir: Path
    configs: Sequence[str] = ()
    extra: Sequence[str] = ()

    def fit_args(self, params: dict[str, Any], run_dir: Path, seed: int | None = None) -> list[str]:
        """``tacred fit`` options of a trial; ``seed``: another training seed than the study's (a re-check)."""
        configs = [*self.space.configs, *self.configs]
        seed = self.space.seed if seed is None else seed
        return [*(a for c in configs for a in ("--config", c)), *override_args(self.space.fixed),
                *override_args(params), "--seed_everything", str(seed), "--run_dir", str(run_dir),
                "--resume", "auto", *self.extra]

    def __call__(self, trial: Any) -> float:
        from optuna_integration import PyTorchLightningPruningCallback

        from tacred.experiments.results import provenance
        from tacred.training import fit

        params = {p.name: p.suggest(trial) for p in self.space.parameters}
        label = run_label(trial)
        run_dir = self.trials_dir / f"trial_{label:04d}"
        trial.set_user_attr("trial", label)
        trial.set_user_attr("run_dir", str(run_dir))
        for key, value in provenance().items():  # commit (+dirty: with uncommitted edits), versions, CPU kernels
            trial.set_user_attr(key, value)
        log.info("trial %d (%s): %s", label, run_dir, json.dumps(params))
        start = time.perf_counter() - earlier_seconds(run_dir)  # a resumed trial counts its earlier legs too
        pruning = PyTorchLightningPruningCallback(trial, monitor=self.space.metric)
        try:
            # in this process, so that the pruning callback reports to the trial; a pruned trial keeps its metrics
            fit(args=self.fit_args(params, run_dir), callbacks=[pruning], keep_failed=True)
        finally:
            trial.set_user_attr("seconds", round(time.perf_counter() - start, 1))
        scores = dev_f1_by_epoch(run_dir / "metrics.csv")
        if not scores:
            raise TuneError(f"{run_dir}/metrics.csv: no dev F1 was logged")
        trial.set_user_attr("epochs", max(scores) + 1)
        trial.set_user_attr("best_dev_f1", max(scores.values()))
        return self.space.score(scores)

"""Train and evaluate from Python: :func:`fit` is what ``tacred fit`` runs (and ``tacred ablate``, ``ensemble`` and
``tune`` with it), :func:`evaluate` what every stored result, ensemble member and notebook figure is computed with.

::

    run = fit("configs/demo.yaml", ["--trainer.max_epochs", "2"], run_dir="runs/py", seed=1)
    result = evaluate(run, "test")      # a checkpoint (or run folder) over one split: an Evaluation
    print(result.score().f1)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.errors import ConfigError, TacredError

if TYPE_CHECKING:
    from tacred.data.batching import EncodedSplit
    from tacred.evaluation.predictions import Evaluation
    from tacred.training.datamodule import TacredDataModule

SPLITS = ("train", "dev", "test")
Config = str | Path | Mapping[str, Any]  # a YAML file, or its options as a mapping (as config.yaml holds them)


class FitError(TacredError, RuntimeError):
    """A fit in a subprocess that exited with an error; its output is in ``log`` (or was shown)."""

    def __init__(self, message: str, returncode: int, command: list[str], log: Path | None) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.command = command
        self.log = log


def fit_options(config: Config | Sequence[Config] | None = None, args: Sequence[str] = (), *,
                run_dir: str | Path | None = None, seed: int | None = None, resume: str | None = None) -> list[str]:
    """The options of ``tacred fit`` for :func:`fit`'s arguments, in order: each config as ``--config`` (a mapping
    as YAML text), ``--seed_everything``, ``--run_dir``, ``--resume``, then ``args``, so ``args`` has the last word."""
    import yaml

    configs = [] if config is None else [config] if isinstance(config, str | Path | Mapping) else list(config)
    options = []
    for c in configs:
        options += ["--config", yaml.safe_dump(dict(c), sort_keys=False) if isinstance(c, Mapping) else str(c)]
    for name, value in (("--seed_everything", seed), ("--run_dir", run_dir), ("--resume", resume)):
        if value is not None:
            options += [name, str(value)]
    return [*options, *args]


def fit_command(options: Sequence[str]) -> list[str]:
    """The command line of a fit in a subprocess: ``python -m tacred fit OPTIONS`` with this interpreter."""
    return [sys.executable, "-m", "tacred", "fit", *options]


def fit(config: Config | Sequence[Config] | None = None, args: Sequence[str] = (), *,
        run_dir: str | Path | None = None, seed: int | None = None, resume: str | None = None,
        callbacks: Sequence[Any] = (), in_subprocess: bool = False, log: str | Path | None = None,
        keep_failed: bool = False) -> Path:
    """Train a model as ``tacred fit`` does and return its run folder (``config.yaml``, ``metrics.csv``,
    ``checkpoints/best.ckpt`` and ``last.ckpt``).

    Args:
        config: config file(s) applied in order (``configs/demo.yaml``), or options as a mapping
            (``{"trainer": {"max_epochs": 2}}``).
        args: further ``tacred fit`` options (``["--data.data_dir", "data/demo"]``), applied last.
        run_dir, seed, resume: ``--run_dir``, ``--seed_everything``, ``--resume`` (``auto``: continue from
            ``RUN/checkpoints/last.ckpt`` when it exists; ``never``: start over).
        callbacks: Lightning callbacks added to the Trainer's (a tuning trial's pruning callback).
        in_subprocess: train in a new ``python -m tacred fit`` process, so that a crash or a claim stays in it
            (``tacred ablate`` and ``ensemble``); its exit status, when not 0, is a :class:`FitError`.
        log: with ``in_subprocess``, the file its output is appended to (default: this process's output).
        keep_failed: keep what a fit that stops with an error before its first checkpoint wrote (a tuning trial
            pruned in its first epoch keeps its metrics); by default the run folder is left as it was found.

    A fit in this process returns the run folder the configuration resolved (``run_dir``, unless ``args`` says
    otherwise; without either, ``run_dir`` of a config file, else ``runs/default``). A fit in a subprocess returns the
    last ``--run_dir`` of its options, which must be given (and not changed by a ``--config`` in ``args``).
    """
    options = fit_options(config, args, run_dir=run_dir, seed=seed, resume=resume)
    if in_subprocess:
        given = _last_run_dir(options)
        if callbacks:
            raise ValueError("fit(in_subprocess=True): callbacks live in this process and cannot be given")
        if given is None:
            raise ValueError("fit(in_subprocess=True) needs the run folder: give run_dir (or --run_dir in args)")
        command = fit_command(options)
        code = run_process(command, None if log is None else Path(log))
        if code != 0:
            raise FitError(f"tacred fit failed with exit code {code} (run folder {given})", code, command,
                           None if log is None else Path(log))
        return given
    if log is not None:
        raise ValueError("fit(log=...) is the output file of a fit in a subprocess: give in_subprocess=True")
    from tacred.training.launch import lightning_command

    cli = lightning_command(["fit", *options], callbacks, keep_failed)
    return Path(cli.config.fit.run_dir)  # as the configuration resolved it


def _last_run_dir(options: Sequence[str]) -> Path | None:
    """The last ``--run_dir`` of ``options`` (the one the parser keeps), with environment variables expanded as
    :class:`~tacred.training.cli.TacredCLI` expands them."""
    found = None
    for i, arg in enumerate(options):
        if arg == "--run_dir" and i + 1 < len(options):
            found = options[i + 1]
        elif arg.startswith("--run_dir="):
            found = arg.split("=", 1)[1]
    return None if found is None else Path(os.path.expandvars(found))


def run_process(command: list[str], log: Path | None = None) -> int:
    """Run ``command`` unbuffered (W&B offline unless set); with ``log``, its output is appended there after a
    ``$ COMMAND`` line. Returns its exit status."""
    import subprocess

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.setdefault("WANDB_MODE", "offline")
    if log is None:
        return subprocess.run(command, env=env, check=False).returncode
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(command)}\n")
        f.flush()
        return subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, env=env, check=False).returncode


# -- evaluating -------------------------------------------------------------------------------------------------------
def datamodule_for(ckpt_path: str | Path, data_dir: str | Path | None = None, file: str | Path | None = None,
                   checkpoint: dict[str, Any] | None = None) -> TacredDataModule:
    """The checkpoint's data module (its saved data options and its own vocabularies); ``data_dir`` moves the
    split files, ``file`` becomes the ``predict`` split. ``checkpoint``: the file's contents when read already."""
    from tacred.checkpoints import read_checkpoint
    from tacred.training.datamodule import TacredDataModule

    ckpt = read_checkpoint(ckpt_path) if checkpoint is None else checkpoint
    saved = dict(ckpt.get("datamodule_hyper_parameters") or {})
    saved.update(vocab_path=str(ckpt_path), glove_path=None)
    if data_dir is not None:
        saved["data_dir"] = str(data_dir)
    if file is not None:
        saved["predict_file"] = str(Path(file).resolve())
    return TacredDataModule(**saved)


def checkpoint_split(ckpt_path: str | Path, split: str = "dev", data_dir: str | Path | None = None,
                     file: str | Path | None = None,
                     checkpoint: dict[str, Any] | None = None) -> tuple[EncodedSplit, str, Path]:
    """A split of the checkpoint's own data, encoded with its vocabularies, a description of its source and the
    file it was read from; ``file`` (a TACRED JSON file) replaces ``split``."""
    split = "predict" if file is not None else split
    if split not in (*SPLITS, "predict"):
        raise ConfigError(f"unknown split {split!r}: expected train, dev, test (or a file)")
    dm = datamodule_for(ckpt_path, data_dir, file, checkpoint)
    path = dm.path(split)
    if not path.is_file():
        raise FileNotFoundError(f"{split} data of {ckpt_path} not found: {path} (pass --data_dir or --file)")
    return dm.encoded(split), f"{split} ({path})", path


def evaluate(checkpoint: str | Path, split: str | Path = "test", *, data_dir: str | Path | None = None,
             batch_size: int = 256, device: str = "cpu") -> Evaluation:
    """A checkpoint's label probabilities over one split of its own data (the data options and vocabularies saved
    in it), as an :class:`~tacred.evaluation.predictions.Evaluation` (``.score()``, ``.predicted()``,
    ``.hardest()``). The network runs in this process without a Trainer, in fp32 (probabilities kept as float64),
    so every stored figure comes from one path whatever the training precision.

    Args:
        checkpoint: a checkpoint file, or a run folder (its ``checkpoints/best.ckpt``, else ``last.ckpt``).
        split: ``train``, ``dev`` or ``test``, or a TACRED JSON file.
        data_dir: where the split files are, when they moved since training.
        batch_size: examples per forward pass.
        device: ``cpu`` (default), ``cuda``, ``cuda:N`` or ``auto`` (CUDA when present); an absent one is a
            :class:`~tacred.devices.DeviceError`.
    """
    import numpy as np

    from tacred.checkpoints import read_checkpoint, reading_once, resolve_checkpoint
    from tacred.datasets.conversion import unconverted_gold
    from tacred.devices import torch_device
    from tacred.evaluation.predictions import Evaluation
    from tacred.inference.trained import TrainedNetwork

    file = None if str(split) in SPLITS else Path(split)
    if file is not None and not file.is_file():
        raise FileNotFoundError(f"evaluate: {str(split)!r} is neither a split ({', '.join(SPLITS)}) nor a file")
    resolved = torch_device(device)  # an absent device is an error before the file is read
    path = resolve_checkpoint(checkpoint)
    with reading_once():  # one read for the network, the data options and the data module's vocabularies
        contents = read_checkpoint(path)
        model = TrainedNetwork.from_contents(contents, path, map_location=resolved)
        encoded, source, split_file = checkpoint_split(path, str(split), data_dir, file, contents)
    probs = model.split_probabilities(encoded, batch_size).double().numpy()  # (N, L)
    return Evaluation(list(encoded.ids), list(model.vocab.labels.itos), model.vocab.no_relation,
                      np.asarray(encoded.labels, dtype=np.int64), probs, encoded.examples, source,
                      unconverted_gold(split_file, len(encoded.ids)))

"""One Lightning sub-command (fit, validate, test or predict) run in this process, as ``tacred COMMAND`` runs it:
config files read strictly, a ``--ckpt_path`` checked (and the configuration saved in it used) before Lightning reads
it, and what a failed command added to the run folder removed again (:class:`~tacred.training.run_folder.RunFolderGuard`).
``tacred fit`` and :func:`tacred.training.fit` train through here; ``tacred validate/test/predict`` evaluate through here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tacred.training.cli import TacredCLI

EVAL_COMMANDS = ("validate", "test", "predict")


def lightning_command(argv: list[str], callbacks: Sequence[Any] = (), keep_failed: bool = False) -> TacredCLI:
    """Run ``tacred COMMAND ARGS`` (``argv``: COMMAND, then its options spelled with underscores) and return the
    finished :class:`~tacred.training.cli.TacredCLI`. ``callbacks``: Lightning callbacks added to the Trainer's
    (a tuning trial's pruning callback). A command that fails removes what it added to the run folder unless a
    checkpoint was written, or ``keep_failed`` is given. The ``--ckpt_path`` file is read once, for the checks, the
    configuration, the vocabularies and Lightning's restore alike (:func:`tacred.checkpoints.reading_once`), and each
    data file once, for its check before the heavy imports and the data module alike
    (:func:`tacred.data.examples.reading_examples_once`)."""
    from tacred.checkpoints import reading_once
    from tacred.data.examples import reading_examples_once

    with reading_once(), reading_examples_once():
        return _lightning_command(argv, callbacks, keep_failed)


def _lightning_command(argv: list[str], callbacks: Sequence[Any], keep_failed: bool) -> TacredCLI:
    from tacred.options.command_checks import check_command, check_data_files
    from tacred.options.config_files import check_config_files
    from tacred.training.run_folder import RunFolderGuard

    guard = RunFolderGuard()
    try:
        check_config_files(argv)
        argv = split_files_from_here(argv)
        ckpt_path = option_value(argv, "--ckpt_path")
        check_command(argv)  # option values before torch and Lightning load, data files below
        from tacred.checkpoints import check_checkpoint_file, is_lightning_ckpt_name, run_config

        checkpoint = None
        if ckpt_path is not None and not is_lightning_ckpt_name(ckpt_path) and Path(ckpt_path).is_dir():
            from tacred.checkpoints import resolve_checkpoint

            resolved = str(resolve_checkpoint(ckpt_path))  # a run folder: its best.ckpt, else last.ckpt
            argv = [resolved if a == ckpt_path else a.replace(f"--ckpt_path={ckpt_path}", f"--ckpt_path={resolved}")
                    for a in argv]
            ckpt_path = resolved
        if ckpt_path is not None and not is_lightning_ckpt_name(ckpt_path):
            check_checkpoint_file(ckpt_path)  # a wrong path answered in ~0.1 s, before torch and Lightning load
        # every example of the data files before torch loads, where the command line names them all; an evaluation
        # whose checkpoint holds the rest of its configuration: the files named here, the others once it is read
        whole = argv[0] not in EVAL_COMMANDS or ckpt_path is None or has_config(argv)
        beside = None if whole or is_lightning_ckpt_name(ckpt_path) else run_config(ckpt_path)
        if beside is not None:  # the run folder's config.yaml names them all and --data.strict: checked whole
            check_data_files([argv[0], "--config", str(beside), *argv[1:]])
        else:
            check_data_files(argv, given_only=not whole)
        if ckpt_path is not None and not is_lightning_ckpt_name(ckpt_path):
            from tacred.checkpoints import read_checkpoint

            checkpoint = read_checkpoint(ckpt_path)  # a corrupt file: one clear line before LightningCLI reads it
            warn_replaced_options(argv, checkpoint)
            argv = with_checkpoint_config(argv, checkpoint)
            from tacred.options.command_checks import refuse_joint_predict

            refuse_joint_predict(argv)  # the checkpoint's own configuration may name the joint model
        check_data_files(argv)  # of the checkpoint's configuration with the command line's (each file read once)
        from tacred.options.command_checks import given_config, is_joint
        from tacred.training.cli import JointCLI, TacredCLI

        cli = JointCLI if is_joint(given_config(argv)) else TacredCLI
        extra: dict[str, Any] = {"trainer_defaults": {"callbacks": list(callbacks)}} if callbacks else {}
        return cli(args=argv, guard=guard, checkpoint=None if checkpoint is None else (ckpt_path, checkpoint),
                         **extra)
    except BaseException:
        if not keep_failed:
            guard.undo()
        raise


def option_value(argv: Sequence[str], name: str) -> str | None:
    """The value of option ``name`` on a command line (``--name VALUE`` or ``--name=VALUE``; the first one given)."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def has_config(argv: Sequence[str]) -> bool:
    """Whether a ``--config`` is given (an evaluation then does not take the configuration saved in its checkpoint)."""
    return option_value(argv, "--config") is not None or option_value(argv, "-c") is not None


SPLIT_FILE_OPTIONS = tuple(f"--data.{split}_file" for split in ("train", "dev", "test", "predict"))


def split_files_from_here(argv: list[str]) -> list[str]:
    """A split file given on the command line is relative to the current folder (made absolute here), unless
    ``--data.data_dir`` is given on the same command line, which the split files are then relative to. A
    ``data_dir`` from a config file or a checkpoint stays what it was; it applies to the files they name."""
    if option_value(argv, "--data.data_dir") is not None:
        return argv
    out = list(argv)
    for i, arg in enumerate(out):
        for name in SPLIT_FILE_OPTIONS:
            if arg == name and i + 1 < len(out) and not Path(out[i + 1]).is_absolute():
                out[i + 1] = str(Path(out[i + 1]).absolute())
            elif arg.startswith(name + "=") and not Path(value := arg.split("=", 1)[1]).is_absolute():
                out[i] = f"{name}={Path(value).absolute()}"
    return out


def warn_replaced_options(argv: list[str], checkpoint: dict[str, Any]) -> None:
    """LightningCLI applies a ``--ckpt_path``'s model hyperparameters over the command line: say which options given
    on it are replaced (``--model.lr 0.01`` with a checkpoint trained at 0.1 tests or resumes at 0.1)."""
    saved = checkpoint.get("hyper_parameters") or {}
    for arg in argv[1:]:
        name = arg.split("=", 1)[0]
        if name.startswith("--model.") and name[len("--model."):].split(".")[0] in saved:
            logging.getLogger("tacred").warning(
                "%s is replaced by the checkpoint's own value: --ckpt_path restores the model's hyperparameters "
                "(Lightning CLI); start a new run without --ckpt_path to change them", name)


def checkpoint_run_folder(ckpt_path: str | Path) -> Path:
    """The run folder a checkpoint belongs to: ``RUN`` for ``RUN/checkpoints/x.ckpt``, else the checkpoint's folder."""
    folder = Path(ckpt_path).parent
    return folder.parent if folder.name == "checkpoints" else folder


def with_checkpoint_config(argv: list[str], checkpoint: dict[str, Any]) -> list[str]:
    """``tacred test --ckpt_path X`` without ``--config``: the configuration saved inside the checkpoint becomes the
    first ``--config`` (jsonargparse reads a config given as YAML text), so the command line applies on top of it;
    LightningCLI then applies the checkpoint's model hyperparameters, as it does for every ``--ckpt_path``."""
    if argv[0] not in EVAL_COMMANDS or has_config(argv):
        return argv
    ckpt_path = option_value(argv, "--ckpt_path")
    from tacred.checkpoints import CheckpointError

    config: Any = checkpoint.get("tacred_config")
    if not isinstance(config, str) or not config:
        raise CheckpointError(f"{ckpt_path}: holds no tacred configuration (not written by `tacred fit`?); "
                              "pass the run's config.yaml with --config")
    import yaml

    try:
        data = yaml.safe_load(config)
    except yaml.YAMLError as err:
        raise CheckpointError(f"{ckpt_path}: its stored configuration is not valid YAML ({err})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{ckpt_path}: its stored configuration is not a mapping of options")
    for key in ("ckpt_path", "resume", "verbose"):
        data.pop(key, None)
    # outputs go beside the checkpoint (the run it belongs to), not into its training path taken from the current
    # folder; --run_dir on the command line still chooses
    data["run_dir"] = str(checkpoint_run_folder(ckpt_path))
    (data.get("trainer") or {}).pop("default_root_dir", None)
    # checkpoints written before data.embedding_dim became a link target of model.network.word_dim hold both
    (data.get("data") or {}).pop("embedding_dim", None)
    # how the model was trained (4 GPUs, DDP, 2 nodes) says nothing about where it is evaluated: defaults apply
    for key in ("devices", "num_nodes", "strategy", "accelerator"):
        (data.get("trainer") or {}).pop(key, None)
    return [argv[0], "--config", yaml.safe_dump(data), *argv[1:]]

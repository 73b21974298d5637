"""The command line of ``tacred fit/validate/test/predict`` checked before Lightning is imported (several seconds):
the Trainer options that would fail late, ``--num_threads``, and the data files the command reads, example by
example. The classes check their own options again when they are built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tacred.errors import ConfigError
from tacred.option_rules import Rule, above, at_least


def _epochs(value: Any, options: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and (value >= 1 or value == -1)
    return None if value is None or ok else "must be >= 1 (or -1 for no limit)"


# Lightning's Trainer takes many more options; these would otherwise fail late or pass silently
TRAINER_RULES: dict[str, Rule] = {
    "max_epochs": _epochs,
    "min_epochs": at_least(0, none_ok=True),
    "gradient_clip_val": at_least(0, none_ok=True),
    "accumulate_grad_batches": at_least(1, none_ok=True),
    "check_val_every_n_epoch": at_least(1, none_ok=True),
    "log_every_n_steps": at_least(1, none_ok=True),
}

# the splits each command reads
STAGE_SPLITS = {"fit": ("train", "dev"), "validate": ("dev",), "test": ("test",), "predict": ("predict",)}


def check_trainer_and_threads(config: Mapping[str, Any]) -> None:
    """The Trainer options of :data:`TRAINER_RULES`, ``num_threads`` and ``checkpoint_minutes`` of a configuration
    (nested mappings, or jsonargparse's namespace)."""
    trainer = config.get("trainer") or {}
    if not hasattr(trainer, "get"):
        return
    for name, rule in TRAINER_RULES.items():
        problem = rule(trainer.get(name), trainer)
        if problem:
            raise ConfigError(f"--trainer.{name} {trainer.get(name)!r}: {problem}")
    problem = at_least(1, none_ok=True)(config.get("num_threads"), config)
    if problem:
        raise ConfigError(f"--num_threads {config.get('num_threads')!r}: {problem}")
    minutes = config.get("checkpoint_minutes")
    problem = None if minutes is None else above(0)(minutes, config)
    if problem:
        raise ConfigError(f"--checkpoint_minutes {minutes!r}: {problem} (or null: at epoch ends only)")


def check_model_and_data(config: Mapping[str, Any], texts: Mapping[str, str] | None = None) -> None:
    """The model's, the network's and the data module's options that ``config`` gives, against their rules
    (:mod:`tacred.training.option_specs`, :mod:`tacred.models.network_options`); the attention variants' own
    options are checked when the network's configuration is built. ``texts``: the options typed on the command line
    (:func:`command_line_texts`), whose values of the wrong type are named here as the parser would name them."""
    texts = texts or {}
    from tacred.models.network_options import NetworkOptions
    from tacred.option_rules import OptionError, shown
    from tacred.training.option_specs import (
        DATA_DEFAULTS,
        DataOption,
        ModelOption,
        check_given,
        dataclass_defaults,
    )

    model, data = _init_args(config.get("model")), _init_args(config.get("data"))
    for group, values, spec, defaults in (
        ("model", model, ModelOption, {}),
        ("model.network", _init_args(model.get("network")), NetworkOptions, dataclass_defaults(NetworkOptions)),
        ("data", data, DataOption, DATA_DEFAULTS),
    ):
        typed_on_command_line = {name[len(group) + 1:]: text for name, text in texts.items()
                                 if name.startswith(group + ".") and "." not in name[len(group) + 1:]}
        try:
            check_given(spec, values, defaults, typed_on_command_line)
        except OptionError as err:
            raise ConfigError(f"--{group}.{err.option} {shown(err.value)}: {err.rule}") from None


def _init_args(section: Any) -> Mapping[str, Any]:
    """A config section's options (its ``init_args`` when given as a class path); empty when not a mapping."""
    if not isinstance(section, Mapping):
        return {}
    return section["init_args"] if isinstance(section.get("init_args"), Mapping) else section


def given_config(argv: Sequence[str]) -> dict[str, Any]:
    """The options of ``COMMAND ARGS`` as jsonargparse would merge them, as far as plain values go: every
    ``--config`` (a file, or YAML text as a checkpoint's stored configuration is passed) then ``--a.b VALUE`` in
    order. Values are read as YAML (``-1`` is a number); what is not a plain option is left to Lightning."""
    import yaml

    from tacred.training.config_files import load_yaml

    merged: dict[str, Any] = {}
    for name, value in _options(argv):
        if name in ("--config", "-c"):
            loaded = yaml.safe_load(value) if "\n" in value else load_yaml(value)
            _merge(merged, loaded if isinstance(loaded, dict) else {})
        elif name.startswith("--"):
            _merge(merged, _nested(name[2:].split("."), _plain_value(value)))
    return merged


def command_line_texts(argv: Sequence[str]) -> dict[str, str]:
    """The text of each ``--a.b VALUE`` option of ``COMMAND ARGS`` as typed (the last one given), by ``a.b``."""
    return {name[2:]: value for name, value in _options(argv) if name.startswith("--") and name != "--config"}


def _options(argv: Sequence[str]) -> list[tuple[str, str]]:
    """(name, value) of every option of ``COMMAND ARGS`` that has a value (``--a.b VALUE`` or ``--a.b=VALUE``)."""
    found, args, i = [], list(argv[1:]), 0
    while i < len(args):
        arg = args[i]
        name, value = (arg.split("=", 1) + [None])[:2] if arg.startswith("--") else (arg, None)
        if value is None and i + 1 < len(args) and not args[i + 1].startswith("--"):
            value, i = args[i + 1], i + 1
        i += 1
        if value is not None and (name.startswith("--") or name == "-c"):
            found.append((name, value))
    return found


def _plain_value(text: str) -> Any:
    """A command-line value as jsonargparse reads it: YAML, where ``1e-9`` is also a number (YAML 1.1 wants a dot)."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return value


def _nested(keys: list[str], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(keys):
        out = {key: out}
    return out


def _merge(into: dict[str, Any], new: Mapping[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = dict(value) if isinstance(value, Mapping) else value


def data_files(command: str, config: Mapping[str, Any]) -> list[Path]:
    """The data files ``command`` reads under ``config`` (the rule of ``TacredDataModule.path``)."""
    data = config.get("data") or {}
    if not isinstance(data, Mapping):
        return []
    init = data.get("init_args") if isinstance(data.get("init_args"), Mapping) else data
    data_dir = init.get("data_dir")
    names = {"train": init.get("train_file") or "train.json", "dev": init.get("dev_file") or "dev.json",
             "test": init.get("test_file") or "test.json"}
    names["predict"] = init.get("predict_file") or names["test"]
    paths = []
    for split in STAGE_SPLITS.get(command, ()):
        name = Path(str(names[split]))
        paths.append(name if name.is_absolute() or not data_dir else Path(str(data_dir)) / name)
    return paths


def check_command(argv: Sequence[str]) -> None:
    """The options of ``COMMAND ARGS`` checked before Lightning: Trainer options, ``--num_threads``, the model's and
    the data's options (the data files: :func:`check_data_files`)."""
    if _asks_for_help(argv):
        return
    config = given_config(argv)
    check_trainer_and_threads(config)
    check_model_and_data(config, command_line_texts(argv))


def check_data_files(argv: Sequence[str], given_only: bool = False) -> None:
    """Every example of the data files ``COMMAND ARGS`` reads, validated with the json module alone
    (:func:`tacred.data.examples.check_examples`, under ``--data.strict``), so that a malformed file is reported
    before torch and Lightning load; inside :func:`tacred.data.examples.reading_examples_once` the data module
    then takes the examples from this read. ``given_only``: only the files the command line names
    (``--data.test_file``, absolute or in a ``--data.data_dir`` given there), as an evaluation's checkpoint holds the
    rest of its configuration, ``--data.strict`` included (unless given here, the files are checked whole, and their
    examples once the checkpoint is read)."""
    if _asks_for_help(argv):
        return
    if not given_only:
        config = given_config(argv)
        strict = _init_args(config.get("data")).get("strict", True)
        for path in data_files(argv[0], config):
            _check_examples(path, strict)
        return
    given = command_line_texts(argv)
    strict = _plain_value(given["data.strict"]) if "data.strict" in given else None
    for split in STAGE_SPLITS.get(argv[0], ()):
        name, data_dir = given.get(f"data.{split}_file"), given.get("data.data_dir")
        if name is not None and (Path(name).is_absolute() or data_dir is not None):
            _check_examples(Path(data_dir or "") / name, strict)


def _check_examples(path: Path, strict: Any) -> None:
    from tacred.data.examples import check_examples

    check_examples(path, strict=None if strict is None else strict is not False)


def _asks_for_help(argv: Sequence[str]) -> bool:
    return any(a in ("-h", "--help") or a.startswith("--print_config") for a in argv)

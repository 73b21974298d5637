"""The command line of ``tacred fit/validate/test/predict`` checked before Lightning is imported (several seconds):
the Trainer options that would fail late, ``--num_threads``, and the data files the command reads, example by
example. The classes check their own options again when they are built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tacred.errors import ConfigError
from tacred.options.rules import Rule, above, at_least


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


def _encoder(value: Any, options: Any) -> str | None:
    """A packaged encoder's short name or a local Hugging Face model folder (nothing is fetched from a hub)."""
    from tacred.data.pretrained_packages import PACKAGED_MODELS, SPLIT_MODELS

    if not isinstance(value, str) or not value:
        return "must name an encoder"
    if value in PACKAGED_MODELS or value in SPLIT_MODELS or (Path(value) / "config.json").is_file():
        return None
    return (f"neither a packaged encoder ({', '.join([*PACKAGED_MODELS, *SPLIT_MODELS])}) nor a folder holding a "
            "Hugging Face model (config.json)")


# the joint model's and its data module's options (tacred.training.joint_module / joint_datamodule) and their rules
JOINT_OPTIONS: dict[str, dict[str, Rule]] = {
    "model": {"pretrained": _encoder,
              "lr": above(0), "head_lr": lambda v, o: None if v is None else above(0)(v, o), "weight_decay": at_least(0),
              "warmup_ratio": lambda v, o: None if isinstance(v, int | float) and 0 <= v <= 1 else "must lie in [0, 1]",
              "width_dim": at_least(1), "type_dim": at_least(1), "hidden": at_least(1),
              "dropout": lambda v, o: None if isinstance(v, int | float) and 0 <= v < 1 else "must lie in [0, 1)",
              "shapes": lambda v, o: None if isinstance(v, bool) else "must be true or false",
              "relation_weight": above(0),
              "use_signatures": lambda v, o: None if isinstance(v, bool) else "must be true or false",
              "relation_threshold": lambda v, o: None if v is None or (isinstance(v, int | float) and 0 < v < 1)
              else "must lie in (0, 1)",
              "min_precision": lambda v, o: None if v is None or (isinstance(v, int | float) and 0 < v < 1)
              else "must lie in (0, 1)",
              "output_dir": lambda v, o: None, "transformer_config": lambda v, o: None},
    "data": {"data_dir": lambda v, o: None, "train_file": lambda v, o: None, "dev_file": lambda v, o: None,
             "test_file": lambda v, o: None, "types_file": lambda v, o: None, "max_width": at_least(1, none_ok=True),
             "batch_size": at_least(1), "eval_batch_size": at_least(1, none_ok=True), "num_workers": at_least(0),
             "seed": lambda v, o: None, "vocab_path": lambda v, o: None, "tokenizer": lambda v, o: None},
}


def is_joint(config: Mapping[str, Any]) -> bool:
    """Whether a configuration trains or evaluates the joint entity-and-relation model (its ``model.class_path``)."""
    model = config.get("model")
    return isinstance(model, Mapping) and str(model.get("class_path") or "").rsplit(".", 1)[-1] == "JointExtractor"


def _joint_section(section: Any) -> dict[str, Any]:
    """A class_path section's options: its ``init_args``, with the options given beside them (``--model.lr`` on the
    command line lands there) over them."""
    if not isinstance(section, Mapping):
        return {}
    given = {k: v for k, v in section.items() if k not in ("class_path", "init_args")}
    return {**dict(_init_args(section)), **given}


def check_joint_options(config: Mapping[str, Any]) -> None:
    """The joint model's and its data module's options against :data:`JOINT_OPTIONS` (unknown names too)."""
    for group, rules in JOINT_OPTIONS.items():
        for name, value in _joint_section(config.get(group)).items():
            if name not in rules:
                raise ConfigError(f"--{group}.{name}: not an option of the joint model's {group} (its options: "
                                  f"{', '.join(rules)})")
            problem = rules[name](value, config)
            if problem:
                raise ConfigError(f"--{group}.{name} {value!r}: {problem}")


def check_joint_files(command: str, config: Mapping[str, Any]) -> None:
    """Every sentence of the files a joint model's command reads, in SpERT's layout, checked with the json module
    alone; dev and test against the training data's types (or the types file)."""
    from tacred.datasets.spert_layout import check_known, read_sentences, read_types, types_of

    data = _joint_section(config.get("data"))
    base = data.get("data_dir")

    def path(name: Any) -> Path:
        p = Path(str(name))
        return p if p.is_absolute() or not base else Path(str(base)) / p

    trains = data.get("train_file", "train.json")
    trains = [trains] if isinstance(trains, str) else list(trains or [])
    given = read_types(str(data["types_file"])) if data.get("types_file") else None
    types = given
    if command == "fit":
        train = [s for name in trains for s in read_sentences(path(name), given)]
        types = given or types_of(train)
    for split in STAGE_SPLITS.get(command, ()):
        if split in ("train", "predict"):
            continue
        name = path(data.get(f"{split}_file") or f"{split}.json")
        sentences = read_sentences(name, given)
        if types is not None:
            check_known(sentences, types, str(name))


def check_model_and_data(config: Mapping[str, Any], texts: Mapping[str, str] | None = None) -> None:
    """The model's, the network's and the data module's options that ``config`` gives, against their rules
    (:mod:`tacred.options.specs`, :mod:`tacred.options.network`); the attention variants' own
    options are checked when the network's configuration is built. ``texts``: the options typed on the command line
    (:func:`command_line_texts`), whose values of the wrong type are named here as the parser would name them."""
    if is_joint(config):
        check_joint_options(config)
        return
    texts = texts or {}
    from tacred.options.network import NetworkOptions
    from tacred.options.rules import OptionError, shown
    from tacred.options.specs import (
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

    from tacred.options.config_files import load_yaml

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
    refuse_joint_predict(argv, config)
    check_model_and_data(config, command_line_texts(argv))


def refuse_joint_predict(argv: Sequence[str], config: Mapping[str, Any] | None = None) -> None:
    """``tacred predict`` classifies TACRED examples: for a joint model it is refused with what to use instead."""
    if argv and argv[0] == "predict" and is_joint(given_config(argv) if config is None else config):
        raise ConfigError("tacred predict classifies TACRED examples; a joint model reads raw text: tacred extract "
                          "DOCS --ckpt_path RUN (or score it: tacred test --ckpt_path RUN)")


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
        if is_joint(config):
            check_joint_files(argv[0], config)
            return
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

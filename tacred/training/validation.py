"""Every option checked before any work starts: positive sizes, probabilities in [0, 1), heads dividing the model
dimension, known choices. The checks take plain values, so the classes (Python API) and the command line
(:func:`check_options`, messages naming ``--model.network.num_heads`` etc.) share them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tacred.errors import ConfigError

DECAY_COMPARE = ("previous", "best")
LR_SCHEDULES = ("stall", "cosine", "linear")  # tacred.training.schedule.build_schedule
OPTIMIZERS = ("sgd", "adamw")
LABEL_SETS = ("auto", "tacred", "retacred")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _require(ok: bool, option: str, value: Any, rule: str) -> None:
    if not ok:
        raise ConfigError(f"{option} {value!r}: {rule}")


def at_least(value: Any, low: int | float, option: str, *, none_ok: bool = False) -> None:
    if value is None and none_ok:
        return
    _require(_number(value) and value >= low, option, value, f"must be a number >= {low}")


def probability(value: Any, option: str) -> None:
    """A dropout-like probability: 0 <= p < 1 (p = 1 would drop everything)."""
    _require(_number(value) and 0 <= value < 1, option, value, "must be a probability in [0, 1)")


def check_network(values: Mapping[str, Any], prefix: str = "") -> None:
    """The :class:`tacred.models.config.NetworkConfig` fields."""
    for name in ("word_dim", "pos_dim", "ner_dim", "position_dim", "num_layers", "num_heads", "ffn_dim",
                 "max_relative_distance", "shaw_clip", "lstm_hidden", "lstm_layers", "attention_dim"):
        if name in values:
            at_least(values[name], 1, prefix + name)
    for name in ("dropout", "attention_dropout"):
        if name in values:
            probability(values[name], prefix + name)
    if "word_dropout" in values:  # words replaced by <UNK>, not rescaled: 1 is allowed
        word_dropout = values["word_dropout"]
        _require(_number(word_dropout) and 0 <= word_dropout <= 1, prefix + "word_dropout", word_dropout,
                 "must be a probability in [0, 1]")
    heads = values.get("num_heads", 3)
    d_model = sum(values.get(k, 30) for k in ("pos_dim", "ner_dim")) + values.get("word_dim", 300)
    if values.get("encoder", "self_attention") != "lstm" and d_model % heads:
        raise ConfigError(f"{prefix}num_heads {heads!r}: must divide the model dimension word_dim + pos_dim + "
                          f"ner_dim = {d_model}")
    if "gaussian_heads" in values:
        gaussian = values["gaussian_heads"]
        _require(_number(gaussian) and 0 <= gaussian <= heads, prefix + "gaussian_heads", gaussian,
                 f"must be between 0 and num_heads ({heads})")
    for option in ("attention_bias", "attention_conv"):  # names of registered attention variants
        if option in values:
            from tacred.models.attention import check_names

            problem = check_names(option, values[option])
            _require(problem is None, prefix + option, values[option], problem or "")


def check_module(values: Mapping[str, Any], prefix: str = "") -> None:
    """The :class:`tacred.training.module.RelationExtractor` training options."""
    if "lr" in values:
        _require(_number(values["lr"]) and values["lr"] > 0, prefix + "lr", values["lr"], "must be a number > 0")
    if "momentum" in values:
        probability(values["momentum"], prefix + "momentum")
    if "weight_decay" in values:
        at_least(values["weight_decay"], 0, prefix + "weight_decay")
    if "decay_start_epoch" in values:
        at_least(values["decay_start_epoch"], 0, prefix + "decay_start_epoch")
    if "decay_factor" in values:
        factor = values["decay_factor"]
        _require(_number(factor) and 0 < factor <= 1, prefix + "decay_factor", factor, "must be in (0, 1]")
    if "decay_compare" in values:
        _require(values["decay_compare"] in DECAY_COMPARE, prefix + "decay_compare", values["decay_compare"],
                 f"must be one of {', '.join(DECAY_COMPARE)}")
    if "decay_patience" in values:
        at_least(values["decay_patience"], 1, prefix + "decay_patience")
    if "lr_schedule" in values:
        _require(values["lr_schedule"] in LR_SCHEDULES, prefix + "lr_schedule", values["lr_schedule"],
                 f"must be one of {', '.join(LR_SCHEDULES)}")
    if "no_relation_weight" in values:
        at_least(values["no_relation_weight"], 0, prefix + "no_relation_weight")
    if "optimizer" in values:
        _require(values["optimizer"] in OPTIMIZERS, prefix + "optimizer", values["optimizer"],
                 f"must be one of {', '.join(OPTIMIZERS)}")
    if "warmup_ratio" in values:
        warmup = values["warmup_ratio"]
        _require(_number(warmup) and 0 <= warmup <= 1, prefix + "warmup_ratio", warmup, "must be a fraction in [0, 1]")
    threshold = values.get("no_relation_threshold")
    if threshold is not None and not isinstance(threshold, str):
        _require(_number(threshold), prefix + "no_relation_threshold", threshold, "must be a finite number or a file")


def check_data(values: Mapping[str, Any], prefix: str = "") -> None:
    """The :class:`tacred.training.datamodule.TacredDataModule` options."""
    for name in ("batch_size", "embedding_dim", "min_count"):
        if name in values:
            at_least(values[name], 1, prefix + name)
    if "eval_batch_size" in values:
        at_least(values["eval_batch_size"], 1, prefix + "eval_batch_size", none_ok=True)
    if "num_workers" in values:
        at_least(values["num_workers"], 0, prefix + "num_workers")
    if "min_glove_coverage" in values:
        coverage = values["min_glove_coverage"]
        _require(_number(coverage) and 0 <= coverage <= 1, prefix + "min_glove_coverage", coverage,
                 "must be a fraction in [0, 1]")
    no_relation = values.get("no_relation", "no_relation")
    _require(isinstance(no_relation, str) and bool(no_relation.strip()), prefix + "no_relation", no_relation,
             "must be a non-empty label")
    labels = values.get("labels", "auto")
    if isinstance(labels, list | tuple):
        _require(len(labels) > 0, prefix + "labels", labels, "must not be empty")
        repeated = sorted({lab for lab in labels if list(labels).count(lab) > 1})
        _require(not repeated, prefix + "labels", repeated, "labels are repeated")
        _require(no_relation in labels, prefix + "labels", list(labels)[:5],
                 f"must contain the no-relation label {no_relation!r} (--data.no_relation)")
    elif isinstance(labels, str) and labels not in LABEL_SETS and not Path(labels).is_file():
        raise ConfigError(f"{prefix}labels {labels!r}: expected {', '.join(LABEL_SETS)}, a list or a JSON file "
                          "(file not found)")


def check_trainer(values: Mapping[str, Any], prefix: str = "--trainer.") -> None:
    """The few Lightning Trainer options whose bad values would otherwise fail late or pass silently."""
    epochs = values.get("max_epochs")
    if epochs is not None:
        _require(isinstance(epochs, int) and (epochs >= 1 or epochs == -1), prefix + "max_epochs", epochs,
                 "must be >= 1 (or -1 for no limit)")
    if values.get("min_epochs") is not None:
        at_least(values["min_epochs"], 0, prefix + "min_epochs")
    if values.get("gradient_clip_val") is not None:
        at_least(values["gradient_clip_val"], 0, prefix + "gradient_clip_val")
    for name in ("accumulate_grad_batches", "check_val_every_n_epoch", "log_every_n_steps"):
        if values.get(name) is not None:
            at_least(values[name], 1, prefix + name)
    if values.get("accelerator") is not None:
        from tacred.devices import check_accelerator

        check_accelerator(values["accelerator"], prefix + "accelerator")


def _plain(namespace: Any) -> dict[str, Any]:
    """A jsonargparse Namespace (or dict) as a dict of its direct values."""
    if namespace is None:
        return {}
    if hasattr(namespace, "as_dict"):
        return namespace.as_dict()
    return dict(namespace) if isinstance(namespace, Mapping) else vars(namespace)


def check_options(cfg: Any, subcommand: str | None) -> None:
    """Validate the parsed command line of a Lightning sub-command (raises :class:`ConfigError`)."""
    model = _plain(cfg.get("model"))
    model = model.get("init_args", model) if "class_path" in model else model
    network = model.get("network") or {}
    if isinstance(network, Mapping):
        check_network(network, "--model.network.")
    check_module(model, "--model.")
    data = _plain(cfg.get("data"))
    data = data.get("init_args", data) if "class_path" in data else data
    check_data(data, "--data.")
    trainer = _plain(cfg.get("trainer"))
    check_trainer(trainer)
    if cfg.get("num_threads") is not None:
        at_least(cfg.get("num_threads"), 1, "--num_threads")

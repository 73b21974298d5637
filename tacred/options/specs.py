"""The rules of the training module's and the data module's options, in a module that imports neither torch nor
Lightning, so that ``tacred fit/test/...`` checks the values a user typed before loading them (a few seconds).

Each option's type with its rules is an attribute here (:class:`ModelOption`, :class:`DataOption`); the classes'
``__init__`` signatures name them (``lr: ModelOption.lr = 0.1``), so the parser, the classes' own check and the early
check read one declaration. Rules that compare two options see the defaults of the others
(:func:`check_given`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from tacred import constants as C
from tacred.options.rules import (
    OptionError,
    above,
    at_least,
    factor,
    fraction,
    one_of,
    probability,
    rules_in_hints,
)

OPTIMIZERS = ("sgd", "adamw")
LR_SCHEDULES = ("stall", "cosine", "linear")  # the kinds tacred.training.schedule.build_schedule knows
DECAY_COMPARE = ("previous", "best")  # what DecayOnStall compares an epoch's dev F1 with
LABEL_SETS = ("auto", "tacred", "retacred")  # the names --data.labels takes besides a list or a file


def a_label(value: Any, options: Mapping[str, Any]) -> str | None:
    return None if isinstance(value, str) and value.strip() else "must be a non-empty label"


def label_set(value: Any, options: Mapping[str, Any]) -> str | None:
    """A list holding each label once, the no-relation label among them; or a name of :data:`LABEL_SETS`; or a
    file (read when the vocabularies are built)."""
    if isinstance(value, list | tuple):
        repeated = sorted({label for label in value if list(value).count(label) > 1})
        if not value:
            return "must not be empty"
        if repeated:
            return f"repeats {', '.join(map(str, repeated))}"
        if options["no_relation"] not in value:
            return f"must contain the no-relation label {options['no_relation']!r} (the no_relation option)"
        return None
    if isinstance(value, str) and value not in LABEL_SETS and not Path(value).is_file():
        return f"expected {', '.join(LABEL_SETS)}, a list or a JSON file (file not found)"
    return None


class ModelOption:
    """Types with rules of :class:`tacred.training.module.RelationExtractor`'s options."""

    lr = Annotated[float, above(0)]
    momentum = Annotated[float, probability]
    weight_decay = Annotated[float, at_least(0)]
    decay_start_epoch = Annotated[int, at_least(0)]
    decay_factor = Annotated[float, factor]
    decay_compare = Annotated[str, one_of(DECAY_COMPARE)]
    decay_patience = Annotated[int, at_least(1)]
    lr_schedule = Annotated[str, one_of(LR_SCHEDULES)]
    no_relation_weight = Annotated[float, at_least(0)]
    optimizer = Annotated[str, one_of(OPTIMIZERS)]
    warmup_ratio = Annotated[float, fraction]
    checkpoint_above_tokens = Annotated[int | None, at_least(1, none_ok=True)]


class DataOption:
    """Types with rules of :class:`tacred.training.datamodule.TacredDataModule`'s options."""

    embedding_dim = Annotated[int, at_least(1)]
    min_count = Annotated[int, at_least(1)]
    labels = Annotated[str | list[str], label_set]
    no_relation = Annotated[str, a_label]
    batch_size = Annotated[int, at_least(1)]
    eval_batch_size = Annotated[int | None, at_least(1, none_ok=True)]
    num_workers = Annotated[int, at_least(0)]
    min_glove_coverage = Annotated[float, fraction]


DATA_DEFAULTS = {"no_relation": C.NO_RELATION}  # what rules comparing two data options read when one is not given


def declared(spec: type) -> dict[str, Any]:
    """The option types a spec declares: a dataclass's field types (``NetworkOptions``), else the class's
    ``Annotated`` attributes (:class:`ModelOption`, :class:`DataOption`)."""
    if is_dataclass(spec):
        return get_type_hints(spec, include_extras=True)
    return {name: hint for name, hint in vars(spec).items() if get_origin(hint) is Annotated}


def check_given(spec: type, given: Mapping[str, Any], defaults: Mapping[str, Any],
                texts: Mapping[str, str] | None = None) -> None:
    """The rules of ``spec`` on the options in ``given`` (values as YAML reads a command line or a config file): the
    first one broken raises :class:`OptionError`; ``defaults`` stand in for the options not given (rules that compare
    two options read them by key or, for a dataclass's, as attributes). A number option whose value is not one is an
    error as the parser words it when ``texts`` (option → text typed on the command line) holds it, else left to the
    parser."""
    hints = declared(spec)
    typed = {name: as_declared(hints[name], value) for name, value in given.items() if name in hints}
    for name, value in typed.items():
        if value is WRONG_TYPE and name in (texts or {}):
            raise OptionError(spec, name, texts[name], f"expected a value of type {type_name(hints[name])}")
    values = Values({**defaults, **{k: v for k, v in typed.items() if v is not WRONG_TYPE}})
    for option, option_rules in rules_in_hints(hints).items():
        if option not in typed or typed[option] is WRONG_TYPE:
            continue
        for rule in option_rules:
            problem = rule(typed[option], values)
            if problem:
                raise OptionError(spec, option, typed[option], problem)


class Values(dict):
    """Option values readable by key and as attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


WRONG_TYPE = object()


def type_name(hint: Any) -> str:
    """A number option's type as the parser names it: ``float``, ``int`` or ``int or None``."""
    base = get_args(hint)[0] if get_origin(hint) is Annotated else hint
    names = [getattr(kind, "__name__", str(kind)).replace("NoneType", "None") for kind in (get_args(base) or [base])]
    return " or ".join(names)


def as_declared(hint: Any, value: Any) -> Any:
    """``value`` as the parser would give it for an option of type ``hint``: a number for a ``float`` option (an
    int, or text such as ``1e-3`` or ``nan``), an int for an ``int`` one; :data:`WRONG_TYPE` where the parser would
    refuse it; other types as they are."""
    base = get_args(hint)[0] if get_origin(hint) is Annotated else hint
    kinds = set(get_args(base)) or {base}
    if value is None and type(None) in kinds:
        return None
    if float in kinds:
        if isinstance(value, bool):
            return WRONG_TYPE
        if isinstance(value, int | float | str):
            try:
                return float(value)
            except ValueError:
                return WRONG_TYPE
        return WRONG_TYPE
    if int in kinds and kinds <= {int, type(None)}:
        return value if isinstance(value, int) and not isinstance(value, bool) else WRONG_TYPE
    return value


def dataclass_defaults(spec: type) -> dict[str, Any]:
    """The default of each field of a dataclass that has a plain one."""
    from dataclasses import MISSING

    return {f.name: f.default for f in fields(spec) if f.default is not MISSING}

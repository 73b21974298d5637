"""What option values must be: small rules for the classes that own options, and the error naming the one broken.

A rule maps ``(value, owner)`` to None when the value is good, else to what it must be (``"must be a number >= 1"``);
``owner`` is the object or mapping being checked, for the few rules that compare two of its options. Rules sit in the
type of the option they check, where it is defined: ``word_dim: Annotated[int, at_least(1)] = 300`` (a dataclass
field or an ``__init__`` parameter; the command line's parser ignores the annotation), and a ``Literal`` type allows
its values only. The owners check their own options: :class:`~tacred.models.config.NetworkConfig` in
``__post_init__``, the LightningModule and the data module in ``__init__``; the types of the last two live in
:mod:`tacred.options.specs` (no torch, no Lightning), so the command line checks them before loading either. An :class:`OptionError` names the option
by its plain name (``num_heads``); the command line adds where it lives (``--model.network.num_heads``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import is_dataclass
from functools import cache
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from tacred.errors import ConfigError

Rule = Callable[[Any, Any], "str | None"]


class OptionError(ConfigError):
    """``OPTION VALUE: RULE``. ``owner`` is the class whose option it is, so a caller can name the option its way
    (the command line: ``--model.network.OPTION``)."""

    def __init__(self, owner: type, option: str, value: Any, rule: str) -> None:
        super().__init__(f"{option} {shown(value)}: {rule}")
        self.owner, self.option, self.value, self.rule = owner, option, value, rule

    def __reduce__(self) -> tuple[Any, ...]:  # an error raised in a worker process reaches the parent whole
        return type(self), (self.owner, self.option, self.value, self.rule)


def shown(value: Any) -> str:
    """``repr(value)``, a long list cut after 5 items (so the rule after it stays on the line)."""
    if isinstance(value, list | tuple) and len(value) > 5:
        return repr(list(value[:5]))[:-1] + ", ...]"
    return repr(value)


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def at_least(low: int | float, *, none_ok: bool = False) -> Rule:
    def rule(value: Any, owner: Any) -> str | None:
        if value is None and none_ok:
            return None
        return None if is_number(value) and value >= low else f"must be a number >= {low}"

    return rule


def above(low: int | float) -> Rule:
    def rule(value: Any, owner: Any) -> str | None:
        return None if is_number(value) and value > low else f"must be a number > {low}"

    return rule


def probability(value: Any, owner: Any) -> str | None:
    """A dropout-like probability: 0 <= p < 1 (p = 1 would drop everything)."""
    return None if is_number(value) and 0 <= value < 1 else "must be a probability in [0, 1)"


def fraction(value: Any, owner: Any) -> str | None:
    """0 <= x <= 1."""
    return None if is_number(value) and 0 <= value <= 1 else "must be a fraction in [0, 1]"


def factor(value: Any, owner: Any) -> str | None:
    """A factor that shrinks or keeps: 0 < x <= 1."""
    return None if is_number(value) and 0 < value <= 1 else "must be in (0, 1]"


def one_of(choices: Iterable[Any]) -> Rule:
    known = tuple(choices)

    def rule(value: Any, owner: Any) -> str | None:
        return None if value in known else f"must be one of {', '.join(map(str, known))}"

    return rule


@cache
def rules_of(annotated: Any) -> dict[str, tuple[Rule, ...]]:
    """The rules of each option in the type hints of a class's fields or a function's parameters, in their order:
    the values of a ``Literal``, then the rules an ``Annotated`` holds."""
    hints = get_type_hints(annotated, include_extras=True)
    return rules_in_hints({name: hint for name, hint in hints.items() if name != "return"})


def rules_in_hints(hints: Mapping[str, Any]) -> dict[str, tuple[Rule, ...]]:
    """The rules in option types (name → type): a ``Literal``'s values, then the callables an ``Annotated`` holds;
    options without rules are left out."""
    rules = {}
    for name, hint in hints.items():
        found: tuple[Rule, ...] = ()
        if get_origin(hint) is Annotated:
            hint, *extras = get_args(hint)
            found = tuple(extra for extra in extras if callable(extra))
        if get_origin(hint) is Literal:
            found = (one_of(get_args(hint)), *found)
        if found:
            rules[name] = found
    return rules


def check(owner_class: type, values: Mapping[str, Any], *, owner: Any = None) -> None:
    """Check ``values`` (the options of ``owner_class``, defaults included) against the rules in its annotations (a
    dataclass's fields, else its ``__init__``'s parameters), option by option in their order; the first rule broken
    raises :class:`OptionError`. The rules see ``owner`` (default: ``values``) as their second argument."""
    annotated = owner_class if is_dataclass(owner_class) else owner_class.__init__
    for option, option_rules in rules_of(annotated).items():
        for rule in option_rules:
            problem = rule(values[option], values if owner is None else owner)
            if problem:
                raise OptionError(owner_class, option, values[option], problem)

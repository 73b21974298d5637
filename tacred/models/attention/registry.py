"""The registry of attention variants: each variant file registers a builder with :func:`register`.

A builder adds its hooks (:mod:`.core`) to the :class:`AttentionParts` being assembled. A variant is switched on by
one :class:`~tacred.models.config.NetworkConfig` option: a name in a list (``attention_bias: [shaw]``), one name
(``attention_conv: 1d``), or its own switch (``learned_temperature: true``, ``gaussian_heads: 1``). A variant declares
the options it reads (:class:`Hyperparameter`: name, type, default, rules) in its own file, with ``register``;
``NetworkConfig`` adds them to its fields, so they are set and checked like the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from torch import nn

from tacred.models.attention.core import MultiHeadSelfAttention
from tacred.options.rules import Rule

if TYPE_CHECKING:
    # the builders get a tacred.models.config.NetworkConfig, a NetworkOptions with the fields the variants declare
    # here: it is built from this registry, so it is not imported back (no circle of modules)
    from tacred.options.network import NetworkOptions

# Options whose value is a list of variant names (several variants at once); the others hold one value.
LIST_OPTIONS = ("attention_bias",)
# Options whose value is a variant name (or "none"), checked against the registry rather than a fixed Literal.
NAME_OPTIONS = {"attention_bias": None, "attention_conv": "none"}


@dataclass(frozen=True)
class Hyperparameter:
    """A :class:`~tacred.models.config.NetworkConfig` field declared by the variant that reads it
    (``--model.network.<name>`` on the command line). Its rules go in its type, as for every field
    (``Annotated[int, at_least(1)]``, :mod:`tacred.options.rules`); a rule may read the fields declared before it."""

    name: str
    type: Any
    default: Any


@dataclass
class AttentionParts:
    """The attention core under construction: sizes every builder may read, and the hooks it may add or wrap."""

    d_model: int
    num_heads: int
    head_dim: int
    max_positions: int  # Dufter et al.'s tables cover positions 0 … max_relative_distance
    biases: list[nn.Module] = field(default_factory=list)
    values: nn.Module | None = None
    temperature: nn.Module | None = None
    transform: nn.Module | None = None


Builder = Callable[[AttentionParts, "NetworkOptions"], None]


@dataclass(frozen=True)
class AttentionVariant:
    name: str
    option: str  # the NetworkConfig field that switches it on
    value: Any  # the value of ``option`` that does (for list options: the name in the list)
    order: int  # builders run in this order: the parameter names, the sum of biases and the draw order
    # (tacred.models.network.RelationNetwork.__init__)
    build: Builder
    ablations: tuple[str, ...]  # the configs/ablations rows that exercise it
    starts_as_plain: bool  # at initialisation the attention equals the plain core (zero tables, identity kernels)
    summary: str
    hyperparameters: tuple[Hyperparameter, ...] = ()  # the NetworkConfig fields this variant declares

    def selected(self, cfg: NetworkOptions) -> bool:
        current = getattr(cfg, self.option)
        if self.option in LIST_OPTIONS:
            return self.value in (current or [])
        if isinstance(self.value, bool | str):
            return current == self.value
        return current >= self.value  # a count such as gaussian_heads

    def enabling(self) -> dict[str, Any]:
        """The config override that switches this variant on (tests build every variant from it)."""
        return {self.option: [self.value] if self.option in LIST_OPTIONS else self.value}


VARIANTS: dict[str, AttentionVariant] = {}
_fields_collected = False  # NetworkConfig has taken the declared hyperparameters as its fields


def register(name: str, *, option: str, order: int, value: Any = None, ablations: tuple[str, ...] = (),
             starts_as_plain: bool = True, hyperparameters: tuple[Hyperparameter, ...] = (),
             ) -> Callable[[Builder], Builder]:
    """Decorator: ``@register("shaw", option="attention_bias", order=10)`` on a builder ``(parts, cfg) -> None``.

    ``value`` defaults to ``name`` (a name in a list option); ``order`` must be unique among the variants.
    ``hyperparameters``: the config fields the variant declares (its switch ``option`` among them, unless that is
    a name option or a field of the network as a whole); names no other variant or field has.
    """

    def decorate(build: Builder) -> Builder:
        if name in VARIANTS:
            raise ValueError(f"attention variant {name!r} is registered twice")
        clash = [v.name for v in VARIANTS.values() if v.order == order]
        if clash:
            raise ValueError(f"attention variant {name!r}: order {order} is already taken by {clash[0]!r}")
        if hyperparameters and _fields_collected:
            raise ValueError(f"attention variant {name!r} declares hyperparameters after NetworkConfig was built: "
                             "put its file in tacred/models/attention/")
        summary = " ".join((build.__doc__ or name).split("\n\n")[0].split())
        VARIANTS[name] = AttentionVariant(name, option, name if value is None else value, order, build,
                                          ablations, starts_as_plain, summary, tuple(hyperparameters))
        return build

    return decorate


def variants() -> list[AttentionVariant]:
    """Every registered variant, in build order (importing :mod:`tacred.models.attention` registers them all)."""
    return sorted(VARIANTS.values(), key=lambda v: (v.order, v.name))


def choices(option: str) -> list[str]:
    """The names an option accepts: its registered values, plus "none" where the option has one."""
    names = [str(v.value) for v in variants() if v.option == option]
    default = NAME_OPTIONS.get(option)
    return ([default] if default else []) + names


def declared_hyperparameters() -> list[Hyperparameter]:
    """The NetworkConfig fields of the attention variants: the name options, then each variant's, in build order."""
    return [*NAME_FIELDS, *(h for v in variants() for h in v.hyperparameters)]


def collect_hyperparameters() -> list[Hyperparameter]:
    """:func:`declared_hyperparameters`, for NetworkConfig's fields; a variant registered later may declare none."""
    global _fields_collected
    _fields_collected = True
    return declared_hyperparameters()


def check_names(option: str, value: Any) -> str | None:
    """None if ``value`` is a valid setting of a name option, else the reason (naming the known names)."""
    known = choices(option)
    if option in LIST_OPTIONS:
        if value is None:
            return None
        if not isinstance(value, list | tuple) or not all(isinstance(n, str) for n in value):
            return f"must be a list of attention variant names out of {', '.join(known)}"
        unknown = [n for n in value if n not in known]
        if unknown:
            return f"unknown attention variant {unknown[0]!r}; known: {', '.join(known)}"
        if len(set(value)) != len(value):
            return f"must list distinct names, got {list(value)}"
        return None
    if value not in known:
        return f"unknown value; known: {', '.join(known)}"
    return None


def _registered_names(option: str) -> Rule:
    return lambda value, cfg: check_names(option, value)


# the name options' own fields: which position biases (several) and which transform (one) the attention has
NAME_FIELDS = (Hyperparameter("attention_bias", Annotated[list[str] | None, _registered_names("attention_bias")], None),
               Hyperparameter("attention_conv", Annotated[str, _registered_names("attention_conv")], "none"))


def build_attention(d_model: int, cfg: NetworkOptions) -> MultiHeadSelfAttention:
    """The attention core with the hooks of every variant ``cfg`` switches on, built in registry order (their
    random draws come before the core's projections: the draw order of
    :meth:`tacred.models.network.RelationNetwork.__init__`). ``cfg`` checked its names and sizes when it was built."""
    parts = AttentionParts(d_model, cfg.num_heads, d_model // cfg.num_heads, cfg.max_relative_distance + 1)
    for variant in variants():
        if variant.selected(cfg):
            variant.build(parts, cfg)
    return MultiHeadSelfAttention(d_model, cfg.num_heads, cfg.attention_dropout, biases=parts.biases,
                                  values=parts.values, temperature=parts.temperature, transform=parts.transform)

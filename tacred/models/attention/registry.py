"""The registry of attention variants: each variant file registers a builder with :func:`register`.

A builder adds its hooks (:mod:`.core`) to the :class:`AttentionParts` being assembled. A variant is switched on by
one :class:`~tacred.models.config.NetworkConfig` option: a name in a list (``attention_bias: [shaw]``), one name
(``attention_conv: 1d``), or its own switch (``learned_temperature: true``, ``gaussian_heads: 1``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torch import nn

from tacred.models.attention.core import MultiHeadSelfAttention

if TYPE_CHECKING:
    from tacred.models.config import NetworkConfig

# Options whose value is a list of variant names (several variants at once); the others hold one value.
LIST_OPTIONS = ("attention_bias",)
# Options whose value is a variant name (or "none"), checked against the registry rather than a fixed Literal.
NAME_OPTIONS = {"attention_bias": None, "attention_conv": "none"}


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


Builder = Callable[[AttentionParts, "NetworkConfig"], None]


@dataclass(frozen=True)
class AttentionVariant:
    name: str
    option: str  # the NetworkConfig field that switches it on
    value: Any  # the value of ``option`` that does (for list options: the name in the list)
    order: int  # builders run in this order: it fixes the random draws, the parameter names and the sum of biases
    build: Builder
    ablations: tuple[str, ...]  # the configs/ablations rows that exercise it
    starts_as_plain: bool  # at initialisation the attention equals the plain core (zero tables, identity kernels)
    summary: str

    def selected(self, cfg: NetworkConfig) -> bool:
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


def register(name: str, *, option: str, order: int, value: Any = None, ablations: tuple[str, ...] = (),
             starts_as_plain: bool = True) -> Callable[[Builder], Builder]:
    """Decorator: ``@register("shaw", option="attention_bias", order=10)`` on a builder ``(parts, cfg) -> None``.

    ``value`` defaults to ``name`` (a name in a list option); ``order`` must be unique among the variants.
    """

    def decorate(build: Builder) -> Builder:
        if name in VARIANTS:
            raise ValueError(f"attention variant {name!r} is registered twice")
        clash = [v.name for v in VARIANTS.values() if v.order == order]
        if clash:
            raise ValueError(f"attention variant {name!r}: order {order} is already taken by {clash[0]!r}")
        summary = " ".join((build.__doc__ or name).split("\n\n")[0].split())
        VARIANTS[name] = AttentionVariant(name, option, name if value is None else value, order, build,
                                          ablations, starts_as_plain, summary)
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


def build_attention(d_model: int, cfg: NetworkConfig) -> MultiHeadSelfAttention:
    """The attention core with the hooks of every variant ``cfg`` switches on, built in registry order."""
    if d_model % cfg.num_heads:
        raise ValueError(f"d_model={d_model} is not divisible by num_heads={cfg.num_heads}")
    for option in NAME_OPTIONS:
        problem = check_names(option, getattr(cfg, option))
        if problem:
            raise ValueError(f"{option} {getattr(cfg, option)!r}: {problem}")
    parts = AttentionParts(d_model, cfg.num_heads, d_model // cfg.num_heads, cfg.max_relative_distance + 1)
    for variant in variants():
        if variant.selected(cfg):
            variant.build(parts, cfg)
    return MultiHeadSelfAttention(d_model, cfg.num_heads, cfg.attention_dropout, biases=parts.biases,
                                  values=parts.values, temperature=parts.temperature, transform=parts.transform)

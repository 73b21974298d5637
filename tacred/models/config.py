"""Hyperparameters of the network: one dataclass, so each ablation is a few lines of YAML.

Each field holds its default and, in its type, the rules its values keep (:mod:`tacred.options.rules`); a config
checks itself when it is built. The attention variants declare their own fields in their files
(:mod:`tacred.models.attention`), and :func:`with_variant_fields` adds them here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, make_dataclass
from typing import Any

from tacred.models.attention import collect_hyperparameters
from tacred.options.network import NetworkOptions, divides_the_model_dimension
from tacred.options.rules import check

__all__ = ["NetworkConfig", "NetworkOptions", "divides_the_model_dimension", "with_variant_fields"]


def with_variant_fields(cls: type) -> type:
    """``cls`` with the fields the attention variants declare (:func:`tacred.models.attention.declared_hyperparameters`)
    after its own: one class for every use (the command line, checkpoints, the Python API)."""
    added = [(h.name, h.type, h.default) for h in collect_hyperparameters()]
    clash = [name for name, _, _ in added if name in {f.name for f in fields(cls)}]
    if clash:
        raise TypeError(f"attention variant hyperparameter {clash[0]!r} is a field of {cls.__name__} already")
    combined = make_dataclass(cls.__name__, added, bases=(cls,),
                              namespace={"__module__": cls.__module__, "__doc__": cls.__doc__})
    combined.__qualname__ = cls.__qualname__
    return combined


@with_variant_fields
@dataclass
class NetworkConfig(NetworkOptions):
    """Architecture switches. Defaults are the paper's final model (PAPER_NOTES sections 3–5).

    Encoder: ``self_attention`` (the paper), ``lstm`` (Zhang's LSTM / PA-LSTM baselines) or
    ``lstm_self_attention`` (Table 3: the LSTM gives h_i, the self-attention encoder gives the query).
    ``transformer``: a pretrained Hugging Face encoder over the sentence with typed entity markers (Zhou & Chen,
    2021; :mod:`tacred.models.transformer`), ``pretrained`` names it and ``dropout`` is its classifier's; the fields of
    the word-vocabulary networks play no part.
    ``position_aware=False`` classifies the sentence summary directly (Table 3 "without the PA layer").
    Attention variants register themselves in :mod:`tacred.models.attention` (``tacred.models.attention.variants()``
    lists them) and declare the fields they read in their own files (``declared_hyperparameters()`` lists them):
    ``attention_bias`` (a list of position biases) and ``attention_conv`` take the registered names, ``shaw_clip``,
    ``gaussian_heads`` and the others set one variant.
    """

    # the fields of NetworkOptions (tacred.options.network), then the attention variants' fields, added by
    # with_variant_fields

    def __post_init__(self) -> None:
        """Every field against the rules in its type, in field order (a rule may read the fields before it)."""
        check(type(self), vars(self), owner=self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

"""Hyperparameters of the network: one dataclass, so each ablation is a few lines of YAML.

Each field holds its default and, in its type, the rules its values keep (:mod:`tacred.option_rules`); a config
checks itself when it is built. The attention variants declare their own fields in their files
(:mod:`tacred.models.attention`), and :func:`with_variant_fields` adds them here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, make_dataclass
from typing import Annotated, Any, Literal

from tacred.models.attention import collect_hyperparameters
from tacred.option_rules import at_least, check, fraction, probability


def divides_the_model_dimension(heads: int, cfg: NetworkConfig) -> str | None:
    """The self-attention splits word_dim + pos_dim + ner_dim into equal heads (the LSTM encoder has no heads)."""
    d_model = cfg.word_dim + cfg.pos_dim + cfg.ner_dim
    if cfg.encoder == "lstm" or d_model % heads == 0:
        return None
    return f"must divide the model dimension word_dim + pos_dim + ner_dim = {d_model}"


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
class NetworkConfig:
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

    # inputs
    word_dim: Annotated[int, at_least(1)] = 300
    pos_dim: Annotated[int, at_least(1)] = 30
    ner_dim: Annotated[int, at_least(1)] = 30
    position_dim: Annotated[int, at_least(1)] = 30
    word_dropout: Annotated[float, fraction] = 0.06  # words replaced by <UNK>, not rescaled: 1 is allowed
    object_position_input: bool = True
    # the relative positions told apart (longer ones share the last); Dufter et al.'s tables cover 0 … this
    max_relative_distance: Annotated[int, at_least(1)] = 128
    # encoder
    encoder: Literal["self_attention", "lstm", "lstm_self_attention", "transformer"] = "self_attention"
    num_layers: Annotated[int, at_least(1)] = 1
    num_heads: Annotated[int, at_least(1), divides_the_model_dimension] = 3
    ffn_dim: Annotated[int, at_least(1)] = 130
    dropout: Annotated[float, probability] = 0.4
    attention_dropout: Annotated[float, probability] = 0.1
    norm: Literal["batch", "layer"] = "batch"
    residual: Literal["single", "double"] = "single"
    activation: Literal["rrelu", "relu"] = "rrelu"
    init: Literal["kaiming", "xavier"] = "kaiming"
    position_encoding: Literal["relative", "sinusoidal", "none"] = "relative"
    # LSTM baselines
    lstm_hidden: Annotated[int, at_least(1)] = 200
    lstm_layers: Annotated[int, at_least(1)] = 2
    # summary and position-aware attention (Zhang et al., 2017)
    position_aware: bool = True
    attention_dim: Annotated[int, at_least(1)] = 200
    summary: Literal["max_pool", "last"] = "max_pool"
    # the pretrained transformer (encoder: transformer): a model folder, a hub id, or ``minilm`` (all-MiniLM-L6-v2,
    # installed by tacred[transformer]); its architecture is recorded here when training starts, so a checkpoint
    # rebuilds the network without the folder
    pretrained: str = "minilm"
    transformer_config: dict[str, Any] | None = None
    # (+ the attention variants' fields, added by with_variant_fields)

    def __post_init__(self) -> None:
        """Every field against the rules in its type, in field order (a rule may read the fields before it)."""
        check(type(self), vars(self), owner=self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

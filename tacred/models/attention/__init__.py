"""Multi-head self-attention: one core (:mod:`.core`) and one file per variant, each registering itself
(:mod:`.registry`) with the config fields it reads. Importing this package imports every module in it, so a new
variant file needs no other edit."""

import importlib
import pkgutil

from tacred.models.attention.core import AttentionInputs, MultiHeadSelfAttention
from tacred.models.attention.registry import (
    VARIANTS,
    AttentionParts,
    AttentionVariant,
    Hyperparameter,
    build_attention,
    check_names,
    choices,
    collect_hyperparameters,
    declared_hyperparameters,
    register,
    variants,
)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["VARIANTS", "AttentionInputs", "AttentionParts", "AttentionVariant", "Hyperparameter", "MultiHeadSelfAttention",
           "build_attention", "check_names", "choices", "collect_hyperparameters", "declared_hyperparameters", "register",
           "variants"]

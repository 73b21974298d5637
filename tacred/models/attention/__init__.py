"""Multi-head self-attention: one core (:mod:`.core`) and small hooks for each position variant."""

from tacred.models.attention.core import AttentionInputs, MultiHeadSelfAttention

__all__ = ["AttentionInputs", "MultiHeadSelfAttention"]

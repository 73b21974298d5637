"""tacred: position-aware self-attention (Bilan & Roth, 2018) for sentence-level relation extraction."""

__version__ = "0.1.0"

"""A pretrained transformer as the relation encoder (Zhou & Chen, 2021, "An Improved Baseline for Sentence-level
Relation Extraction"): the sentence with typed entity markers (:mod:`tacred.data.markers`) through the encoder, the
hidden states at the subject's ``@`` and the object's ``#`` concatenated, then Linear → ReLU → dropout → Linear."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from tacred.data.markers import MarkedBatch
from tacred.data.pretrained_packages import PretrainedModelError, resolve_pretrained
from tacred.models.config import NetworkConfig
from tacred.models.network import NetworkOutput

# what a checkpoint keeps of the encoder's configuration: everything but where it came from and label names
_NOT_KEPT = ("_name_or_path", "architectures", "id2label", "label2id", "transformers_version", "torch_dtype", "dtype",
             "_attn_implementation_autoset")


def encoder_config(config: Any) -> dict[str, Any]:
    """A Hugging Face configuration as the plain dict that :class:`NetworkConfig` ``transformer_config`` records."""
    return {k: v for k, v in config.to_dict().items() if k not in _NOT_KEPT}


def _load_pretrained(name: str) -> nn.Module:
    """The pretrained encoder called ``name`` (a folder, a hub id or a packaged short name), without the progress bar
    that transformers would print."""
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return AutoModel.from_pretrained(resolve_pretrained(name), attn_implementation="eager")
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise PretrainedModelError(f"--model.network.pretrained {name}: cannot load it ({first})") from None
    finally:
        if bar:
            hf_logging.enable_progress_bar()


class _Recomputed:
    """One encoder layer as its encoder calls it: under activation checkpointing when training on more than
    ``above_tokens`` padded sub-words (its inner activations are dropped and recomputed, with the same dropout masks,
    in the backward pass), as itself otherwise."""

    def __init__(self, layer: nn.Module, above_tokens: int) -> None:
        self.layer, self.above_tokens = layer, above_tokens

    def __call__(self, hidden: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if self.layer.training and torch.is_grad_enabled() and hidden.shape[0] * hidden.shape[1] > self.above_tokens:
            return checkpoint(self.layer, hidden, *args, use_reentrant=False, preserve_rng_state=True, **kwargs)
        return self.layer(hidden, *args, **kwargs)


class RecomputedLayers(nn.ModuleList):
    """An encoder's layer list whose loop (``for layer in self.layer``, as the Hugging Face encoders run it) gets
    each layer as :class:`_Recomputed`; the layers stay its children, so parameter names and checkpoints are those
    of the plain encoder."""

    def __init__(self, layers: nn.ModuleList, above_tokens: int) -> None:
        super().__init__(layers)
        self.above_tokens = above_tokens

    def __iter__(self) -> Any:
        return (_Recomputed(layer, self.above_tokens) for layer in super().__iter__())


class TransformerNetwork(nn.Module):
    """Zhou & Chen's classifier over a Hugging Face encoder. Built from ``cfg.transformer_config`` (weights then come
    from a checkpoint) or, when that is None, loaded from ``cfg.pretrained``, whose configuration it then records."""

    def __init__(self, cfg: NetworkConfig, num_labels: int) -> None:
        super().__init__()
        try:
            from transformers import AutoConfig, AutoModel
        except ImportError:
            raise PretrainedModelError("the transformer encoder needs transformers: pip install -e '.[transformer]' "
                                       "in a clone of tacred") from None
        if cfg.transformer_config is not None:
            kept = dict(cfg.transformer_config)
            config = AutoConfig.for_model(kept.pop("model_type"), **kept)
            config._attn_implementation = "eager"  # one attention for training, export and ONNX Runtime alike
            self.encoder = AutoModel.from_config(config)
        else:
            self.encoder = _load_pretrained(cfg.pretrained)
            cfg.transformer_config = encoder_config(self.encoder.config)
        if getattr(self.encoder, "pooler", None) is not None:
            self.encoder.pooler = None  # BERT's [CLS] pooler: unused here (and, unused, it would stall DDP)
        hidden = self.encoder.config.hidden_size
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Dropout(cfg.dropout),
                                  nn.Linear(hidden, num_labels))
        self.train()  # from_pretrained hands the encoder over in eval mode (its dropout off)

    def recompute_layers_above(self, tokens: int) -> None:
        """Train batches of more than ``tokens`` padded sub-words (batch size × longest input) with activation
        checkpointing: each encoder layer keeps only its input for the backward pass and runs again there, so memory
        grows with one layer's activations instead of all of them, for one more forward pass through those batches.
        The numbers are those of a plain run (the recomputation replays the same dropout masks)."""
        stack = getattr(self.encoder, "encoder", None)
        layers = getattr(stack, "layer", None)
        if not isinstance(layers, nn.ModuleList):
            raise PretrainedModelError(f"{type(self.encoder).__name__}: no encoder.layer list of layers to recompute")
        stack.layer = RecomputedLayers(layers, tokens)

    def forward(self, batch: MarkedBatch) -> NetworkOutput:
        attention_mask = (~batch.pad_mask).long()  # (B, T), 1 at real tokens
        states = self.encoder(input_ids=batch.input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        rows = torch.arange(states.shape[0], device=states.device)
        pair = torch.cat([states[rows, batch.subj_marker], states[rows, batch.obj_marker]], dim=-1)  # (B, 2H)
        return NetworkOutput(self.head(pair), [], None)  # logits (B, L)

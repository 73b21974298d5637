"""The torch backend: a checkpoint's network on the CPU or a CUDA device (no Lightning)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from tacred.inference.encoding import build_encoder
from tacred.inference.predictor import Predictor


class TorchBackend:
    """Runs ``module(**arrays) -> (B, L) probabilities`` (e.g. :class:`tacred.inference.trained.ProbabilityNetwork`)."""

    def __init__(self, module: nn.Module, device: str) -> None:
        self.device = device
        self.module = module.eval().to(device)

    def probabilities(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        tensors = {name: torch.from_numpy(array).to(self.device) for name, array in arrays.items()}
        with torch.inference_mode():
            return self.module(**tensors).cpu().numpy()

    def pair_probabilities(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """Probabilities (P, L) of a batch of sentences' pairs (:func:`tacred.inference.sentence_pairs.pad_sentences`)
        from one shared pass per sentence where the network allows it (:mod:`tacred.models.pair_scoring`)."""
        tensors = {name: torch.from_numpy(array).to(self.device) for name, array in arrays.items()}
        with torch.inference_mode():
            return self.module.pair_probabilities(**tensors).cpu().numpy()


def load_checkpoint_predictor(path: str | Path, device: str = "auto", checkpoint: dict[str, Any] | None = None,
                              **options: Any) -> Predictor:
    """A :class:`Predictor` for a tacred checkpoint file (``options``: those of :class:`Predictor`). ``checkpoint``:
    its contents when they were read or built already (a shipped model's); ``path`` then names it in messages."""
    from tacred.checkpoints import read_checkpoint
    from tacred.devices import torch_device
    from tacred.inference.encoding import default_encoder
    from tacred.inference.trained import TrainedNetwork, probability_network

    resolved = torch_device(device)  # an absent device is an error before the file is read
    ckpt = read_checkpoint(path) if checkpoint is None else checkpoint
    model = TrainedNetwork.from_checkpoint(path, checkpoint=ckpt)  # checks that it is a tacred checkpoint
    kind = (ckpt.get("tacred_predictor") or {}).get("encoder") or default_encoder(ckpt["tacred_vocab"])
    encoder = build_encoder(kind, {"vocab": ckpt["tacred_vocab"]}, str(path))
    return Predictor(encoder, TorchBackend(probability_network(model.net, share_encoding=True), resolved), **options)

"""A Hugging Face encoder (MPNet, BERT, MiniLM, ...) as the token vectors of a spaCy NER, fine-tuned by spaCy's own
training.

The registered architecture :data:`ARCHITECTURE` is a thinc model from spaCy ``Doc`` objects to one vector per
spaCy token: each doc's token texts go through the model folder's fast tokenizer as pre-split words, the pieces are
packed into windows of at most the model's length (a word is never cut between windows unless it alone is longer),
the windows of a batch run through ``transformers.AutoModel`` in one call, and a token's vector is the mean of its
pieces' last-layer vectors (a token without pieces, such as a whitespace token, gets zeros). Nothing is fetched: the
weights and the tokenizer are read from ``folder``. ``bf16`` runs the encoder under bfloat16 autocast on CPU (about 3×
faster on CPUs with AMX, about 4× slower on CPUs without bf16 instructions); token vectors are float32 either way.
``rate_scale`` sets the encoder's learning rate as a fraction of the optimizer's, so that the NER's own layers (and
the shape columns) can learn at a rate a pretrained encoder would not survive.

Saved pipelines name ``folder`` in their config and hold the fine-tuned weights themselves; loading one needs this
module imported (:func:`register`) and the folder present, for its shape and tokenizer.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from tacred.errors import TacredError

ARCHITECTURE = "tacred.TransformerTokenVectors.v1"
OFFSET_POSITIONS = ("mpnet", "roberta", "xlm-roberta", "camembert")


class NerEncoderError(TacredError, ValueError):
    """A model folder the NER's encoder cannot read (names the folder and what is missing)."""


def _torch_module(folder: str, bf16: bool) -> Any:
    import torch
    from transformers import AutoModel

    class PooledEncoder(torch.nn.Module):
        """The encoder's last layer, averaged over each token's pieces: (windows, length) → (tokens, width)."""

        tacred_token_vectors = True  # what :func:`set_bf16` looks for

        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(folder)
            self.bf16 = bf16

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, pieces: torch.Tensor,
                    tokens: torch.Tensor, n_tokens: int) -> torch.Tensor:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16 and input_ids.device.type == "cpu"):
                hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            hidden = hidden.float().reshape(-1, hidden.shape[-1])
            summed = hidden.new_zeros(n_tokens, hidden.shape[-1]).index_add(0, tokens, hidden.index_select(0, pieces))
            counts = torch.bincount(tokens, minlength=n_tokens).clamp(min=1).unsqueeze(1)
            return summed / counts

    return PooledEncoder()


@lru_cache(maxsize=4)
def _tokenizer(folder: str) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    if not tokenizer.is_fast:
        raise NerEncoderError(f"{folder}: no fast tokenizer (tokenizer.json); the NER's encoder maps pieces to words "
                              "through it")
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None or tokenizer.pad_token_id is None:
        raise NerEncoderError(f"{folder}: the tokenizer has no cls, sep or pad token; the NER's encoder frames each "
                              "window as [cls] pieces [sep]")
    return tokenizer


def check_folder(folder: str | Path) -> Path:
    """``folder`` if it holds what the encoder loads (``config.json`` and a fast tokenizer), else a clear error."""
    folder = Path(folder)
    if not folder.is_dir():
        raise NerEncoderError(f"{folder}: not a model folder (config.json, weights and tokenizer.json)")
    missing = [name for name in ("config.json", "tokenizer.json") if not (folder / name).is_file()]
    if missing:
        raise NerEncoderError(f"{folder}: no {' or '.join(missing)}; the NER's encoder reads a Hugging Face model "
                              "folder with a fast tokenizer")
    return folder


def piece_windows(words: list[str], tokenizer: Any, max_pieces: int) -> list[tuple[list[int], list[int]]]:
    """The pieces of ``words`` in windows of at most ``max_pieces``, each as (piece ids, the word index of each
    piece). A window closes before a word that would not fit; a word longer than a whole window is split."""
    if not words:
        return []
    encoded = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
    ids, owners = encoded["input_ids"], encoded.word_ids()
    windows: list[tuple[list[int], list[int]]] = []
    start = 0
    while start < len(ids):
        end = min(start + max_pieces, len(ids))
        if end < len(ids) and owners[end] == owners[end - 1]:  # do not cut a word unless it fills the window
            back = end
            while back > start and owners[back - 1] == owners[end]:
                back -= 1
            end = back if back > start else end
        windows.append((ids[start:end], owners[start:end]))
        start = end
    return windows


def _batch(docs: list[Any], tokenizer: Any, max_pieces: int) -> dict[str, Any]:
    """The encoder's inputs for ``docs``: numpy arrays of the windows, ``pieces`` indexing the flattened windows and
    ``tokens`` the concatenated docs' tokens, one entry per piece, and ``n_tokens``."""
    import numpy as np

    rows: list[list[int]] = []
    pieces: list[tuple[int, int]] = []  # (window, position) of each piece
    tokens: list[int] = []
    offset = 0
    for doc in docs:
        words = [token.text for token in doc]
        for ids, owners in piece_windows(words, tokenizer, max_pieces):
            row = [tokenizer.cls_token_id, *ids, tokenizer.sep_token_id]
            for k, owner in enumerate(owners):
                pieces.append((len(rows), k + 1))
                tokens.append(offset + owner)
            rows.append(row)
        offset += len(doc)
    width = max((len(row) for row in rows), default=2)
    input_ids = np.full((max(len(rows), 1), width), tokenizer.pad_token_id, dtype="int64")
    mask = np.zeros_like(input_ids)
    for r, row in enumerate(rows):
        input_ids[r, :len(row)] = row
        mask[r, :len(row)] = 1
    flat = np.array([r * width + k for r, k in pieces], dtype="int64")
    return {"input_ids": input_ids, "attention_mask": mask, "pieces": flat,
            "tokens": np.array(tokens, dtype="int64"), "n_tokens": offset}


def _scaled_shim(module: Any, rate_scale: float) -> Any:
    """A thinc shim of ``module`` whose updates take ``rate_scale`` times the optimizer's learning rate: thinc's own
    update, given the optimizer with its ``lr_scale`` set."""
    from functools import partial

    from thinc.api import PyTorchShim

    class ScaledRateShim(PyTorchShim):
        def finish_update(self, optimizer: Any) -> None:
            super().finish_update(partial(optimizer, lr_scale=rate_scale))

    return ScaledRateShim(module)


def token_vectors(folder: str, bf16: bool = False, max_pieces: int = 0, shape_width: int = 0,
                  rate_scale: float = 1.0) -> Any:
    """The thinc model (``List[Doc] → List[Floats2d]``) of the registered architecture; ``max_pieces`` 0 takes the
    model's own limit less its two special tokens. ``shape_width`` > 0 adds that many columns of spaCy's hashed
    embeddings of each token's shape, first letter and last three letters (``spacy.MultiHashEmbed.v2``): the case an
    uncased encoder does not see. ``rate_scale``: the encoder's learning rate over the optimizer's (1: the same)."""
    import torch
    from thinc.api import ArgsKwargs, Model, torch2xp, xp2torch
    from thinc.layers.pytorchwrapper import forward as pytorch_forward

    if not rate_scale > 0:
        raise NerEncoderError(f"rate_scale {rate_scale}: must be above 0")

    folder = str(check_folder(folder))
    module = _torch_module(folder, bf16)
    config = module.encoder.config
    offset = 2 if config.model_type in OFFSET_POSITIONS else 0  # their positions start after the padding index
    positions = min(512, getattr(config, "max_position_embeddings", 512) - offset)
    pieces_per_window = max_pieces or positions - 2

    def convert_inputs(model: Model, docs: list[Any], is_train: bool) -> tuple[ArgsKwargs, Any]:
        batch = _batch(docs, _tokenizer(folder), pieces_per_window)
        kwargs = {key: torch.from_numpy(value) if not isinstance(value, int) else value
                  for key, value in batch.items()}
        return ArgsKwargs(args=(), kwargs=kwargs), lambda d_inputs: []

    def convert_outputs(model: Model, inputs_outputs: Any, is_train: bool) -> tuple[list[Any], Any]:
        docs, output = inputs_outputs
        lengths = [len(doc) for doc in docs]
        flat = torch2xp(output)
        split = model.ops.unflatten(flat, model.ops.asarray1i(lengths)) if lengths else []

        def backprop(d_docs: list[Any]) -> ArgsKwargs:
            d_flat = xp2torch(model.ops.flatten(d_docs)) if d_docs else torch.zeros_like(output)
            return ArgsKwargs(args=((output,),), kwargs={"grad_tensors": (d_flat,)})

        return split, backprop

    # PyTorchWrapper_v2's model with no input width (its input is docs), so that thinc's combinators leave it be
    model = Model("pytorch", pytorch_forward, attrs={"convert_inputs": convert_inputs, "convert_outputs": convert_outputs},
                  shims=[_scaled_shim(module, rate_scale)], dims={"nO": config.hidden_size})
    if shape_width <= 0:
        return model
    from spacy.ml.models.tok2vec import MultiHashEmbed
    from thinc.api import concatenate

    surface = MultiHashEmbed(width=shape_width, attrs=["SHAPE", "PREFIX", "SUFFIX"], rows=[1000, 2500, 2500],
                             include_static_vectors=False)
    return concatenate(model, surface)


def _encoders(model: Any) -> list[Any]:
    """The torch modules of this architecture inside the thinc ``model`` (a loaded pipeline component's)."""
    modules = (getattr(shim, "_model", None) for layer in model.walk() for shim in layer.shims)
    return [module for module in modules if getattr(module, "tacred_token_vectors", False)]


def set_bf16(model: Any, bf16: bool) -> int:
    """Run every encoder of this architecture in the thinc ``model`` (a loaded pipeline component's) under bfloat16
    autocast or not, whatever its saved config says (inference: ``tacred extract --precision``); how many it found."""
    found = _encoders(model)
    for module in found:
        module.bf16 = bf16
    return len(found)


def runs_bf16(model: Any) -> bool:
    """Whether an encoder of this architecture in the thinc ``model`` runs under bfloat16 autocast."""
    return any(module.bf16 for module in _encoders(model))


def register() -> None:
    """Register :data:`ARCHITECTURE` with spaCy (once); saved NERs that use it load after this."""
    from spacy.util import registry

    if ARCHITECTURE not in registry.architectures:
        registry.architectures.register(ARCHITECTURE, func=token_vectors)

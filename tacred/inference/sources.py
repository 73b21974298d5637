"""What a model argument names, and what it holds, read once: :func:`resolve_model` tells an exported folder, a shipped
model's name, a checkpoint and a run folder apart (``load_model``'s ``path``, ``--ckpt_path``/``--model`` of
``tacred extract``, ``serve``, ``predict`` and ``export``); with ``read=True`` it also reads the checkpoint's contents
(a shipped model's rebuilt from its folder) or the exported folder's ``predictor.json``, which every later step takes
as given. No torch is imported here, but to read a checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tacred.checkpoints import CheckpointError, read_checkpoint, resolve_checkpoint
from tacred.data.joint_batching import JOINT_KEY
from tacred.inference.encoding import encoder_kind
from tacred.inference.onnx_backend import PREDICTOR_FILE
from tacred.inference.shipped import named_model, shipped_checkpoint
from tacred.io import read_json

THRESHOLD_FILE = "threshold.json"  # what `tacred threshold tune` writes beside a checkpoint
EXPORT_GRAPH = "model.onnx"  # what makes a folder an exported model
EXPORT_VOCAB = "vocab.json"  # an exported relation classifier's vocabularies


@dataclass(frozen=True)
class ModelSource:
    """What a model argument names (:func:`resolve_model`): ``kind`` is ``export`` (an ONNX folder), ``checkpoint``
    (``path`` is the checkpoint file) or ``shipped`` (``path`` is the shipped folder, ``name`` its name).
    ``contents``, when read: a checkpoint's (or shipped model's) contents; an exported folder's ``predictor.json``
    and ``vocab.json``, by file name (``{}`` and None where the folder has none)."""

    kind: str
    path: Path
    name: str | None = None
    contents: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def model_kind(self) -> str:
        """What the contents hold: ``relation`` or ``joint`` (a checkpoint), ``onnx`` or ``onnx_joint`` (an
        exported folder); a checkpoint that holds neither model is a :class:`~tacred.checkpoints.CheckpointError`."""
        if self.contents is None:
            raise ValueError(f"{self.path}: not read (resolve_model(..., read=True))")
        if self.kind == "export":
            return "onnx_joint" if self.contents[PREDICTOR_FILE].get("kind") == "joint" else "onnx"
        if isinstance(self.contents.get(JOINT_KEY), dict):
            return "joint"
        if not isinstance(self.contents.get("tacred_vocab"), dict):
            raise CheckpointError(f"{self.path}: holds no tacred vocabulary (not written by tacred?)")
        return "relation"

    @property
    def saved_vocab(self) -> dict[str, Any]:
        """A relation classifier's vocabularies as saved: the checkpoint's, or the exported folder's ``vocab.json``."""
        return self.contents[EXPORT_VOCAB] if self.kind == "export" else self.contents["tacred_vocab"]

    @property
    def encoder_kind(self) -> str:
        """A relation classifier's input encoder (:data:`tacred.inference.encoding.ENCODERS`), as its metadata names
        it: ``predictor.json``'s ``encoder``, a checkpoint's ``tacred_predictor``."""
        meta = self.contents[PREDICTOR_FILE] if self.kind == "export" else self.contents.get("tacred_predictor")
        return encoder_kind(meta, self.saved_vocab)

    @property
    def threshold_folder(self) -> Path:
        """Where a tuned ``threshold.json`` goes with the model."""
        return self.path.parent if self.kind == "checkpoint" else self.path

    @property
    def tuned_threshold(self) -> str | None:
        """The ``threshold.json`` that goes with the model, when there is one."""
        path = self.threshold_folder / THRESHOLD_FILE
        return str(path) if path.is_file() else None

    @property
    def ner_folders(self) -> list[Path]:
        """Where a trained NER saved with the model (``ner/``) is looked for: beside a checkpoint or in its run
        folder, in an exported or shipped folder."""
        return [self.path.parent, self.path.parent.parent] if self.kind == "checkpoint" else [self.path]

    def __str__(self) -> str:
        """What names the model on a command line: the shipped name, else the path."""
        return self.name if self.name is not None else str(self.path)


def resolve_model(path: str | Path, read: bool = False) -> ModelSource:
    """The one reading of a model argument: an exported folder (``model.onnx`` in it), a checkpoint or run folder,
    or, when nothing of that name is on disk and it has no folder part or suffix, the name of a shipped model. An
    unknown name is an :class:`~tacred.inference.shipped.UnknownModelError` listing the shipped models; a missing
    path a :class:`~tacred.checkpoints.CheckpointError`. ``read``: read what it holds too, once (see
    :class:`ModelSource`)."""
    name, shipped = named_model(path)  # first: refuses the arguments that would get a misleading answer
    folder = Path(path)
    if shipped is not None:
        return ModelSource("shipped", shipped, name, shipped_checkpoint(name) if read else None)
    if folder.is_dir() and (folder / EXPORT_GRAPH).is_file():
        contents: dict[str, Any] = {PREDICTOR_FILE: {}, EXPORT_VOCAB: None}
        for name in (PREDICTOR_FILE, EXPORT_VOCAB) if read else ():
            file = folder / name
            # folders exported before predictor.json existed hold the word encoder; a joint folder keeps its types in
            # predictor.json and its tokenizer in tokenizer.json, no vocab.json
            optional = name == PREDICTOR_FILE or contents[PREDICTOR_FILE].get("kind") == "joint"
            if optional and not file.is_file():
                continue
            try:
                contents[name] = read_json(file)
            except (OSError, ValueError) as err:
                raise CheckpointError(f"{file}: cannot be read as JSON ({err})") from None
            if not isinstance(contents[name], dict):
                raise CheckpointError(f"{file}: not an exported model's {name} (a JSON object)")
        return ModelSource("export", folder, contents=contents if read else None)
    file = resolve_checkpoint(path)
    return ModelSource("checkpoint", file, contents=read_checkpoint(file) if read else None)


def model_checkpoint(source: ModelSource) -> dict[str, Any]:
    """The checkpoint contents of a model argument, read once (``tacred export`` and ``load_model`` share this
    reading). An exported folder holds no checkpoint: a :class:`~tacred.checkpoints.CheckpointError` says so."""
    if source.kind == "export":
        raise CheckpointError(f"{source.path}: an exported folder ({EXPORT_GRAPH}), not a checkpoint; give the "
                              "checkpoint, run folder or shipped model it was exported from")
    return source.contents if source.contents is not None else resolve_model(str(source), read=True).contents

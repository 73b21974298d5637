"""Pretrained transformers by short name: a model split over several packages is joined once into the cache (a
real zip of a tiny BERT cut into five parts here), missing parts name the install command, and the real
all-mpnet-base-v2 when its parts are installed (`tacred pretrained install mpnet`)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from tacred.data import pretrained_packages as packages
from tacred.data.pretrained_packages import PretrainedModelError, assemble, resolve_pretrained
from tests.conftest import run_in_process
from tests.tiny_bert import write_tiny_bert


def cut_zip(folder: Path, name: str, out: Path, parts: int = 5) -> list[Path]:
    """``folder`` zipped as ``name/...`` and cut into ``parts`` files, as the mpnet packages ship it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for file in sorted(folder.rglob("*")):
            archive.write(file, f"{name}/{file.relative_to(folder)}")
    data = buffer.getvalue()
    size = -(-len(data) // parts)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(parts):
        path = out / f"model.zip.{i + 1:03d}"
        path.write_bytes(data[i * size:(i + 1) * size])
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("split")
    return cut_zip(write_tiny_bert(root / "bert", ["maria", "works", "for", "acme"]), "tiny-bert", root / "parts")


def test_joined_parts_load_as_a_model_folder(parts: list[Path], tmp_path: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    folder = assemble(parts, "tiny-bert", tmp_path / "cache" / "tiny-bert")
    assert (folder / ".complete").is_file() and not list((tmp_path / "cache").glob("*.zip"))
    model = AutoModel.from_pretrained(folder)
    assert model.config.hidden_size == 32
    assert AutoTokenizer.from_pretrained(folder)("maria works")["input_ids"][0] == 2  # [CLS]


def test_parts_out_of_order_or_missing_are_a_clear_error(parts: list[Path], tmp_path: Path) -> None:
    with pytest.raises(PretrainedModelError, match="do not join into a zip"):
        assemble(parts[:-1], "tiny-bert", tmp_path / "a")
    with pytest.raises(PretrainedModelError, match="hold no folder other-name/"):
        assemble(parts, "other-name", tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # nothing half-written is left


def test_an_uninstalled_split_model_names_the_command_that_installs_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TACRED_CACHE", str(tmp_path))
    missing = packages.SplitModel("nosuch", "no-such-model", ("tacred-no-such-part-001",), "0.0.1", ("x/model.zip.001",))
    monkeypatch.setitem(packages.SPLIT_MODELS, "nosuch", missing)
    with pytest.raises(PretrainedModelError, match=r"missing: tacred-no-such-part-001\); run `tacred pretrained "
                                                     r"install nosuch` once"):
        resolve_pretrained("nosuch")
    assert resolve_pretrained("some/folder") == "some/folder"  # not a short name: a folder or a hub id


def test_pretrained_list_shows_each_short_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TACRED_CACHE", str(tmp_path))  # an empty cache: mpnet is not joined there
    printed = run_in_process("pretrained", "list").stdout
    assert "mpnet    not installed: run `tacred pretrained install mpnet`" in printed
    assert printed.startswith("minilm ")


def test_the_packaged_mpnet() -> None:
    try:
        folder = Path(resolve_pretrained("mpnet"))
    except PretrainedModelError as err:
        pytest.skip(f"all-mpnet-base-v2 is not installed ({err})")
    from tacred.data.markers import tokenizer_spec
    from tacred.models.config import NetworkConfig
    from tacred.models.transformer import TransformerNetwork

    assert (folder / "model.safetensors").stat().st_size > 400_000_000
    spec = tokenizer_spec("mpnet")
    assert spec["max_length"] == 512  # the tokenizer's limit; MPNet has 514 positions (ids start after padding)
    cfg = NetworkConfig(encoder="transformer", pretrained="mpnet", dropout=0.1)
    net = TransformerNetwork(cfg, 37)
    assert cfg.transformer_config["model_type"] == "mpnet" and cfg.transformer_config["num_hidden_layers"] == 12
    assert sum(p.numel() for p in net.encoder.parameters()) > 100_000_000


def test_install_if_missing_keeps_a_joined_model_and_joins_a_missing_one(parts: list[Path], tmp_path: Path,
                                                                          monkeypatch) -> None:
    monkeypatch.setenv("TACRED_CACHE", str(tmp_path))
    model = packages.SplitModel("tiny", "tiny-bert", ("tacred-no-such-part-001",), "0.0.1", ("x/model.zip.001",))
    monkeypatch.setitem(packages.SPLIT_MODELS, "tiny", model)
    with pytest.raises(PretrainedModelError, match="missing: tacred-no-such-part-001"):
        packages.install("tiny", pip=False, if_missing=True)  # nothing in the cache: it joins, and the parts are absent
    joined = assemble(parts, "tiny-bert", tmp_path / "models" / "tiny-bert")
    stamp = (joined / ".complete").stat().st_mtime_ns
    # Joined already: neither pip (its package does not exist) nor the absent parts are touched.
    assert packages.install("tiny", pip=True, if_missing=True) == joined
    assert (joined / ".complete").stat().st_mtime_ns == stamp
    with pytest.raises(PretrainedModelError, match="missing: tacred-no-such-part-001"):
        packages.install("tiny", pip=False)  # without --if_missing it always joins again ...
    assert (joined / ".complete").stat().st_mtime_ns == stamp  # ... and a failed join leaves the cached model as it was


def test_make_installs_mpnet_only_when_the_cache_lacks_it(parts: list[Path], tmp_path: Path, monkeypatch) -> None:
    """`make results-kbp37`'s step: `tacred pretrained install mpnet --if_missing` with the model joined already
    (a tiny stand-in under mpnet's folder name) prints it and installs nothing."""
    monkeypatch.setenv("TACRED_CACHE", str(tmp_path))
    folder = assemble(parts, "tiny-bert", tmp_path / "models" / "all-mpnet-base-v2")
    printed = run_in_process("pretrained", "install", "mpnet", "--if_missing").stdout
    assert printed == f"mpnet: {folder} (--model.network.pretrained mpnet)\n"

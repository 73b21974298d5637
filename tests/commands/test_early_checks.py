"""--device and --spacy_model are answered before torch or spaCy load (seconds): a device this machine cannot have
and a pipeline that is not installed are one line each, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tacred.devices import DeviceError, check_device_name
from tacred.text.spacy_pipeline import SpacyModelError, check_spacy_name
from tests.conftest import run_in_process


def test_a_cuda_device_without_an_nvidia_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.path.exists", lambda path: False)
    monkeypatch.setattr("shutil.which", lambda name: None)
    for name in ("cuda", "cuda:1", "gpu"):
        with pytest.raises(DeviceError, match="no NVIDIA driver"):
            check_device_name(name)
    check_device_name("cpu")
    check_device_name("auto")
    with pytest.raises(DeviceError, match="expected one of"):
        check_device_name("tpu")


def test_with_a_driver_the_count_is_left_to_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvidia-smi")
    check_device_name("cuda:7")


def test_a_spacy_pipeline_is_an_installed_package_or_a_folder(tmp_path: Path) -> None:
    check_spacy_name(None)
    check_spacy_name(str(tmp_path))
    with pytest.raises(SpacyModelError, match="--spacy_model 'en_core_web_xx': no installed spaCy pipeline"):
        check_spacy_name("en_core_web_xx")
    with pytest.raises(SpacyModelError, match="no installed spaCy pipeline"):
        check_spacy_name(str(tmp_path / "missing"))


@pytest.mark.parametrize(("option", "value", "fragment"), [
    ("--device", "tpu", "device 'tpu': expected one of"),
    ("--spacy_model", "en_core_web_xx", "--spacy_model 'en_core_web_xx': no installed spaCy pipeline"),
])
def test_extract_refuses_them_before_loading(tmp_path: Path, option: str, value: str, fragment: str) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "a", "text": "Ana lives in Lyon."}) + "\n")
    ran = run_in_process("extract", str(docs), "--model", "kbp37", option, value, "--output", str(tmp_path / "out"),
                         check=False)
    assert ran.status == 2 and fragment in ran.stderr and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert not (tmp_path / "out").exists()

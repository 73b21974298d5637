"""Inference precision (``load_model(..., precision=)``, ``tacred extract/serve/predict --precision``): bf16 runs the
model under bfloat16 autocast, 32 and the default run float32, anything else is refused before a model loads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import run_in_process


@pytest.mark.parametrize(("asked", "read"), [(None, None), ("32", "32"), ("bf16", "bf16"), ("BF16", "bf16"),
                                             ("bf16-mixed", "bf16"), ("32-true", "32"), ("fp32", "32")])
def test_precision_names_are_read_as_lightning_and_torch_write_them(asked, read) -> None:
    from tacred.devices import check_precision

    assert check_precision(asked) == read


@pytest.mark.parametrize("asked", ["16", "fp16", "bf32", ""])
def test_an_unknown_precision_is_one_clear_error(asked) -> None:
    from tacred.devices import DeviceError, check_precision

    with pytest.raises(DeviceError, match=f"precision {asked!r}: expected 32 or bf16"):
        check_precision(asked)


@pytest.mark.parametrize("command", ["extract", "serve", "predict"])
def test_the_commands_refuse_an_unknown_precision_before_loading_anything(command, checkpoint, tmp_path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "Ann works for Acme."}\n')
    args = {"extract": ["extract", str(docs), "--ckpt_path", str(checkpoint)],
            "serve": ["serve", "--ckpt_path", str(checkpoint)],
            "predict": ["predict", "--ckpt_path", str(checkpoint), "--sentences", str(docs)]}[command]
    ran = run_in_process(*args, "--precision", "fp16", check=False)
    assert ran.status == 2 and "fp16" in ran.stderr and "bf16" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_a_word_vocabulary_network_runs_float32_whatever_is_asked(checkpoint) -> None:
    """Its pair scorer is written for float32: bf16 is the transformers' (tests/models/test_transformer.py and
    tests/inference/test_joint_export.py check that it moves their probabilities)."""
    from tacred import load_model

    examples = json.loads((checkpoint.parents[2] / "data" / "test.json").read_text())
    default = load_model(checkpoint, device="cpu")
    bf16 = load_model(checkpoint, device="cpu", precision="bf16")
    assert (default.precision, bf16.precision) == (None, "bf16")
    assert np.array_equal(default.predictor.probabilities(examples), bf16.predictor.probabilities(examples))
    text = "Alice Smith works for Acme Corp. in Paris. Bob Jones lives in Rome."
    assert [r.to_dict() for r in default.extract(text)] == [r.to_dict() for r in bf16.extract(text)]


def test_extract_records_the_precision_it_ran_at_and_a_rerun_must_ask_the_same(checkpoint, tmp_path, nlp) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "Alice Smith works for Acme Corp. in Paris."}\n')
    out = tmp_path / "out"
    run_in_process("extract", str(docs), "--ckpt_path", str(checkpoint), "--output", str(out), "--precision", "bf16",
                   "--device", "cpu")
    manifest = json.loads((out / "extract.json").read_text())
    assert manifest["precision"] == "bf16"
    again = run_in_process("extract", str(docs), "--ckpt_path", str(checkpoint), "--output", str(out), "--device",
                           "cpu", check=False)
    assert again.status != 0 and "precision" in again.stderr


def test_load_model_refuses_an_unknown_precision_and_warns_where_bf16_is_emulated(checkpoint, monkeypatch,
                                                                                  caplog) -> None:
    import logging

    from tacred import load_model
    from tacred.devices import DeviceError

    with pytest.raises(DeviceError, match="precision 'fp16': expected 32 or bf16"):
        load_model(checkpoint, device="cpu", precision="fp16")
    monkeypatch.setattr("tacred.devices.cpu_has_bf16", lambda: False)
    with caplog.at_level(logging.WARNING, logger="tacred"):
        load_model(checkpoint, device="cpu", precision="bf16")
        load_model(checkpoint, device="cpu", precision="32")
    assert [r.getMessage() for r in caplog.records if "bfloat16" in r.getMessage()] == [
        "precision bf16 on a CPU without avx512_bf16 or AMX: torch emulates bfloat16, which is slower than float32 "
        "here"]

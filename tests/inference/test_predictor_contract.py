"""One contract for every predictor: a checkpoint (torch) and its exported folder (ONNX Runtime, no torch) accept the
same inputs, raise the same InputError and return the same Prediction objects; devices, limits and loading."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import NO_TORCH_PROBE, REPO

pytest.importorskip("onnxruntime")

MARKED = "<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said ."
TOKENS = "Maria Lopez , the chief executive of Acme Holdings , said .".split()


@pytest.fixture(scope="module")
def exported(checkpoint, tmp_path_factory) -> Path:
    from tacred.inference.export import export_folder

    out = tmp_path_factory.mktemp("contract") / "exported"
    export_folder(checkpoint, out)
    return out


@pytest.fixture(scope="module")
def both(checkpoint, exported):
    from tacred import load_model

    return load_model(checkpoint, device="cpu"), load_model(exported, device="cpu")


@pytest.fixture(scope="module")
def examples(checkpoint) -> list[dict]:
    return json.loads((checkpoint.parents[2] / "data" / "test.json").read_text())


def test_the_export_folder_loads_with_onnx_runtime(both, exported):
    from tacred.inference.onnx_backend import OnnxBackend
    from tacred.inference.trained import TorchBackend

    torch_model, onnx_model = both
    assert isinstance(torch_model.backend, TorchBackend) and isinstance(onnx_model.backend, OnnxBackend)
    assert type(onnx_model.predictor) is type(torch_model.predictor)  # the same Predictor class
    assert onnx_model.labels == torch_model.labels and onnx_model.device == "cpu"


def test_every_input_form_gives_the_same_predictions(both, examples, nlp):
    forms = [
        examples[0], examples[1:4], MARKED, {"text": MARKED, "id": "m"},
        {"text": MARKED.replace("<subj>", "").replace("</subj>", "").replace("<obj>", "").replace("</obj>", ""),
         "h": {"pos": [0, 11]}, "t": {"pos": [37, 50]}},
        {"token": TOKENS, "h": {"pos": [0, 2]}, "t": {"pos": [7, 9]}, "id": 7},
    ]
    for form in forms:
        got_torch, got_onnx = (m.predict(form) for m in both)
        assert type(got_torch) is type(got_onnx)
        for a, b in zip(*(g if isinstance(g, list) else [g] for g in (got_torch, got_onnx)), strict=True):
            assert (a.id, a.relation, a.subject, a.object) == (b.id, b.relation, b.subject, b.object)
            assert a.probability == pytest.approx(b.probability, abs=1e-5)
            assert a.id is not None and list(a.probabilities) == list(b.probabilities)


@pytest.mark.parametrize(("bad", "message"), [
    ({"token": TOKENS, "h": {"pos": [0, 2]}}, "'t' must be an object with 'pos'"),
    (dict(token=["a", "b"], subj_start=0, subj_end=0, obj_start=1, obj_end=99, subj_type="PERSON", obj_type="X",
          stanford_pos=["NN", "NN"], stanford_ner=["O", "O"]), "obj_end=99 does not satisfy"),
    ({"sentence": "x"}, "found the keys ['sentence']"),
    (3.5, "expected a string, a dict or a list"),
    ({"token": ["w"] * 30, "h": {"pos": [0, 1]}, "t": {"pos": [2, 3]}}, "30 tokens, more than the limit of 20"),
])
def test_bad_inputs_raise_the_same_input_error(both, bad, message):
    from tacred.inference.api import InputError

    errors = []
    for model in both:
        model.max_tokens = 20
        try:
            with pytest.raises(InputError) as caught:
                model.predict(bad)
        finally:
            model.max_tokens = None
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and message in errors[0]


def test_absent_or_unknown_devices_are_one_line_errors(checkpoint, exported):
    import torch

    from tacred import load_model
    from tacred.devices import DeviceError, resolve_device

    assert resolve_device("auto", 0) == "cpu" and resolve_device("auto", 2) == "cuda"
    assert resolve_device("gpu", 1) == "cuda" and resolve_device("cuda:1", 2) == "cuda:1"
    with pytest.raises(DeviceError, match="device 'quantum': expected one of auto"):
        load_model(checkpoint, device="quantum")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="device 'cuda': CUDA is not available here .*built without CUDA"):
            load_model(checkpoint, device="cuda")
        assert load_model(checkpoint).device == "cpu"  # auto
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        with pytest.raises(DeviceError, match="has no CUDAExecutionProvider"):
            load_model(exported, device="cuda")


def test_a_file_that_is_not_a_checkpoint_is_named_as_such(tmp_path):
    from tacred import load_model
    from tacred.checkpoints import CheckpointError

    with pytest.raises(CheckpointError) as caught:
        load_model(REPO / "README.md")
    assert "README.md: not a tacred checkpoint" in str(caught.value) and "weights_only" not in str(caught.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="is a folder without a checkpoint"):
        load_model(empty)


def test_a_run_folder_loads_best_then_last_and_says_so(checkpoint, tmp_path, caplog):
    from tacred import load_model

    run = checkpoint.parents[1]
    with caplog.at_level(logging.INFO, logger="tacred"):
        load_model(run)
    assert f"loading {run / 'checkpoints' / 'best.ckpt'} (the best dev F1)" in caplog.text
    only_last = tmp_path / "run" / "checkpoints"
    only_last.mkdir(parents=True)
    shutil.copy(checkpoint, only_last / "last.ckpt")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="tacred"):
        load_model(tmp_path / "run")
    assert "last.ckpt (the last epoch; no best.ckpt there)" in caplog.text


@pytest.mark.slow  # a subprocess
def test_onnx_inference_needs_neither_torch_nor_lightning(exported, both, examples):
    """In an install without torch-backed spaCy plugins: spacy-curated-transformers (in older development
    environments) registers itself with spaCy, which then imports it (and torch) whenever it builds a pipeline, so the
    probe hides that plugin's entry points."""
    probe = NO_TORCH_PROBE + f"""
from tacred import load_model
from tacred.inference.onnx_backend import OnnxBackend
m = load_model({str(exported)!r})
assert isinstance(m.predictor.backend, OnnxBackend)
preds = m.predict(json.loads(sys.stdin.read()) + [{MARKED!r}])
print(json.dumps([[p.id, p.relation, p.probability] for p in preds]))
"""
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, input=json.dumps(examples[:3]), capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    expected = both[0].predict([*examples[:3], MARKED])
    assert [(g[0], g[1]) for g in got] == [(p.id, p.relation) for p in expected]
    assert np.allclose([g[2] for g in got], [p.probability for p in expected], atol=1e-5)

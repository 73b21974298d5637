"""``tacred export``: ONNX Runtime reproduces PyTorch on the test split, and the folder can be handed on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def exported(checkpoint, tmp_path_factory) -> tuple[Path, str]:
    from tacred.commands.export import main

    out = tmp_path_factory.mktemp("export") / "model"
    assert main(["--ckpt_path", str(checkpoint), "--out", str(out), "--format", "onnx"]) == 0
    return out, str(checkpoint.parents[2] / "data" / "test.json")


def test_onnx_runtime_equals_pytorch_on_the_test_split(exported, checkpoint):
    from tacred import load_model

    out, test_file = exported
    summary = json.loads((out / "export.json").read_text())
    assert summary["checked_on"] == test_file and summary["examples"] == 40
    assert summary["onnx_max_abs_diff"] <= 1e-5
    # independently of the export's own check: the folder alone against the Python API
    examples = json.loads(Path(test_file).read_text())
    onnx_probs = load_model(out).probabilities(examples)
    torch_probs = load_model(checkpoint).probabilities(examples)
    assert abs(onnx_probs - torch_probs).max() <= 1e-5
    assert [p.relation for p in load_model(out).predict(examples[:3])] == \
        [p.relation for p in load_model(checkpoint).predict(examples[:3])]


def test_the_folder_holds_weights_vocabularies_config_and_a_model_card(exported, checkpoint):
    from tacred.data.vocab import Vocabularies
    from tacred.training.module import RelationExtractor

    out, _ = exported
    assert {"model.onnx", "weights.pt", "vocab.json", "labels.json", "network.json", "predictor.json", "config.yaml",
            "README.md", "export.json"} <= {p.name for p in out.iterdir()}
    model = RelationExtractor.from_checkpoint(checkpoint)
    weights = torch.load(out / "weights.pt", weights_only=True)
    assert all(torch.equal(weights[k], v) for k, v in model.net.state_dict().items())
    assert Vocabularies.load(out / "vocab.json").fingerprint() == model.vocab.fingerprint()
    assert json.loads((out / "labels.json").read_text()) == model.vocab.labels.itos
    card = (out / "README.md").read_text()
    for heading in ("## Data", "## Recipe", "## Scores", "## Intended use and limits"):
        assert heading in card
    assert "Best dev F1" in card and "largest absolute difference" in card


def test_an_existing_folder_is_never_overwritten_silently(exported, checkpoint, capsys):
    from tacred.commands.export import main

    out, _ = exported
    before = (out / "README.md").read_text()
    assert main(["--ckpt_path", str(checkpoint), "--out", str(out)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert (out / "README.md").read_text() == before
    assert main(["--ckpt_path", str(checkpoint), "--out", str(out), "--overwrite", "--format", "torch"]) == 0


def test_an_int8_export_is_smaller_checked_against_pytorch_and_predicts(exported, checkpoint, tmp_path, capsys):
    import onnx

    from tacred import load_model
    from tacred.commands.export import main

    full, test_file = exported
    out = tmp_path / "int8"
    assert main(["--ckpt_path", str(checkpoint), "--out", str(out), "--quantize", "int8", "--min_agreement", "0"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "export.json").read_text())
    assert summary["quantization"] == "int8" and summary["checked_on"] == test_file
    assert f"PyTorch's label for {summary['quantized_agreement']:.2%}" in printed
    assert 0.0 <= summary["quantized_agreement"] <= 1.0 and summary["quantized_max_abs_diff"] > 0.0
    assert summary["quantized_f1"] is not None and summary["torch_f1"] is not None  # the test split has gold labels
    ops = {node.op_type for node in onnx.load(str(out / "model.onnx")).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} & ops, "the graph multiplies int8 weights"
    assert not (out / "model.fp32.onnx").exists()
    assert json.loads((out / "predictor.json").read_text())["quantization"] == "int8"
    assert "is quantized (int8" in (out / "README.md").read_text()
    examples = json.loads(Path(test_file).read_text())
    predicted = [p.relation for p in load_model(out).predict(examples)]
    assert len(predicted) == len(examples) and set(predicted) <= set(json.loads((out / "labels.json").read_text()))


@pytest.mark.parametrize(("extra", "message"), [
    (["--quantize", "int8", "--min_agreement", "1.5"], "min_agreement 1.5: a share of examples in [0, 1]"),
    (["--quantize", "int8", "--format", "torch"], "only int8, with the onnx format"),
])
def test_a_wrong_quantization_request_is_one_line(checkpoint, tmp_path, capsys, extra, message):
    from tacred.commands.export import main

    assert main(["--ckpt_path", str(checkpoint), "--out", str(tmp_path / "x"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_an_int8_export_below_the_agreement_asked_for_fails_and_leaves_nothing(checkpoint, tmp_path, capsys,
                                                                              monkeypatch):
    from tacred.commands.export import main
    from tacred.inference import export

    checks = []
    real = export.onnx_agreement

    def disagreeing(*args, **kwargs):  # the float32 check as it is; the quantized graph agrees on 3 examples in 4
        found = real(*args, **kwargs)
        checks.append(found)
        return found | {"agreement": 0.75} if len(checks) == 2 else found

    monkeypatch.setattr(export, "onnx_agreement", disagreeing)
    assert main(["--ckpt_path", str(checkpoint), "--out", str(tmp_path / "x"), "--quantize", "int8",
                 "--min_agreement", "0.8"]) == 2
    err = capsys.readouterr().err
    assert "int8 model predicts PyTorch's label for 75.00% of the 40 examples checked (< 80.00%)" in err
    assert len(checks) == 2 and not (tmp_path / "x").exists()
    assert not list(tmp_path.glob(".x.partial*")), "no half-written folder is left behind"

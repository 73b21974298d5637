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
    from tacred.inference.export import OnnxRelationModel

    out, test_file = exported
    summary = json.loads((out / "export.json").read_text())
    assert summary["checked_on"] == test_file and summary["examples"] == 40
    assert summary["onnx_max_abs_diff"] <= 1e-5
    # independently of the export's own check: the folder alone against the Python API
    examples = json.loads(Path(test_file).read_text())
    onnx_probs = OnnxRelationModel(out).probabilities(examples)
    torch_probs = load_model(checkpoint).probabilities(examples)
    assert abs(onnx_probs - torch_probs).max() <= 1e-5
    assert [p.relation for p in OnnxRelationModel(out).predict(examples[:3])] == \
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

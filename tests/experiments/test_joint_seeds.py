"""A joint row of the end-to-end table on a tiny encoder: tacred end-to-end trains its seed (tacred fit), extracts
the raw test sentences at three thresholds, records the scores in the pipeline rows' layout and tabulates them; run
again, it does nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest.importorskip("transformers")

from tests.conftest import REPO, run_in_process  # noqa: E402
from tests.joint_corpus import corpus_words, write_joint_corpus  # noqa: E402
from tests.tiny_bert import write_tiny_bert  # noqa: E402

pytestmark = pytest.mark.slow  # a tiny training and three extractions


def test_a_joint_row_trains_extracts_scores_and_tabulates_its_seed(tmp_path: Path) -> None:
    corpus = write_joint_corpus(tmp_path / "corpus")
    encoder = write_tiny_bert(tmp_path / "bert", corpus_words())
    config = yaml.safe_load((REPO / "configs" / "conll04" / "joint_minilm.yaml").read_text())
    config["trainer"].update({"precision": "32-true", "max_epochs": 8, "enable_model_summary": False})
    config["model"]["init_args"].update({"pretrained": str(encoder), "lr": 3e-3, "head_lr": 1e-2,
                                         "warmup_ratio": 0.0})
    config["data"]["init_args"].update({"data_dir": str(corpus), "train_file": "train.json", "dev_file": "dev.json",
                                        "test_file": "test.json", "types_file": str(corpus / "types.json")})
    (tmp_path / "joint.yaml").write_text(yaml.safe_dump(config))
    sentences = json.loads((corpus / "test.json").read_text())
    documents = tmp_path / "test.jsonl"
    documents.write_text("".join(json.dumps({"id": f"test-{i}", "text": " ".join(s["tokens"])}) + "\n"
                                 for i, s in enumerate(sentences)))
    spec = {"title": "tiny", "marker": "tiny", "measure": "tiny test set",
            "end_to_end": {"results": "results", "out": ".", "runs_dir": str(tmp_path / "runs"), "gold": str(corpus / "test.json"),
                           "train_data": str(corpus), "documents": str(documents), "data_dir": str(corpus)},
            "models": [{"key": "joint", "name": "joint tiny", "inputs": "tiny", "variant": "joint_tiny",
                        "config": str(tmp_path / "joint.yaml"), "seeds": [1], "target": {"micro_f1": 50.0}}],
            "published": []}
    (tmp_path / "spec").mkdir()
    spec_path = tmp_path / "spec" / "end_to_end.yaml"
    spec_path.write_text(yaml.safe_dump(spec))

    ran = run_in_process("end-to-end", str(spec_path))
    record = json.loads((tmp_path / "spec" / "results" / "joint_tiny" / "seed_1" / "end_to_end.json").read_text())
    assert {"argmax", "dev_f1", "dev_p80", "entities", "gold_pairs_f1"} <= record.keys()
    assert record["dev_f1"]["relations"]["strict"]["micro"]["f1"] > 70, record["dev_f1"]
    assert record["entities"]["micro"]["f1"] > 90 and record["gold_pairs_f1"] > 80
    assert record["training"]["epochs"] == 8 and record["training"]["seconds"] > 0
    summary = json.loads((tmp_path / "spec" / "end_to_end_summary.json").read_text())
    assert summary["joint"]["seeds"] == [1] and summary["joint"]["targets"]["micro_f1"]["met"]
    assert "| joint tiny | tiny | 1 |" in ran.stdout

    again = run_in_process("end-to-end", str(spec_path))
    assert "training" not in again.stdout  # the finished seed is not touched

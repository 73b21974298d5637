"""Scores over a whole release: `tacred test`, `evaluate` and the stored results count the sentences a converter
could not convert (``conversion.json``) as no-relation predictions, beside the scores over the converted ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tacred.evaluation.scoring import over_release, score
from tacred.experiments import results
from tacred.training import evaluate
from tests.conftest import run_in_process

LOST = ["per:title", "org:founded_by"]  # gold labels of two test sentences the "converter" could not convert


@pytest.fixture
def release(checkpoint: Path, tmp_path: Path) -> Path:
    """The tiny model's data with a conversion record saying two more test sentences could not be converted."""
    data = tmp_path / "data"
    shutil.copytree(checkpoint.parents[2] / "data", data)
    size = len(json.loads((data / "test.json").read_text(encoding="utf-8")))
    record = {"sizes": {"test": size}, "unconverted": {"test": [
        {"id": f"x-{i}", "file": "test.txt", "line": 1 + 4 * i, "relation": label, "problem": "the e1 entity is empty"}
        for i, label in enumerate(LOST)]}}
    (data / "conversion.json").write_text(json.dumps(record), encoding="utf-8")
    return data


def test_tacred_test_reports_the_whole_release_beside_the_converted_sentences(checkpoint, release, tmp_path):
    out = tmp_path / "out"
    ran = run_in_process("test", "--ckpt_path", str(checkpoint), "--data.data_dir", str(release),
                         "--model.output_dir", str(out))
    metrics = json.loads((out / "test_metrics.json").read_text(encoding="utf-8"))
    size = len(json.loads((release / "test.json").read_text(encoding="utf-8")))
    whole = metrics["release"]
    assert (whole["sentences"], whole["unconverted"]) == (size + 2, 2)
    assert whole["recall"] < metrics["recall"] and whole["precision"] == pytest.approx(metrics["precision"])
    assert f"Over all {size + 2} sentences of the release (2 could not be converted" in ran.stdout
    (release / "conversion.json").unlink()
    run_in_process("test", "--ckpt_path", str(checkpoint), "--data.data_dir", str(release), "--model.output_dir",
                   str(tmp_path / "plain"))
    assert "release" not in json.loads((tmp_path / "plain" / "test_metrics.json").read_text(encoding="utf-8"))


def test_stored_results_and_ensembles_score_over_the_whole_release(checkpoint, release):
    evaluation = evaluate(checkpoint, "test", data_dir=release)
    assert evaluation.unconverted == LOST
    record = results.test_record(evaluation)
    gold, pred = over_release(evaluation.gold_names, evaluation.names(evaluation.pred), LOST, evaluation.no_relation)
    assert record["f1"] == pytest.approx(score(gold, pred, evaluation.no_relation).f1)
    assert record["test"]["unconverted"] == [evaluation.labels.index(label) for label in LOST]
    assert len(record["test"]["gold"]) == len(evaluation.ids)  # the predictions stay those of the converted examples

    def stored(seed: int) -> results.StoredRun:
        return results.StoredRun("v", seed, evaluation, evaluation.pred)

    both = results.ensemble_scores([stored(1), stored(2)])  # two identical members: the ensembles are the member itself
    assert both["vote"] == pytest.approx(100 * record["f1"]) and both["average"] == pytest.approx(100 * record["f1"])

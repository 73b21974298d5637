"""The joint entity-and-relation model end to end on a tiny encoder: tacred fit (and a fit killed inside an epoch,
resumed to the same end), tacred test, load_model(...).extract, tacred extract and score-extraction, tacred serve's
/extract; the checkpoint alone is enough for all of them (the encoder's folder is gone by then)."""

from __future__ import annotations

import csv
import json
import urllib.request
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from tacred.data.joint_batching import JOINT_KEY  # noqa: E402
from tests.conftest import run_in_process  # noqa: E402
from tests.joint_corpus import corpus_words, joint_fit_args  # noqa: E402
from tests.tiny_bert import write_tiny_bert  # noqa: E402

pytestmark = pytest.mark.slow  # tiny trainings, the CLI, a server


@pytest.fixture(scope="module")
def corpus(joint_corpus: Path) -> Path:
    return joint_corpus


@pytest.fixture(scope="module")
def trained(joint_run: Path) -> Path:
    return joint_run  # the session's trained joint model (tests/conftest.py), shared with the export's tests


def dev_rows(run: Path) -> list[dict[str, str]]:
    with open(run / "metrics.csv", encoding="utf-8", newline="") as f:
        return [{k: v for k, v in r.items() if k.startswith("val/")} for r in csv.DictReader(f) if r.get("val/f1")]


def test_fit_learns_and_keeps_what_prediction_needs(trained: Path) -> None:
    rows = dev_rows(trained)
    assert len(rows) == 8 and float(rows[-1]["val/f1"]) > 0.9 and float(rows[-1]["val/ner_f1"]) > 0.9
    saved = torch.load(trained / "checkpoints" / "best.ckpt", map_location="cpu", weights_only=False)[JOINT_KEY]
    assert saved["types"]["relations"] == ["Work_For", "Kill", "OrgBased_In", "Live_In"]
    assert 0 < saved["threshold"] < 1 and saved["max_width"] == 3 and "tokenizer_json" in saved["tokenizer"]


def test_tacred_test_scores_the_test_split(trained: Path) -> None:
    ran = run_in_process("test", "--ckpt_path", str(trained))
    metrics = json.loads((trained / "test_metrics.json").read_text())
    assert metrics["strict"]["micro"]["f1"] > 80 and metrics["entities"]["micro"]["f1"] > 90, ran.stderr
    lines = (trained / "test_predictions.jsonl").read_text().splitlines()
    assert len(lines) == 12


def test_predict_is_refused_with_what_to_use_instead(trained: Path) -> None:
    ran = run_in_process("predict", "--ckpt_path", str(trained), check=False)
    assert ran.status == 2 and "tacred extract" in ran.stderr


def test_load_model_extract_finds_entities_and_relations_in_raw_text(trained: Path) -> None:
    from tacred import load_model

    m = load_model(trained)
    found = m.extract("Omar works for Globex in Oslo. Ana lives in Lyon.")
    facts = {(r.relation, r.subject.text, r.object.text, r.sentence) for r in found}
    assert ("Work_For", "Omar", "Globex", 0) in facts and ("Live_In", "Ana", "Lyon", 1) in facts
    work = next(r for r in found if r.relation == "Work_For")
    text = "Omar works for Globex in Oslo. Ana lives in Lyon."
    assert text[work.subject.start:work.subject.end] == "Omar" and work.subject.type == "Peop"


def test_tacred_extract_writes_records_that_score_extraction_scores(trained: Path, corpus: Path,
                                                                    tmp_path: Path) -> None:
    sentences = json.loads((corpus / "test.json").read_text())
    docs = tmp_path / "test.jsonl"
    docs.write_text("".join(json.dumps({"id": f"test-{i}", "text": " ".join(s["tokens"])}) + "\n"
                            for i, s in enumerate(sentences)))
    out = tmp_path / "out"
    run_in_process("extract", str(docs), "--ckpt_path", str(trained), "--output", str(out), "--one_sentence")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["documents"] == 12 and summary["relations"] > 0, summary
    scored = run_in_process("score-extraction", str(corpus / "test.json"), str(out), "--json")
    report = json.loads(scored.stdout)
    assert report["relations"]["strict"]["micro"]["f1"] > 80, report["relations"]["strict"]["micro"]
    pytest.importorskip("duckdb")
    kb = run_in_process("kb", str(out), "--db", str(tmp_path / "kb.duckdb"), "--query",
                        "SELECT relation, subject_type, object_type FROM triples WHERE relation = 'Work_For' LIMIT 1")
    assert json.loads(kb.stdout.splitlines()[-1]) == {"relation": "Work_For", "subject_type": "Peop",
                                                      "object_type": "Org"}


def test_a_fit_killed_inside_an_epoch_resumes_to_the_same_end(corpus: Path, tmp_path: Path) -> None:
    encoder = write_tiny_bert(tmp_path / "bert", corpus_words())
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    run_in_process(*joint_fit_args(corpus, encoder, straight, "--trainer.max_epochs", "3"))
    crash = ("--trainer.callbacks+={'class_path': 'tests.training.test_mid_epoch_resume.CrashAt', "
             "'init_args': {'epoch': 1, 'batch': 2}}")
    crashed = run_in_process(*joint_fit_args(corpus, encoder, stopped, "--trainer.max_epochs", "3", "--checkpoint_minutes",
                                       "1e-9", crash), check=False)
    assert crashed.status != 0 and "simulated crash" in crashed.stderr
    resumed = run_in_process(*joint_fit_args(corpus, encoder, stopped, "--trainer.max_epochs", "3"))
    assert "inside epoch 2, after 2 of its batches" in resumed.stderr
    assert dev_rows(stopped) == dev_rows(straight)
    a = torch.load(straight / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)["state_dict"]
    b = torch.load(stopped / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)["state_dict"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_serve_answers_extract_and_sends_predict_to_it(trained: Path) -> None:
    from tacred.serving.process import serve_in_background

    with serve_in_background(str(trained), extra=["--num_threads", "1"]) as served:
        body = json.dumps({"text": "Sara Kim works for Initech in Boston.", "id": "d1"}).encode()
        request = urllib.request.Request(f"{served.url}/extract", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        assert answer["id"] == "d1" and any(m["relation"] == "Work_For" for m in answer["mentions"]), answer
        request = urllib.request.Request(f"{served.url}/predict", json.dumps("x").encode(),
                                         {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(request, timeout=60)
        assert err.value.code == 422 and "POST /extract" in err.value.read().decode()

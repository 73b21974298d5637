"""A spaCy NER trained on a dataset's own entities (``tacred ner train``): the DocBins, errors that name the file and
the sentence, a short training run whose model ``tacred extract`` picks up from the run folder with CoNLL04's types
mapped to the relation model's, and its NER F1 scored by ``tacred score-extraction``."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from tacred.commands.ner import main as ner_main
from tacred.commands.score_extraction import main as score_main
from tacred.datasets.conll04 import SPLITS, read_conll04
from tacred.ner.training import (
    TRANSFORMER_BATCH,
    TYPES_FILE,
    NerTrainingError,
    doc_bin,
    model_folder,
    pretrained_encoder,
    saved_ner,
    train_ner,
    transformer_config,
)
from tests.datasets.test_conll04 import ALONE, KILL, WORKS, write

MORE = [
    {"tokens": ["Anna", "Berg", "joined", "Nordic", "Steel", "in", "Oslo", "."],
     "entities": [{"type": "Peop", "start": 0, "end": 2}, {"type": "Org", "start": 3, "end": 5},
                  {"type": "Loc", "start": 6, "end": 7}],
     "relations": [{"type": "Work_For", "head": 0, "tail": 1}]},
    {"tokens": ["Peter", "Lund", "lives", "in", "Bergen", "since", "1990", "."],
     "entities": [{"type": "Peop", "start": 0, "end": 2}, {"type": "Loc", "start": 4, "end": 5},
                  {"type": "Other", "start": 6, "end": 7}],
     "relations": [{"type": "Live_In", "head": 0, "tail": 1}]},
]


def release(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write(folder / SPLITS["train"], [WORKS, KILL, *MORE] * 3)
    write(folder / SPLITS["dev"], [WORKS, *MORE])
    write(folder / SPLITS["test"], [ALONE, WORKS, *MORE])
    return folder


def test_doc_bin_holds_the_gold_entities_on_the_text_extract_reads(tmp_path: Path, nlp) -> None:
    sentences = read_conll04(write(tmp_path / "s.json", [WORKS, KILL]))
    docs = list(doc_bin(nlp, sentences, "s.json").get_docs(nlp.vocab))
    assert [d.text for d in docs] == [s.text for s in sentences]
    assert [(e.text, e.label_) for e in docs[0].ents] == [("John Smith", "Peop"), ("Acme Corp.", "Org"),
                                                          ("Paris", "Loc")]
    assert [(e.text, e.label_) for e in docs[1].ents] == [("Mary", "Peop"), ("Bob", "Peop"), ("Tuesday", "Other")]


def test_a_bad_span_is_an_error_naming_the_file_and_the_sentence(tmp_path: Path) -> None:
    folder = release(tmp_path / "data")
    bad = {**MORE[0], "entities": [{"type": "Peop", "start": 6, "end": 9}]}
    write(folder / SPLITS["train"], [WORKS, bad])
    with pytest.raises(NerTrainingError, match=r"conll04_train\.json, sentence 1: entity 0 spans words \[6, 9\), out of range"):
        train_ner(folder, tmp_path / "ner")
    assert not (tmp_path / "ner").exists()  # nothing written before the data is checked


def test_a_release_without_entities_is_an_error(tmp_path: Path) -> None:
    folder = release(tmp_path / "data")
    write(folder / SPLITS["dev"], [{**ALONE, "entities": [], "relations": []}])
    with pytest.raises(NerTrainingError, match=r"conll04_dev\.json: no sentence has an entity"):
        train_ner(folder, tmp_path / "ner")


def test_a_folder_without_a_trained_ner_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(NerTrainingError, match="not a trained NER"):
        model_folder(tmp_path)
    assert saved_ner([tmp_path]) is None


@pytest.mark.slow
def test_trained_ner_is_picked_up_by_extract_and_scored(tmp_path: Path, checkpoint: Path, nlp, capsys, caplog) -> None:
    from tacred import load_model

    data = release(tmp_path / "data")
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    shutil.copy(checkpoint, run / "checkpoints" / "last.ckpt")
    assert ner_main(["train", "--data", str(data), "--out", str(run / "ner"), "--max_epochs", "40",
                     "--eval_frequency", "10", "--seed", "3"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])  # after spaCy's own progress table
    assert record["labels"] == ["Loc", "Org", "Other", "Peop"]
    best = run / "ner" / "model-best"
    types = json.loads((best / TYPES_FILE).read_text())["types"]
    assert types == {"Loc": "LOCATION", "Org": "ORGANIZATION", "Other": "MISC", "Peop": "PERSON"}
    training = json.loads((run / "ner" / "training.json").read_text())
    assert training["seed"] == 3 and training["train_sentences"] == 12

    # the run folder's NER is used, its labels mapped to the relation model's types
    with caplog.at_level(logging.INFO, logger="tacred"):
        predictor = load_model(run, device="cpu")
    assert predictor.ner == str(best)
    assert "entities from the trained NER" in caplog.text
    text_nlp = predictor.extraction().nlp
    assert "tacred_entity_types" in text_nlp.pipe_names
    doc = text_nlp("John Smith works for Acme Corp. in Paris . Anna Berg joined Nordic Steel in Oslo .")
    labels = {e.label_ for e in doc.ents}
    assert labels and labels <= {"PERSON", "ORGANIZATION", "LOCATION", "MISC"}
    assert load_model(run, device="cpu", ner="stock").ner is None
    assert load_model(checkpoint, device="cpu", ner=str(run / "ner")).ner == str(best)

    # an exported folder carries the NER, and loading it uses it
    from tacred.inference.export import export_folder

    export_folder(run / "checkpoints" / "last.ckpt", tmp_path / "export", fmt="onnx")
    assert load_model(tmp_path / "export", device="cpu").ner == str(tmp_path / "export" / "ner")

    # tacred extract reads the run folder's NER; --ner stock and a bad --ner are said
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps({"id": "d0", "text": "John Smith works for Acme Corp. in Paris ."}) + "\n")
    from tacred.commands.extract import main as extract_main

    assert extract_main([str(source), "--ckpt_path", str(run), "--device", "cpu", "--output", str(tmp_path / "out")]) == 0
    from tacred.extraction.output import MANIFEST

    assert json.loads((tmp_path / "out" / MANIFEST).read_text())["ner"] == "auto"
    capsys.readouterr()
    assert extract_main([str(source), "--ckpt_path", str(run), "--device", "cpu", "--ner", str(tmp_path)]) == 2
    assert "not a trained NER" in capsys.readouterr().err

    # NER F1 of the trained model on the (tiny) test file: scored by score-extraction --spacy_ner PATH
    assert score_main([str(data / SPLITS["test"]), "--spacy_ner", str(best), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["entities"]["micro"]["gold"] == 10
    assert scored["ner_source"].endswith("model-best")


@pytest.mark.slow
def test_training_is_deterministic_for_a_seed(tmp_path: Path, nlp) -> None:
    data = release(tmp_path / "data")
    runs = [train_ner(data, tmp_path / f"ner{k}", seed=5, max_epochs=3, eval_frequency=2) for k in range(2)]
    assert runs[0]["dev_scores"] == runs[1]["dev_scores"]
    weights = [(tmp_path / f"ner{k}" / "model-last" / "ner" / "model").read_bytes() for k in range(2)]
    assert weights[0] == weights[1]


def test_map_ner_keeps_a_trained_ner_s_tacred_names_and_maps_spacy_s_as_before() -> None:
    from tacred.text.spacy_pipeline import NER_MAP, map_ner

    assert [map_ner(t) for t in ("PERSON", "ORGANIZATION", "LOCATION", "MISC")] == [
        "PERSON", "ORGANIZATION", "LOCATION", "MISC"]
    assert all(map_ner(label) == tacred for label, tacred in NER_MAP.items())
    assert map_ner("WORK_OF_ART") == "MISC" and map_ner("Peop") == "MISC" and map_ner("") == "O"


def test_the_transformer_config_names_the_model_folder_and_schedules_its_steps_from_the_epochs(tmp_path) -> None:
    from thinc.api import Config

    from tacred.text.ner_encoder import ARCHITECTURE

    folder = pretrained_encoder("minilm")
    config = Config().from_str(transformer_config(folder, tmp_path / "t.spacy", tmp_path / "d.spacy", seed=4,
                                                  max_epochs=20, train_sentences=922, eval_frequency=50,
                                                  learn_rate=1e-4, bf16=True))
    steps = 20 * -(-922 // TRANSFORMER_BATCH)  # 29 batches of sentences an epoch
    assert config["training"]["max_steps"] == steps == 580 and config["training"]["patience"] == 0
    schedule = config["training"]["optimizer"]["learn_rate"]
    assert schedule["warmup_steps"] == 58 and schedule["total_steps"] == steps and schedule["initial_rate"] == 1e-4
    tok2vec = config["components"]["ner"]["model"]["tok2vec"]
    assert tok2vec["@architectures"] == ARCHITECTURE and tok2vec["bf16"] is True
    assert tok2vec["folder"] == str(folder) and Path(tok2vec["folder"]).is_dir()  # a folder: nothing is fetched
    assert config["nlp"]["pipeline"] == ["ner"] and config["system"]["seed"] == 4


def test_the_head_s_rate_and_the_shape_columns_are_written_only_when_asked_for(tmp_path) -> None:
    from thinc.api import Config

    folder = pretrained_encoder("minilm")
    paths = (folder, tmp_path / "t.spacy", tmp_path / "d.spacy")
    plain = transformer_config(*paths, seed=1, max_epochs=14, train_sentences=922, eval_frequency=58,
                               learn_rate=1e-4, bf16=True)
    assert plain == transformer_config(*paths, seed=1, max_epochs=14, train_sentences=922, eval_frequency=58,
                                       learn_rate=1e-4, bf16=True, head_rate=1e-4, shape_width=0)
    assert "rate_scale" not in plain and "shape_width" not in plain  # configs written before them read the same
    config = Config().from_str(transformer_config(*paths, seed=1, max_epochs=14, train_sentences=922,
                                                  eval_frequency=58, learn_rate=1e-4, bf16=True, head_rate=1e-3,
                                                  shape_width=64))
    assert config["training"]["optimizer"]["learn_rate"]["initial_rate"] == 1e-3  # the NER's own layers
    tok2vec = config["components"]["ner"]["model"]["tok2vec"]
    assert tok2vec["rate_scale"] == pytest.approx(0.1) and tok2vec["shape_width"] == 64  # the encoder: 1e-4


@pytest.mark.parametrize("flags, message", [
    (["--head_rate", "0"], "--head_rate 0.0: must be above 0"),
    (["--learn_rate=-1e-4"], "--learn_rate -0.0001: must be above 0"),
    (["--shape_width", "-8"], "--shape_width -8: must be 0 (none) or more"),
])
def test_bad_rates_and_widths_are_errors_before_anything_is_written(tmp_path: Path, flags, message, capsys) -> None:
    assert ner_main(["train", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "ner"), "--encoder",
                     "transformer", *flags]) != 0
    assert message in capsys.readouterr().err
    assert not (tmp_path / "ner").exists()


def test_a_model_folder_the_encoder_cannot_read_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(NerTrainingError, match="--encoder 'bert': one of cnn, transformer"):
        train_ner(release(tmp_path / "data"), tmp_path / "ner", encoder="bert")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(NerTrainingError, match=r"--pretrained .*model: no tokenizer\.json; .* fast tokenizer"):
        pretrained_encoder(str(folder))
    with pytest.raises(NerTrainingError, match="--pretrained nowhere: nowhere: not a model folder"):
        pretrained_encoder("nowhere")
    assert not (tmp_path / "ner").exists()


@pytest.mark.slow
def test_a_transformer_ner_trains_and_extraction_finds_the_same_entities_as_the_trained_pipeline(
        tmp_path: Path, checkpoint: Path, capsys, caplog, monkeypatch) -> None:
    """The fine-tuned MiniLM NER: trained from the packaged weights, saved with them, and sourced into the extraction
    pipeline, where it finds the entities it finds on its own."""
    import spacy

    from tacred import load_model

    data = release(tmp_path / "data")
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    shutil.copy(checkpoint, run / "checkpoints" / "last.ckpt")
    assert ner_main(["train", "--data", str(data), "--out", str(run / "ner"), "--encoder", "transformer",
                     "--max_epochs", "3", "--eval_frequency", "1", "--seed", "2"]) == 0
    training = json.loads((run / "ner" / "training.json").read_text())
    assert training["encoder"] == "transformer" and training["base_model"] == "minilm"
    best = run / "ner" / "model-best"
    trained = spacy.load(best)
    assert trained.pipe_names == ["ner"]
    import torch
    from transformers import AutoModel

    wrapped = next(node for node in trained.get_pipe("ner").model.walk() if node.name == "pytorch")
    tuned = wrapped.shims[0]._model.encoder.state_dict()
    packaged = AutoModel.from_pretrained(training["pretrained_folder"]).state_dict()
    assert tuned.keys() == packaged.keys()
    assert not all(torch.equal(tuned[k], packaged[k]) for k in tuned)  # the fine-tuned weights were saved
    text = "John Smith works for Acme Corp. in Paris . Anna Berg joined Nordic Steel in Oslo ."
    types = json.loads((best / TYPES_FILE).read_text())["types"]
    own = [(e.start_char, e.end_char, types[e.label_]) for e in trained(text).ents]
    predictor = load_model(run, device="cpu")
    assert predictor.ner == str(best)
    found = [(e.start_char, e.end_char, e.label_) for e in predictor.extraction().nlp(text).ents]
    assert found == own
    # --precision reaches the NER's encoder, which was trained without --bf16: bf16 turns its autocast on
    from tacred.text.ner_encoder import runs_bf16, set_bf16

    def bf16(m) -> bool:
        return runs_bf16(m.extraction().nlp.get_pipe("ner").model)

    assert not bf16(predictor)
    assert bf16(load_model(run, device="cpu", precision="bf16"))
    assert not bf16(load_model(run, device="cpu", precision="32"))
    assert set_bf16(trained.get_pipe("ner").model, True) == 1
    # a NER trained with --bf16 runs as trained; on a CPU without bf16 instructions the user is told how to avoid
    # torch's slow emulation, and --precision 32 is heard
    run_bf16 = shutil.copytree(run, tmp_path / "run_bf16")
    best = run_bf16 / "ner" / "model-best"
    config = best / "config.cfg"
    assert "bf16 = false" in config.read_text()
    config.write_text(config.read_text().replace("bf16 = false", "bf16 = true"))
    monkeypatch.setattr("tacred.devices.cpu_has_bf16", lambda: False)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tacred"):
        assert bf16(load_model(run_bf16, device="cpu"))
    assert [r.getMessage() for r in caplog.records if "emulates bfloat16" in r.getMessage()] == [
        f"the trained NER {best} was trained with bf16 and runs as it was trained, but this CPU has no avx512_bf16 "
        "or AMX: torch emulates bfloat16, slower than float32 (--precision 32 runs it in float32)"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tacred"):
        assert not bf16(load_model(run_bf16, device="cpu", precision="32"))
    assert not [r for r in caplog.records if "emulates bfloat16" in r.getMessage()]

def test_with_dev_trains_on_both_splits_for_the_budget_and_keeps_the_last_model(tmp_path: Path, capsys) -> None:
    data = release(tmp_path / "data")
    out = tmp_path / "ner"
    assert ner_main(["train", "--data", str(data), "--out", str(out), "--max_epochs", "3", "--eval_frequency", "4",
                     "--with_dev"]) == 0
    training = json.loads((out / "training.json").read_text())
    assert training["with_dev"] is True
    assert (training["train_sentences"], training["dev_sentences"]) == (15, 3)  # 12 + 3 trained on, 3 scored
    from spacy.tokens import DocBin

    assert len(DocBin().from_disk(out / "train.spacy")) == 15
    # nothing was held out to choose on: model-best is the last model, and it carries the type map
    best, last = out / "model-best", out / "model-last"
    assert (best / "ner" / "model").read_bytes() == (last / "ner" / "model").read_bytes()
    assert (best / TYPES_FILE).is_file()
    assert model_folder(out) == best


@pytest.mark.parametrize("flags, message", [
    (["--learn_rate", "50", "--bf16"], "--learn_rate, --bf16: options of --encoder transformer, not of --encoder cnn"),
    (["--shape_width", "64"], "--shape_width: an option of --encoder transformer, not of --encoder cnn"),
    (["--pretrained", "mpnet"], "--pretrained: an option of --encoder transformer"),
    (["--encoder", "transformer", "--base_model", "en_core_web_sm"],
     "--base_model: an option of --encoder cnn, not of --encoder transformer"),
    (["--max_epochs", "2", "--eval_frequency", "100000"],
     "--eval_frequency 100000: 2 epoch(s) over the 12 training sentences may take as few as 2 steps, so dev would be "
     "evaluated after the first step only"),
    (["--encoder", "transformer", "--max_epochs", "3", "--eval_frequency", "3"], "may take as few as 3 steps"),
    (["--eval_frequency", "0"], "--eval_frequency 0: must be at least 1"),
])
def test_options_that_would_be_ignored_or_never_evaluate_are_refused_before_anything_is_written(
        tmp_path: Path, flags, message, capsys) -> None:
    import sys

    loaded = "spacy" in sys.modules
    assert ner_main(["train", "--data", str(release(tmp_path / "data")), "--out", str(tmp_path / "ner"), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tacred ner train: error: ") and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "ner").exists() and (loaded or "spacy" not in sys.modules)


def test_a_finished_ner_is_replaced_only_with_overwrite_and_a_failed_run_leaves_out_as_it_found_it(
        tmp_path: Path, capsys) -> None:
    data, out = release(tmp_path / "data"), tmp_path / "ner"
    (out / "model-best").mkdir(parents=True)
    (out / "training.json").write_text('{"seed": 1}', encoding="utf-8")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    assert ner_main(["train", "--data", str(data), "--out", str(out), "--seed", "2"]) == 2
    assert "holds a trained NER (training.json, model-best); give --overwrite" in capsys.readouterr().err
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    fresh = tmp_path / "fresh"
    assert ner_main(["train", "--data", str(data), "--out", str(fresh), "--base_model", "no_such_model_xyz",
                     "--eval_frequency", "10"]) == 2
    assert "no_such_model_xyz" in capsys.readouterr().err and not fresh.exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine", encoding="utf-8")
    assert ner_main(["train", "--data", str(data), "--out", str(tmp_path / "mine")]) == 2
    assert "not empty and not a folder of tacred ner train" in capsys.readouterr().err

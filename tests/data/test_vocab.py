"""Vocabularies: building, the label maps, saving with the run, and reuse from a checkpoint."""

from __future__ import annotations

import json

import pytest

from tacred import constants as C
from tacred.data.examples import load_examples
from tacred.data.vocab import Vocabularies, build_vocabularies
from tacred.training.datamodule import TacredDataModule
from tests.conftest import make_example


def test_tacred_labels_keep_the_official_order(tacred_sample):
    dm = TacredDataModule(data_dir=str(tacred_sample))
    assert dm.vocab.labels.itos == list(C.TACRED_LABELS)
    assert dm.vocab.no_relation_id == 0


def test_word_vocabulary_has_specials_masks_and_lowercased_training_words(tacred_sample):
    train = load_examples(tacred_sample / "train.json").examples
    vocab = build_vocabularies(train, labels=C.TACRED_LABELS)
    assert vocab.words.itos[:2] == [C.PAD, C.UNK]
    assert "SUBJ-PERSON" in vocab.words and "OBJ-CITY" in vocab.words
    assert all(w == w.lower() for w in vocab.words.itos if not w.startswith(("SUBJ-", "OBJ-", "<")))
    # masked entity tokens never enter the vocabulary as words
    ex = train[0]
    subject_words = {t.lower() for t in ex.tokens[ex.subj_start : ex.subj_end + 1]}
    others = {t.lower() for e in train for i, t in enumerate(e.tokens)
              if not (e.subj_start <= i <= e.subj_end or e.obj_start <= i <= e.obj_end)}
    for w in subject_words - others:
        assert w not in vocab.words


def test_min_count_and_case(write_json):
    rows = [make_example(i) for i in range(4)]
    rows[0]["token"][2] = "Rare"
    ex = load_examples(write_json("t.json", rows)).examples
    assert "rare" in build_vocabularies(ex, labels=["no_relation"]).words
    assert "rare" not in build_vocabularies(ex, labels=["no_relation"], min_count=2).words
    cased = build_vocabularies(ex, labels=["no_relation"], lowercase=False)
    assert "Rare" in cased.words and "rare" not in cased.words


def test_labels_of_other_data_come_from_all_splits_or_a_file(tmp_path, write_json):
    write_json("train.json", [make_example(0, "B(e1,e2)"), make_example(1, "no_relation")])
    write_json("dev.json", [make_example(2, "A(e2,e1)")])
    write_json("test.json", [make_example(3, "C(e1,e2)")])
    dm = TacredDataModule(data_dir=str(tmp_path))
    assert dm.vocab.labels.itos == ["no_relation", "A(e2,e1)", "B(e1,e2)", "C(e1,e2)"]
    labels = write_json("labels.json", ["no_relation", "C(e1,e2)", "B(e1,e2)", "A(e2,e1)", "D(e1,e2)"])
    dm = TacredDataModule(data_dir=str(tmp_path), labels=str(labels))
    assert dm.vocab.labels.itos == ["no_relation", "C(e1,e2)", "B(e1,e2)", "A(e2,e1)", "D(e1,e2)"]


def test_a_label_outside_the_model_label_set_is_an_error(tmp_path, write_json):
    write_json("train.json", [make_example(0, "per:title")])
    write_json("test.json", [make_example(1, "per:nonsense")])
    dm = TacredDataModule(data_dir=str(tmp_path), labels="tacred")
    with pytest.raises(ValueError, match=r"test.json: example 0 \(id 'ex1'\): relation 'per:nonsense' is not in the label set"):
        dm.encoded("test")


def test_configurable_no_relation_label(tmp_path, write_json):
    write_json("train.json", [make_example(0, "Other"), make_example(1, "X(e1,e2)")])
    dm = TacredDataModule(data_dir=str(tmp_path), no_relation="Other", dev_file="train.json", test_file="train.json")
    assert dm.vocab.no_relation == "Other" and dm.vocab.no_relation_id == 0


def test_vocabularies_round_trip_through_json(tmp_path, tacred_sample):
    vocab = TacredDataModule(data_dir=str(tacred_sample)).vocab
    vocab.save(tmp_path / "vocab.json")
    again = Vocabularies.load(tmp_path / "vocab.json")
    assert again.to_dict() == vocab.to_dict() and again.fingerprint() == vocab.fingerprint()
    assert json.loads((tmp_path / "vocab.json").read_text())["labels"][0] == "no_relation"


def test_the_data_module_reuses_a_saved_vocabulary_instead_of_rebuilding(tmp_path, tacred_sample, write_json):
    vocab = TacredDataModule(data_dir=str(tacred_sample)).vocab
    vocab.save(tmp_path / "vocab.json")
    # different training data would give a different vocabulary; the saved one wins
    write_json("train.json", [make_example(i) for i in range(3)])
    dm = TacredDataModule(data_dir=str(tmp_path), vocab_path=str(tmp_path / "vocab.json"))
    assert dm.vocab.fingerprint() == vocab.fingerprint()


def test_retacred_labels_are_recognised(tmp_path, write_json):
    from tacred.datasets.patch import RETACRED_LABELS

    write_json("train.json", [make_example(0, "org:city_of_branch"), make_example(1, "per:identity")])
    write_json("dev.json", [make_example(2, "no_relation")])
    write_json("test.json", [make_example(3, "per:title")])
    assert TacredDataModule(data_dir=str(tmp_path)).vocab.labels.itos == list(RETACRED_LABELS)
    assert TacredDataModule(data_dir=str(tmp_path), labels="retacred").vocab.labels.itos == list(RETACRED_LABELS)

"""The data module's wiring: GloVe vectors for its vocabulary, lemmas, stages and loaders."""

from __future__ import annotations

import torch

from tacred.training.datamodule import TacredDataModule
from tests.conftest import make_example


def test_word_vectors_come_from_glove_for_the_vocabulary(tmp_path, write_json, monkeypatch):
    monkeypatch.setenv("TACRED_CACHE", str(tmp_path / "cache"))
    write_json("train.json", [make_example(i) for i in range(3)])
    glove = tmp_path / "glove.txt"
    glove.write_text("w1 0.1 0.2 0.3 0.4\nW2 1 2 3 4\n. . . 5 6 7 8\n", encoding="utf-8")
    dm = TacredDataModule(data_dir=str(tmp_path), glove_path=str(glove), embedding_dim=4,
                          dev_file="train.json", test_file="train.json", min_glove_coverage=0)
    vectors = dm.word_vectors
    assert vectors.shape == (len(dm.vocab.words), 4)
    torch.testing.assert_close(vectors[dm.vocab.words.id("w1")], torch.tensor([0.1, 0.2, 0.3, 0.4]))
    torch.testing.assert_close(vectors[dm.vocab.words.id("w2")], torch.tensor([1.0, 2.0, 3.0, 4.0]))  # cased match
    assert torch.all(vectors[0] == 0)  # padding


def test_no_glove_path_means_random_vectors_in_the_model(tmp_path, write_json, caplog):
    write_json("train.json", [make_example(0)])
    dm = TacredDataModule(data_dir=str(tmp_path))
    with caplog.at_level("WARNING", logger="tacred"):
        assert dm.word_vectors is None
    assert "initialised randomly" in caplog.text


def test_lemmas_replace_words_in_the_vocabulary(tmp_path, write_json, monkeypatch):
    monkeypatch.setenv("TACRED_CACHE", str(tmp_path / "cache"))
    row = make_example(0, length=5)
    row["token"] = ["Alice", "went", "to", "the", "Acme"]
    row["stanford_pos"] = ["NNP", "VBD", "TO", "DT", "NNP"]
    write_json("train.json", [row])
    dm = TacredDataModule(data_dir=str(tmp_path), use_lemmas=True)
    assert "go" in dm.vocab.words and "went" not in dm.vocab.words
    assert dm.vocab.use_lemmas
    data = dm.encoded("train")
    assert data.rows[0]["words"][1] == dm.vocab.words.id("go")


def test_setup_encodes_only_what_a_stage_needs(tacred_sample):
    dm = TacredDataModule(data_dir=str(tacred_sample))
    dm.setup("test")
    assert set(dm._encoded) == {"test"}
    dm.setup("fit")
    assert set(dm._encoded) == {"test", "train", "dev"}
    batch = next(iter(dm.val_dataloader()))
    assert batch.words.shape[0] == 20  # batch 50 > 20 dev examples


def test_predict_file_defaults_to_the_test_file(tacred_sample):
    dm = TacredDataModule(data_dir=str(tacred_sample))
    assert dm.path("predict") == dm.path("test")
    dm = TacredDataModule(data_dir=str(tacred_sample), predict_file="dev.json")
    assert dm.path("predict").name == "dev.json"


def test_a_resume_point_holds_for_every_train_loader_of_the_fit(demo_data):
    """As a fit resumes inside an epoch, Lightning may build the train loader twice (the linear schedule counts its
    steps from the first, the fit trains on the second): each leaves out the batches already trained, and after the
    fit's teardown the data module's loaders are whole again."""
    dm = TacredDataModule(data_dir=str(demo_data), batch_size=20)
    whole = [batch.index.tolist() for batch in dm.train_dataloader()]
    dm.resume_within(0, 5)
    first, second = dm.train_dataloader(), dm.train_dataloader()
    assert [batch.index.tolist() for batch in second] == whole[5:]
    assert [batch.index.tolist() for batch in first] == whole[5:]
    dm.teardown("fit")
    assert [batch.index.tolist() for batch in dm.train_dataloader()] == whole

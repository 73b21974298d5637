"""The one checkpoint loader (``load_trained``): the Lightning module and the network for prediction rebuild the same
weights from a checkpoint, and what does not fit is one error naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tacred.checkpoints import CheckpointError, read_checkpoint
from tacred.inference.trained import TrainedNetwork
from tacred.training.module import RelationExtractor


def test_every_model_class_loads_the_same_weights_in_evaluation_mode(checkpoint: Path) -> None:
    plain = TrainedNetwork.from_checkpoint(checkpoint)
    module = RelationExtractor.from_checkpoint(checkpoint)
    lightning = RelationExtractor.load_from_checkpoint(checkpoint)
    saved = read_checkpoint(checkpoint)["state_dict"]
    for model in (plain, module, lightning):
        assert not model.training and model.vocab.fingerprint() == plain.vocab.fingerprint()
        state = model.state_dict()
        for name, value in saved.items():
            assert torch.equal(state[name], value), name
    assert plain.network_config == module.network_config


def test_hyperparameters_given_when_loading_replace_the_saved_ones(checkpoint: Path) -> None:
    assert RelationExtractor.from_checkpoint(checkpoint).no_relation_threshold is None
    assert RelationExtractor.from_checkpoint(checkpoint, no_relation_threshold=0.5).no_relation_threshold == 0.5
    assert RelationExtractor.load_from_checkpoint(checkpoint, no_relation_threshold=0.5).no_relation_threshold == 0.5
    with pytest.raises(ValueError, match="hparams_file"):
        RelationExtractor.load_from_checkpoint(checkpoint, hparams_file="hparams.yaml")


def changed(checkpoint: Path, tmp_path: Path, change) -> Path:
    contents = read_checkpoint(checkpoint)
    change(contents)
    path = tmp_path / "changed.ckpt"
    torch.save(contents, path)
    return path


def test_a_checkpoint_without_vocabularies_is_named(checkpoint: Path, tmp_path: Path) -> None:
    path = changed(checkpoint, tmp_path, lambda c: c.pop("tacred_vocab"))
    for load in (TrainedNetwork.from_checkpoint, RelationExtractor.from_checkpoint):
        with pytest.raises(CheckpointError, match=f"{path}: holds no tacred vocabulary"):
            load(path)


def test_a_training_option_this_version_lacks_stops_only_the_training_module(checkpoint: Path, tmp_path: Path) -> None:
    path = changed(checkpoint, tmp_path, lambda c: c["hyper_parameters"].update(retired_option=1))
    assert not TrainedNetwork.from_checkpoint(path).training  # prediction needs the network alone
    with pytest.raises(CheckpointError, match="do not fit this version of tacred.*retired_option"):
        RelationExtractor.from_checkpoint(path)


def test_shared_encoding_encodes_each_distinct_input_once_and_changes_no_probability(checkpoint: Path) -> None:
    """Extraction asks every candidate pair of a sentence: pairs that share the object (and so every input the
    encoder reads) are encoded once; only the subject's positions differ, which the position-aware layer reads."""
    from tacred.inference.trained import probability_network

    net = TrainedNetwork.from_checkpoint(checkpoint).net
    gen = torch.Generator().manual_seed(0)
    sentences = torch.randint(2, 40, (2, 9), generator=gen)  # two sentences of 9 tokens
    words = sentences.repeat_interleave(3, dim=0)  # each asked with three subjects
    subj = torch.stack([torch.arange(9) - s for s in (0, 2, 5)] * 2)
    obj = torch.stack([torch.arange(9) - 7] * 6)
    arrays = {"words": words, "pos": torch.full_like(words, 2), "ner": torch.full_like(words, 3),
              "subj_positions": subj, "obj_positions": obj, "pad_mask": torch.zeros_like(words, dtype=torch.bool)}
    plain = probability_network(net).eval()
    shared = probability_network(net, share_encoding=True).eval()
    encoded_rows = []
    encode = net.encode_batch
    net.encode_batch = lambda batch: (encoded_rows.append(len(batch)), encode(batch))[1]
    with torch.inference_mode():
        expected, got = plain(**arrays), shared(**arrays)
    assert encoded_rows == [6, 2]  # the plain network encodes every row, the shared one each sentence once
    assert torch.allclose(got, expected, atol=1e-6)
    assert not torch.equal(got[0], got[1])  # the subject still counts

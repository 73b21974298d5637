"""Batching: padding, length buckets, determinism, sharding across processes."""

from __future__ import annotations

import pytest
import torch

from tacred.data.batching import BucketBatchSampler
from tacred.training.datamodule import TacredDataModule


def test_collate_pads_and_masks(tacred_sample):
    data = TacredDataModule(data_dir=str(tacred_sample)).encoded("train")
    batch = data.collate([0, 5, 9])
    lengths = [len(data.examples[i]) for i in (0, 5, 9)]
    assert batch.words.shape == (3, max(lengths))
    assert batch.pad_mask.sum(1).tolist() == [max(lengths) - n for n in lengths]
    assert torch.all(batch.words[batch.pad_mask] == 0)
    ex = data.examples[5]
    assert batch.subj_positions[1, ex.subj_start] == 0 and batch.obj_positions[1, ex.obj_end] == 0
    assert batch.index.tolist() == [0, 5, 9]


def test_entity_masking_uses_mask_tokens(tacred_sample):
    dm = TacredDataModule(data_dir=str(tacred_sample))
    data = dm.encoded("train")
    ex = data.examples[0]
    assert data.rows[0]["words"][ex.subj_start] == dm.vocab.words.id(f"SUBJ-{ex.subj_type}")
    unmasked = TacredDataModule(data_dir=str(tacred_sample), entity_masking=False).encoded("train")
    assert unmasked.rows[0]["words"][ex.subj_start] != dm.vocab.words.id(f"SUBJ-{ex.subj_type}")


LENGTHS = [5, 40, 7, 12, 33, 8, 9, 21, 3, 17, 25, 11, 6]


def test_training_batches_are_deterministic_per_seed_and_epoch_and_cover_every_example():
    a = BucketBatchSampler(LENGTHS, 4, shuffle=True, seed=3, pool_batches=2)
    b = BucketBatchSampler(LENGTHS, 4, shuffle=True, seed=3, pool_batches=2)
    assert list(a) == list(b)
    a.set_epoch(1)
    assert list(a) != list(b)
    assert sorted(i for batch in a for i in batch) == list(range(len(LENGTHS)))
    assert len(list(a)) == len(a)


def test_batches_group_similar_lengths():
    sampler = BucketBatchSampler(LENGTHS * 20, 10, shuffle=True, seed=0)
    lengths = LENGTHS * 20
    padding = sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in sampler)
    assert padding < 0.2 * sum(lengths)


def test_evaluation_batches_are_sorted_and_cover_each_example_once():
    batches = list(BucketBatchSampler(LENGTHS, 4, shuffle=False))
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(LENGTHS))) and len(flat) == len(LENGTHS)
    assert [LENGTHS[i] for i in flat] == sorted(LENGTHS)


@pytest.mark.parametrize("shuffle", [False, True])
def test_sharding_across_ranks(shuffle):
    shards = [list(BucketBatchSampler(LENGTHS, 2, shuffle=shuffle, seed=1, num_replicas=3, rank=r)) for r in range(3)]
    flat = [i for shard in shards for b in shard for i in b]
    if shuffle:
        # training: every rank steps the same number of times; every example is seen
        assert len({len(s) for s in shards}) == 1 and set(flat) == set(range(len(LENGTHS)))
    else:
        # evaluation: every example exactly once, no padding with repeats
        assert sorted(flat) == list(range(len(LENGTHS)))
    for r, shard in enumerate(shards):
        assert len(shard) == len(BucketBatchSampler(LENGTHS, 2, shuffle=shuffle, num_replicas=3, rank=r))


@pytest.mark.slow  # DataLoader worker processes
def test_loader_with_workers_gives_the_same_batches(tacred_sample):
    dm = TacredDataModule(data_dir=str(tacred_sample), batch_size=7)
    dm.setup("test")
    single = [b.index.tolist() for b in dm.test_dataloader()]
    dm.num_workers = 2
    multi = [b.index.tolist() for b in dm.test_dataloader()]
    assert single == multi


def test_a_pass_resumed_inside_its_epoch_leaves_out_the_batches_already_trained():
    lengths = [(i * 7) % 23 + 1 for i in range(200)]
    sampler = BucketBatchSampler(lengths, 16, shuffle=True, seed=3)
    sampler.set_epoch(4)
    whole = list(sampler)
    sampler.resume_within(4, 5)
    assert list(sampler) == whole[5:]
    assert list(sampler) == whole  # only the next pass is shortened
    sampler.resume_within(3, 5)  # stopped inside another epoch: this one is whole
    assert list(sampler) == whole
    with pytest.raises(ValueError, match="batches_done must lie in 0..13"):
        sampler.resume_within(4, 14)

"""ReproducibleSteps (tacred/training/reproducibility.py): a training step's draws depend on its place only, and
the global state it changes is given back at teardown and after an exception."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tacred.training.reproducibility import ReproducibleSteps, step_seed

CPU = torch.device("cpu")


def trainer(epoch: int = 0, rank: int = 0) -> SimpleNamespace:
    return SimpleNamespace(strategy=SimpleNamespace(root_device=CPU), current_epoch=epoch, global_rank=rank)


MODULE = SimpleNamespace(device=CPU)


def draws_after(callback: ReproducibleSteps, run: SimpleNamespace, batch_idx: int) -> torch.Tensor:
    callback.on_train_batch_start(run, MODULE, None, batch_idx)
    return torch.rand(4)


def test_a_steps_draws_depend_on_the_seed_epoch_batch_and_rank_not_on_earlier_draws(monkeypatch) -> None:
    monkeypatch.setenv("PL_GLOBAL_SEED", "7")
    callback = ReproducibleSteps()
    callback.setup(trainer(), MODULE, "fit")
    try:
        first = draws_after(callback, trainer(epoch=1), 3)
        torch.rand(100)  # e.g. a DataLoader iterator drawing its base seed
        assert torch.equal(draws_after(callback, trainer(epoch=1), 3), first)
        for other in (draws_after(callback, trainer(epoch=2), 3), draws_after(callback, trainer(epoch=1), 4),
                      draws_after(callback, trainer(epoch=1, rank=1), 3)):
            assert not torch.equal(other, first)
        seeded = torch.Generator().manual_seed(step_seed(7, 1, 3, 0))
        assert torch.equal(first, torch.rand(4, generator=seeded))
    finally:
        callback.teardown(trainer(), MODULE, "fit")


@pytest.mark.parametrize("end", ["teardown", "on_exception"])
def test_the_generator_and_the_fill_setting_are_given_back(end: str) -> None:
    fill = torch.utils.deterministic.fill_uninitialized_memory
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        torch.manual_seed(11)
        expected = torch.rand(3)
        torch.manual_seed(11)
        callback = ReproducibleSteps()
        callback.setup(trainer(), MODULE, "fit")
        assert torch.utils.deterministic.fill_uninitialized_memory is False  # no NaN fill of new tensors
        draws_after(callback, trainer(), 0)
        if end == "teardown":
            callback.teardown(trainer(), MODULE, "fit")
        else:
            callback.on_exception(trainer(), MODULE, RuntimeError("a failed step"))
        assert torch.utils.deterministic.fill_uninitialized_memory is fill
        assert torch.equal(torch.rand(3), expected)  # the generator continues as if the run had not drawn
        callback.teardown(trainer(), MODULE, "fit")  # a second end changes nothing
        assert torch.utils.deterministic.fill_uninitialized_memory is fill
    finally:
        torch.use_deterministic_algorithms(deterministic)


def test_without_deterministic_algorithms_the_fill_setting_is_left_alone() -> None:
    deterministic = torch.are_deterministic_algorithms_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(False)
    try:
        callback = ReproducibleSteps()
        callback.setup(trainer(), MODULE, "fit")
        assert torch.utils.deterministic.fill_uninitialized_memory is fill
        callback.teardown(trainer(), MODULE, "fit")
    finally:
        torch.use_deterministic_algorithms(deterministic)


def test_every_trainer_running_the_model_gets_it() -> None:
    from tacred.data.vocab import Vocab, Vocabularies
    from tacred.models.config import NetworkConfig
    from tacred.training.module import RelationExtractor

    vocab = Vocabularies(words=Vocab(["a", "b"]), pos=Vocab(["p"]), ner=Vocab(["n"]),
                         labels=Vocab(["no_relation", "r"], unk=None))
    model = RelationExtractor(vocab=vocab, network=NetworkConfig(word_dim=24, ffn_dim=16, attention_dim=16))
    assert [type(c) for c in model.configure_callbacks()] == [ReproducibleSteps]

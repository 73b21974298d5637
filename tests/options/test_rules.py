"""Options are checked where they are defined: the rules in an option's annotation, checked by the class that owns
it when it is built; on the command line each value once per ``fit``, before any data file is read."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Annotated, Literal

import pytest

from tacred.options.rules import OptionError, above, at_least, check, fraction, one_of, probability, rules_of
from tests.conftest import REPO, run_in_process

DEMO = str(REPO / "configs" / "demo.yaml")
SMALL = ("--model.network.word_dim", "24", "--model.network.ffn_dim", "16", "--model.network.attention_dim", "16")


def at_most_size(value: int, owner: Sizes) -> str | None:
    return None if value <= owner.size else f"must be at most size ({owner.size})"


@dataclass
class Sizes:
    size: Annotated[int, at_least(1)] = 4
    part: Annotated[int, at_least(0), at_most_size] = 2
    kind: Literal["a", "b"] = "a"
    free: int = -7

    def __post_init__(self) -> None:
        check(Sizes, vars(self), owner=self)


class Recipe:
    def __init__(self, lr: Annotated[float, above(0)] = 0.1, drop: Annotated[float, probability] = 0.0,
                 share: Annotated[float, fraction] = 1.0, how: Annotated[str, one_of(("x", "y"))] = "x",
                 limit: Annotated[int | None, at_least(1, none_ok=True)] = None) -> None:
        check(Recipe, locals())


def test_rules_come_from_the_annotations_in_their_order():
    assert list(rules_of(Sizes)) == ["size", "part", "kind"]  # `free` has none
    assert len(rules_of(Sizes)["part"]) == 2
    assert list(rules_of(Recipe.__init__)) == ["lr", "drop", "share", "how", "limit"]


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Sizes(size=0), "size 0: must be a number >= 1"),
    (lambda: Sizes(part=5), "part 5: must be at most size (4)"),  # a rule reading another field
    (lambda: Sizes(part=-1), "part -1: must be a number >= 0"),  # the rules of one option in order
    (lambda: Sizes(kind="c"), "kind 'c': must be one of a, b"),
    (lambda: Sizes(size=True), "size True: must be a number >= 1"),  # a bool is no number
    (lambda: Recipe(lr=0), "lr 0: must be a number > 0"),
    (lambda: Recipe(lr=float("nan")), "lr nan: must be a number > 0"),
    (lambda: Recipe(drop=1.0), "drop 1.0: must be a probability in [0, 1)"),
    (lambda: Recipe(share=1.5), "share 1.5: must be a fraction in [0, 1]"),
    (lambda: Recipe(how="z"), "how 'z': must be one of x, y"),
    (lambda: Recipe(limit=0), "limit 0: must be a number >= 1"),
])
def test_a_broken_rule_names_the_option_the_value_and_the_rule(build, message):
    with pytest.raises(OptionError) as caught:
        build()
    assert str(caught.value) == message
    assert caught.value.owner in (Sizes, Recipe)


def test_good_values_pass_and_an_option_error_survives_pickling():
    Sizes(size=3, part=3, kind="b", free=-1)
    Recipe(lr=2, drop=0.5, share=0, how="y", limit=None)
    with pytest.raises(OptionError) as caught:
        Sizes(part=9)
    again = pickle.loads(pickle.dumps(caught.value))
    assert (again.owner, again.option, again.value, str(again)) == (Sizes, "part", 9, str(caught.value))


def test_a_long_list_is_cut_so_the_rule_stays_on_the_line():
    with pytest.raises(OptionError, match=r"^how \['a', 'b', 'c', 'd', 'e', \.\.\.\]: must be one of x, y$"):
        Recipe(how=list("abcdefgh"))


def test_the_module_checks_its_options_before_it_reads_the_vocabularies():
    from tacred.training.module import RelationExtractor

    def never_read():
        pytest.fail("the vocabularies were read before the options were checked")

    with pytest.raises(OptionError, match="lr -1: must be a number > 0"):
        RelationExtractor(vocab=never_read, word_vectors=never_read, lr=-1)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--model.lr", "0", "--model.lr 0.0: must be a number > 0"),
    ("--model.network.num_heads", "5", "--model.network.num_heads 5: must divide the model dimension"),
    ("--data.batch_size", "0", "--data.batch_size 0: must be a number >= 1"),
    ("--model.network.word_dim", "0", "--model.network.word_dim 0: must be a number >= 1"),  # via data.embedding_dim
])
def test_the_command_line_names_a_bad_option_before_reading_any_data(tmp_path, option, value, message):
    """The data files are there but every example in them is broken: the option's error comes first, as these options
    are checked before torch loads and before the data files are validated (that the files exist is checked earlier
    still: tests/test_startup.py)."""
    unread = tmp_path / "unread"
    unread.mkdir()
    for split in ("train", "dev"):
        (unread / f"{split}.json").write_text('[{"broken": true}]')
    ran = run_in_process("fit", "--config", DEMO, "--data.data_dir", str(unread), "--run_dir",
                         str(tmp_path / "run"), *SMALL, option, value, check=False)
    assert ran.status == 2
    assert message in ran.stderr, ran.stderr


def test_an_attention_variants_option_is_named_before_training(demo_data, tmp_path):
    """A variant's own options (registered with it, in modules that import torch) are checked once torch loads,
    after the data files were validated with the json module and before the data module encodes an example."""
    ran = run_in_process("fit", "--config", DEMO, "--data.data_dir", str(demo_data), "--run_dir",
                         str(tmp_path / "run"), *SMALL, "--model.network.shaw_clip", "0", check=False)
    assert ran.status == 2
    assert "--model.network.shaw_clip 0: must be a number >= 1" in ran.stderr, ran.stderr
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_a_fit_checks_each_option_once(demo_data, tmp_path, monkeypatch):
    """Every option of the network's config, the LightningModule and the data module is checked by its owner, once."""
    import tacred.models.config
    import tacred.training.datamodule
    import tacred.training.module
    from tacred.options import rules as option_rules

    checked: list[str] = []

    def counting_check(owner_class, values, *, owner=None):
        annotated = owner_class if option_rules.is_dataclass(owner_class) else owner_class.__init__
        checked.extend(f"{owner_class.__name__}.{name}" for name in rules_of(annotated))
        option_rules.check(owner_class, values, owner=owner)

    for module in (tacred.models.config, tacred.training.module, tacred.training.datamodule):
        monkeypatch.setattr(module, "check", counting_check)
    run_in_process("fit", "--config", DEMO, "--data.data_dir", str(demo_data), "--run_dir", str(tmp_path / "run"),
                   *SMALL, "--trainer.max_epochs", "1", "--trainer.limit_train_batches", "1",
                   "--trainer.limit_val_batches", "1")
    owners = {name.split(".")[0] for name in checked}
    assert owners == {"NetworkConfig", "RelationExtractor", "TacredDataModule"}
    assert len(checked) == len(set(checked)), sorted(n for n in checked if checked.count(n) > 1)
    assert {"NetworkConfig.num_heads", "NetworkConfig.shaw_clip", "RelationExtractor.lr",
            "TacredDataModule.batch_size"} <= set(checked)

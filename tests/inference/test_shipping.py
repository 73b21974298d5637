"""``tacred models build``: a checkpoint becomes a shipped folder whose recorded scores it reproduces; the choices
(float16 weights, the threshold) follow their rules; a folder over the size limit is refused and nothing is left; the
shipped kbp37 card is, byte for byte, the one its recorded facts give."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tacred.inference import shipping
from tacred.inference.shipped import (
    WEIGHTS_FILE,
    WORD_EMBEDDING,
    load_shipped_predictor,
    read_split,
    read_words,
    scores_of,
    shipped_info,
)

RECIPE = shipping.Recipe(task="the demo relations", architecture="the paper's network, small", data="the demo corpus",
                         command="tacred fit --config configs/demo.yaml", limitations=("a toy",), word_vectors=None)


@pytest.fixture(scope="module")
def built(checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    data = checkpoint.parents[2] / "data"
    root = tmp_path_factory.mktemp("shipped")
    folder = shipping.build_shipped("demo", checkpoint, data, root, recipe=RECIPE)
    return folder, data


def test_the_built_folder_reproduces_its_recorded_scores(built) -> None:
    folder, data = built
    info = shipped_info("demo", folder.parent)
    assert [row["setting"] for row in info.meta["scores"]] == ["shipped", "trained vocabulary, argmax"]
    assert info.meta["word_vectors"] is None
    for row in info.meta["scores"]:
        predictor = load_shipped_predictor("demo", device="cpu", root=folder.parent, threshold=row["threshold"] or None)
        for split in ("dev", "test"):
            found = scores_of(predictor.probabilities(read_split(data / f"{split}.json").examples),
                              read_split(data / f"{split}.json"), predictor.labels, predictor.encoder.no_relation,
                              predictor.threshold)
            assert found.micro_f1 == pytest.approx(row[split]["micro_f1"], abs=1e-12)
            assert found.macro_f1 is None  # the demo's labels have no directions


def test_weights_are_float16_only_where_no_decision_changes(built, checkpoint: Path) -> None:
    folder, _ = built
    meta = shipped_info("demo", folder.parent).meta
    state = torch.load(folder / WEIGHTS_FILE, weights_only=True)
    assert (state[WORD_EMBEDDING].dtype == torch.float16) == (meta["weights"]["float16_changed_decisions"] == 0)
    trained = torch.load(checkpoint, weights_only=False)["state_dict"][WORD_EMBEDDING]
    assert torch.equal(state[WORD_EMBEDDING].float(), trained.to(state[WORD_EMBEDDING].dtype).float())
    assert read_words(folder) == torch.load(checkpoint, weights_only=False)["tacred_vocab"]["words"]


def test_the_threshold_never_lowers_the_dev_metric(built) -> None:
    folder, _ = built
    info = shipped_info("demo", folder.parent)
    shipped, argmax = info.scores("shipped"), info.scores("trained vocabulary, argmax")
    assert shipped["dev"]["micro_f1"] >= argmax["dev"]["micro_f1"]
    assert shipped["threshold"] == info.meta["threshold"]


def test_a_folder_over_the_limit_is_refused_and_the_old_one_kept(built, checkpoint: Path, monkeypatch) -> None:
    folder, data = built
    before = sorted(p.name for p in folder.parent.iterdir())
    monkeypatch.setattr(shipping, "MAX_BYTES", 1000)
    with pytest.raises(shipping.ShipError, match="over the 0 MB"):
        shipping.build_shipped("demo", checkpoint, data, folder.parent, recipe=RECIPE)
    assert sorted(p.name for p in folder.parent.iterdir()) == before  # no half-written folder
    assert (folder / WEIGHTS_FILE).is_file()


def test_an_unknown_recipe_is_an_error(checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(shipping.ShipError, match="no recipe for a shipped model called 'nope'"):
        shipping.build_shipped("nope", checkpoint, tmp_path, tmp_path)


def test_the_kbp37_card_is_what_the_build_writes_from_its_recorded_facts() -> None:
    from tacred.inference.shipped import CARD_FILE, shipped_info

    info = shipped_info("kbp37")
    # the build writes the card last: the size it states is the other files'
    size = sum(p.stat().st_size for p in info.folder.iterdir() if p.is_file() and p.name != CARD_FILE)
    card = shipping.model_card("kbp37", info.meta, shipping.RECIPES["kbp37"], size).text()
    assert card == info.card.read_text(encoding="utf-8")

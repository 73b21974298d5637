"""The steps every converter shares: the source folder checked, the conversion record in its stated order, and the
converted release written (splits, labels, record, README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tacred.datasets.conversion import ConvertedRelease, check_source
from tacred.errors import TacredError

EXAMPLE = {"id": "x-0", "relation": "no_relation", "token": ["Zoë", "ran"]}


def release(tmp_path: Path) -> ConvertedRelease:
    splits = {"train": [EXAMPLE, {**EXAMPLE, "id": "x-1", "relation": "r"}], "test": [EXAMPLE]}
    return ConvertedRelease(tmp_path / "src", {"train": "a.txt", "test": "b.txt"}, ("no_relation", "r"), splits,
                            "en_core_web_sm-3.8.0", "3.8.7", 1.5)


def test_a_source_that_is_not_a_folder_names_the_files_it_should_hold(tmp_path: Path) -> None:
    assert check_source(tmp_path, ["a.txt"], TacredError) == tmp_path
    with pytest.raises(TacredError, match=r"nowhere: not a folder \(expected the folder holding a.txt, b.txt\)"):
        check_source(tmp_path / "nowhere", ["a.txt", "b.txt"], TacredError)


def test_the_record_holds_the_shared_and_the_own_entries_in_the_order_given(tmp_path: Path) -> None:
    converted = release(tmp_path)
    keys = ("files", "seed", "source", "sizes", "label_counts", "labels", "spacy_model", "spacy_version", "seconds")
    record = converted.record(keys, seed=3)
    assert list(record) == list(keys)
    assert record["sizes"] == {"train": 2, "test": 1} and record["labels"] == 2 and record["seed"] == 3
    assert record["label_counts"] == {"train": {"no_relation": 1, "r": 1}, "test": {"no_relation": 1}}
    with pytest.raises(ValueError, match="must name each of its entries once"):
        converted.record(keys)  # "seed" named but not given
    with pytest.raises(ValueError, match="must name each of its entries once"):
        converted.record(keys[1:], seed=3)  # "files" given but not named


def test_the_release_is_written_as_the_converters_wrote_it(tmp_path: Path) -> None:
    converted = release(tmp_path)
    out = converted.write(tmp_path / "out" / "nested", {"sizes": converted.sizes, "note": "Zoë"}, "read me\n")
    assert sorted(p.name for p in out.iterdir()) == ["README", "conversion.json", "labels.json", "test.json",
                                                    "train.json"]
    assert (out / "train.json").read_text(encoding="utf-8") == json.dumps(converted.splits["train"],
                                                                          ensure_ascii=False) + "\n"
    assert (out / "labels.json").read_bytes() == b'["no_relation", "r"]\n'
    assert (out / "conversion.json").read_text(encoding="utf-8") == '{"sizes": {"train": 2, "test": 1}, "note": "Zoë"}\n'
    assert (out / "README").read_text(encoding="utf-8") == "read me\n"

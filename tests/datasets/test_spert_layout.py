"""SpERT's JSON layout read and checked: every bad sentence refused with the file, the sentence and what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tacred.datasets.spert_layout import (
    JointTypes,
    SpertLayoutError,
    check_known,
    read_sentences,
    read_types,
    types_of,
)
from tests.joint_corpus import write_joint_corpus

GOOD = {"tokens": ["Ana", "works", "for", "Acme", "Holdings", "in", "Lyon", "."],
        "entities": [{"type": "Peop", "start": 0, "end": 1}, {"type": "Org", "start": 3, "end": 5},
                     {"type": "Loc", "start": 6, "end": 7}],
        "relations": [{"type": "Work_For", "head": 0, "tail": 1}, {"type": "OrgBased_In", "head": 1, "tail": 2}]}


def write(tmp_path: Path, sentences: list, name: str = "train.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(sentences), encoding="utf-8")
    return path


def changed(**change: object) -> dict:
    out = json.loads(json.dumps(GOOD))
    for key, value in change.items():
        section, _, index = key.partition("__")
        if index:
            out[section][int(index)].update(value)  # type: ignore[arg-type]
        else:
            out[section] = value
    return out


def test_a_release_reads_with_its_types_from_the_data(tmp_path: Path) -> None:
    folder = write_joint_corpus(tmp_path / "corpus")
    train = read_sentences(folder / "train.json")
    assert len(train) == 48 and train[3].index == 3
    types = types_of(train)
    assert types.entities == ("Loc", "Org", "Peop") and "Work_For" in types.relations
    assert read_types(folder / "types.json") == JointTypes(("Peop", "Org", "Loc"),
                                                           ("Work_For", "Kill", "OrgBased_In", "Live_In"))


def test_json_lines_and_a_plain_types_file(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(GOOD) + "\n", encoding="utf-8")
    assert [s.index for s in read_sentences(path)] == [0, 1]
    types = tmp_path / "types.json"
    types.write_text(json.dumps({"entities": ["Peop", "Org", "Loc"], "relations": ["Work_For", "OrgBased_In"]}))
    assert read_types(types).relations == ("Work_For", "OrgBased_In")


def test_nested_and_overlapping_entities_are_kept(tmp_path: Path) -> None:
    nested = changed(entities=GOOD["entities"] + [{"type": "Org", "start": 3, "end": 4}])
    sentence = read_sentences(write(tmp_path, [nested]))[0]
    assert len(sentence.entities) == 4


BAD = {
    "span out of range": (changed(entities__2={"end": 9}), "entity 2 spans words [6, 9), out of range"),
    "empty span": (changed(entities__0={"end": 0}), "entity 0 spans words [0, 0), empty"),
    "float offset": (changed(entities__1={"start": 3.0}), "entity 1's start is 3.0, not an integer"),
    "relation to a missing entity": (changed(relations__0={"tail": 7}), "relation 0's tail is entity 7, which does not"),
    "head equal to tail": (changed(relations__1={"head": 2}), "relation 1's head and tail are the same entity (2)"),
    "two relations on one pair": (changed(relations=GOOD["relations"] + [{"type": "Kill", "head": 0, "tail": 1}]),
                                  "relations 0 and 2 both hold from entity 0 to entity 1"),
    "one span twice": (changed(entities=GOOD["entities"] + [{"type": "Loc", "start": 0, "end": 1}]),
                       "entities 0 and 3 have the same span [0, 1)"),
    "no tokens": (changed(tokens=[]), "'tokens' is empty"),
    "token with a space": (changed(tokens=["Ana Lopez"] + GOOD["tokens"][1:]), "token 0"),
    "entities not a list": (changed(entities={"a": 1}), "'entities' must be a list"),
    "type not a name": (changed(entities__0={"type": 3}), "entity 0 has type 3"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_sentence_names_the_file_the_sentence_and_the_problem(tmp_path: Path, case: str) -> None:
    sentence, fragment = BAD[case]
    path = write(tmp_path, [GOOD, sentence])
    with pytest.raises(SpertLayoutError) as err:
        read_sentences(path)
    assert str(err.value).startswith(f"{path}, sentence 1: ") and fragment in str(err.value)


def test_unknown_types_against_a_types_file_or_the_training_data(tmp_path: Path) -> None:
    types = JointTypes(("Peop", "Org", "Loc"), ("Work_For",))
    path = write(tmp_path, [GOOD])
    with pytest.raises(SpertLayoutError, match="sentence 0: relation 1 has the unknown type 'OrgBased_In'"):
        read_sentences(path, types)
    sentences = read_sentences(path)
    with pytest.raises(SpertLayoutError, match="dev.json, sentence 0: relation 1 has the type 'OrgBased_In', which "
                                               "the training data never uses"):
        check_known(sentences, types, str(tmp_path / "dev.json"))


@pytest.mark.parametrize(("content", "fragment"), [
    (b"", "empty"), (b"[]", "holds no sentences"), (b"[{", "invalid JSON"), (b'{"tokens": ["a"]}\n{', "line 2"),
    ("[\"\u00e9\"]".encode("latin-1"), "not UTF-8"), (b"[3]", "sentence 0: expected a JSON object")])
def test_unreadable_files(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "dev.json"
    path.write_bytes(content)
    with pytest.raises(SpertLayoutError, match=fragment) as err:
        read_sentences(path)
    assert str(path) in str(err.value)


def test_bad_types_files(tmp_path: Path) -> None:
    path = tmp_path / "types.json"
    for content in ('{"entities": {}, "relations": {"A": {}}}', '{"entities": ["A", "A"], "relations": ["R"]}', "[]"):
        path.write_text(content)
        with pytest.raises(SpertLayoutError, match=str(path)):
            read_types(path)
    with pytest.raises(SpertLayoutError, match="no such types file"):
        read_types(tmp_path / "missing.json")

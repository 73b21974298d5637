"""CoNLL04 (SpERT's layout) → TACRED format: the checks of a sentence (errors name the file and the sentence index),
every ordered entity pair as an example with the stated type map, the documents for ``tacred extract``, the command,
and the real release from ``<repo>/../shared/data/conll04``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tacred.commands.convert import main
from tacred.constants import NO_RELATION
from tacred.data.examples import check_example
from tacred.datasets.conll04 import (
    CONLL04_LABELS,
    SPLITS,
    TACRED_TYPES,
    CoNLL04Error,
    conll04_type,
    read_conll04,
)
from tests.conftest import SHARED_DATA

RELEASE = SHARED_DATA / "conll04"

# Invented sentences in SpERT's layout (end exclusive; head and tail index the entities).
WORKS = {"tokens": ["John", "Smith", "works", "for", "Acme", "Corp.", "in", "Paris", "."],
         "entities": [{"type": "Peop", "start": 0, "end": 2}, {"type": "Org", "start": 4, "end": 6},
                      {"type": "Loc", "start": 7, "end": 8}],
         "relations": [{"type": "Work_For", "head": 0, "tail": 1}, {"type": "OrgBased_In", "head": 1, "tail": 2}],
         "orig_id": 7}
KILL = {"tokens": ["Mary", "killed", "Bob", "on", "Tuesday", "."],
        "entities": [{"type": "Peop", "start": 0, "end": 1}, {"type": "Peop", "start": 2, "end": 3},
                     {"type": "Other", "start": 4, "end": 5}],
        "relations": [{"type": "Kill", "head": 0, "tail": 1}]}
ALONE = {"tokens": ["Rain", "fell", "in", "Oslo", "."], "entities": [{"type": "Loc", "start": 3, "end": 4}],
         "relations": []}


def write(path: Path, sentences: list[Any]) -> Path:
    path.write_text(json.dumps(sentences), encoding="utf-8")
    return path


def small_release(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write(folder / SPLITS["train"], [WORKS, KILL])
    write(folder / SPLITS["dev"], [KILL])
    write(folder / SPLITS["test"], [ALONE, WORKS])
    return folder


def test_sentences_read_with_their_text_and_character_spans(tmp_path: Path) -> None:
    works, kill = read_conll04(write(tmp_path / "s.json", [WORKS, KILL]))
    assert works.text == "John Smith works for Acme Corp. in Paris ."
    assert [works.text[slice(*works.char_span(e))] for e in works.entities] == ["John Smith", "Acme Corp.", "Paris"]
    assert works.relations == (("Work_For", 0, 1), ("OrgBased_In", 1, 2)) and works.orig_id == 7
    assert kill.index == 1 and kill.text[slice(*kill.char_span(kill.entities[1]))] == "Bob"


def bad(sentence: dict, **change: Any) -> dict:
    return {**sentence, **change}


@pytest.mark.parametrize("sentence, problem", [
    (bad(WORKS, entities=[{"type": "Peop", "start": 0, "end": 12}]),
     r"sentence 1: entity 0 spans words \[0, 12\), out of range \(the sentence has 9 words; end is exclusive\)"),
    (bad(WORKS, entities=[{"type": "Peop", "start": 3, "end": 3}]), r"sentence 1: entity 0 spans words \[3, 3\), empty"),
    (bad(WORKS, entities=[{"type": "Peop", "start": 1.0, "end": 3}]),
     r"sentence 1: entity 0's start is 1.0, not an integer"),
    (bad(WORKS, entities=[{"type": "Peop", "start": 1, "end": True}]), r"sentence 1: entity 0's end is true, not an"),
    (bad(WORKS, entities=[{"type": "Person", "start": 0, "end": 2}]),
     r"sentence 1: entity 0 has the unknown type 'Person' \(known: Peop, Org, Loc, Other\)"),
    (bad(WORKS, relations=[{"type": "Work_For", "head": 0, "tail": 3}]),
     r"sentence 1: relation 0's tail is entity 3, which does not exist \(the sentence has 3 entities\)"),
    (bad(WORKS, relations=[{"type": "Work_For", "head": -1, "tail": 1}]), r"sentence 1: relation 0's head is entity -1, which"),
    (bad(WORKS, relations=[{"type": "Work_For", "head": 1, "tail": 1}]), r"sentence 1: relation 0's head and tail are the same entity"),
    (bad(WORKS, relations=[{"type": "Works_For", "head": 0, "tail": 1}]), r"sentence 1: relation 0 has the unknown type 'Works_For'"),
    (bad(WORKS, relations=[{"type": "Work_For", "head": 0, "tail": 1}, {"type": "Kill", "head": 0, "tail": 1}]),
     r"sentence 1: relations 0 and 1 both hold from entity 0 to entity 1"),
    (bad(WORKS, entities=[{"type": "Peop", "start": 0, "end": 2}, {"type": "Peop", "start": 1, "end": 3}]),
     r"sentence 1: entities 0 and 1 overlap \(words \[0, 2\) and \[1, 3\)\)"),
    (bad(WORKS, entities=[{"type": "Peop", "start": 0, "end": 2}, {"type": "Org", "start": 1, "end": 2}]),
     r"sentence 1: entities 0 and 1 overlap \(words \[0, 2\) and \[1, 2\)\)"),  # nested
    (bad(WORKS, entities=[{"type": "Peop", "start": 0, "end": 2}, {"type": "Org", "start": 0, "end": 2}]),
     r"sentence 1: entities 0 and 1 have the same span \[0, 2\)"),
    (bad(WORKS, tokens=["John", "", "x"]), r"sentence 1: token 1 \(''\) must be a non-empty string"),
    (bad(WORKS, tokens=["New York"]), r"sentence 1: token 0 \('New York'\) must be a non-empty string without white space"),
    (bad(WORKS, relations=None), r"sentence 1: 'relations' must be a list"),
    ("a sentence", r"sentence 1: expected a JSON object, found str"),
])
def test_malformed_sentences_are_errors_naming_file_and_index(tmp_path: Path, sentence: Any, problem: str) -> None:
    path = write(tmp_path / "conll04_dev.json", [KILL, sentence])
    with pytest.raises(CoNLL04Error, match=re.escape(str(path)) + ", " + problem):
        read_conll04(path)


def test_a_file_that_is_not_a_list_of_sentences(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("{\"tokens\": []}", encoding="utf-8")
    with pytest.raises(CoNLL04Error, match="expected a JSON list of sentences"):
        read_conll04(tmp_path / "a.json")
    (tmp_path / "b.json").write_text("[{", encoding="utf-8")
    with pytest.raises(CoNLL04Error, match="b.json: not a JSON file"):
        read_conll04(tmp_path / "b.json")


def test_the_stated_type_maps() -> None:
    assert TACRED_TYPES == {"Peop": "PERSON", "Org": "ORGANIZATION", "Loc": "LOCATION", "Other": "MISC"}
    spacy = {"PERSON": "Peop", "ORG": "Org", "GPE": "Loc", "LOC": "Loc", "FAC": "Loc", "NORP": "Other",
             "DATE": "Other", "MONEY": "Other", "EVENT": "Other", "CARDINAL": None, "ORDINAL": None}
    extracted = {"ORGANIZATION": "Org", "LOCATION": "Loc", "NATIONALITY": "Other", "MISC": "Other",
                 "NUMBER": "Other", "NOMINAL": "Other"}
    for found, expected in {**spacy, **extracted, "Org": "Org", "Other": "Other"}.items():
        assert conll04_type(found) == expected, found


def test_convert_command_writes_every_ordered_pair_labels_and_documents(tmp_path: Path, nlp, capsys) -> None:
    src, out = small_release(tmp_path / "src"), tmp_path / "out"
    assert main(["conll04", str(src), str(out)]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"train\s+12 examples \(3 relations, 9 no_relation\) from 2 sentences \(0 with fewer", printed)
    assert re.search(r"test\s+6 examples \(2 relations, 4 no_relation\) from 2 sentences \(1 with fewer", printed)
    train = json.loads((out / "train.json").read_text())
    for ex in train:
        assert check_example(ex) is None, ex["id"]
    by_id = {ex["id"]: ex for ex in train}
    assert len(by_id) == 12  # 3 entities: 3 x 2 ordered pairs in each sentence
    work = by_id["conll04-train-0-0-1"]
    assert work["relation"] == "Work_For" and (work["subj_type"], work["obj_type"]) == ("PERSON", "ORGANIZATION")
    assert work["token"][work["subj_start"]:work["subj_end"] + 1] == ["John", "Smith"]
    assert work["token"][work["obj_start"]:work["obj_end"] + 1] == ["Acme", "Corp."]
    assert by_id["conll04-train-0-1-0"]["relation"] == NO_RELATION  # the reversed pair
    assert by_id["conll04-train-0-1-2"]["relation"] == "OrgBased_In"
    assert by_id["conll04-train-1-0-1"]["relation"] == "Kill"
    assert by_id["conll04-train-1-2-0"]["subj_type"] == "MISC"
    assert work["token"] == WORKS["tokens"] and len(work["stanford_pos"]) == len(work["stanford_ner"]) == 9
    assert json.loads((out / "labels.json").read_text()) == list(CONLL04_LABELS)
    docs = [json.loads(line) for line in (out / "documents" / "conll04_test.jsonl").read_text().splitlines()]
    assert docs == [{"id": "conll04_test-0", "text": "Rain fell in Oslo ."},
                    {"id": "conll04_test-1", "text": "John Smith works for Acme Corp. in Paris ."}]
    info = json.loads((out / "conversion.json").read_text())
    assert info["sizes"] == {"train": 12, "dev": 6, "test": 6} and info["positives"] == {"train": 3, "dev": 1, "test": 2}
    assert info["sentences_without_pairs"]["test"] == 1 and info["entity_types"] == TACRED_TYPES


def test_convert_command_refuses_a_bad_source_before_spacy(tmp_path: Path, capsys) -> None:
    assert main(["conll04", str(tmp_path / "nowhere"), str(tmp_path / "out")]) == 2
    assert "nowhere: not a folder" in capsys.readouterr().err
    src = small_release(tmp_path / "src")
    write(src / SPLITS["test"], [WORKS, bad(KILL, relations=[{"type": "Kill", "head": 0, "tail": 5}])])
    assert main(["conll04", str(src), str(tmp_path / "out"), "--spacy_model", "no_such_model_xyz"]) == 2
    err = capsys.readouterr().err
    assert "conll04_test.json, sentence 1: relation 0's tail is entity 5, which does not exist" in err
    assert not (tmp_path / "out").exists()


CROWDED = {"tokens": ["w"] * 400, "entities": [{"type": "Peop", "start": i, "end": i + 1} for i in range(400)],
           "relations": []}


@pytest.mark.parametrize(("split", "sentences", "extra", "problem"), [
    ("train", [WORKS, CROWDED], [], "conll04_train.json, sentence 1: 400 entities (159,600 ordered pairs), more than "
                                    "the limit of 100 entities a sentence (--max_entities)"),
    ("dev", [KILL, WORKS], ["--max_entities", "2"], "conll04_train.json, sentence 0: 3 entities (6 ordered pairs)"),
    ("dev", [], [], "conll04_dev.json: holds no sentence"),
    ("test", [ALONE], [], "conll04_test.json: none of its 1 sentences has two entities, so the split would convert "
                          "to no example"),
    ("test", [WORKS], ["--max_pairs", "9"], "the release converts to 24 examples (ordered entity pairs), more than "
                                           "the limit of 9 (--max_pairs)"),
])
def test_a_release_too_large_or_converting_to_nothing_is_refused_before_spacy(tmp_path: Path, capsys, split, sentences,
                                                                              extra, problem) -> None:
    import sys

    src = small_release(tmp_path / "src")
    write(src / SPLITS[split], sentences)
    loaded = "spacy" in sys.modules
    assert main(["conll04", str(src), str(tmp_path / "out"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tacred convert: error: ") and problem in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists() and (loaded or "spacy" not in sys.modules)


def test_an_out_holding_a_converted_release_is_replaced_only_with_overwrite(tmp_path: Path, nlp, capsys) -> None:
    src = small_release(tmp_path / "src")
    out = tmp_path / "out"
    out.mkdir()
    (out / "labels.json").write_text('["mine"]', encoding="utf-8")
    assert main(["conll04", str(src), str(out)]) == 2
    assert "holds a converted release (labels.json); give --overwrite" in capsys.readouterr().err
    assert (out / "labels.json").read_text(encoding="utf-8") == '["mine"]'
    assert main(["conll04", str(src), str(out), "--overwrite", "--spacy_model", "no_such_model_xyz"]) == 2
    assert sorted(p.name for p in out.iterdir()) == ["labels.json"]  # a failed run leaves OUT as it found it
    assert main(["conll04", str(src), str(out), "--overwrite"]) == 0
    assert json.loads((out / "labels.json").read_text(encoding="utf-8")) == list(CONLL04_LABELS)
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert main(["kbp37", str(src), str(tmp_path / "file")]) == 2
    assert "file: not a folder" in capsys.readouterr().err


def test_the_real_release_reads() -> None:
    """SpERT's split as the data README states it: sentences, entities and relations of each file."""
    if not (RELEASE / SPLITS["test"]).is_file():
        pytest.skip(f"CoNLL04 not found at {RELEASE}")
    sizes = {}
    for split, name in SPLITS.items():
        sentences = read_conll04(RELEASE / name)
        sizes[split] = (len(sentences), sum(len(s.entities) for s in sentences),
                        sum(len(s.relations) for s in sentences),
                        sum(len(s.entities) * (len(s.entities) - 1) for s in sentences))
    assert sizes == {"train": (922, 3377, 1283, 11998), "dev": (231, 893, 343, 3260),
                     "test": (288, 1079, 422, 3822)}

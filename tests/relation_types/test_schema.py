"""The TAC KBP slot schema: an entry for every relation of TACRED's and KBP37's label sets, subjects fixed by the
prefix, objects in TACRED's types with the names spaCy gives them, directed labels read in their own order, and
TACRED's own gold examples inside it."""

from __future__ import annotations

import json

import pytest

from tacred import constants as C
from tacred.datasets.kbp37 import KBP37_LABELS, RELATIONS
from tacred.relation_types.schema import (
    SLOT_TYPES,
    SPACY_NAMES,
    SUBJECT_BY_PREFIX,
    schema_pairs,
    slot_pairs,
    split_direction,
)
from tacred.text.spacy_pipeline import NER_MAP, NOMINAL
from tests.conftest import REPO


def test_every_tacred_kbp37_and_retacred_relation_has_an_entry_and_nothing_else_does():
    from tacred.datasets.patch import RETACRED_LABELS

    tacred = set(C.TACRED_LABELS) - {C.NO_RELATION}
    assert set(SLOT_TYPES) == tacred | set(RETACRED_LABELS) - {C.NO_RELATION} and len(SLOT_TYPES) == 45
    assert set(RELATIONS) <= set(SLOT_TYPES)
    for label in KBP37_LABELS[1:]:
        assert schema_pairs(label), label
    assert schema_pairs(C.NO_RELATION) is None and schema_pairs("Cause-Effect(e1,e2)") is None


def test_the_prefix_fixes_the_subject_and_every_type_is_one_the_data_uses():
    stanford = set(C.NER_TAGS) | set(C.OBJECT_TYPES)
    spacy = set(NER_MAP.values()) | {NOMINAL, "MISC"}
    for relation, (subject, objects) in SLOT_TYPES.items():
        assert subject == SUBJECT_BY_PREFIX[relation[:4]], relation
        assert objects and set(objects) <= stanford, relation
    assert set(SPACY_NAMES) <= stanford and set(SPACY_NAMES.values()) <= spacy
    for relation in SLOT_TYPES:  # each pair in Stanford's names and in spaCy's
        for s, o in slot_pairs(relation):
            assert {s, o} <= stanford | spacy


def test_slots_as_tac_kbp_defines_them():
    assert slot_pairs("per:city_of_birth") == {("PERSON", "CITY"), ("PERSON", "LOCATION")}
    assert slot_pairs("per:date_of_birth") == {("PERSON", "DATE")}
    assert slot_pairs("org:founded") == {("ORGANIZATION", "DATE")}
    assert {o for _, o in slot_pairs("org:founded_by")} >= {"PERSON", "ORGANIZATION", "LOCATION"}
    assert {o for _, o in slot_pairs("per:employee_of")} >= {"ORGANIZATION", "COUNTRY", "LOCATION"}
    assert slot_pairs("per:title") == {("PERSON", "TITLE"), ("PERSON", NOMINAL)}  # spaCy has no title entity
    assert ("PERSON", "DATE") not in slot_pairs("org:founded") and ("LOCATION", "PERSON") not in slot_pairs(
        "org:founded_by")


def test_a_directed_label_takes_its_pairs_in_the_order_training_data_writes_them():
    assert split_direction("per:employee_of(e2,e1)") == ("per:employee_of", "e2,e1")
    assert schema_pairs("org:founded(e1,e2)") == {("ORGANIZATION", "DATE")}
    assert schema_pairs("org:founded(e2,e1)") == {("DATE", "ORGANIZATION")}
    assert schema_pairs("per:title") == slot_pairs("per:title")


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_tacreds_gold_arguments_fit_the_schema(split):
    path = REPO.parent / "shared" / "data" / "tacred_sample" / f"{split}.json"
    if not path.is_file():
        pytest.skip(f"{path} is not there (the TACRED sample beside the repository)")
    for ex in json.loads(path.read_text(encoding="utf-8")):
        if ex["relation"] != C.NO_RELATION:
            assert (ex["subj_type"], ex["obj_type"]) in schema_pairs(ex["relation"]), ex["id"]

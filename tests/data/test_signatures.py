"""Relation signatures: learned from the training split, kept in the vocabularies (and so in every checkpoint and
export), without changing the vocabularies' fingerprint; vocabularies written before them load without."""

from __future__ import annotations

from tacred.data.examples import Example
from tacred.data.signatures import Signatures, coarse
from tacred.data.vocab import Vocabularies, build_vocabularies


def example(relation: str, subj_type: str, obj_type: str) -> Example:
    return Example(id="x", tokens=("A", "met", "B"), subj_start=0, subj_end=0, obj_start=2, obj_end=2,
                   subj_type=subj_type, obj_type=obj_type, pos=("NNP", "VBD", "NNP"), ner=("O", "O", "O"),
                   relation=relation)


TRAIN = [example("per:city_of_birth", "PERSON", "CITY"), example("per:city_of_birth", "PERSON", "CITY"),
         example("per:origin", "PERSON", "NATIONALITY"), example("per:origin", "PERSON", "COUNTRY"),
         example("no_relation", "ORGANIZATION", "DATE")]


def test_each_relation_keeps_the_type_pairs_it_was_trained_with():
    learned = Signatures.learn(TRAIN, "no_relation")
    assert learned.to_dict() == {"per:city_of_birth": [["PERSON", "CITY"]],
                                 "per:origin": [["PERSON", "COUNTRY"], ["PERSON", "NATIONALITY"]]}
    assert Signatures.from_dict(learned.to_dict()) == learned
    assert learned.coarsened()["per:origin"] == {("PERSON", "LOCATION"), ("PERSON", "NATIONALITY")}
    assert coarse("STATE_OR_PROVINCE") == "LOCATION" and coarse("PERSON") == "PERSON"


def test_vocabularies_carry_signatures_without_changing_their_fingerprint(tmp_path):
    vocab = build_vocabularies(TRAIN, labels=["no_relation", "per:city_of_birth", "per:origin"])
    assert vocab.signatures == Signatures.learn(TRAIN, "no_relation")
    vocab.save(tmp_path / "vocab.json")
    again = Vocabularies.load(tmp_path / "vocab.json")
    assert again.signatures == vocab.signatures
    without = Vocabularies.from_dict({k: v for k, v in vocab.to_dict().items() if k != "signatures"})
    assert without.signatures is None and "signatures" not in without.to_dict()
    assert without.fingerprint() == vocab.fingerprint()  # a run started before signatures resumes


def test_a_trained_checkpoint_holds_the_signatures_of_its_training_data(checkpoint):
    from tacred.data.examples import load_examples

    saved = Vocabularies.load(checkpoint)
    train = load_examples(checkpoint.parents[2] / "data" / "train.json").examples
    assert saved.signatures == Signatures.learn(train, "no_relation")

"""Relation signatures: the schema where the label set has one, else learned from the training split with support;
kept in the vocabularies (and so in every checkpoint and export) without changing the vocabularies' fingerprint;
the signatures of earlier versions (every pair seen) load with the schema in force, and vocabularies written before
signatures load without."""

from __future__ import annotations

from tacred.data.examples import Example
from tacred.data.vocab import Vocabularies, build_vocabularies
from tacred.relation_types.signatures import MIN_EXAMPLES, MIN_SHARE, Signatures, coarse, supported


def example(relation: str, subj_type: str, obj_type: str) -> Example:
    return Example(id="x", tokens=("A", "met", "B"), subj_start=0, subj_end=0, obj_start=2, obj_end=2,
                   subj_type=subj_type, obj_type=obj_type, pos=("NNP", "VBD", "NNP"), ner=("O", "O", "O"),
                   relation=relation)


TRAIN = [example("per:city_of_birth", "PERSON", "CITY"), example("per:city_of_birth", "PERSON", "CITY"),
         example("per:origin", "PERSON", "NATIONALITY"), example("per:origin", "PERSON", "COUNTRY"),
         example("no_relation", "ORGANIZATION", "DATE")]


def test_the_schema_decides_where_the_label_set_has_one_whatever_training_saw():
    noisy = TRAIN + [example("per:city_of_birth", "ORGANIZATION", "DATE")] * 9  # most of the relation's examples
    learned = Signatures.learn(noisy, "no_relation", ["no_relation", "per:city_of_birth", "per:origin", "per:age"])
    assert learned.pairs["per:city_of_birth"] == {("PERSON", "CITY"), ("PERSON", "LOCATION")}
    assert ("PERSON", "NATIONALITY") in learned.pairs["per:origin"]
    assert ("PERSON", "NUMBER") in learned.pairs["per:age"]  # a relation without training examples has its schema
    assert set(learned.sources.values()) == {"schema"}
    assert learned.support["per:city_of_birth"] == {("PERSON", "CITY"): 2, ("ORGANIZATION", "DATE"): 9}
    assert Signatures.from_dict(learned.to_dict()) == learned
    assert learned.plain_text["per:origin"] >= {("PERSON", "LOCATION"), ("PERSON", "NATIONALITY")}
    assert coarse("STATE_OR_PROVINCE") == "LOCATION" and coarse("PERSON") == "PERSON"


def semeval(relation: str, subj_type: str, obj_type: str, n: int) -> list[Example]:
    return [example(relation, subj_type, obj_type)] * n


def test_without_a_schema_a_pair_needs_real_support():
    """A pair is kept iff it has at least MIN_EXAMPLES training examples and MIN_SHARE of its relation's; a directed
    relation's two labels pool their examples, each pair read in the relation's own order."""
    assert (MIN_EXAMPLES, MIN_SHARE) == (5, 0.10)
    train = (semeval("Work_For", "PERSON", "ORGANIZATION", 90) + semeval("Work_For", "PERSON", "LOCATION", 12)
             + semeval("Work_For", "ORGANIZATION", "DATE", 4)  # 4 examples: too few
             + semeval("Kill", "PERSON", "PERSON", 40) + semeval("Kill", "PERSON", "ORGANIZATION", 5)  # 11%: kept
             + semeval("Live_In", "PERSON", "LOCATION", 60) + semeval("Live_In", "PERSON", "DATE", 5)  # 7.7%: not
             + semeval("Part-Whole(e1,e2)", "NOMINAL", "NOMINAL", 30) + semeval("Part-Whole(e2,e1)", "NOMINAL", "NOMINAL", 2)
             + semeval("Part-Whole(e1,e2)", "DATE", "NOMINAL", 3) + semeval("Part-Whole(e2,e1)", "NOMINAL", "DATE", 3))
    labels = ["Other", "Work_For", "Kill", "Live_In", "Part-Whole(e1,e2)", "Part-Whole(e2,e1)", "Located_In"]
    learned = Signatures.learn(train, "Other", labels)
    assert learned.pairs["Work_For"] == {("PERSON", "ORGANIZATION"), ("PERSON", "LOCATION")}
    assert learned.pairs["Kill"] == {("PERSON", "PERSON"), ("PERSON", "ORGANIZATION")}
    assert learned.pairs["Live_In"] == {("PERSON", "LOCATION")}
    # (DATE, NOMINAL) as the relation reads it: 3 + 3 = 6 examples of 38, 16%: kept in both directions
    assert learned.pairs["Part-Whole(e1,e2)"] == {("NOMINAL", "NOMINAL"), ("DATE", "NOMINAL")}
    assert learned.pairs["Part-Whole(e2,e1)"] == {("NOMINAL", "NOMINAL"), ("NOMINAL", "DATE")}
    assert learned.pairs["Located_In"] == frozenset()  # no training example: never extracted
    assert set(learned.sources.values()) == {"learned"}
    assert supported({"R": {("A", "B"): 4}}) == {"R": frozenset()}
    assert Signatures.from_dict(learned.to_dict()) == learned


def test_signatures_of_an_earlier_version_load_with_the_schema_in_force():
    old = {"per:city_of_birth": [["PERSON", "CITY"], ["ORGANIZATION", "DATE"]], "Kill": [["PERSON", "DATE"]]}
    loaded = Signatures.from_dict(old)
    assert loaded.pairs["per:city_of_birth"] == {("PERSON", "CITY"), ("PERSON", "LOCATION")}
    assert loaded.pairs["Kill"] == {("PERSON", "DATE")}  # no counts were kept: the pairs seen stay
    assert loaded.sources == {"per:city_of_birth": "schema", "Kill": "seen"}


def test_vocabularies_carry_signatures_without_changing_their_fingerprint(tmp_path):
    vocab = build_vocabularies(TRAIN, labels=["no_relation", "per:city_of_birth", "per:origin"])
    assert vocab.signatures == Signatures.learn(TRAIN, "no_relation", ["per:city_of_birth", "per:origin"])
    vocab.save(tmp_path / "vocab.json")
    again = Vocabularies.load(tmp_path / "vocab.json")
    assert again.signatures == vocab.signatures
    without = Vocabularies.from_dict({k: v for k, v in vocab.to_dict().items() if k != "signatures"})
    # the schema's stand in for a vocabulary written without them, and are not written back
    assert not without.signatures.stored and "signatures" not in without.to_dict()
    assert without.signatures.pairs["per:city_of_birth"] == vocab.signatures.pairs["per:city_of_birth"]
    assert without.fingerprint() == vocab.fingerprint()  # a run started before signatures resumes


def test_a_trained_checkpoint_holds_the_signatures_of_its_training_data(checkpoint):
    from tacred.data.examples import load_examples

    saved = Vocabularies.load(checkpoint)
    train = load_examples(checkpoint.parents[2] / "data" / "train.json").examples
    assert saved.signatures == Signatures.learn(train, "no_relation", saved.labels.itos)

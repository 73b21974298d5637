"""Extraction's last step (tacred/extraction/postprocess.py): directed labels, both orders of a pair read in the
first order's frame and averaged, and the fact a forward-frame label reports; the no-relation rule and the labels
the signatures allowed each pair; what extraction answers (mention records, ``POST /extract``'s answer)."""

from __future__ import annotations

import numpy as np
import pytest


def test_the_mean_of_both_orders_in_the_first_orders_frame():
    from tacred.extraction.postprocess import DirectedLabels, mirror
    from tacred.relation_types.schema import split_direction

    labels = ["no_relation", "per:employee_of(e1,e2)", "per:employee_of(e2,e1)", "org:founded(e1,e2)"]
    assert split_direction("per:employee_of(e2,e1)") == ("per:employee_of", "e2,e1")
    assert mirror("no_relation") == "no_relation" and mirror("org:founded(e1,e2)") == "org:founded(e2,e1)"
    directed = DirectedLabels.from_labels(labels)
    assert directed.mirror_index.tolist() == [0, 2, 1, -1]  # org:founded(e2,e1) is not in the set
    forward = np.array([[0.1, 0.6, 0.2, 0.1]])
    backward = np.array([[0.3, 0.1, 0.4, 0.2]])
    assert directed.combine(forward, backward).tolist()[0] == pytest.approx([0.2, 0.5, 0.15, 0.05])
    assert directed.fact("per:employee_of(e2,e1)") == ("per:employee_of", False)


def _mentions():
    from tacred.extraction.preprocess import Mention

    return (Mention("John Smith", 0, 10, "PERSON"), Mention("Acme Corp", 21, 30, "ORGANIZATION"),
            Mention("Boston", 34, 40, "LOCATION"))


def _pairs(owners, types, both_orders):
    """Candidate pairs as preprocessing gives them: each with the labels its types allow (the signatures, once)."""
    from tacred.extraction.preprocess import Candidate, Pair

    return [Pair(n, k, {}, Candidate(0, 0, a), Candidate(2, 2, b), types.allowed_labels(a.type, b.type, both_orders))
            for n, k, a, b in owners]


def test_the_no_relation_rule_and_the_signatures_decide_what_is_reported():
    from tacred.extraction.postprocess import decided_relations
    from tacred.extraction.preprocess import SignatureFilter
    from tacred.relation_types.signatures import Signatures

    labels = ["no_relation", "per:employee_of", "per:city_of_birth"]
    signatures = Signatures({"per:employee_of": frozenset({("PERSON", "ORGANIZATION")}),
                             "per:city_of_birth": frozenset({("PERSON", "CITY")})})
    john, acme, boston = _mentions()
    owners = [(0, 0, john, acme), (0, 0, john, boston), (1, 2, john, acme), (1, 2, john, boston)]
    probs = np.array([[0.2, 0.7, 0.1], [0.3, 0.1, 0.6], [0.1, 0.2, 0.7], [0.5, 0.1, 0.4]])

    def reported(threshold=None, enabled=True):
        types = SignatureFilter(signatures, labels, "no_relation", enabled)
        return [(n, r.relation, r.object.text, r.sentence, r.probability)
                for n, r in decided_relations(probs, _pairs(owners, types, False), labels, "no_relation", threshold,
                                              False)]

    # an organisation is no city of birth: the third pair's decision is dropped; the fourth is no relation
    assert reported() == [(0, "per:employee_of", "Acme Corp", 0, pytest.approx(0.7)),
                          (0, "per:city_of_birth", "Boston", 0, pytest.approx(0.6))]
    assert [r[:3] for r in reported(enabled=False)] == [(0, "per:employee_of", "Acme Corp"),
                                                        (0, "per:city_of_birth", "Boston"),
                                                        (1, "per:city_of_birth", "Acme Corp")]
    # a negative log-margin threshold lets the fourth pair's best relation through (0.4 against 0.5)
    assert [r[:3] for r in reported(threshold=-1.0)][-1] == (1, "per:city_of_birth", "Boston")


def test_a_directed_pair_is_reported_once_in_the_relations_own_order_with_both_orders_as_evidence():
    from tacred.extraction.postprocess import decided_relations
    from tacred.extraction.preprocess import SignatureFilter
    from tacred.relation_types.signatures import Signatures

    labels = ["Other", "Cause-Effect(e1,e2)", "Cause-Effect(e2,e1)"]
    john, acme, _ = _mentions()
    # asked (John, Acme): "Acme causes John" at 0.8; asked (Acme, John): "Acme causes John" at 0.6
    probs = np.array([[0.1, 0.1, 0.8], [0.3, 0.6, 0.1]])
    types = SignatureFilter(Signatures.from_schema(labels, "Other"), labels, "Other", enabled=False)
    [(n, r)] = decided_relations(probs, _pairs([(3, 1, john, acme)], types, True), labels, "Other", None, True)
    assert (n, r.relation, r.subject, r.object, r.sentence) == (3, "Cause-Effect", acme, john, 1)
    assert r.probability == pytest.approx(0.7)
    assert r.evidence == {"combined": "mean", "orders": [
        {"subject": "John Smith", "object": "Acme Corp", "label": "Cause-Effect(e2,e1)", "probability": pytest.approx(0.8)},
        {"subject": "Acme Corp", "object": "John Smith", "label": "Cause-Effect(e1,e2)", "probability": pytest.approx(0.6)}]}


def test_a_pair_is_possible_when_some_relation_takes_it_in_the_order_asked_or_either_order_when_both_are_asked():
    from tacred.extraction.preprocess import SignatureFilter
    from tacred.relation_types.signatures import Signatures

    labels = ["no_relation", "per:employee_of", "per:city_of_birth"]
    signatures = Signatures({"per:employee_of": frozenset({("PERSON", "ORGANIZATION")}),
                             "per:city_of_birth": frozenset({("PERSON", "CITY")})})
    types = SignatureFilter(signatures, labels, "no_relation")
    # asked twice in turns: the kept answers are those of each question (its order flag included)
    for _ in range(2):
        assert types.pair_possible("PERSON", "ORGANIZATION", False)
        assert not types.pair_possible("ORGANIZATION", "PERSON", False)
        assert types.pair_possible("ORGANIZATION", "PERSON", True)
        assert not types.pair_possible("CITY", "ORGANIZATION", True)
    assert SignatureFilter(signatures, labels, "no_relation", enabled=False).pair_possible("CITY", "CITY", False)


def test_a_directed_pair_is_allowed_the_labels_whose_fact_fits_its_types_in_the_relations_own_order():
    """Both orders asked: ``R(e2,e1)`` of (first, second) is the fact R(second, first), so the signature of R is read
    with the arguments swapped; the filter switched off allows every label."""
    from tacred.extraction.preprocess import SignatureFilter
    from tacred.relation_types.signatures import Signatures

    labels = ["no_relation", "per:employee_of(e1,e2)", "per:employee_of(e2,e1)"]
    signatures = Signatures({"per:employee_of(e1,e2)": frozenset({("PERSON", "ORGANIZATION")}),
                             "per:employee_of(e2,e1)": frozenset({("ORGANIZATION", "PERSON")})})
    types = SignatureFilter(signatures, labels, "no_relation")
    assert "per:employee_of(e1,e2)" in types.allowed_labels("PERSON", "ORGANIZATION", True)
    assert "per:employee_of(e2,e1)" not in types.allowed_labels("PERSON", "ORGANIZATION", True)
    assert types.allowed_labels("ORGANIZATION", "PERSON", True) >= {"per:employee_of(e2,e1)"}
    assert "per:employee_of(e1,e2)" not in types.allowed_labels("ORGANIZATION", "PERSON", True)
    off = SignatureFilter(signatures, labels, "no_relation", enabled=False)
    assert off.allowed_labels("CITY", "CITY", True) == frozenset(labels)


def test_a_documents_relations_become_mention_records_and_one_answer():
    from tacred.extraction.postprocess import DocumentResult, Relation, TextRelations
    from tacred.extraction.preprocess import Mention

    text = "Intro. John Smith works for Acme Corp."
    john, acme = Mention("John Smith", 7, 17, "PERSON"), Mention("Acme Corp", 28, 37, "ORGANIZATION")
    found = TextRelations([Relation("per:employee_of", 0.123456789, john, acme, sentence=1)], [(0, 6), (7, 38)],
                          pairs=2)
    result = DocumentResult.of_text("doc-1", text, found)
    assert (result.doc_id, result.sentences, result.pairs, result.error) == ("doc-1", 2, 2, None)
    assert result.mentions == [{
        "doc_id": "doc-1", "sentence": 1, "sentence_text": "John Smith works for Acme Corp.",
        "subject": {"text": "John Smith", "start": 7, "end": 17, "type": "PERSON"},
        "object": {"text": "Acme Corp", "start": 28, "end": 37, "type": "ORGANIZATION"},
        "relation": "per:employee_of", "probability": 0.123457, "evidence": None}]
    for mention in (result.mentions[0]["subject"], result.mentions[0]["object"]):
        assert text[mention["start"]:mention["end"]] == mention["text"]
    assert result.answer() == {"id": "doc-1", "sentences": 2, "pairs": 2, "mentions": result.mentions}
    assert found.relations[0].to_dict()["subject"] == {"text": "John Smith", "start": 7, "end": 17, "type": "PERSON"}

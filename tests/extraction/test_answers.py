"""What extraction answers (tacred/extraction/answers.py): a relation as the mention record ``tacred extract`` writes,
and a document's result as ``POST /extract`` answers it."""

from __future__ import annotations


def test_a_documents_relations_become_mention_records_and_one_answer():
    from tacred.extraction.answers import DocumentResult, Mention, Relation, TextRelations

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

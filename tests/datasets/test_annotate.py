"""Raw text → TACRED JSON: marker syntax, offsets, error line numbers, spaCy tag mapping, the command."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tacred.commands.annotate import main
from tacred.constants import NER_TAGS, NO_RELATION, POS_TAGS
from tacred.datasets.annotate import (
    AnnotationError,
    MarkerError,
    annotate_marked,
    annotate_offsets,
    parse_markers,
)
from tacred.text.spacy_pipeline import (
    SpacyModelError,
    annotate_words,
    load_spacy,
    map_ner,
    map_pos,
    tokenize_with_spans,
)


def span_tokens(ex: dict, role: str) -> list[str]:
    return ex["token"][ex[f"{role}_start"]:ex[f"{role}_end"] + 1]


def test_parse_markers_removes_markers_and_keeps_offsets() -> None:
    m = parse_markers("<obj:ORG>Microsoft</obj> was founded by <subj>Bill Gates</subj> .")
    assert m.text == "Microsoft was founded by Bill Gates ."
    assert m.text[slice(*m.subj)] == "Bill Gates" and m.text[slice(*m.obj)] == "Microsoft"
    assert (m.subj_type, m.obj_type) == (None, "ORG")


def test_marked_lines_give_aligned_examples_with_ner_types(nlp) -> None:
    lines = ["<subj>Bill Gates</subj> founded <obj>Microsoft</obj> in 1975 .", "", "  ",
             "The <e1>author</e1> of a keygen uses a <e2>disassembler</e2> ."]
    first, second = annotate_marked(lines, nlp=nlp)
    assert (first["id"], second["id"]) == ("line-1", "line-4")  # blank lines skipped, numbering kept
    assert first["relation"] == second["relation"] == NO_RELATION
    assert span_tokens(first, "subj") == ["Bill", "Gates"] and span_tokens(first, "obj") == ["Microsoft"]
    assert (first["subj_type"], first["obj_type"]) == ("PERSON", "ORGANIZATION")
    assert span_tokens(second, "subj") == ["author"] and span_tokens(second, "obj") == ["disassembler"]
    assert (second["subj_type"], second["obj_type"]) == ("NOMINAL", "NOMINAL")
    for ex in (first, second):
        assert len(ex["token"]) == len(ex["stanford_pos"]) == len(ex["stanford_ner"])
        assert set(ex["stanford_pos"]) <= set(POS_TAGS) and set(ex["stanford_ner"]) <= set(NER_TAGS)


def test_typed_markers_and_e1_e2_synonyms(nlp) -> None:
    typed, = annotate_marked(["<subj:PERSON>the chairman</subj> left <obj:CITY>the town</obj> ."], nlp=nlp)
    assert (typed["subj_type"], typed["obj_type"]) == ("PERSON", "CITY")
    plain, synonym = annotate_marked(
        ["<subj>Bill Gates</subj> founded <obj>Microsoft</obj> .", "<e1>Bill Gates</e1> founded <e2>Microsoft</e2> ."],
        nlp=nlp,
    )
    assert {k: v for k, v in plain.items() if k != "id"} == {k: v for k, v in synonym.items() if k != "id"}


def test_entity_boundaries_inside_words_and_extra_whitespace(nlp) -> None:
    ex, = annotate_marked(["<subj>Gates</subj>'s   company\t<obj>Micro</obj>soft grew ."], nlp=nlp)
    assert all(tok.strip() == tok and tok for tok in ex["token"])  # no whitespace tokens
    assert span_tokens(ex, "subj") == ["Gates"] and span_tokens(ex, "obj") == ["Micro"]
    assert ex["token"][ex["obj_end"] + 1] == "soft"


def test_offsets_records_from_json_lines_and_dicts(nlp) -> None:
    text = "Bill Gates founded Microsoft ."
    records = [
        json.dumps({"text": text, "subj": [0, 10], "obj": [19, 28]}),
        "",
        {"text": text, "subj": [19, 28], "obj": [0, 10], "id": 7, "subj_type": "ORGANIZATION",
         "obj_type": "PERSON", "relation": "org:founded_by"},
    ]
    first, second = annotate_offsets(records, nlp=nlp)
    assert first["id"] == "line-1" and first["relation"] == NO_RELATION
    assert span_tokens(first, "subj") == ["Bill", "Gates"] and span_tokens(first, "obj") == ["Microsoft"]
    assert second["id"] == "7" and second["relation"] == "org:founded_by"
    assert (second["subj_start"], second["obj_start"]) == (3, 0)
    assert (second["subj_type"], second["obj_type"]) == ("ORGANIZATION", "PERSON")


@pytest.mark.parametrize(("line", "problem"), [
    ("<subj>Bill</subj> founded Microsoft .", "no object marker"),
    ("Bill founded <obj>Microsoft</obj> .", "no subject marker"),
    ("<subj>Bill <obj>Gates</obj></subj> founded it .", "nested"),
    ("<subj>Bill</subj> and <e1>Gates</e1> founded <obj>it</obj>", "more than once"),
    ("<subj>Bill founded <obj>it</obj>", "nested"),
    ("<subj>Bill</subj> founded <obj>it", "never closed"),
    ("Bill</subj> founded <obj>it</obj>", "no opening"),
    ("<subj>Bill</e1> founded <obj>it</obj>", "closes <subj>"),
    ("<subj> </subj> founded <obj>it</obj>", "subject span is empty"),
    ("<subj:PER SON>Bill</subj> founded <obj>it</obj>", "invalid type"),
])
def test_marker_errors_name_the_line(nlp, line: str, problem: str) -> None:
    with pytest.raises(AnnotationError) as info:
        annotate_marked(["<subj>ok</subj> line <obj>one</obj>", "", line], nlp=nlp, source="in.txt")
    assert info.value.line == 3
    assert str(info.value).startswith("in.txt, line 3: ") and problem in str(info.value)


@pytest.mark.parametrize(("record", "problem"), [
    ('{"text": "Bill founded it", "subj": [0, 4], "obj": [13, 40]}', "does not fit"),
    ('{"text": "Bill founded it", "subj": [4, 4], "obj": [13, 15]}', "does not fit"),
    ('{"text": "Bill founded it", "subj": [0, 7], "obj": [5, 12]}', "overlap"),
    ('{"text": "Bill founded it", "subj": [0, 4]}', "'obj' must be [start, end]"),
    ('{"text": "Bill founded it", "subj": [0, true], "obj": [13, 15]}', "two integers"),
    ('{"text": "Bill  founded it", "subj": [4, 6], "obj": [14, 16]}', "only whitespace"),
    ('{"text": "Bill founded it", "subj": [0, 4], "obj": [13, 15], "subject": 1}', "unknown field"),
    ('{"text": "Bill founded it", "subj": [0, 4], ', "invalid JSON"),
    ('["Bill founded it", [0, 4], [13, 15]]', "expected a JSON object"),
])
def test_offset_errors_name_the_line(nlp, record: str, problem: str) -> None:
    good = '{"text": "Bill founded it", "subj": [0, 4], "obj": [13, 15]}'
    with pytest.raises(AnnotationError) as info:
        annotate_offsets([good, record], nlp=nlp, source="in.jsonl")
    assert info.value.line == 2 and "in.jsonl, line 2: " in str(info.value) and problem in str(info.value)


def test_parse_markers_without_spacy_reports_problem() -> None:
    with pytest.raises(MarkerError, match="no object marker"):
        parse_markers("<e1>only one</e1> entity")


def test_tag_maps_cover_the_whole_model_and_documented_cases(nlp) -> None:
    assert [map_pos(t) for t in ("HYPH", "NFP", "XX", "ADD", "AFX", "_SP", "-LRB-", "NNP")] == \
        [":", ":", "FW", "NN", "JJ", ":", "-LRB-", "NNP"]
    assert [map_ner(t) for t in ("ORG", "GPE", "NORP", "CARDINAL", "WORK_OF_ART", "")] == \
        ["ORGANIZATION", "LOCATION", "NATIONALITY", "NUMBER", "MISC", "O"]
    assert {map_pos(t) for t in nlp.get_pipe("tagger").labels} <= set(POS_TAGS)
    assert {map_ner(t) for t in nlp.get_pipe("ner").labels} <= set(NER_TAGS)


def test_pretokenised_words_keep_their_tokens(nlp) -> None:
    ann, = annotate_words([["New York", "is", "big", "."]], nlp=nlp)
    assert ann.tokens == ["New York", "is", "big", "."] and len(ann.pos) == len(ann.ner) == 4
    with pytest.raises(ValueError, match="token 1"):
        annotate_words([["a", " ", "b"]], nlp=nlp)
    with pytest.raises(ValueError, match="contains no token"):
        tokenize_with_spans(nlp, "a   b", [(1, 3)])


def test_missing_model_error_names_model_and_install_command() -> None:
    with pytest.raises(SpacyModelError, match=r"no_such_model_xyz.*spacy download no_such_model_xyz"):
        load_spacy("no_such_model_xyz")


@dataclass(frozen=True)
class _Finish:
    """A finishing step for load_spacy that records each call (hashable: part of the cache key)."""

    tag: str
    calls: list[str] = field(default_factory=list, compare=False, hash=False)

    def __call__(self, loaded):
        self.calls.append(self.tag)
        return loaded


def test_one_loader_caches_each_pipeline_by_name_components_and_finishing_step(nlp) -> None:
    """The raw-text pipeline of extraction and the full one of convert and predict come from one loader and cache."""
    finish = _Finish("trimmed")
    trimmed = load_spacy(None, ["lemmatizer", "parser"], finish)
    assert load_spacy(None, ("lemmatizer", "parser"), _Finish("trimmed", finish.calls)) is trimmed
    assert finish.calls == ["trimmed"]  # loaded and finished once
    assert "parser" not in trimmed.pipe_names and "parser" in nlp.pipe_names
    assert load_spacy() is nlp and load_spacy(None, ["lemmatizer", "parser"]) is not trimmed
    with pytest.raises(SpacyModelError, match=r"no_such_model_xyz.*spacy download no_such_model_xyz"):
        load_spacy("no_such_model_xyz", ["parser"], finish)


def test_command_writes_file_and_reports_errors(nlp, tmp_path: Path, capsys) -> None:
    src = tmp_path / "in.txt"
    src.write_text("<subj>Bill Gates</subj> founded <obj>Microsoft</obj> .\n", encoding="utf-8")
    out = tmp_path / "out.json"
    assert main([str(src), "--output", str(out)]) == 0
    examples = json.loads(out.read_text(encoding="utf-8"))
    assert len(examples) == 1 and examples[0]["subj_type"] == "PERSON"
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"text": "Bill founded it", "subj": [0, 4], "obj": [13, 15]}\n', encoding="utf-8")
    assert main([str(jsonl), "--format", "offsets"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["token"] == ["Bill", "founded", "it"]
    src.write_text("<subj>ok</subj> <obj>x</obj>\n<subj>Bill</subj> founded it\n", encoding="utf-8")
    assert main([str(src)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "no object marker" in err and "Traceback" not in err
    assert main([str(tmp_path / "missing.txt")]) == 2


@pytest.mark.slow  # a subprocess
def test_command_reads_stdin_as_a_subprocess(nlp) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tacred", "annotate", "-"], input="<e1>Bill</e1> founded <e2>Microsoft</e2> .\n",
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["token"] == ["Bill", "founded", "Microsoft", "."]

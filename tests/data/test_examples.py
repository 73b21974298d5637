"""Reading and validating TACRED JSON: the real sample, corrupted copies, lenient mode, features."""

from __future__ import annotations

import json
import logging

import pytest

from tacred.data.examples import DataFormatError, load_examples, log_bin, masked_tokens, relative_positions
from tests.conftest import make_example


def test_every_example_of_the_public_sample_loads_with_every_field(tacred_sample):
    for split in ("train", "dev", "test"):
        raw = json.loads((tacred_sample / f"{split}.json").read_text())
        examples = load_examples(tacred_sample / f"{split}.json").examples
        assert len(examples) == len(raw) == 20
        for ex, r in zip(examples, raw, strict=True):
            assert ex.id == r["id"] and ex.relation == r["relation"]
            assert list(ex.tokens) == r["token"] and list(ex.pos) == r["stanford_pos"] and list(ex.ner) == r["stanford_ner"]
            assert (ex.subj_start, ex.subj_end, ex.obj_start, ex.obj_end) == (
                r["subj_start"], r["subj_end"], r["obj_start"], r["obj_end"])
            assert (ex.subj_type, ex.obj_type) == (r["subj_type"], r["obj_type"])


def test_json_lines_load_like_a_json_list(tmp_path):
    rows = [make_example(i) for i in range(3)]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "b.json").write_text(json.dumps(rows))
    assert load_examples(tmp_path / "a.jsonl").examples == load_examples(tmp_path / "b.json").examples


CORRUPTIONS = [
    (lambda r: r.pop("stanford_ner"), "missing field(s) stanford_ner"),
    (lambda r: r.update(stanford_pos=r["stanford_pos"][:-1]), "'stanford_pos' has 5 tags but 'token' has 6"),
    (lambda r: r.update(subj_end=9), "subj_start=0, subj_end=9 does not satisfy 0 <= start <= end < 6"),
    (lambda r: r.update(obj_start=4, obj_end=3), "obj_start=4, obj_end=3"),
    (lambda r: r.update(subj_start=-1), "subj_start=-1"),
    (lambda r: r.update(token=["a", "", "c", "d", "e", "f"]), "empty or non-string token at position 1"),
    (lambda r: r.update(token=[]), "field 'token' is empty"),
    (lambda r: r.update(relation=3), "field 'relation' must be a non-empty string"),
    (lambda r: r.update(subj_start="first"), "field 'subj_start' must be an integer"),
]


@pytest.mark.parametrize(("corrupt", "message"), CORRUPTIONS)
def test_a_corrupted_example_names_file_index_id_and_problem(write_json, corrupt, message):
    rows = [make_example(i) for i in range(4)]
    corrupt(rows[2])
    path = write_json("bad.json", rows)
    with pytest.raises(DataFormatError) as err:
        load_examples(path)
    text = str(err.value)
    assert str(path) in text and "example 2 (id 'ex2')" in text and message in text


@pytest.mark.parametrize("layout", [{"indent": 2}, {}])
def test_a_json_object_instead_of_a_list_says_the_file_must_hold_a_list(write_json, layout, tmp_path):
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"data": [make_example(0)], "version": 1}, **layout))
    with pytest.raises(DataFormatError) as err:
        load_examples(path)
    assert str(err.value) == (f"{path}: holds a JSON object (keys 'data', 'version'), not a list of examples: the file "
                              "must hold a JSON list of TACRED examples, or JSON Lines with one example per line")
    one_line = write_json("one.jsonl", make_example(0))  # JSON Lines with one example still load
    assert [ex.id for ex in load_examples(one_line).examples] == ["ex0"]


def test_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[\n{"id": "a",\n "token": [}\n]')
    with pytest.raises(DataFormatError, match=r"broken.json: invalid JSON at line 3"):
        load_examples(path)


def test_lenient_mode_skips_and_reports_each_invalid_example(write_json, caplog):
    rows = [make_example(i) for i in range(5)]
    rows[1]["subj_end"] = 99
    rows[3].pop("token")
    path = write_json("mixed.json", rows)
    with caplog.at_level(logging.WARNING, logger="tacred"):
        result = load_examples(path, strict=False)
    assert [ex.id for ex in result.examples] == ["ex0", "ex2", "ex4"]
    assert [(i, ident) for i, ident, _ in result.skipped] == [(1, "ex1"), (3, "ex3")]
    assert "skipped 2 invalid example(s) of 5" in caplog.text
    assert "example 1 (id 'ex1')" in caplog.text and "example 3 (id 'ex3')" in caplog.text


@pytest.mark.parametrize("strict", [True, False])
def test_the_check_before_the_heavy_imports_gives_the_examples_the_data_module_loads(write_json, monkeypatch, strict):
    """check_examples (what the commands run before torch loads) and load_examples (the data module's) give the same
    examples and skip the same ones; inside reading_examples_once the file is read once, by the check, and its raw
    records are let go once they are validated."""
    import tacred.data.examples as E

    rows = [make_example(i) for i in range(6)]
    rows[4]["obj_end"] = 99
    path = write_json("train.json", rows if not strict else rows[:4])
    expected = load_examples(path, strict=strict)
    assert E.check_examples(path, strict=strict) == expected
    with E.reading_examples_once():
        reads = []
        real = E._read_json_plain
        monkeypatch.setattr(E, "_read_json_plain", lambda p: reads.append("_read_json_plain") or real(p))
        assert E.check_examples(path, strict=None) is None  # strictness not known yet: the file as JSON only
        assert E.check_examples(path, strict=strict) == expected
        assert not E._once.records  # validated: only the examples stay
        assert load_examples(path, strict=strict) is E.check_examples(path, strict=strict)
        assert reads == ["_read_json_plain"]
    assert E._once is None


def test_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.json"):
        load_examples(tmp_path / "nothere.json")


@pytest.mark.parametrize(("positions", "bins"), [
    (range(-3, 9), [-2, -2, -1, 0, 1, 2, 2, 3, 3, 3, 3, 4]),
    (range(-10, 11), [-4, -4, -4, -3, -3, -3, -3, -2, -2, -1, 0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4]),
    (range(0, 21), [0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5]),
])
def test_log_bins_match_the_original_code(positions, bins):
    assert [log_bin(p) for p in positions] == bins


def test_relative_positions_are_zero_inside_the_span():
    assert relative_positions(2, 4, 8) == [-2, -1, 0, 0, 0, 1, 2, 3]


def test_entity_masking_replaces_both_spans(write_json):
    row = make_example(0, length=5)
    row.update(subj_start=0, subj_end=1, obj_start=3, obj_end=4)
    ex = load_examples(write_json("one.json", [row])).examples[0]
    assert masked_tokens(ex) == ["SUBJ-PERSON", "SUBJ-PERSON", ex.tokens[2], "OBJ-ORGANIZATION", "OBJ-ORGANIZATION"]

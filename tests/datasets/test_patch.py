"""TACREV / Re-TACRED patching: loading both published layouts, relabelling, counts, errors, the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tacred.commands.patch import HELP, main
from tacred.constants import NO_RELATION, TACRED_LABELS
from tacred.datasets.patch import (
    RETACRED_ADDED,
    RETACRED_DROPPED,
    RETACRED_LABELS,
    RETACRED_RENAMED,
    TACREV_LABELS,
    PatchError,
    apply_patch,
    label_set,
    load_patch,
    read_patch,
    read_split,
    write_split,
)
from tests.conftest import SHARED_DATA

SAMPLE = SHARED_DATA / "tacred_sample"


def example(eid: str, relation: str = NO_RELATION) -> dict[str, Any]:
    tokens = ["Ann", "Lee", "works", "for", "Acme", "."]
    return {
        "id": eid, "relation": relation, "token": tokens,
        "subj_start": 0, "subj_end": 1, "obj_start": 4, "obj_end": 4,
        "subj_type": "PERSON", "obj_type": "ORGANIZATION",
        "stanford_pos": ["NNP", "NNP", "VBZ", "IN", "NNP", "."],
        "stanford_ner": ["PERSON", "PERSON", "O", "O", "ORGANIZATION", "O"],
    }


@pytest.fixture
def data() -> list[dict[str, Any]]:
    return [
        example("a1", "per:employee_of"),
        example("a2"),
        example("a3", "org:city_of_headquarters"),
        example("a4", "per:title"),
        example("a5"),
    ]


def write(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


# ---- label sets ---------------------------------------------------------------------------------------


def test_label_sets_have_the_published_sizes_and_renames() -> None:
    assert len(TACREV_LABELS) == 42 and set(TACREV_LABELS) == set(TACRED_LABELS)
    assert len(RETACRED_LABELS) == len(set(RETACRED_LABELS)) == 40
    assert label_set("tacrev")[0] == label_set("retacred")[0] == NO_RELATION
    # Re-TACRED = TACRED - renamed/dropped + the new names.
    expected = (set(TACRED_LABELS) - set(RETACRED_RENAMED) - set(RETACRED_DROPPED)) | set(
        RETACRED_RENAMED.values()
    ) | set(RETACRED_ADDED)
    assert set(RETACRED_LABELS) == expected
    with pytest.raises(ValueError, match="mode"):
        label_set("semeval")  # type: ignore[arg-type]


# ---- loading patch files ------------------------------------------------------------------------------


def test_load_patch_reads_both_published_layouts(tmp_path: Path) -> None:
    tacrev = write(tmp_path / "dev_patch.json", [{"id": "a1", "relation": NO_RELATION}, {"id": "a4", "relation": "per:title"}])
    retacred = write(tmp_path / "dev_id2label.json", {"a1": "per:identity", "a2": NO_RELATION})
    assert load_patch(tacrev) == {"a1": NO_RELATION, "a4": "per:title"}
    assert read_patch(tacrev).layout == "tacrev"
    assert load_patch(retacred) == {"a1": "per:identity", "a2": NO_RELATION}
    assert read_patch(retacred).layout == "retacred"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('[{"id": "a1", "relation": "per:title"},', r"not a valid JSON patch: .*line 1"),
        ('"a1"', "expected a list of .* got a JSON str"),
        ('[{"id": "a1"}]', r'entry 0 must be an object with exactly "id" and "relation", got \[\'id\'\]'),
        ('[{"id": "a1", "relation": "per:title", "note": "x"}]', "entry 0 must be an object"),
        ('[{"id": "", "relation": "per:title"}]', "entry 0 has id ''"),
        ('[{"id": "a1", "relation": 3}]', r"entry 0 \(id 'a1'\) has relation 3"),
        ('[{"id": "a1", "relation": "x"}, {"id": "a1", "relation": "y"}]', "id 'a1' appears in entries 0 and 1"),
        ('{"a1": "per:title", "a1": "no_relation"}', "key 'a1' appears twice"),
        ('{"a1": null}', "id 'a1' maps to None"),
        ("[]", "no entries"),
    ],
)
def test_malformed_patch_file_errors_name_file_and_entry(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "broken_patch.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PatchError, match=expected) as info:
        load_patch(path)
    assert str(path) in str(info.value)


# ---- applying ------------------------------------------------------------------------------------------


def test_tacrev_relabels_patched_ids_and_keeps_the_rest(data: list[dict[str, Any]]) -> None:
    before = json.dumps(data)
    patch = {"a1": NO_RELATION, "a2": "per:title", "a4": "per:title"}
    result = apply_patch(data, patch, source="dev_patch.json", mode="tacrev")
    assert [ex["relation"] for ex in result.examples] == [
        NO_RELATION, "per:title", "org:city_of_headquarters", "per:title", NO_RELATION,
    ]
    assert [ex["id"] for ex in result.examples] == ["a1", "a2", "a3", "a4", "a5"]
    assert (result.patched, result.changed, result.unchanged, result.removed) == (3, 2, 3, 0)
    assert result.changes == {("per:employee_of", NO_RELATION): 1, (NO_RELATION, "per:title"): 1}
    # Every other field survives and the input is not modified.
    assert {k: v for k, v in result.examples[0].items() if k != "relation"} == {
        k: v for k, v in data[0].items() if k != "relation"
    }
    assert json.dumps(data) == before


def test_retacred_relabels_and_removes_examples_missing_from_the_patch(data: list[dict[str, Any]]) -> None:
    patch = {"a1": "per:employee_of", "a3": "org:city_of_branch", "a4": "per:identity"}
    result = apply_patch(data, patch, source="dev_id2label.json", mode="retacred")
    assert [(ex["id"], ex["relation"]) for ex in result.examples] == [
        ("a1", "per:employee_of"), ("a3", "org:city_of_branch"), ("a4", "per:identity"),
    ]
    assert result.removed_ids == ["a2", "a5"]
    assert (result.patched, result.changed, result.unchanged, result.removed) == (3, 2, 1, 2)
    assert result.changed + result.unchanged + result.removed == len(data)


def test_patch_id_missing_from_data_is_an_error_with_count_and_ids(data: list[dict[str, Any]]) -> None:
    patch = {"a1": NO_RELATION} | {f"zz{i}": NO_RELATION for i in range(8)}
    with pytest.raises(PatchError) as info:
        apply_patch(data, patch, source="test_patch.json", mode="tacrev", data_source="dev.json")
    message = str(info.value)
    assert message.startswith("test_patch.json: 8 of 9 patch ids are not in dev.json")
    assert "'zz0'" in message and "'zz4'" in message and "'zz5'" not in message and "3 more" in message


def test_duplicate_ids_in_data_are_an_error(data: list[dict[str, Any]]) -> None:
    data.append(example("a2", "per:title"))
    with pytest.raises(PatchError, match=r"dev.json: id 'a2' appears at examples 1 and 5"):
        apply_patch(data, {"a1": NO_RELATION}, source="p.json", mode="tacrev", data_source="dev.json")


@pytest.mark.parametrize(
    ("mode", "relation", "hint"),
    [
        ("tacrev", "per:identity", "a Re-TACRED label"),
        ("retacred", "org:city_of_headquarters", "Re-TACRED uses 'org:city_of_branch' instead"),
        ("retacred", "per:alternate_names", "a TACRED label that Re-TACRED dropped"),
        ("tacrev", "per:favourite_colour", ""),
    ],
)
def test_relation_outside_the_target_label_set_is_an_error(
    data: list[dict[str, Any]], mode: str, relation: str, hint: str
) -> None:
    with pytest.raises(PatchError) as info:
        apply_patch(data, {"a1": NO_RELATION, "a2": relation}, source="p.json", mode=mode)  # type: ignore[arg-type]
    message = str(info.value)
    assert message.startswith("p.json: 1 entries have a relation outside the")
    assert f"'a2' -> '{relation}'" in message and hint in message


def test_tacrev_rejects_kept_examples_with_non_tacred_labels(data: list[dict[str, Any]]) -> None:
    data[4]["relation"] = "per:identity"
    with pytest.raises(PatchError, match="data.json: example id 'a5' has relation 'per:identity'"):
        apply_patch(data, {"a1": NO_RELATION}, source="p.json", mode="tacrev", data_source="data.json")


def test_unknown_mode_is_rejected(data: list[dict[str, Any]]) -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        apply_patch(data, {"a1": NO_RELATION}, source="p.json", mode="revisited")  # type: ignore[arg-type]


def test_split_round_trip_and_malformed_split(tmp_path: Path, data: list[dict[str, Any]]) -> None:
    write_split(tmp_path / "sub" / "out.json", data)
    assert (tmp_path / "sub" / "out.json").read_text(encoding="utf-8") == json.dumps(data)
    assert read_split(tmp_path / "sub" / "out.json") == data
    bad = write(tmp_path / "bad.json", {"id": "a1"})
    with pytest.raises(PatchError, match="bad.json: expected a JSON list of examples"):
        read_split(bad)


# ---- the command -------------------------------------------------------------------------------------


def test_command_end_to_end(tmp_path: Path, data: list[dict[str, Any]], capsys: pytest.CaptureFixture) -> None:
    data_path = write(tmp_path / "dev.json", data)
    patch = write(tmp_path / "dev_patch.json", [{"id": "a1", "relation": NO_RELATION}, {"id": "a5", "relation": NO_RELATION}])
    out = tmp_path / "dev_rev.json"
    assert main([str(data_path), str(patch), str(out)]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    assert [ex["relation"] for ex in written] == [NO_RELATION, NO_RELATION, "org:city_of_headquarters", "per:title", NO_RELATION]
    stdout = capsys.readouterr().out
    assert "tacrev patch" in stdout and "mode from the patch layout" in stdout
    assert "changed             1" in stdout and "removed             0" in stdout
    assert "per:employee_of -> no_relation  1" in stdout


def test_command_infers_retacred_from_the_layout(tmp_path: Path, data: list[dict[str, Any]], capsys: pytest.CaptureFixture) -> None:
    data_path = write(tmp_path / "dev.json", data)
    patch = write(tmp_path / "dev_id2label.json", {"a3": "org:city_of_branch", "a4": "per:title"})
    out = tmp_path / "dev_re.json"
    assert main([str(data_path), str(patch), str(out)]) == 0
    assert [ex["id"] for ex in json.loads(out.read_text(encoding="utf-8"))] == ["a3", "a4"]
    stdout = capsys.readouterr().out
    assert stdout.startswith("retacred patch") and "removed             3" in stdout


def test_command_user_errors_return_2_with_one_line(tmp_path: Path, data: list[dict[str, Any]], capsys: pytest.CaptureFixture) -> None:
    data_path = write(tmp_path / "dev.json", data)
    patch = write(tmp_path / "p.json", {"a1": "per:identity"})
    # A Re-TACRED patch forced into TACREV mode: the layout contradicts --mode.
    assert main([str(data_path), str(patch), str(tmp_path / "o.json"), "--mode", "tacrev"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "p.json" in err and "--mode tacrev" in err and "Re-TACRED's layout" in err
    assert not (tmp_path / "o.json").exists()
    assert main([str(tmp_path / "nope.json"), str(patch), str(tmp_path / "o.json")]) == 2
    assert "nope.json" in capsys.readouterr().err
    assert main([str(data_path), str(patch), str(data_path)]) == 2
    assert "must differ" in capsys.readouterr().err
    assert json.loads(data_path.read_text(encoding="utf-8")) == data


@pytest.mark.slow  # `python -m tacred` in a subprocess
def test_command_via_python_m_tacred(tmp_path: Path, data: list[dict[str, Any]]) -> None:
    data_path = write(tmp_path / "dev.json", data)
    patch = write(tmp_path / "p.json", [{"id": "a2", "relation": "per:title"}])
    out = tmp_path / "o.json"
    run = subprocess.run(
        [sys.executable, "-m", "tacred", "patch", str(data_path), str(patch), str(out)],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(out.read_text(encoding="utf-8"))[1]["relation"] == "per:title"
    assert HELP.startswith("Apply a TACREV or Re-TACRED patch")


def test_real_sample_no_op_patch_reproduces_the_data(tmp_path: Path) -> None:
    dev = SAMPLE / "dev.json"
    if not dev.exists():
        pytest.skip(f"TACRED sample not found at {dev}")
    records = read_split(dev)
    patch = write(tmp_path / "p.json", [{"id": ex["id"], "relation": ex["relation"]} for ex in records[:5]])
    out = tmp_path / "dev_rev.json"
    assert main([str(dev), str(patch), str(out), "--mode", "tacrev"]) == 0
    # Confirming labels changes nothing: the output is the input written with json.dump's defaults.
    assert out.read_text(encoding="utf-8") == json.dumps(records)

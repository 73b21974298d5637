"""Tests of what every results table shares (``tacred compare``, ``tacred end-to-end``): a spec's shared keys read with
errors naming the file and the entry, the mean ± std and target cells, the Markdown table and README's copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tacred.experiments import tables as T

GOALS = {"micro_f1": T.Goal("micro ≥ {:.1f}", "micro_f1_mean"),
         "max_std": T.Goal("std ≤ {:.1f}", "micro_f1_std", at_most=True),
         "vote": T.Goal("vote ≥ {:.1f}", "vote_f1")}


def spec_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "message"), [
    (None, "spec {path}: file not found"),
    ("models: [\n", "spec {path}, line 2, column 1: expected the node content"),
    ("title: a\ntitle: b\n", "spec {path}, line 2, column 1: key 'title' appears twice"),
    ("- a list\n", "{path}: expected a mapping of title, measure, marker, models, published, results"),
    ("title: t\ncolour: red\n", "{path}: unknown keys ['colour']"),
])
def test_a_spec_that_cannot_be_read_is_an_error_naming_the_file(tmp_path: Path, text, message) -> None:
    path = tmp_path / "spec.yaml" if text is None else spec_file(tmp_path, text)
    with pytest.raises(T.TableError) as err:
        T.read_spec(path, ("results",))
    assert message.format(path=path) in str(err.value)


def rows(tmp_path: Path, models: str) -> list:
    path = spec_file(tmp_path, f"models: {models}\n")
    return T.read_rows(T.read_spec(path, ()), str(path), ("variant",), GOALS)


@pytest.mark.parametrize(("models", "message"), [
    ("5", ": 'models' must be a list of mappings, got 5"),
    ("[]", ": 'models' lists no model"),
    ("[x]", ", models[0]: expected a mapping"),
    ("[{key: a, name: A}]", ", models[0]: needs 'inputs'"),
    ("[{key: a, name: '', inputs: i}]", ", models[0]: 'name' must be a non-empty text, got ''"),
    ("[{key: a, name: A, inputs: i, colour: red}]", ", models[0]: unknown keys ['colour']"),
    ("[{key: a, name: A, inputs: i}, {key: a, name: B, inputs: i}]", ", models[1]: the key 'a' is used twice"),
    ("[{key: a, name: A, inputs: i, target: {f1: 1}}]", ", models[0]: 'target' takes micro_f1, max_std, vote, got"),
    ("[{key: a, name: A, inputs: i, target: {vote: true}}]", ", models[0]: 'target' vote must be a number"),
])
def test_rows_are_checked_entry_by_entry(tmp_path: Path, models: str, message: str) -> None:
    with pytest.raises(T.TableError) as err:
        rows(tmp_path, models)
    assert str(err.value).startswith(f"{tmp_path / 'spec.yaml'}{message}"), err.value


def test_a_row_gives_its_shared_fields_and_leaves_its_own_keys_to_the_table(tmp_path: Path) -> None:
    (at, entry, row), = rows(tmp_path, "[{key: a, name: A, inputs: i, variant: v, target: {micro_f1: 60}}]")
    assert at.endswith("spec.yaml, models[0]") and entry["variant"] == "v"
    assert row == {"key": "a", "name": "A", "inputs": "i", "target": {"micro_f1": 60.0}}


def test_published_systems_keep_their_figures_in_the_tables_order(tmp_path: Path) -> None:
    path = spec_file(tmp_path, "published:\n  - {source: S, relation_f1: 71, name: SpERT, inputs: BERT}\n")
    figures = {"ner_f1": T.optional_number, "relation_f1": T.number}
    paper, = T.read_published(T.read_spec(path, ()), str(path), figures)
    assert paper.record() == {"name": "SpERT", "inputs": "BERT", "ner_f1": None, "relation_f1": 71.0, "source": "S"}
    assert list(paper.record()) == ["name", "inputs", "ner_f1", "relation_f1", "source"]
    for entry, message in (("{name: N, inputs: I, relation_f1: 7}", "published[0]: needs 'source'"),
                           ("{name: N, inputs: I, relation_f1: high, source: S}",
                            "published[0]: 'relation_f1' must be a number, got 'high'"),
                           ("{name: N, inputs: I, relation_f1: 7, source: S, year: 2020}",
                            "published[0]: unknown keys ['year']")):
        path.write_text(f"published: [{entry}]\n", encoding="utf-8")
        with pytest.raises(T.TableError, match=message.replace("[", r"\[").replace("]", r"\]")):
            T.read_published(T.read_spec(path, ()), str(path), figures)


def test_spread_rounds_each_value_and_takes_mean_and_std_of_the_values_as_given() -> None:
    assert T.spread("f1", [48.004, 52.0]) == {"f1": [48.0, 52.0], "f1_mean": 50.0, "f1_std": 2.83}
    assert T.spread("f1", []) == {"f1": []}


def test_cells_show_mean_and_std_the_single_seed_alone_and_a_dash_without_seeds() -> None:
    assert T.mean_std_cell({"f1": [48.0, 52.0], "f1_mean": 50.0, "f1_std": 2.83}, "f1") == "50.00 ± 2.83"
    assert T.mean_std_cell({"f1": [48.0], "f1_mean": 48.0, "f1_std": 0.0}, "f1") == "48.00"
    assert T.mean_std_cell({"f1": []}, "f1") == "–"


def test_targets_are_met_missed_by_some_points_or_not_measured() -> None:
    row = {"seeds": [1, 2], "complete": True, "micro_f1_mean": 61.0, "micro_f1_std": 1.5}
    row["targets"] = T.verdicts({"micro_f1": 60.0, "max_std": 1.0, "vote": 62.0}, row, GOALS)
    assert row["targets"]["max_std"] == {"target": 1.0, "value": 1.5, "met": False, "missed_by": 0.5}
    assert row["targets"]["vote"] == {"target": 62.0, "value": None, "met": False, "missed_by": None}
    assert T.target_cell(row, GOALS, 2) == ("micro ≥ 60.0: met; std ≤ 1.0: missed by 0.50; "
                                            "vote ≥ 62.0: not measured")
    assert T.target_cell({"seeds": [1, 2], "complete": True}, GOALS, 2) == "–"  # a row without a target
    waiting = {"seeds": [1], "complete": False}
    assert T.target_cell(waiting, GOALS, 3) == "under way (1 of 3 seeds)"
    assert T.target_cell(waiting, GOALS, None) == "under way"


def test_the_markdown_table_aligns_its_columns_and_keeps_empty_cells_empty() -> None:
    assert T.markdown_table(["system", "F1"], "lr", [["A", "50.00"], ["B", ""]]) == [
        "| system | F1 |", "|---|---:|", "| A | 50.00 |", "| B | |"]
    assert T.markdown_page("Title", "What is measured.", "| a |\n") == "# Title\n\nWhat is measured.\n\n| a |\n"
    assert T.markdown_page("", "", "| a |\n") == "| a |\n"
    assert T.table_of(T.markdown_page("Title", "What is measured.", "| a |\n\nnote\n")) == "| a |\n\nnote\n"


def test_readme_gets_the_block_between_its_markers_and_a_readme_without_them_is_refused(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    start, end = T.readme_markers("kbp37")
    readme.write_text(f"intro\n{T.README_START}\nplain\n{T.README_END}\n{start}\nold\n{end}\nafter\n", encoding="utf-8")
    T.update_readme(readme, "| new |\n", "kbp37")
    assert readme.read_text(encoding="utf-8") == (f"intro\n{T.README_START}\nplain\n{T.README_END}\n{start}\n| new |\n"
                                                  f"{end}\nafter\n")
    with pytest.raises(T.TableError, match="needs one '<!-- tacred compare other: start -->' line before one"):
        T.readme_parts(readme, "other")

"""Tests of ``tacred compare``: the results table beside published figures is computed from stored runs (means,
ensembles, the dev-chosen best, targets), a wrong spec is one line naming the file and entry, and README's table is
what the committed runs give."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tacred.cli import main
from tacred.experiments import comparison as C
from tacred.experiments import tables as T
from tests.conftest import REPO

LABELS = ["Other", "Cause-Effect(e1,e2)", "Cause-Effect(e2,e1)", "Member-Collection(e1,e2)"]
GOLD = [1, 2, 3, 0, 1, 3, 0, 2]


def store(results: Path, variant: str, seed: int, pred: list[int], dev_f1: float, f1: float, macro: float,
          dev_curve: list[float] | None = None) -> None:
    """One stored run as `tacred ablate` leaves it: result.json and test_probabilities.npz."""
    folder = results / variant / f"seed_{seed}"
    folder.mkdir(parents=True)
    record = {"variant": variant, "seed": seed, "precision": f1, "recall": f1, "f1": f1, "dev_f1": dev_f1,
              "parameters": 10, "epochs": 40, "seconds": 1.0, "semeval_macro_f1": macro, "recipe": [f"{variant}.yaml"],
              "commit": "abc", "test": {"labels": LABELS, "no_relation": "Other", "gold": GOLD, "pred": pred}}
    if dev_curve is not None:
        record["dev_curve"] = dev_curve
    (folder / "result.json").write_text(json.dumps(record))
    probs = np.full((len(GOLD), len(LABELS)), 0.1)
    probs[np.arange(len(GOLD)), pred] = 0.7
    np.savez_compressed(folder / "test_probabilities.npz", probs=probs.astype(np.float16),
                        ids=np.asarray([str(i) for i in range(len(GOLD))]))


SPEC = """\
title: a small comparison
results: runs
seeds: 2
models:
  - {key: paper, name: the paper's network, inputs: glove, variant: paper, target: {macro_f1: 60.0, max_std: 1.0}}
  - {key: best, name: best, inputs: glove, candidates: {paper: the paper's network, lstm: an LSTM}, target: {macro_f1: 90.0}}
  - {key: big, name: a transformer, inputs: MiniLM, variant: big}
published:
  - {name: C-GCN, inputs: GloVe 840B.300d, macro_f1: 84.8, source: "Zhang et al. (2018)"}
"""


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    # paper: dev 0.80 mean; lstm: better on test but worse on dev, so `best` must be paper
    store(runs, "paper", 1, [1, 2, 3, 0, 1, 3, 0, 2], dev_f1=0.81, f1=0.70, macro=0.64)
    store(runs, "paper", 2, [1, 2, 3, 0, 1, 1, 0, 2], dev_f1=0.79, f1=0.60, macro=0.58)
    store(runs, "lstm", 1, [1, 2, 3, 0, 1, 3, 0, 2], dev_f1=0.70, f1=0.90, macro=0.90)
    store(runs, "lstm", 2, [1, 2, 3, 0, 1, 3, 0, 2], dev_f1=0.72, f1=0.90, macro=0.90)
    store(runs, "big", 1, [1, 2, 3, 0, 1, 3, 0, 2], dev_f1=0.90, f1=0.95, macro=0.95)
    path = tmp_path / "comparison.yaml"
    path.write_text(SPEC)
    return path


def test_rows_are_means_over_seeds_with_both_ensembles_and_best_is_chosen_on_dev(spec: Path) -> None:
    summary = C.measure(C.load_spec(spec))
    paper = summary["paper"]
    assert paper["test_f1"] == [70.0, 60.0] and paper["macro_f1"] == [64.0, 58.0]
    assert (paper["macro_f1_mean"], paper["macro_f1_std"]) == (61.0, 4.24)
    assert paper["complete"] and paper["epochs"] == [40] and paper["recipe"] == ["paper.yaml"]
    # the two seeds disagree on one sentence; the ensembles are scored like single runs
    assert paper["ensemble_vote_f1"] is not None and paper["ensemble_avg_macro_f1"] is not None
    assert summary["best"]["variant"] == "paper"  # lstm scores higher on test, lower on dev
    assert "| best: the paper's network | glove | 61.00 ± 4.24 |" in C.render_markdown(C.load_spec(spec), summary)
    assert summary["best"]["candidates_dev_f1_mean"] == {"paper": 80.0, "lstm": 71.0}
    assert summary["published"] == [{"name": "C-GCN", "inputs": "GloVe 840B.300d", "macro_f1": 84.8,
                                     "source": "Zhang et al. (2018)"}]


def test_targets_say_met_or_by_how_much_they_are_missed(spec: Path) -> None:
    summary = C.measure(C.load_spec(spec))
    assert summary["paper"]["targets"] == {
        "macro_f1": {"target": 60.0, "value": 61.0, "met": True, "missed_by": 0.0},
        "max_std": {"target": 1.0, "value": 4.24, "met": False, "missed_by": 3.24}}
    assert summary["best"]["targets"]["macro_f1"]["missed_by"] == 29.0


def test_a_row_short_of_its_seeds_is_marked_under_way_and_has_no_verdict(spec: Path) -> None:
    spec_text = spec.read_text().replace("variant: big}", "variant: big, target: {macro_f1: 1.0}}")
    spec.write_text(spec_text)
    summary = C.measure(C.load_spec(spec))
    assert not summary["big"]["complete"] and summary["big"]["targets"] is None
    table = C.render_markdown(C.load_spec(spec), summary)
    assert "| a transformer | MiniLM | (95.00) | (95.00) | – | under way (1 of 2 seeds) |" in table
    assert "≥ 60.0: met; std ≤ 1.0: missed by 3.24" in table
    assert "| C-GCN [1] | GloVe 840B.300d | 84.8 |" in table and "[1] Zhang et al. (2018)" in table


def test_a_candidate_may_be_stored_in_another_folder_beside_the_spec(spec: Path) -> None:
    """A longer schedule swept into its own folder competes on dev with the recipe in the results folder."""
    longer = spec.parent / "longer"
    store(longer, "epochs_10", 1, [1, 2, 3, 0, 1, 3, 0, 2], dev_f1=0.85, f1=0.80, macro=0.75)
    store(longer, "epochs_10", 2, [1, 2, 3, 0, 1, 3, 0, 2], dev_f1=0.83, f1=0.80, macro=0.77)
    spec.write_text(spec.read_text().replace("lstm: an LSTM}", "longer/epochs_10: ten epochs}"))
    summary = C.measure(C.load_spec(spec))
    assert summary["best"]["variant"] == "longer/epochs_10" and summary["best"]["macro_f1"] == [75.0, 77.0]
    assert summary["best"]["candidates_dev_f1_mean"] == {"paper": 80.0, "longer/epochs_10": 84.0}
    assert "| best: ten epochs | glove | 76.00 ± 1.41 |" in C.render_markdown(C.load_spec(spec), summary)


def test_best_waits_for_every_candidate(spec: Path) -> None:
    for path in (spec.parent / "runs" / "lstm" / "seed_2").iterdir():
        path.unlink()
    (spec.parent / "runs" / "lstm" / "seed_2").rmdir()
    best = C.measure(C.load_spec(spec))["best"]
    assert not best["complete"] and best["chosen_by"] == "not yet: waiting for lstm"


def test_the_command_writes_summary_and_table_and_rewrites_them_identically(spec: Path, capsys) -> None:
    out = spec.parent / "out"
    out.mkdir()
    assert main(["compare", str(spec), "--out", str(out)]) == 0
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(first) == {"summary.json", "comparison.md"}
    assert "# a small comparison" in capsys.readouterr().out
    assert main(["compare", str(spec), "--out", str(out)]) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first


@pytest.mark.parametrize("change, message", [
    ("variant: big}", "variant: big, candidates: {a: A, b: B}}"),
    ("seeds: 2", "seeds: 0"),
    ("macro_f1: 84.8", "macro_f1: high"),
    ("target: {macro_f1: 90.0}", "target: {f1: 90.0}"),
    ('source: "Zhang et al. (2018)"', 'source: "Zhang et al. (2018)", year: 2018'),
])
def test_a_wrong_spec_is_one_line_naming_the_file_and_entry(spec: Path, capsys, change, message) -> None:
    spec.write_text(spec.read_text().replace(change, message))
    assert main(["compare", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tacred compare: error: ") and str(spec) in err and len(err.splitlines()) == 1
    expected = {"variant: big}": "models[2]: give exactly one of 'variant' and 'candidates'",
                "seeds: 2": "'seeds' must be a positive integer",
                "macro_f1: 84.8": "published[0]: 'macro_f1' must be a number, got 'high'",
                "target: {macro_f1: 90.0}": "models[1]: 'target' takes macro_f1, max_std, vote_macro_f1",
                'source: "Zhang et al. (2018)"': "published[0]: unknown keys ['year']"}[change]
    assert expected in err


def test_models_that_are_not_a_list_are_one_line_too(spec: Path, capsys) -> None:
    spec.write_text(SPEC.split("models:")[0] + "models: 5\n")  # once a traceback (an int is not iterable)
    assert main(["compare", str(spec)]) == 2
    assert f"{spec}: 'models' must be a list of mappings, got 5" in capsys.readouterr().err


def test_a_vote_target_without_a_vote_is_not_measured(spec: Path) -> None:
    """One seed has no majority vote to hold a vote target against: the table says so (once a TypeError)."""
    spec.write_text(spec.read_text().replace("variant: big}", "variant: big, seeds: 1, target: {vote_macro_f1: 80.0}}"))
    summary = C.measure(C.load_spec(spec))
    assert summary["big"]["targets"] == {"vote_macro_f1": {"target": 80.0, "value": None, "met": False,
                                                           "missed_by": None}}
    assert "| a transformer | MiniLM | 95.00 | 95.00 | – | vote ≥ 80.0: not measured |" in C.render_markdown(
        C.load_spec(spec), summary)


def test_a_missing_results_folder_is_named(spec: Path, capsys) -> None:
    spec.write_text(spec.read_text().replace("results: runs", "results: nowhere"))
    assert main(["compare", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "results folder" in err and str(spec.parent / "nowhere") in err


def test_the_readme_gets_the_table_between_its_markers_and_nothing_else_moves(spec: Path, capsys) -> None:
    readme = spec.parent / "README.md"
    readme.write_text(f"# tool\n\nintro\n\n{T.README_START}\nold table\n{T.README_END}\n\nafter\n")
    out = spec.parent / "out"
    out.mkdir()
    for _ in range(2):  # a second run finds its own table and replaces it the same way
        assert main(["compare", str(spec), "--out", str(out), "--readme", str(readme)]) == 0
        text = readme.read_text()
        assert text.startswith(f"# tool\n\nintro\n\n{T.README_START}\n| model |")
        assert text.endswith(f"{T.README_END}\n\nafter\n") and "old table" not in text
        assert T.table_of((out / "comparison.md").read_text()) in text
    readme.write_text("# no markers\n")
    elsewhere = spec.parent / "elsewhere"
    elsewhere.mkdir()
    assert main(["compare", str(spec), "--out", str(elsewhere), "--readme", str(readme)]) == 2
    assert f"{readme}: needs one '{T.README_START}' line" in capsys.readouterr().err
    assert readme.read_text() == "# no markers\n" and not any(elsewhere.iterdir())


# -- the committed comparison --------------------------------------------------------------------------------------
def test_a_complete_row_whose_dev_f1_had_not_settled_is_marked(spec: Path) -> None:
    # a short recipe still climbing on dev at its last epoch is measured at its budget, not at its plateau
    runs = spec.parent / "runs"
    for seed in (1, 2):
        shutil.rmtree(runs / "paper" / f"seed_{seed}")
        store(runs, "paper", seed, GOLD, dev_f1=0.8, f1=0.8, macro=0.8, dev_curve=[0.52, 0.64, 0.66])
    summary = C.measure(C.load_spec(spec))
    assert summary["paper"]["settled"] is False and summary["big"]["settled"] is None  # big stores no dev curve
    table = C.render_markdown(C.load_spec(spec), summary)
    assert "| the paper's network † | glove |" in table and C.UNSETTLED in table
    for seed in (1, 2):
        shutil.rmtree(runs / "paper" / f"seed_{seed}")
        store(runs, "paper", seed, GOLD, dev_f1=0.8, f1=0.8, macro=0.8, dev_curve=[0.795, 0.80, 0.798])
    summary = C.measure(C.load_spec(spec))
    assert summary["paper"]["settled"] is True
    assert "†" not in C.render_markdown(C.load_spec(spec), summary)


COMMITTED = [REPO / "docs" / "results" / "semeval_glove", REPO / "docs" / "results" / "kbp37"]


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda f: f.name)
def test_the_committed_summary_and_table_are_what_the_committed_runs_give(folder: Path, tmp_path: Path) -> None:
    C.compare(folder / "comparison.yaml", tmp_path)
    for name in ("summary.json", "comparison.md"):
        assert (tmp_path / name).read_text() == (folder / name).read_text(), (
            f"{name} is stale: run `tacred compare {folder.relative_to(REPO)}/comparison.yaml --readme README.md`")


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda f: f.name)
def test_readmes_results_table_is_the_committed_comparison(folder: Path) -> None:
    table = T.table_of((folder / "comparison.md").read_text())
    assert table in (REPO / "README.md").read_text(), "README's results table differs from comparison.md"


def test_a_spec_for_another_data_set_names_its_measure_metric_readme_markers_and_a_rows_own_seeds(spec: Path) -> None:
    text = spec.read_text().replace("seeds: 2\n", "seeds: 2\nmeasure: KBP37 test set, all 3,405 sentences\n"
                                    "metric: macro-F1 (SemEval-style)\nmarker: kbp37\n")
    spec.write_text(text.replace("variant: big}", "variant: big, seeds: 1}"))
    readme = spec.parent / "README.md"
    start, end = T.readme_markers("kbp37")
    assert (start, end) == ("<!-- tacred compare kbp37: start -->", "<!-- tacred compare kbp37: end -->")
    readme.write_text(f"{T.README_START}\nSemEval's table\n{T.README_END}\n{start}\nold\n{end}\n")
    out = spec.parent / "out"
    out.mkdir()
    assert main(["compare", str(spec), "--out", str(out), "--readme", str(readme)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["measure"] == "KBP37 test set, all 3,405 sentences"
    assert summary["big"]["complete"] and summary["big"]["seeds"] == [1]  # one seed is this row's whole budget
    table = (out / "comparison.md").read_text()
    assert "| model | word representation | macro-F1 (SemEval-style) | micro F1 |" in table
    assert readme.read_text().startswith(f"{T.README_START}\nSemEval's table\n{T.README_END}\n{start}\n| model |")
    spec.write_text(text.replace("variant: big}", "variant: big, seeds: 0}"))
    with pytest.raises(T.TableError, match=r"models\[2\]: 'seeds' must be a positive integer, got 0"):
        C.load_spec(spec)

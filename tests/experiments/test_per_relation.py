"""Tests of the per-relation table `tacred ablate` writes beside its tables for a directed label set: each relation's
F1 counted as SemEval's scorer counts it, the mean over seeds, a macro row equal to the runs' stored macro-F1, and
the committed KBP37 table what its committed runs give."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tacred.experiments import per_relation as P
from tacred.experiments.results import load_stored
from tests.conftest import REPO, run_in_process
from tests.experiments.test_comparison import store

KBP37_RESULTS = REPO / "docs" / "results" / "kbp37" / "five_seeds"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    out = tmp_path / "runs"
    # gold: Cause-Effect at 0, 1, 4, 7 (both directions), Member-Collection at 2, 5
    store(out, "paper", 1, [1, 2, 3, 0, 1, 3, 0, 2], dev_f1=0.8, f1=1.0, macro=1.0)
    store(out, "paper", 2, [1, 2, 3, 0, 1, 1, 0, 2], dev_f1=0.8, f1=0.9, macro=0.7778)
    store(out, "flipped", 1, [2, 2, 3, 0, 1, 3, 0, 2], dev_f1=0.8, f1=0.9, macro=0.875)
    return out


def test_each_relation_is_scored_with_both_directions_pooled_and_a_wrong_direction_an_error(runs: Path) -> None:
    scores, support = P.per_relation(runs, ["paper", "flipped"])
    assert support == {"Cause-Effect": 4, "Member-Collection": 2}
    # seed 2 calls a Member-Collection sentence Cause-Effect: CE P 4/5 R 1, MC P 1 R 1/2
    assert scores["paper"]["Cause-Effect"] == pytest.approx([100.0, 100 * 8 / 9])
    assert scores["paper"]["Member-Collection"] == pytest.approx([100.0, 100 * 2 / 3])
    # Cause-Effect(e2,e1) for a gold Cause-Effect(e1,e2): right relation, wrong direction, so P = R = 3/4
    assert scores["flipped"]["Cause-Effect"] == pytest.approx([75.0])


def test_the_table_has_a_row_per_relation_and_the_macro_f1_as_its_last(runs: Path) -> None:
    text = P.render_markdown(*P.per_relation(runs, ["paper", "flipped"]))
    lines = text.splitlines()
    assert lines[0] == "| Relation | Test sentences | paper | flipped |"
    assert lines[2] == "| Cause-Effect | 4 | 94.4 ± 7.9 | 75.0 |"
    assert lines[4] == "| macro-F1 | 6 | 88.9 ± 15.7 | 87.5 |"
    rows = P.render_csv(*P.per_relation(runs, ["paper"])).splitlines()
    assert rows[0] == "variant,relation,test_sentences,seeds,f1,f1_std"
    assert rows[-1].startswith("paper,macro-F1,6,2,88.8889,")


def test_table_only_writes_it_for_directed_labels_and_not_for_tacreds(runs: Path, tmp_path: Path) -> None:
    run_in_process("ablate", "--out", str(runs), "--table_only", "--reference", "paper")
    assert (runs / "per_relation.md").read_text().startswith("| Relation | Test sentences | paper | flipped |")
    assert (runs / "per_relation.csv").is_file()
    tacred = tmp_path / "tacred"
    shutil.copytree(runs / "paper", tacred / "paper")
    for result in tacred.glob("paper/seed_*/result.json"):
        record = json.loads(result.read_text())
        record["test"]["labels"] = ["no_relation", "per:title", "org:founded", "per:origin"]
        record["test"]["no_relation"], record["semeval_macro_f1"] = "no_relation", None
        result.write_text(json.dumps(record))
    ran = run_in_process("ablate", "--out", str(tacred), "--table_only", "--reference", "paper")
    assert "per_relation" not in ran.stdout and not (tacred / "per_relation.md").exists()


def test_over_kbp37_the_macro_row_is_each_runs_stored_macro_f1(tmp_path: Path) -> None:
    """The committed KBP37 runs: 26 test sentences could not be converted and count as no-relation predictions,
    so the relations' mean equals the macro-F1 each run recorded over all 3,405 sentences."""
    for variant in ("paper", "transformer"):
        for run in load_stored(KBP37_RESULTS, variant):
            assert len(run.test.unconverted) == 26
            scores = P.relation_scores(run)
            stored = json.loads((KBP37_RESULTS / variant / f"seed_{run.seed}" / "result.json").read_text())
            assert len(scores) == 18
            assert np.mean([f1 for f1, _ in scores.values()]) == pytest.approx(100 * stored["semeval_macro_f1"])
            no_relation = np.sum(run.test.gold == run.test.no_relation_id) + run.test.unconverted.count("no_relation")
            assert sum(gold for _, gold in scores.values()) + no_relation == 3405


def test_the_committed_kbp37_per_relation_table_is_what_its_runs_give(tmp_path: Path) -> None:
    out = tmp_path / "five_seeds"
    shutil.copytree(KBP37_RESULTS, out, ignore=lambda _, names: [n for n in names if n in P.PER_RELATION_FILES])
    run_in_process("ablate", "--out", str(out), "--table_only", "--reference", "transformer")
    for name in P.PER_RELATION_FILES:
        assert (out / name).read_text() == (KBP37_RESULTS / name).read_text(), name

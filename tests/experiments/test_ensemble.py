"""Ensembles: vote and average on hand-made probabilities (ties!), then `tacred ensemble` end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tacred.commands.ensemble import main as ensemble_main
from tacred.evaluation.scoring import read_aligned, score
from tacred.experiments.ensemble import (
    align_labels,
    average_probabilities,
    average_vote,
    majority_vote,
    mean_std,
    votes,
)
from tests.conftest import REPO, run_in_process

SMALL = ["--model.network.word_dim", "24", "--model.network.ffn_dim", "16",
         "--model.network.attention_dim", "16", "--trainer.enable_progress_bar", "false",
         "--trainer.enable_model_summary", "false"]
TRAIN = ["--trainer.max_epochs", "8", "--data.batch_size", "10", "--model.lr", "0.3"]  # ~15 s, dev F1 around 0.2


def members(*rows: list[list[float]]) -> np.ndarray:
    return np.array(rows, dtype=float)  # (K, N, C)


def test_majority_beats_a_confident_minority_that_averaging_follows():
    # one member is sure of label 0, two lean to label 1: the vote says 1, the average says 0
    probs = members([[0.9, 0.05, 0.05]], [[0.45, 0.55, 0.0]], [[0.45, 0.55, 0.0]])
    assert majority_vote(probs).tolist() == [1]
    assert average_vote(probs).tolist() == [0]
    assert votes(probs).tolist() == [[1, 2, 0]]


def test_a_tied_vote_goes_to_the_tied_label_with_the_larger_summed_probability():
    # 2 vs 2 between labels 0 and 2; label 1 has the largest summed probability but no votes, so it cannot win
    probs = members([[0.40, 0.35, 0.25]], [[0.50, 0.30, 0.20]], [[0.30, 0.30, 0.40]], [[0.05, 0.40, 0.55]])
    assert votes(probs).tolist() == [[2, 0, 2]]
    assert majority_vote(probs).tolist() == [2]  # summed: label 0 = 1.25, label 2 = 1.40
    probs[3, 0, 2] = 0.41  # now label 0 sums to 1.25 and label 2 to 1.26: still 2
    assert majority_vote(probs).tolist() == [2]
    probs[3, 0] = [0.34, 0.25, 0.41]  # label 0 sums to 1.54 > 1.26: the tie flips to 0
    assert majority_vote(probs).tolist() == [0]


def test_a_three_way_tie_and_an_exact_tie_are_deterministic():
    probs = members([[0.5, 0.3, 0.2]], [[0.1, 0.5, 0.4]], [[0.25, 0.25, 0.5]])  # one vote each
    assert majority_vote(probs).tolist() == [2]  # summed 0.85 / 1.05 / 1.10
    exact = members([[1.0, 0.0]], [[0.0, 1.0]])  # 1 vote each and equal sums: the smallest label id
    assert majority_vote(exact).tolist() == [0]


def test_each_example_is_combined_independently():
    probs = members([[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.7, 0.3]], [[0.3, 0.7], [0.1, 0.9]])
    assert majority_vote(probs).tolist() == [0, 1]
    assert np.allclose(average_probabilities(probs), [[0.6, 0.4], [1.0 / 3, 2.0 / 3]])


def test_bad_member_probabilities_are_rejected_with_their_position():
    with pytest.raises(ValueError, match="member 1, example 0, label 1"):
        majority_vote(members([[0.5, 0.5]], [[0.5, float("nan")]]))
    with pytest.raises(ValueError, match="shape"):
        majority_vote(np.zeros((2, 3)))


def test_label_columns_are_aligned_by_name():
    probs = np.array([[0.1, 0.2, 0.7]])
    assert align_labels(probs, ["b", "c", "a"], ["a", "b", "c"]).tolist() == [[0.7, 0.1, 0.2]]
    with pytest.raises(ValueError, match="seed-2 has a different label set: missing \\['d'\\]"):
        align_labels(probs, ["b", "c", "a"], ["a", "b", "d"], member="seed-2")


def test_mean_and_sample_std():
    mean, std = mean_std([0.60, 0.62, 0.64])
    assert math.isclose(mean, 0.62) and math.isclose(std, 0.02)
    assert mean_std([0.5]) == (0.5, 0.0)


# -- the command ----------------------------------------------------------------------------------------------
def run_ensemble(*args: str) -> str:
    """``tacred ensemble ARGS`` in this process (its seeds still train as `tacred fit` subprocesses); its stdout."""
    return run_in_process("ensemble", *args).stdout


@pytest.fixture(scope="module")
def ensemble_run(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ensemble")
    run_ensemble("--config", str(REPO / "configs" / "demo.yaml"), "--seeds", "1", "2", "--out", str(out),
                 "--data.data_dir", str(demo_data), *TRAIN, *SMALL)
    return out


@pytest.mark.slow  # two seeds trained as `tacred fit` subprocesses
def test_ensemble_trains_each_seed_and_scores_members_and_both_ensembles(ensemble_run, demo_data):
    out = ensemble_run
    assert (out / "seed-1" / "checkpoints" / "best.ckpt").is_file() and (out / "seed-2" / "fit_finished.json").is_file()
    summary = json.loads((out / "summary.json").read_text())
    gold_file = demo_data / "test.json"
    for name, tag in [("seed-1", "seed-1"), ("seed-2", "seed-2")]:
        gold, pred = read_aligned(gold_file, out / f"test_predictions.{tag}.jsonl")
        member = next(m for m in summary["members"] if m["name"] == name)
        assert math.isclose(member["test"]["f1"], score(gold, pred).f1)
    for title, tag in [("majority vote", "vote"), ("average probabilities", "average")]:
        gold, pred = read_aligned(gold_file, out / f"test_predictions.{tag}.jsonl")
        assert len(pred) == len(json.loads(gold_file.read_text()))
        assert math.isclose(summary["ensembles"][title]["test"]["f1"], score(gold, pred).f1)
    table = (out / "summary.md").read_text()
    f1s = [m["dev"]["f1"] for m in summary["members"]]
    mean, std = mean_std(f1s)
    assert f"| {100 * mean:.2f} ± {100 * std:.2f} |" in table
    assert "| ensemble: majority vote |" in table and "| ensemble: average probabilities |" in table


@pytest.mark.slow  # two seeds trained as `tacred fit` subprocesses
def test_vote_rows_record_how_many_members_agreed(ensemble_run):
    out = ensemble_run
    rows = [json.loads(line) for line in (out / "dev_predictions.vote.jsonl").read_text().splitlines()]
    members_rows = [[json.loads(line) for line in (out / f"dev_predictions.seed-{s}.jsonl").read_text().splitlines()]
                    for s in (1, 2)]
    for i, row in enumerate(rows):
        agreeing = sum(m[i]["relation"] == row["relation"] for m in members_rows)
        assert row["votes"] == agreeing >= 1


@pytest.mark.slow  # two seeds trained as `tacred fit` subprocesses
def test_running_the_same_command_again_skips_finished_seeds(ensemble_run, demo_data):
    out = ensemble_run
    before = (out / "seed-1" / "checkpoints" / "best.ckpt").stat().st_mtime_ns
    printed = run_ensemble("--config", str(REPO / "configs" / "demo.yaml"), "--seeds", "1", "2", "--out", str(out),
                           "--data.data_dir", str(demo_data), *TRAIN, *SMALL)
    assert printed.count("finished earlier") == 2
    assert (out / "seed-1" / "checkpoints" / "best.ckpt").stat().st_mtime_ns == before


@pytest.mark.slow  # two seeds trained as `tacred fit` subprocesses
def test_existing_checkpoints_and_a_missing_one(ensemble_run, tmp_path, capsys):
    out = ensemble_run
    ckpts = [str(out / f"seed-{s}" / "checkpoints" / "last.ckpt") for s in (1, 2)]
    assert ensemble_main(["--checkpoints", *ckpts, "--out", str(tmp_path / "e"), "--splits", "test"]) == 0
    assert (tmp_path / "e" / "test_predictions.member-2.jsonl").is_file()
    missing = tmp_path / "nothere.ckpt"
    assert ensemble_main(["--checkpoints", ckpts[0], str(missing), "--out", str(tmp_path / "f")]) == 2
    assert str(missing) in capsys.readouterr().err

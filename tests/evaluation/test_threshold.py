"""The no-relation threshold: the rule, tuning on dev, the command and its effect on ``tacred test``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tacred.evaluation.scoring import score
from tacred.evaluation.threshold import (
    ThresholdError,
    apply_threshold,
    load_threshold,
    micro_scores,
    sweep,
    tune_threshold,
)


def random_case(seed: int, n: int = 300, labels: int = 6, no_relation_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of a noisy classifier and gold labels (about half no_relation)."""
    rng = np.random.default_rng(seed)
    gold = np.where(rng.random(n) < 0.5, no_relation_id, rng.integers(0, labels, n))
    logits = rng.normal(size=(n, labels)) * 1.5
    logits[np.arange(n), gold] += rng.normal(1.5, 1.0, n)
    probs = torch.softmax(torch.as_tensor(logits, dtype=torch.float32), dim=-1).numpy()
    return probs, gold


def official_f1(pred: np.ndarray, gold: np.ndarray, no_relation_id: int) -> float:
    return score([int(g) for g in gold], [int(p) for p in pred], no_relation=no_relation_id).f1


@pytest.mark.parametrize("no_relation_id", [0, 2, 5])
def test_neutral_threshold_is_exactly_the_argmax(no_relation_id):
    probs, _ = random_case(1, no_relation_id=no_relation_id)
    ties = np.array([[0.25, 0.25, 0.25, 0.25, 0.0, 0.0], [0.1, 0.4, 0.4, 0.1, 0.0, 0.0],
                     [0.0, 0.0, 0.0, 0.5, 0.0, 0.5], [1 / 6] * 6], dtype=np.float32)
    probs = np.concatenate([probs, ties])
    expected = torch.as_tensor(probs).argmax(dim=-1)
    for neutral in (None, 0.0, -0.0):
        assert torch.equal(apply_threshold(probs, no_relation_id, neutral), expected)


def test_a_positive_threshold_only_turns_relations_into_no_relation():
    probs, _ = random_case(2)
    base = apply_threshold(probs, 0, 0.0)
    for t in (0.5, 2.0, 100.0):
        pred = apply_threshold(probs, 0, t)
        changed = pred != base
        assert (pred[changed] == 0).all() and changed.any()
    assert (apply_threshold(probs, 0, 1e4) == 0).all()
    assert (apply_threshold(probs, 0, -1e4) != 0).all()


def test_the_sweep_matches_the_rule_at_every_threshold():
    probs, gold = random_case(3, n=120)
    curve = sweep(probs, gold, 0)
    for t, p, r, f in zip(curve.thresholds, curve.precision, curve.recall, curve.f1, strict=True):
        s = micro_scores(apply_threshold(probs, 0, float(t)).numpy(), gold, 0)
        assert (s.precision, s.recall, s.f1) == pytest.approx((p, r, f))
    assert curve.guessed[0] == 0 and curve.guessed[-1] == len(gold)


@pytest.mark.parametrize("seed", range(8))
def test_tuning_never_lowers_f1_on_the_tuning_data(seed):
    no_relation_id = seed % 3
    probs, gold = random_case(seed, no_relation_id=no_relation_id)
    tuned = tune_threshold(probs, gold, no_relation_id)
    before = official_f1(apply_threshold(probs, no_relation_id, None).numpy(), gold, no_relation_id)
    after = official_f1(apply_threshold(probs, no_relation_id, tuned.threshold).numpy(), gold, no_relation_id)
    assert after >= before
    assert tuned.untuned.f1 == pytest.approx(before) and tuned.tuned.f1 == pytest.approx(after)
    grid = [official_f1(apply_threshold(probs, no_relation_id, t).numpy(), gold, no_relation_id)
            for t in np.linspace(-6, 6, 61)]
    assert after >= max(grid) - 1e-12  # no threshold on a fine grid does better


def test_an_optimal_argmax_keeps_the_neutral_threshold():
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.4, 0.6]])
    gold = np.array([0, 1, 0, 1])
    tuned = tune_threshold(probs, gold, 0)
    assert tuned.threshold == 0.0 and tuned.tuned.f1 == 1.0


@pytest.mark.parametrize("target", [0.6, 0.8, 0.95])
def test_target_precision_is_met_with_the_best_recall(target):
    probs, gold = random_case(11, n=400)
    tuned = tune_threshold(probs, gold, 0, target_precision=target)
    pred = apply_threshold(probs, 0, tuned.threshold).numpy()
    result = score([int(g) for g in gold], [int(p) for p in pred], no_relation=0)
    assert result.precision >= target and result.recall > 0
    curve = sweep(probs, gold, 0)
    feasible = curve.precision >= target
    assert result.recall == pytest.approx(curve.recall[feasible].max())


def test_an_unreachable_target_precision_is_a_clear_error():
    probs = np.array([[0.2, 0.8], [0.3, 0.7]])
    gold = np.array([0, 0])  # every relation guess is wrong
    with pytest.raises(ThresholdError, match="no threshold reaches precision 90.00%"):
        tune_threshold(probs, gold, 0, target_precision=0.9)
    with pytest.raises(ThresholdError, match=r"target precision must lie in \(0, 1\]"):
        tune_threshold(probs, gold, 0, target_precision=1.5)


def test_bad_inputs_are_named():
    with pytest.raises(ThresholdError, match="example 1: probabilities must be finite"):
        apply_threshold(np.array([[0.5, 0.5], [np.nan, 1.0]]), 0, 0.0)
    with pytest.raises(ThresholdError, match="got 3 gold labels for 2 probability rows"):
        sweep(np.array([[0.5, 0.5], [0.4, 0.6]]), [0, 1, 1], 0)


def test_threshold_files_and_numbers_load(tmp_path):
    probs, gold = random_case(4)
    path = tune_threshold(probs, gold, 0).save(tmp_path / "threshold.json")
    assert load_threshold(path) == json.loads(path.read_text())["no_relation_threshold"]
    assert load_threshold("1.25") == 1.25 and load_threshold(-2) == -2.0
    with pytest.raises(ThresholdError, match="no such file"):
        load_threshold(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"no_relation_threshold": "high"}')
    with pytest.raises(ThresholdError, match="must be a number"):
        load_threshold(tmp_path / "bad.json")


# -- with a trained checkpoint ------------------------------------------------------------------------


def test_tune_command_writes_threshold_json_and_reports_dev_f1(checkpoint, tmp_path, capsys):
    from tacred.commands.threshold import main

    out = tmp_path / "t.json"
    assert main(["tune", "--ckpt_path", str(checkpoint), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    saved = json.loads(out.read_text())
    assert saved["tuned"]["f1"] >= saved["untuned"]["f1"]
    assert "dev F1 before:" in printed and f"{saved['tuned']['f1']:.3%}" in printed


def test_tune_command_errors_are_one_line(checkpoint, tmp_path, capsys):
    from tacred.commands.threshold import main

    assert main(["tune", "--ckpt_path", str(tmp_path / "nope.ckpt")]) == 2
    assert "checkpoint not found" in capsys.readouterr().err
    assert main(["apply", "--ckpt_path", str(checkpoint), "--threshold", str(tmp_path / "x.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["tune", "--ckpt_path", str(checkpoint), "--target_precision", "1.5"]) == 2
    assert "--target_precision 1.5: a precision, above 0 and at most 1" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--min_precision", "--target_precision"])
@pytest.mark.parametrize("value", ["1.5", "0", "-0.2"])
def test_a_precision_out_of_range_is_refused_before_the_checkpoint_loads(tmp_path, capsys, flag, value):
    """Checked first, so a missing checkpoint does not hide it and a real one is not loaded and evaluated for it."""
    import sys

    from tacred.commands.threshold import main

    loaded = "torch" in sys.modules
    assert main(["tune", "--ckpt_path", str(tmp_path / "nope.ckpt"), flag, value]) == 2
    assert f"{flag} {float(value):g}: a precision, above 0 and at most 1" in capsys.readouterr().err
    assert main(["apply", "--ckpt_path", str(tmp_path / "nope.ckpt"), "--file", str(tmp_path / "x.json")]) == 2
    assert "checkpoint not found" in capsys.readouterr().err
    assert loaded or "torch" not in sys.modules


def run_test(checkpoint: Path, out: Path, *extra: str) -> list[dict]:
    """``tacred test`` into ``out`` (in this process); the rows of its test_predictions.jsonl."""
    from tacred.cli import main

    assert main(["test", "--ckpt_path", str(checkpoint), "--run_dir", str(out), "--trainer.enable_progress_bar", "false",
                 *extra]) == 0
    return [json.loads(line) for line in (out / "test_predictions.jsonl").read_text().splitlines()]


def test_the_test_flag_changes_predictions_as_expected(checkpoint, tmp_path):
    plain = run_test(checkpoint, tmp_path / "plain")
    assert "threshold" not in (tmp_path / "plain" / "test_score.txt").read_text()
    assert run_test(checkpoint, tmp_path / "zero", "--model.no_relation_threshold", "0") == plain
    silent = run_test(checkpoint, tmp_path / "high", "--model.no_relation_threshold", "100")
    assert {row["relation"] for row in silent} == {"no_relation"}
    eager = run_test(checkpoint, tmp_path / "low", "--model.no_relation_threshold", "-100")
    assert "no_relation" not in {row["relation"] for row in eager}
    report = (tmp_path / "high" / "test_score.txt").read_text()
    assert "untuned (argmax)" in report and "thresholded" in report
    metrics = json.loads((tmp_path / "high" / "test_metrics.json").read_text())
    assert metrics["no_relation_threshold"] == 100 and metrics["recall"] == 0.0 and "untuned" in metrics


def test_the_test_flag_reads_threshold_json(checkpoint, tmp_path):
    from tacred.commands.threshold import main

    path = tmp_path / "threshold.json"
    assert main(["tune", "--ckpt_path", str(checkpoint), "--output", str(path)]) == 0
    t = load_threshold(path)
    rows = run_test(checkpoint, tmp_path / "tuned", "--model.no_relation_threshold", str(path))
    metrics = json.loads((tmp_path / "tuned" / "test_metrics.json").read_text())
    assert metrics["no_relation_threshold"] == pytest.approx(t) and len(rows) == 40

"""Per-relation thresholds for a precision target (``tacred threshold tune --min_precision``): chosen on a hand-made
dev set as worked out by hand, the most correct predictions at the target for each relation (brute force on random
sets), relations that cannot reach it switched off, the file and its use by ``tacred test`` and ``load_model``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tacred.evaluation.decision import ThresholdError, decide, label_thresholds, load_threshold
from tacred.evaluation.threshold import tune_relation_thresholds

LABELS = ["no_relation", "A", "B", "C"]


def row(best: int, margin: float) -> list[float]:
    """Probabilities whose best other relation is ``best`` with log p(no_relation) - log p(best) = ``margin``."""
    p = np.full(4, 0.01)
    p[0], p[best] = 1.0, float(np.exp(-margin))
    return (p / p.sum()).tolist()


def hand_made() -> tuple[np.ndarray, np.ndarray]:
    """A: by margin, right, right, wrong, right, wrong, wrong; B: always wrong; C: always right, one row with the
    argmax at no_relation."""
    rows, gold = [], []
    for margin, right in [(-3, True), (-2, True), (-1, False), (-0.5, True), (0.5, False), (1.5, False)]:
        rows.append(row(1, margin))
        gold.append(1 if right else 0)
    for margin in (-2.0, -1.0):
        rows.append(row(2, margin))
        gold.append(3)  # gold C, read as B
    for margin in (-1.0, 0.4):
        rows.append(row(3, margin))
        gold.append(3)
    rows.append(row(1, 2.0))  # a gold A that the model reads as A with a large margin: never reached at P >= 0.75
    gold.append(1)
    return np.asarray(rows), np.asarray(gold)


def test_thresholds_worked_out_by_hand():
    probs, gold = hand_made()
    tuned = tune_relation_thresholds(probs, gold, LABELS, "no_relation", 0.75)
    a, b, c = tuned.relations
    # A: the first four rows (3 right of 4, 75%) beat the first two (100%, 2 right): its cut lies between -0.5 and 0.5
    assert -0.5 < -a.threshold < 0.5 and (a.guessed, a.correct, a.gold) == (4, 3, 4)
    assert b.threshold is None and b.guessed == 0 and tuned.switched_off == ["B"]  # never right: switched off
    # C: both rows right, the argmax's no_relation row included: a negative threshold, more recall than the argmax
    assert c.threshold < -0.4 and (c.guessed, c.correct, c.gold) == (2, 2, 4)
    assert tuned.tuned.precision == pytest.approx(5 / 6) and tuned.tuned.precision >= 0.75
    assert tuned.untuned.precision == pytest.approx(4 / 7)  # the argmax: A 3 of 4, B 0 of 2, C 1 of 1
    pred = decide(probs, 0, label_thresholds(tuned.thresholds, LABELS, "no_relation"))
    assert (pred == 2).sum() == 0 and (pred == 1).sum() == 4 and (pred == 3).sum() == 2


@pytest.mark.parametrize(("seed", "target"), [(1, 0.6), (2, 0.8), (3, 0.9)])
def test_each_relation_gets_the_most_correct_predictions_at_the_target(seed, target):
    rng = np.random.default_rng(seed)
    n, n_labels = 400, 5
    gold = np.where(rng.random(n) < 0.5, 0, rng.integers(1, n_labels, n))
    logits = rng.normal(size=(n, n_labels)) * 1.5
    logits[np.arange(n), gold] += rng.normal(1.5, 1.0, n)
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = ["no_relation", *[f"r{i}" for i in range(1, n_labels)]]
    tuned = tune_relation_thresholds(probs, gold, labels, "no_relation", target)
    other = probs.copy()
    other[:, 0] = -1
    best = other.argmax(1)
    margin = np.log(probs[:, 0]) - np.log(probs[np.arange(n), best])
    for r, point in enumerate(tuned.relations, start=1):
        rows = best == r
        # brute force: every prefix of the relation's rows by margin
        order = np.argsort(margin[rows])
        hits = np.cumsum(gold[rows][order] == r)
        reachable = [int(h) for k, h in enumerate(hits, start=1) if h / k >= target and h > 0
                     and (k == len(hits) or margin[rows][order][k - 1] < margin[rows][order][k])]
        if point.threshold is None:
            assert not reachable and point.guessed == 0
        else:
            assert point.correct == max(reachable) and point.precision >= target
    assert tuned.tuned.precision >= target or tuned.tuned.precision == 0.0


def test_the_file_loads_as_per_label_thresholds_and_must_match_the_model(tmp_path):
    probs, gold = hand_made()
    tuned = tune_relation_thresholds(probs, gold, LABELS, "no_relation", 0.75)
    path = tuned.save(tmp_path / "threshold.json")
    saved = json.loads(path.read_text())
    assert saved["relation_thresholds"]["B"] is None and saved["min_precision"] == 0.75
    loaded = load_threshold(path)
    assert loaded == tuned.thresholds
    vector = label_thresholds(loaded, LABELS, "no_relation")
    assert vector[0] == 0 and np.isposinf(vector[2]) and vector[1] == pytest.approx(tuned.thresholds["A"])
    with pytest.raises(ThresholdError, match=r"threshold.json: tuned for other labels than this model's \(missing: \['D'\], not the model's: \['C'\]\)"):
        label_thresholds(loaded, ["no_relation", "A", "B", "D"], "no_relation", path)
    (tmp_path / "bad.json").write_text(json.dumps({"relation_thresholds": {"A": "high"}}))
    with pytest.raises(ThresholdError, match="bad.json: the threshold of 'A' must be a number or null"):
        load_threshold(tmp_path / "bad.json")
    with pytest.raises(ThresholdError, match="min_precision must lie in"):
        tune_relation_thresholds(probs, gold, LABELS, "no_relation", 0.0)


def test_the_command_tunes_per_relation_and_test_extract_and_load_model_use_it(checkpoint, tmp_path, capsys):
    from tacred import load_model
    from tacred.commands.threshold import main
    from tests.evaluation.test_threshold import run_test

    out = tmp_path / "threshold.json"
    assert main(["tune", "--ckpt_path", str(checkpoint), "--min_precision", "0.9", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    saved = json.loads(out.read_text())
    assert "Per-relation thresholds for precision >= 90.00%" in printed
    assert saved["tuned"]["precision"] >= 0.9 or saved["tuned"]["precision"] == 0.0
    for label, figures in saved["relations"].items():
        assert saved["relation_thresholds"][label] is None or figures["precision"] >= 0.9
    rows = run_test(checkpoint, tmp_path / "test", "--model.no_relation_threshold", str(out))
    metrics = json.loads((tmp_path / "test" / "test_metrics.json").read_text())
    assert metrics["no_relation_threshold"] == saved["relation_thresholds"]
    off = {label for label, t in saved["relation_thresholds"].items() if t is None}
    assert not off & {r["relation"] for r in rows}  # a relation switched off is never predicted
    assert main(["tune", "--ckpt_path", str(checkpoint), "--min_precision", "1.5", "--output", str(out)]) == 2
    assert "--min_precision 1.5: a precision, above 0 and at most 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # one goal at a time
        main(["tune", "--ckpt_path", str(checkpoint), "--min_precision", "0.8", "--target_precision", "0.8"])
    model = load_model(checkpoint, device="cpu", threshold=str(out))
    assert isinstance(model.threshold, np.ndarray) and model.threshold.shape == (len(model.labels),)
    assert not off & {p.relation for p in model.predict(
        [f"<subj>Maria Lopez</subj> was born in <obj>{city}</obj> ." for city in ("Boston", "Lima", "Oslo")])}

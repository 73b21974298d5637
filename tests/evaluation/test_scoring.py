"""Tests for the official TACRED scorer, its torchmetrics metric, SemEval macro-F1, readers and `tacred score`."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tacred.commands import score as score_command
from tacred.constants import NO_RELATION
from tacred.evaluation.metrics import TacredScore
from tacred.evaluation.scoring import (
    LabelFileError,
    format_report,
    micro_prf,
    over_release,
    read_aligned,
    read_labels,
    score,
    score_counts,
    score_from_counts,
    semeval_macro_f1,
)
from tests.conftest import REPO, SHARED_DATA

SAMPLE = SHARED_DATA / "tacred_sample"

# A hand-worked example: per:title c1/guessed2/gold3, org:founded_by 1/2/2, per:age 1/1/2, org:website 0/1/0.
GOLD = ["per:title", "per:title", "org:founded_by", NO_RELATION, NO_RELATION, "org:founded_by", "per:age",
        "per:age", NO_RELATION, "per:title"]
PRED = ["per:title", "org:founded_by", "org:founded_by", "per:title", NO_RELATION, NO_RELATION, "per:age",
        NO_RELATION, "org:website", NO_RELATION]
LABELS = [NO_RELATION, "per:title", "org:founded_by", "per:age", "org:website"]


def reference_prf(gold: list, pred: list, no_rel: object) -> tuple[float, float, float]:
    """Straightforward re-statement of the official definition, independent of tacred.evaluation.scoring."""
    correct = sum(1 for g, p in zip(gold, pred, strict=True) if g == p and g != no_rel)
    guessed = sum(1 for p in pred if p != no_rel)
    in_gold = sum(1 for g in gold if g != no_rel)
    precision = correct / guessed if guessed else 1.0
    recall = correct / in_gold if in_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


@pytest.mark.parametrize(("gold", "pred", "expected"), [
    ([], [], (1.0, 0.0, 0.0)),
    ([NO_RELATION] * 3, [NO_RELATION] * 3, (1.0, 0.0, 0.0)),  # all no_relation
    (["per:age", "per:title"], [NO_RELATION] * 2, (1.0, 0.0, 0.0)),  # nothing guessed: P = 1
    ([NO_RELATION] * 2, ["per:age", NO_RELATION], (0.0, 0.0, 0.0)),  # no gold: R = 0
    (["per:age", NO_RELATION], ["per:title", "per:age"], (0.0, 0.0, 0.0)),  # wrong relation counts twice
    (["per:age", "per:age"], ["per:age", "per:age"], (1.0, 1.0, 1.0)),
])
def test_micro_edge_cases(gold: list[str], pred: list[str], expected: tuple[float, float, float]) -> None:
    assert micro_prf(score_counts(gold, pred)) == pytest.approx(expected)


def test_hand_computed_counts_and_scores() -> None:
    counts = score_counts(GOLD, PRED)
    assert counts.correct == Counter({"per:title": 1, "org:founded_by": 1, "per:age": 1})
    assert counts.guessed == Counter({"per:title": 2, "org:founded_by": 2, "per:age": 1, "org:website": 1})
    assert counts.gold == Counter({"per:title": 3, "org:founded_by": 2, "per:age": 2})
    result = score(GOLD, PRED)
    assert (result.precision, result.recall, result.f1) == pytest.approx((0.5, 3 / 7, 6 / 13))
    rows = [(r.relation, r.gold, pytest.approx((r.precision, r.recall, r.f1))) for r in result.relations]
    assert rows == [("org:founded_by", 2, (0.5, 0.5, 0.5)), ("org:website", 0, (0.0, 0.0, 0.0)),
                    ("per:age", 2, (1.0, 0.5, 2 / 3)), ("per:title", 3, (0.5, 1 / 3, 0.4))]


def test_score_counts_rejects_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="3 labels but predictions have 2"):
        score_counts(["a", "b", "c"], ["a", "b"])
    with pytest.raises(ValueError, match="no_relation"):
        score_counts([0, 1], [1, 1])  # int labels with the default string no_relation


def test_format_report_matches_official_layout() -> None:
    lines = format_report(score(GOLD, PRED)).splitlines()
    assert lines[1:4] == [
        "org:founded_by  P:  50.00%  R:  50.00%  F1:  50.00%  #: 2",
        "per:age         P: 100.00%  R:  50.00%  F1:  66.67%  #: 2",
        "per:title       P:  50.00%  R:  33.33%  F1:  40.00%  #: 3",
    ]
    assert lines[-3:] == ["Precision (micro): 50.000%", "   Recall (micro): 42.857%", "       F1 (micro): 46.154%"]
    assert not any(line.startswith("org:website") for line in lines)  # official: only relations with gold
    everything = format_report(score(GOLD, PRED), all_relations=True)
    assert "org:website     P:   0.00%  R:   0.00%  F1:   0.00%  #: 0" in everything.splitlines()


def test_metric_matches_pure_function_and_reports() -> None:
    metric = TacredScore(num_labels=len(LABELS))
    ids = {name: i for i, name in enumerate(LABELS)}
    metric.update(torch.tensor([ids[p] for p in PRED]), torch.tensor([ids[g] for g in GOLD]))
    out = metric.compute()
    assert set(out) == {"precision", "recall", "f1"}
    assert [out[k].item() for k in ("precision", "recall", "f1")] == pytest.approx([0.5, 3 / 7, 6 / 13])
    assert score_from_counts(metric.counts(LABELS)) == score(GOLD, PRED)
    assert metric.counts().gold == Counter({1: 3, 2: 2, 3: 2})


def test_metric_edge_cases_and_input_checks() -> None:
    metric = TacredScore(num_labels=3)
    metric.update(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long))  # an empty batch
    assert [v.item() for v in metric.compute().values()] == [1.0, 0.0, 0.0]
    logits = torch.tensor([[0.1, 0.9, 0.0], [2.0, 0.0, 0.0]])  # (N, C): argmax -> [1, 0]
    metric.update(logits, torch.tensor([1, 2]))
    assert [v.item() for v in metric.compute().values()] == pytest.approx([1.0, 0.5, 2 / 3])
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        metric.update(torch.tensor([3]), torch.tensor([0]))
    with pytest.raises(ValueError, match="does not match"):
        metric.update(torch.tensor([1, 2]), torch.tensor([1]))
    with pytest.raises(ValueError, match="integer"):
        metric.update(torch.tensor([0.7]), torch.tensor([1]))
    with pytest.raises(ValueError, match="no_relation_id"):
        TacredScore(num_labels=3, no_relation_id=3)



@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(st.one_of(st.just(0), st.integers(0, 5)), st.one_of(st.just(0), st.integers(0, 5))),
                      max_size=80),
       no_rel=st.integers(0, 5), split=st.integers(0, 80))
def test_property_against_reference(pairs: list[tuple[int, int]], no_rel: int, split: int) -> None:
    gold, pred = [g for g, _ in pairs], [p for _, p in pairs]
    expected = reference_prf(gold, pred, no_rel)
    assert micro_prf(score_counts(gold, pred, no_relation=no_rel)) == pytest.approx(expected)
    names = [f"rel{i}" for i in range(6)]
    named = score([names[g] for g in gold], [names[p] for p in pred], no_relation=names[no_rel])
    assert (named.precision, named.recall, named.f1) == pytest.approx(expected)
    for row in named.relations:  # per relation = the reference on a one-relation view of the data
        rel = int(row.relation[3:])
        one_g = [g if g == rel else no_rel for g in gold]
        one_p = [p if p == rel else no_rel for p in pred]
        assert (row.precision, row.recall, row.f1) == pytest.approx(reference_prf(one_g, one_p, no_rel))
    metric = TacredScore(num_labels=6, no_relation_id=no_rel)
    for part in (slice(0, split), slice(split, None)):  # two batches
        metric.update(torch.tensor(pred[part], dtype=torch.long), torch.tensor(gold[part], dtype=torch.long))
    got = metric.compute()
    assert (got["precision"].item(), got["recall"].item(), got["f1"].item()) == pytest.approx(expected, abs=1e-6)


def test_distributed_style_state_merging() -> None:
    rng = random.Random(0)
    gold = [rng.choice([0, 0, 0, 1, 2, 3]) for _ in range(500)]
    pred = [g if rng.random() < 0.6 else rng.choice([0, 1, 2, 3]) for g in gold]
    whole = TacredScore(num_labels=4)
    whole.update(torch.tensor(pred), torch.tensor(gold))
    rank0, rank1 = TacredScore(num_labels=4), TacredScore(num_labels=4)
    rank0.update(torch.tensor(pred[:170]), torch.tensor(gold[:170]))
    rank1.update(torch.tensor(pred[170:]), torch.tensor(gold[170:]))
    summed = {k: getattr(rank0, k) + getattr(rank1, k) for k in ("correct", "guessed", "gold")}
    rank0.merge_state(rank1)
    for name in ("correct", "guessed", "gold"):
        assert torch.equal(getattr(rank0, name), getattr(whole, name))
        assert torch.equal(summed[name], getattr(whole, name))
    assert {k: v.item() for k, v in rank0.compute().items()} == {k: v.item() for k, v in whole.compute().items()}
    assert micro_prf(rank0.counts()) == pytest.approx(reference_prf(gold, pred, 0))


def test_semeval_macro_f1_hand_worked() -> None:
    gold = ["Cause-Effect(e1,e2)", "Cause-Effect(e1,e2)", "Cause-Effect(e2,e1)", "Component-Whole(e1,e2)",
            "Other", NO_RELATION, "Component-Whole(e2,e1)"]
    pred = ["Cause-Effect(e1,e2)", "Cause-Effect(e2,e1)", "Cause-Effect(e2,e1)", "Other",
            "Cause-Effect(e1,e2)", "Component-Whole(e1,e2)", "Component-Whole(e2,e1)"]
    result = semeval_macro_f1(gold, pred)
    # Cause-Effect: 2 exact / 4 guessed (incl. the wrong direction) / 3 gold; Component-Whole: 1 / 2 / 2.
    rows = [(r.relation, r.guessed, pytest.approx((r.precision, r.recall, r.f1))) for r in result.types]
    assert rows == [("Cause-Effect", 4, (0.5, 2 / 3, 4 / 7)), ("Component-Whole", 2, (0.5, 0.5, 0.5))]
    assert result.macro_f1 == pytest.approx((4 / 7 + 0.5) / 2)  # mean of F1s, not F1 of macro P/R (7/13)
    assert (result.macro_precision, result.macro_recall) == pytest.approx((0.5, 7 / 12))


def test_semeval_conventions_and_errors() -> None:
    # A type never guessed has P = 0 (not TACRED's 1); a type only predicted is not averaged.
    result = semeval_macro_f1(["Message-Topic(e1,e2)", "Other"], ["Other", "Entity-Origin(e2,e1)"], other="Other")
    assert [(r.relation, r.precision, r.f1) for r in result.types] == [("Message-Topic", 0.0, 0.0)]
    assert result.macro_f1 == 0.0
    with pytest.raises(ValueError, match="predicted label 0 is 'per:title'"):
        semeval_macro_f1(["Other"], ["per:title"])


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_readers_for_all_formats(tmp_path: Path) -> None:
    text = write_lines(tmp_path / "key.txt", ["per:title", "no_relation", "per:age", ""])
    assert read_labels(text) == (["per:title", "no_relation", "per:age"], None)
    examples = [{"id": f"e{i}", "relation": r, "token": ["x"]} for i, r in enumerate(["per:age", "no_relation"])]
    (tmp_path / "gold.json").write_text(json.dumps(examples, indent=1), encoding="utf-8")
    assert read_labels(tmp_path / "gold.json") == (["per:age", "no_relation"], ["e0", "e1"])
    jsonl = write_lines(tmp_path / "pred.jsonl", [json.dumps({"id": "e1", "relation": "no_relation",
                                                              "probabilities": {"no_relation": 0.9}}),
                                                  json.dumps({"id": "e0", "relation": "per:title"})])
    assert read_labels(jsonl) == (["no_relation", "per:title"], ["e1", "e0"])
    semeval = write_lines(tmp_path / "answers.txt", ["8001\tOther", "8002\tCause-Effect(e2,e1)"])
    assert read_labels(semeval) == (["Other", "Cause-Effect(e2,e1)"], ["8001", "8002"])


@pytest.mark.parametrize(("name", "content", "message"), [
    ("blank.txt", "per:age\n\nper:title\n", "line 2"),
    ("spaces.txt", "per:age 0.9\n", "line 1"),
    ("broken.jsonl", '{"id": "a", "relation": "x"}\n{"id": "b", \n', "line 2: invalid JSON"),
    ("norel.jsonl", '{"id": "a", "label": "x"}\n', "line 1: expected an object with a string 'relation'"),
    ("mixed.jsonl", '{"id": "a", "relation": "x"}\n{"relation": "y"}\n', "line 2 has no id"),
    ("dup.json", '[{"id": "a", "relation": "x"}, {"id": "a", "relation": "y"}]', "example 1: id 'a' repeats"),
    ("empty.txt", "\n", "no labels found"),
])
def test_reader_errors_name_file_and_place(tmp_path: Path, name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(LabelFileError, match=message) as err:
        read_labels(path)
    assert str(path) in str(err.value)


def test_alignment_by_id_and_by_position(tmp_path: Path) -> None:
    gold = write_lines(tmp_path / "gold.jsonl", [json.dumps({"id": i, "relation": r})
                                                 for i, r in [("a", "per:age"), ("b", "no_relation"), ("c", "x")]])
    pred = write_lines(tmp_path / "pred.jsonl", [json.dumps({"id": i, "relation": r})
                                                 for i, r in [("c", "x"), ("a", "per:title"), ("b", "y")]])
    assert read_aligned(gold, pred) == (["per:age", "no_relation", "x"], ["per:title", "y", "x"])
    other = write_lines(tmp_path / "other.jsonl", [json.dumps({"id": i, "relation": "x"}) for i in ("a", "b", "z")])
    with pytest.raises(LabelFileError, match=r"missing 1 \('c'\), extra 1 \('z'\)"):
        read_aligned(gold, other)
    plain = write_lines(tmp_path / "plain.txt", ["x", "y", "per:age"])
    assert read_aligned(gold, plain) == (["per:age", "no_relation", "x"], ["x", "y", "per:age"])
    short = write_lines(tmp_path / "short.txt", ["x", "y"])
    with pytest.raises(LabelFileError, match="has 2 labels but .* has 3"):
        read_aligned(gold, short)


def run_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = score_command.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_command_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write_lines(tmp_path / "gold.txt", GOLD)
    pred = write_lines(tmp_path / "pred.jsonl", [json.dumps({"relation": p}) for p in PRED])
    code, out, _ = run_command([str(gold), str(pred)], capsys)
    assert code == 0
    assert "per:age         P: 100.00%  R:  50.00%  F1:  66.67%  #: 2" in out
    assert out.rstrip().splitlines()[-3:] == ["Precision (micro): 50.000%", "   Recall (micro): 42.857%",
                                              "       F1 (micro): 46.154%"]
    code, out, _ = run_command([str(gold), str(pred), "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["num_examples"] == 10 and data["f1"] == pytest.approx(6 / 13)
    assert data["relations"]["org:website"]["guessed"] == 1
    code, _, err = run_command([str(gold), str(tmp_path / "missing.txt")], capsys)
    assert code == 2 and "missing.txt" in err and "Traceback" not in err


def test_command_semeval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write_lines(tmp_path / "key.txt", ["1\tCause-Effect(e1,e2)", "2\tOther", "3\tCause-Effect(e2,e1)"])
    pred = write_lines(tmp_path / "answers.txt", ["3\tCause-Effect(e1,e2)", "2\tOther", "1\tCause-Effect(e1,e2)"])
    code, out, err = run_command([str(gold), str(pred), "--semeval", "--no_relation", "Other"], capsys)
    assert code == 0 and err == ""
    assert "Cause-Effect  P:  50.00%  R:  50.00%  F1:  50.00%  #: 2" in out
    assert "F1 = 50.00%" in out.splitlines()[-1]
    code, out, _ = run_command([str(gold), str(pred), "--semeval", "--json"], capsys)
    assert json.loads(out)["semeval"]["macro_f1"] == pytest.approx(0.5)


@pytest.mark.slow  # `python -m tacred` in a subprocess
def test_command_as_subprocess(tmp_path: Path) -> None:
    gold = write_lines(tmp_path / "gold.txt", GOLD)
    done = subprocess.run([sys.executable, "-m", "tacred", "score", str(gold), str(gold)],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assert "       F1 (micro): 100.000%" in done.stdout


def test_real_sample_scores_itself_perfectly(tmp_path: Path) -> None:
    dev = SAMPLE / "dev.json"
    if not dev.exists():
        pytest.skip(f"TACRED sample not found at {dev}")
    labels, ids = read_labels(dev)
    assert ids is not None and len(labels) == len(ids) == 20
    shuffled = list(zip(ids, labels, strict=True))
    random.Random(1).shuffle(shuffled)
    pred = write_lines(tmp_path / "pred.jsonl", [json.dumps({"id": i, "relation": r}) for i, r in shuffled])
    gold, aligned = read_aligned(dev, pred)
    result = score(gold, aligned)
    assert gold == aligned and (result.precision, result.recall, result.f1) == (1.0, 1.0, 1.0)


def test_directed_macro_f1_on_kbp_labels_counts_a_wrong_direction_as_an_error() -> None:
    gold = ["per:employee_of(e1,e2)", "per:employee_of(e2,e1)", "org:top_members/employees(e1,e2)", NO_RELATION]
    pred = ["per:employee_of(e1,e2)", "per:employee_of(e1,e2)", "org:top_members/employees(e1,e2)", NO_RELATION]
    result = semeval_macro_f1(gold, pred)
    assert [(r.relation, r.gold, r.guessed, r.correct) for r in result.types] == [
        ("org:top_members/employees", 1, 1, 1), ("per:employee_of", 2, 2, 1)]
    assert result.macro_f1 == pytest.approx((1.0 + 0.5) / 2)


def test_over_release_adds_the_unconverted_sentences_as_no_relation_predictions() -> None:
    gold, pred = over_release(["per:title(e1,e2)"], ["per:title(e1,e2)"], ["per:title(e1,e2)", NO_RELATION])
    assert gold == ["per:title(e1,e2)", "per:title(e1,e2)", NO_RELATION]
    assert pred == ["per:title(e1,e2)", NO_RELATION, NO_RELATION]
    assert score(gold, pred).recall == pytest.approx(0.5) and semeval_macro_f1(gold, pred).macro_f1 == pytest.approx(2 / 3)

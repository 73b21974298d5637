"""benchmarks/joint_cost.py runs end to end in its quick mode (tiny encoders, the tiny joint corpus): its training part
and its extraction part, each alone, print the three tables, joint beside per pair, each with the machine it ran on.
No figure is asserted: quick mode measures nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.test_benchmarks import table_rows

pytestmark = pytest.mark.slow  # two tiny trainings, eight training rows' steps and six extraction rows (~30 s)


def _quick(*flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}  # see tests/test_benchmarks.py
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "joint_cost.py"), "--quick", *flags], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def parts() -> dict[str, str]:
    """What each part printed alone: ``--training_only`` (passes, training) and ``--extraction_only``."""
    out = {}
    for flag in ("--training_only", "--extraction_only"):
        ran = _quick(flag)
        assert ran.returncode == 0, f"joint_cost.py --quick {flag} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
        out[flag] = ran.stdout
    return out


@pytest.fixture(scope="module")
def quick_output(parts: dict[str, str]) -> str:
    return "\n".join(parts.values())


def test_every_table_names_the_machine(quick_output: str) -> None:
    assert quick_output.count("### ") == 3 and quick_output.count("- machine: ") == 3
    assert "cores" in quick_output and "torch " in quick_output


def test_encoder_passes_are_sentences_against_pairs(quick_output: str) -> None:
    joint, pairs = table_rows(quick_output, "Joint vs per-pair: encoder passes per training epoch")
    assert joint[0].startswith("joint") and pairs[0].startswith("per pair")
    assert joint[1] == joint[2] == "48"  # the tiny corpus's training sentences: one pass each
    n_pairs = int(pairs[2].replace(",", ""))
    assert n_pairs > 48 and pairs[3] == f"{n_pairs / 48:.2f}×" and pairs[4].startswith("≥ 6×: ")


def test_training_rows_set_joint_beside_per_pair_for_each_encoder(quick_output: str) -> None:
    rows = table_rows(quick_output, "Joint vs per-pair: training seconds per epoch")
    assert [(r[0].split(" (")[0], r[1], r[2]) for r in rows] == [
        (encoder, model, batch) for encoder in ("MiniLM", "MPNet")
        for model, batch in (("joint (sentences)", "8"), ("per pair (pairs)", "32"))]
    for row in rows:
        assert int(row[3]) > 0 and all(float(cell.replace(",", "")) > 0 for cell in row[4:7])
        assert row[7].endswith("×") and row[8].replace(",", "").replace(".", "").isdigit()
    assert "precision: " in quick_output


def test_extraction_rows_cover_both_document_sets_and_say_what_they_ran(quick_output: str) -> None:
    rows = table_rows(quick_output, "Joint vs pipeline: extraction sentences/s")
    assert [r[0].split(" (")[0] for r in rows] == ["CoNLL04 test sentences"] * 3 + ["demo documents"] * 3
    assert [r[1].split(",")[0].split(" (")[0] for r in rows] == ["spaCy NER + tagger", "joint tiny MPNet",
                                                                "tiny MPNet pipeline"] * 2
    assert [r[2] for r in rows] == ["—", "32", "32"] * 2  # tacred extract --precision of each row
    for row in rows:
        assert float(row[3].replace(",", "")) > 0 and row[4].endswith("×")
    assert all(r[5].startswith("≥ 5×: ") and r[5].endswith("(stand-ins)") for r in rows[2::3])
    assert "stand-in: untrained" in rows[1][1] and "stock NER" in rows[2][1]
    assert "stand-ins (no --joint/--pipeline given)" in quick_output
    # the documents go through tacred extract's own chunks: the joint model sorts a chunk's sentences by length
    assert "documents in chunks of 64 (tacred extract --chunk_size; its default is 64)" in quick_output


@pytest.mark.parametrize(("flag", "titles"), [
    ("--training_only", ["encoder passes per training epoch", "training seconds per epoch"]),
    ("--extraction_only", ["extraction sentences/s"]),
])
def test_each_part_prints_its_tables_alone(parts: dict[str, str], flag: str, titles: list[str]) -> None:
    printed = [line for line in parts[flag].splitlines() if line.startswith("### ")]
    assert len(printed) == len(titles) and all(t in line for t, line in zip(titles, printed, strict=True))


def test_both_parts_alone_is_refused() -> None:
    ran = _quick("--training_only", "--extraction_only")
    assert ran.returncode == 2 and "leave nothing to measure" in ran.stderr


def test_an_unknown_extraction_precision_is_refused() -> None:
    ran = _quick("--extraction_only", "--extraction_precisions", "32,fp16")
    assert ran.returncode == 2 and "--extraction_precisions: unknown fp16 (choose from 32, bf16)" in ran.stderr


def test_a_chunk_size_under_one_is_refused() -> None:
    ran = _quick("--extraction_only", "--chunk_size", "0")
    assert ran.returncode == 2 and "--chunk_size must be at least 1" in ran.stderr


def test_joint_padding_counts_the_padding_a_chunk_size_leaves(joint_run, tmp_path) -> None:
    """benchmarks/joint_padding.py: one document a chunk pads nothing; a chunk of every document sorts its sentences
    by length before batching, and so pads less than chunks of two taken in the file's order."""
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    lengths = [3, 20, 4, 19, 5, 18, 6, 17, 7, 16, 8, 15]  # long and short in turn, within the tiny encoder's 128 pieces
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"text": " ".join(words[k % 10] for k in range(n)) + " ."}) + "\n"
                            for n in lengths), encoding="utf-8")
    ran = subprocess.run([sys.executable, str(REPO / "benchmarks" / "joint_padding.py"), "--joint", str(joint_run),
                          "--documents", str(docs), "--one_sentence", "--chunk_sizes", "1,2,12", "--batch_size", "2"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    rows = {int(r[0]): r for r in table_rows(ran.stdout, "Joint model: padded word pieces")}
    assert {size: (r[1], r[2]) for size, r in rows.items()} == {1: ("12", "12"), 2: ("12", "6"), 12: ("12", "6")}
    assert len({r[3] for r in rows.values()}) == 1  # the same pieces read, whatever the chunks
    padded = {size: int(r[4].replace(",", "")) for size, r in rows.items()}
    assert padded[1] == 0 and 0 < padded[12] < padded[2]


def test_joint_padding_refuses_a_run_that_is_not_there(tmp_path) -> None:
    ran = subprocess.run([sys.executable, str(REPO / "benchmarks" / "joint_padding.py"), "--joint",
                          str(tmp_path / "none")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 2 and f"--joint {tmp_path / 'none'}: not found" in ran.stderr

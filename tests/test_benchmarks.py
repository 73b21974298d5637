"""The benchmark suite runs end to end in its quick mode and prints every table with the rows it promises.

No timing is asserted: the figures of a quick run measure nothing; `make bench` is the measurement.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

RUN_ALL = REPO / "benchmarks" / "run_all.py"


@pytest.fixture(scope="module")
def quick_output(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("bench") / "results.md"
    # OpenMP threads that spin while waiting make the 2-thread rows ~20x slower on a busy 2-core machine; the
    # benchmark's in-process trainings load torch before `tacred fit` could set this, so the test sets it
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    result = subprocess.run([sys.executable, str(RUN_ALL), "--quick", "--out", str(out)], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"run_all.py --quick failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout, out


def table_rows(text: str, title_start: str) -> list[list[str]]:
    """The body rows of the Markdown table under the first heading starting with ``title_start``."""
    match = re.search(rf"^### {re.escape(title_start)}.*?\n\n(\|.*?)\n\n", text, re.S | re.M)
    assert match, f"no table titled {title_start!r} in the output:\n{text[:2000]}"
    lines = match.group(1).splitlines()[2:]  # skip the header and the |---| line
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


pytestmark = pytest.mark.slow  # trains the model 5 times for 2 tiny epochs, and 4 times through `tacred fit`


def test_every_table_names_the_machine(quick_output):
    text, _ = quick_output
    assert text.count("- machine: ") >= 7
    assert "cores" in text and "torch " in text
    assert re.search(r"^total: \d+ s$", text, re.M)


def test_relative_attention_table_compares_the_four_forms_per_length(quick_output):
    rows = table_rows(quick_output[0], "Relative-position scores")
    assert [(r[0], r[1]) for r in rows] == [("4", "8"), ("4", "16"), ("1", "16")]
    for row in rows:
        assert all(cell.endswith("x") for cell in row[6:9])  # the speed-up ratios
        assert all(cell.endswith("B") for cell in row[9:13])  # peak memory of each form


def test_training_table_has_every_precision_and_thread_count(quick_output):
    rows = table_rows(quick_output[0], "Training throughput")
    assert [(r[0], r[1]) for r in rows] == [("32-true", "1"), ("32-true", "2"), ("bf16-mixed", "1"), ("bf16-mixed", "2")]
    for row in rows:
        assert float(row[2].replace(",", "")) > 0  # sentences/s
        shares = [int(cell.rstrip("%")) for cell in row[5:9]]
        assert 95 <= sum(shares) <= 105  # the four step phases cover the whole training time


def test_profile_lists_the_ops_of_training_steps(quick_output):
    text = quick_output[0]
    assert "### Profile of" in text
    assert "aten::addmm" in text or "aten::mm" in text


def test_inference_table_has_throughput_and_latency(quick_output):
    rows = table_rows(quick_output[0], "Inference")
    assert [(r[0], r[1]) for r in rows] == [("32-true", "1"), ("32-true", "2"), ("bf16-mixed", "1"), ("bf16-mixed", "2")]
    for row in rows:
        assert all(float(cell.replace(",", "")) > 0 for cell in row[2:6])


def test_data_table_covers_the_data_path_and_the_glove_cache(quick_output):
    rows = table_rows(quick_output[0], "Data path")
    stages = [r[0] for r in rows]
    assert any(s.startswith("JSON → validated examples") for s in stages)
    assert any(s.startswith("TacredDataModule: file → batches") for s in stages)
    assert any(s.startswith("lemmas, first pass (spaCy ") for s in stages)
    assert "lemmas again (from the lemma cache)" in stages
    first = next(r for r in rows if r[0].startswith("GloVe matrix, first build"))
    second = next(r for r in rows if r[0].startswith("GloVe matrix, second load from the cache"))
    assert first[1] == second[1] == "5,000"


def test_end_to_end_table_has_epoch_time_memory_and_test_throughput(quick_output):
    rows = table_rows(quick_output[0], "End to end")
    assert [(r[0], r[1]) for r in rows] == [("32-true", "2")]  # quick mode: the bf16 row only in `make bench`
    for row in rows:
        assert float(row[2]) > 0 and float(row[3]) > 0  # wall of the short and the long fit
        assert row[5].endswith("MiB") and row[9].endswith("MiB")  # peak RSS of fit and test
        assert 0.0 <= float(row[6]) <= 1.0  # dev F1


def test_serving_table_has_requests_per_second_and_latency(quick_output):
    rows = table_rows(quick_output[0], "Serving")
    assert [r[0] for r in rows] == ["1", "8", "32"]
    for row in rows:
        assert int(row[1]) > 0 and float(row[2].replace(",", "")) > 0  # requests answered, requests/s
        assert float(row[3]) <= float(row[4].replace(",", ""))  # p50 <= p99
        assert row[5] == "0"  # no errors
    [soak] = table_rows(quick_output[0], "Serving soak")
    requests, ok, refused_4xx, server_errors, refused = (int(c.replace(",", "")) for c in soak[:5])
    assert requests == ok + refused_4xx and refused_4xx == requests // 4  # every bad request got a 4xx answer
    assert server_errors == 0 and refused == 0
    assert abs(float(soak[10].rstrip("%"))) <= 10  # RSS after the soak within 10% of after the warm-up


def test_transformer_table_has_training_and_both_inference_engines_per_thread_count(quick_output):
    rows = table_rows(quick_output[0], "Transformer encoder")
    inference = ("inference, PyTorch eager", "inference, ONNX Runtime", "inference, ONNX Runtime int8")
    assert [(r[1], r[2]) for r in rows[:8]] == [(what, t) for what in ("training step", *inference) for t in "12"]
    assert [(r[0], r[1], r[2]) for r in rows[8:]] == [("paper network", what, t) for what in inference for t in "12"]
    for row in rows:
        assert float(row[3].replace(",", "")) > 0 and float(row[4].replace(",", "")) > 0  # sentences/s, peak RSS
    assert "ONNX Runtime ÷ PyTorch eager at 2 threads" in quick_output[0] and "(int8, `tacred export" in quick_output[0]


def test_extraction_table_sets_the_pipeline_beside_spacy_ner_alone(quick_output):
    rows = table_rows(quick_output[0], "Extraction throughput")
    assert [(r[0], r[1]) for r in rows] == [("spaCy NER alone (sentencizer + ner)", "1"),
                                           ("spaCy NER + tagger (what the paper network needs)", "1"),
                                           ("paper network (tiny), one pass per pair (before)", "1"),
                                           ("paper network (tiny)", "1"), ("tiny BERT", "1")]
    assert rows[0][4] == "100%" and all(r[4].endswith("%") and float(r[3].replace(",", "")) > 0 for r in rows)
    assert rows[1][5] == "100%" and all(r[5].endswith("%") for r in rows[1:])  # beside spaCy NER + tagger
    for row in rows:  # rates per CPU-second (one worker), beside NER + tagger's
        assert float(row[6].replace(",", "")) > 0 and (row[7].endswith("%") or row is rows[0])
    for row in rows[2:]:  # the relation model's CPU time, FLOPs and their ratio at the measured matmul rate
        assert float(row[8]) > 0 and float(row[9].replace(",", "")) > 0 and float(row[10].rstrip("×")) > 0
    assert " GFLOP/s" in quick_output[0]
    assert "get_cpu_capability() = " in quick_output[0]


def test_out_file_holds_the_printed_tables(quick_output):
    text, out = quick_output
    written = out.read_text(encoding="utf-8")
    for title in ("Relative-position scores", "Training throughput", "Inference", "Data path"):
        assert f"### {title}" in written


def test_bf16_rows_only_where_the_cpu_has_bf16_instructions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import common

    monkeypatch.delenv("TACRED_BENCH_BF16", raising=False)
    monkeypatch.setattr(common, "cpu_flags", lambda: ["avx2"])
    assert common.precisions(quick=False) == ("32-true",)  # eager bf16 is emulated there: minutes per row
    assert common.precisions(quick=True) == ("32-true", "bf16-mixed")  # the smoke test still runs the bf16 path
    monkeypatch.setenv("TACRED_BENCH_BF16", "1")
    assert common.precisions(quick=False) == ("32-true", "bf16-mixed")
    monkeypatch.delenv("TACRED_BENCH_BF16")
    monkeypatch.setattr(common, "cpu_flags", lambda: ["avx2", "avx512_bf16", "avx512f"])
    assert common.precisions(quick=False) == ("32-true", "bf16-mixed")


def test_extraction_shares_are_taken_within_each_round(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import statistics

    import extract_throughput

    # the machine twice as fast in the second round: each round's share is the same, unlike the share of medians
    tagger = [{"sentences_per_s": 100.0}, {"sentences_per_s": 200.0}, {"sentences_per_s": 120.0}]
    paper = [{"sentences_per_s": 60.0}, {"sentences_per_s": 120.0}, {"sentences_per_s": 72.0}]
    shares = extract_throughput.round_shares(paper, tagger, "sentences_per_s")
    assert shares == pytest.approx([60.0, 60.0, 60.0])
    assert statistics.median(shares) == pytest.approx(60.0)
    assert extract_throughput.round_shares(paper, None, "sentences_per_s") == []  # no such row in the run
    cpu = [{"sentences_per_cpu_s": None}, {"sentences_per_cpu_s": 100.0}, {"sentences_per_cpu_s": 100.0}]
    assert extract_throughput.round_shares(cpu, cpu, "sentences_per_cpu_s") == []  # two workers: no CPU rate

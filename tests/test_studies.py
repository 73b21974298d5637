"""The studies under benchmarks/studies/ run from a clean checkout in their small-input modes, as their READMEs in
docs/results/ give them: the pair scorer's batches recorded once (``--quick``), then every script of that study on
them. No figure is asserted: a smoke run measures nothing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # a Python subprocess per script, and a network trained for the recorded batches

SCORER = str(REPO / "tacred" / "models" / "pair_scoring.py")


def study(*args: str, timeout: int = 600) -> str:
    """``python -m benchmarks.studies.ARGS`` from the repository root with this checkout's tacred; its output."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "OMP_WAIT_POLICY": "PASSIVE"}
    done = subprocess.run([sys.executable, "-m", f"benchmarks.studies.{args[0]}", *args[1:]], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("pair_scorer")
    out = study("pair_scorer.time_pair_scorer", str(work), "record", "--quick")
    assert "demo" in out and (work / "kbp37_batches.pkl").is_file() and (work / "demo_batches.pkl").is_file()
    return work


def test_the_scorer_is_timed_against_its_reference(work):
    study("pair_scorer.time_pair_scorer", str(work), "time", "--reference")
    assert "labels agree 1.0000" in study("pair_scorer.time_pair_scorer", str(work), "time")


@pytest.mark.parametrize("args", [
    ("pair_scorer.ab_pair_scorer", "{work}", SCORER, SCORER, "1"),
    ("pair_scorer.profile_pair_scorer", "{work}", SCORER),
    ("pair_scorer.batch_sizes", "{work}", "16", "--rounds", "1"),
    ("pair_scorer.graph_breaks", "{work}"),
    ("pair_scorer.compile_trial", "{work}", "1", "--backend", "eager"),
    ("pair_scorer.generated_kernels", "{work}", "--backend", "eager"),
    ("pair_scorer.signature_questions", "{work}", str(REPO / "tacred" / "extraction" / "preprocess.py"),
     "--repeat", "2"),
    ("pair_scorer.extract_profile", "{work}", "--documents", "8"),
    ("pair_scorer.row_tables_invariance", "{work}", SCORER),
    ("pair_scorer.run_ab", "{work}", "1", "--variants", "stacked_heads", "u_scale", "chunked:400"),
], ids=lambda args: args[0].rsplit(".", 1)[1])
def test_a_script_runs_on_the_recorded_batches(work, args):
    study(*(a.format(work=work) for a in args))


def test_the_line_profile_runs_where_line_profiler_is_installed(work):
    if importlib.util.find_spec("line_profiler") is None:
        pytest.skip("line_profiler is not installed (not a tacred dependency: pip install line_profiler)")
    study("pair_scorer.line_profile", str(work))


def test_the_kernels_and_the_batch_sweep_run_on_their_own():
    assert "GFLOP/s" in study("pair_scorer.kernels", "--quick")
    assert "bs 50" in study("pair_scorer.batch_sweep", "--quick")


def test_the_chunk_edge_study_runs_on_a_small_corpus(tmp_path):
    assert "mentions differ" in study("pair_scorer.chunk_edge", str(tmp_path), "--documents", "24")


def test_the_ner_studies_import(tmp_path):
    """The CoNLL04 NER studies need the real release and minutes to hours of training (their READMEs give the
    commands); here they are imported, so that a moved module or a renamed function shows."""
    for name in ("mpnet_checkpoint", "frozen_probe"):
        assert importlib.util.find_spec(f"benchmarks.studies.conll04_ner.{name}") is not None
    shell = REPO / "benchmarks" / "studies" / "conll04_ner" / "kill_and_resume.sh"
    assert subprocess.run(["bash", "-n", str(shell)], check=False).returncode == 0

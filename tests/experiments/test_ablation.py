"""Tests of ``tacred ablate``: variant files, result bookkeeping, tables, every ablation config on the real CLI
parser with one training step, and a small real sweep (slow)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from tacred.checkpoints import trained_seconds
from tacred.commands import ablate
from tacred.experiments import ablation as A
from tacred.experiments import results as R
from tests.conftest import REPO, run_in_process

ABLATIONS = sorted((REPO / "configs" / "ablations").glob("*.yaml"))


def result(variant: str, seed: int, f1: float, parameters: int = 1000) -> A.RunResult:
    return A.RunResult(variant=variant, seed=seed, precision=f1 + 0.02, recall=f1 - 0.02, f1=f1, dev_f1=f1 + 0.01,
                       parameters=parameters, epochs=3, seconds=1.5)


# -- variant files and stored results ---------------------------------------------------------------------------
def test_variants_dir_follows_the_papers_row_order_then_alphabetical(tmp_path: Path) -> None:
    for name in ("zeta", "relu", "final", "alpha", "lemmas"):
        (tmp_path / f"{name}.yaml").write_text("{}\n")
    assert [v.name for v in A.find_variants(directory=tmp_path)] == ["final", "lemmas", "relu", "alpha", "zeta"]
    explicit = A.find_variants([tmp_path / "zeta.yaml", tmp_path / "final.yaml"])
    assert [v.name for v in explicit] == ["zeta", "final"], "--variants keeps the given order"


def test_bad_variant_files_are_named_in_the_error(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.yaml").write_text("{}\n")
    (tmp_path / "x.yaml").write_text("{}\n")
    (tmp_path / "x.txt").write_text("{}\n")
    with pytest.raises(A.AblationError, match="missing.yaml"):
        A.find_variants([tmp_path / "missing.yaml"])
    with pytest.raises(A.AblationError, match="two variant files are named 'x'"):
        A.find_variants([tmp_path / "x.yaml", tmp_path / "a" / "x.yaml"])
    with pytest.raises(A.AblationError, match="x.txt"):
        A.find_variants([tmp_path / "x.txt"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(A.AblationError, match="no .yaml files"):
        A.find_variants(directory=tmp_path / "empty")


def test_dev_f1_by_epoch_keeps_the_last_row_of_a_resumed_epoch(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text("epoch,step,train/loss,val/f1\n0,1,,0.5\n0,1,2.0,\n1,2,,0.6\n1,2,,0.65\n2,3,,0.55\n")
    assert A.dev_f1_by_epoch(path) == {0: 0.5, 1: 0.65, 2: 0.55}
    path.write_text("epoch,step\n0,1\n")
    with pytest.raises(A.AblationError, match="no 'val/f1' column"):
        A.dev_f1_by_epoch(path)


def test_results_round_trip_and_broken_files_are_named(tmp_path: Path) -> None:
    run = A.run_dir(tmp_path, "relu", 2)
    run.mkdir(parents=True)
    A.write_result(run, result("relu", 2, 0.6), commands=[["tacred", "fit"]])
    assert A.load_results(tmp_path) == [result("relu", 2, 0.6)]
    assert A.load_results(tmp_path, ["final"]) == []
    (run / A.RESULT_FILE).write_text('{"variant": "relu", "seed": 2}')
    with pytest.raises(A.AblationError, match=r"seed_2/result.json: missing precision"):
        A.load_results(tmp_path)
    (run / A.RESULT_FILE).write_text("{")
    with pytest.raises(A.AblationError, match="not valid JSON"):
        A.load_results(tmp_path)


def test_trainable_parameters_count_only_what_gets_gradients() -> None:
    from tacred.models.config import NetworkConfig
    from tacred.models.network import RelationNetwork

    net = RelationNetwork(NetworkConfig(word_dim=24, pos_dim=6, ner_dim=6, ffn_dim=8, attention_dim=5), 40, 9, 7, 4)
    total = sum(p.numel() for p in net.parameters())
    batch = A.probe_batch(40, 9, 7, 4)
    assert A.trainable_parameters(net, batch) == total
    net.unused = torch.nn.Linear(10, 10)  # like the original code's never-used position table
    net.embed.pos.weight.requires_grad_(False)
    assert A.trainable_parameters(net, batch) == total - net.embed.pos.weight.numel()
    assert all(p.grad is None for p in net.parameters()), "the probe leaves no gradients behind"


# -- tables -------------------------------------------------------------------------------------------------------
def test_summary_means_stds_and_delta_against_the_final_model() -> None:
    results = [result("relu", 1, 0.60), result("relu", 2, 0.64), result("final", 1, 0.66, 2000),
               result("final", 2, 0.67, 2000), result("final", 3, 0.65, 2000)]
    rows = A.summarize(results)
    assert [r.variant for r in rows] == ["final", "relu"]
    final, relu = rows
    assert final.seeds == (1, 2, 3) and final.parameters == 2000
    assert final.f1 == pytest.approx((66.0, statistics.stdev([66.0, 67.0, 65.0])))
    assert relu.f1 == pytest.approx((62.0, statistics.stdev([60.0, 64.0])))
    assert relu.precision[0] == pytest.approx(64.0) and relu.recall[0] == pytest.approx(60.0)
    # relu has seeds 1-2 only: Δ compares them with final's seeds 1-2 (66.5), the pairs its p-value tests
    assert relu.delta_f1 == pytest.approx(-4.5) and final.delta_f1 == pytest.approx(0.0)
    assert A.summarize(results, reference="missing")[1].delta_f1 is None
    by_relu = A.summarize(results, reference="relu")
    assert [r.variant for r in by_relu] == ["relu", "final"], "the row the others are compared with comes first"
    assert by_relu[1].delta_f1 == pytest.approx(4.5)
    apart = {r.variant: r for r in A.summarize([*results, result("lemmas", 7, 0.70)])}
    assert apart["lemmas"].delta_f1 is None, "no seed in common: nothing to compare"


def test_plateau_is_where_the_mean_over_seeds_stays_near_its_peak() -> None:
    curves = np.array([[40.0, 60.0, 66.0, 67.0, 69.0, 68.0, 68.6],
                       [42.0, 62.0, 67.0, 68.0, 67.0, 68.6, 68.8]])  # mean 41 61 66.5 67.5 68 68.3 68.7
    found = R.plateau(curves)
    assert found["peak_epoch"] == 7 and found["peak_dev_f1"] == 68.7 and found["seeds"] == 2
    assert found["within_points_of_peak_from_epoch"] == {"1": 5, "0.5": 6}
    assert R.plateau(curves, within=(0.1,))["within_points_of_peak_from_epoch"] == {"0.1": 7}
    assert R.plateau(np.array([[50.0, 70.0, 60.0]]))["within_points_of_peak_from_epoch"]["1"] is None, \
        "a curve that falls away at the end has no plateau"
    assert R.plateau(np.array([[70.0, 69.8]]))["within_points_of_peak_from_epoch"]["0.5"] == 1


def test_a_row_is_settled_when_its_last_ten_epochs_stay_within_a_point_of_its_best() -> None:
    rising = np.linspace(50.0, 70.0, 30)[None, :]  # about 0.7 a epoch to the end
    assert not R.settled(rising)
    flat = np.concatenate([np.linspace(50.0, 69.0, 20), np.full(10, 69.5)])[None, :]
    assert R.settled(flat), "epochs 21-30 within 1 point of the best (69.5)"
    late = flat.copy()
    late[0, 20] = 68.4  # epoch 21, the first of the last ten, 1.1 below the best
    assert not R.settled(late)
    assert R.settled(np.concatenate([late, [[69.5]]], axis=1)), "one epoch more: epoch 21 leaves the last ten"
    falling = np.concatenate([np.full(25, 70.0), np.full(5, 68.0)])[None, :]
    assert not R.settled(falling), "a curve that falls away at the end is not settled either"
    assert R.settled(np.array([[60.0, 60.5, 60.2]])) and not R.settled(np.array([[50.0, 60.0, 60.2]])), \
        "fewer epochs than the window: all of them count"


def test_unsettled_rows_are_marked_with_a_note_in_every_table() -> None:
    rows = A.summarize([result("final", 1, 0.66), result("relu", 1, 0.62)])
    rows = [replace(rows[0], settled=True), replace(rows[1], settled=False)]
    md = A.render_markdown(rows)
    assert "| final | " in md and "| relu † | " in md and md.rstrip().endswith(A.UNSETTLED_NOTE)
    assert r"relu\_$^\dagger$" not in A.render_latex(rows) and r"relu$^\dagger$ &" in A.render_latex(rows)
    assert [r["settled"] for r in csv.DictReader(io.StringIO(A.render_csv(rows)))] == ["true", "false"]
    assert "†" not in A.render_markdown([rows[0]]), "no mark and no note when every row settled"


def test_markdown_latex_and_csv_tables() -> None:
    rows = A.summarize([result("final", 1, 0.66), result("final", 2, 0.67), result("two_residuals", 1, 0.6543, 1234567)])
    md = A.render_markdown(rows, published=True).splitlines()
    assert md[0] == "| Variant | P | R | F1 | Δ F1 vs final | Parameters | Seeds | Paper F1 |"
    assert md[2] == "| final | 68.5 ± 0.7 | 64.5 ± 0.7 | 66.5 ± 0.7 | — | 1,000 | 2 | 66.5 |"
    # Δ pairs seed 1 with final's seed 1 (66.0), not with final's mean over seeds 1-2
    assert md[3] == "| two_residuals | 67.4 | 63.4 | 65.4 | −0.6 | 1,234,567 | 1 | 65.4 |"
    tex = A.render_latex(rows)
    assert r"two\_residuals & 67.4 & 63.4 & 65.4 & $-$0.6 & 1{,}234{,}567 & 1 \\" in tex
    assert r"66.5 $\pm$ 0.7" in tex and tex.startswith(r"\begin{tabular}{lrrrrrr}")
    table = list(csv.DictReader(io.StringIO(A.render_csv(rows))))
    assert table[1]["variant"] == "two_residuals" and float(table[1]["delta_f1"]) == pytest.approx(-0.57)
    assert float(table[0]["f1_std"]) == pytest.approx(statistics.stdev([66.0, 67.0]), abs=1e-4)
    assert table[0]["seeds"] == "1 2" and table[1]["parameters"] == "1234567"


def test_semeval_runs_get_the_official_macro_f1_beside_micro_f1() -> None:
    semeval = [replace(result("final", s, f1), semeval_macro_f1=m) for s, f1, m in ((1, 0.66, 0.64), (2, 0.67, 0.66))]
    rows = A.summarize([*semeval, replace(result("relu", 1, 0.62), semeval_macro_f1=0.6)])
    md = A.render_markdown(rows).splitlines()
    assert md[0] == "| Variant | P | R | F1 | SemEval macro-F1 | Δ F1 vs final | Parameters | Seeds |"
    assert md[2].startswith("| final | 68.5 ± 0.7 | 64.5 ± 0.7 | 66.5 ± 0.7 | 65.0 ± 1.4 | — |")
    assert md[3].startswith("| relu | 64.0 | 60.0 | 62.0 | 60.0 | −4.0 |")
    assert r"66.5 $\pm$ 0.7 & 65.0 $\pm$ 1.4 & --" in A.render_latex(rows)
    table = list(csv.DictReader(io.StringIO(A.render_csv(rows))))
    assert float(table[0]["semeval_macro_f1"]) == pytest.approx(65.0) and table[1]["semeval_macro_f1_std"] == "0.0000"
    mixed = A.summarize([*semeval, result("final", 3, 0.65)])  # a run without the SemEval score
    assert mixed[0].macro_f1 is None and "macro" not in A.render_markdown(mixed), "no column when no row has it all"
    assert A.render_csv(mixed).splitlines()[1].endswith(",,"), "csv keeps the columns, empty"


def test_a_stored_runs_macro_f1_must_be_a_number_or_absent(tmp_path: Path) -> None:
    record = {**asdict(result("final", 1, 0.66)), "semeval_macro_f1": None}
    assert A.RunResult.from_dict(record).semeval_macro_f1 is None
    with pytest.raises(A.AblationError, match=r"run\.json: semeval_macro_f1 must be numbers"):
        A.RunResult.from_dict({**record, "semeval_macro_f1": "high"}, source="run.json")


def test_write_tables_makes_all_four_files(tmp_path: Path) -> None:
    paths = A.write_tables(tmp_path, A.summarize([result("final", 1, 0.66), result("relu", 1, 0.62)]))
    assert [p.name for p in paths] == list(A.TABLE_FILES)
    assert paths[3].read_bytes().startswith(b"\x89PNG")
    assert not list(tmp_path.glob(".*tmp*")), "no temporary files left"


# -- the command, with a fake fit subprocess and a fake evaluation ----------------------------------------------
GOLD = [1, 1, 2, 2, 0, 0, 1, 2, 0, 1]
LABELS = ["no_relation", "per:title", "org:founded"]


def fake_evaluation(checkpoint: Path) -> R.Evaluation:
    """Seed s predicts the first s examples wrongly as no_relation, the rest right."""
    seed = int(checkpoint.parents[1].name.split("_")[1])
    pred = [0] * seed + GOLD[seed:]
    probs = np.full((len(GOLD), 3), 0.1)
    probs[np.arange(len(GOLD)), pred] = 0.8
    return R.Evaluation([f"ex{i}" for i in range(len(GOLD))], LABELS, "no_relation", np.asarray(GOLD), probs)


def expected_f1(seed: int) -> float:
    from tacred.evaluation.scoring import score

    pred = [0] * seed + GOLD[seed:]
    return score([LABELS[i] for i in GOLD], [LABELS[i] for i in pred]).f1


class FakeRuns:
    """Stands in for the fit subprocesses (:func:`tacred.training.api.run_process`): writes what they would write and
    records the calls."""

    def __init__(self, fail: str = "") -> None:
        self.calls: list[list[str]] = []
        self.fail = fail

    def __call__(self, cmd: list[str], log: Path) -> int:
        self.calls.append(cmd)
        run = Path(cmd[cmd.index("--run_dir") + 1])
        if self.fail and self.fail in str(run):
            log.write_text("Traceback: out of memory\n")
            return 1
        (run / "checkpoints").mkdir(parents=True, exist_ok=True)
        for name in ("best.ckpt", "last.ckpt"):
            (run / "checkpoints" / name).write_text("x")
        (run / "metrics.csv").write_text("epoch,val/f1\n0,0.5\n1,0.7\n2,0.6\n")
        (run / "config.yaml").write_text("model:\n  lr: 0.1\n")
        return 0


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeRuns:
    runs = FakeRuns()
    monkeypatch.setattr("tacred.training.api.run_process", runs)
    monkeypatch.setattr(ablate, "count_parameters", lambda path: 4321)
    monkeypatch.setattr(ablate, "evaluate_run", fake_evaluation)
    return runs


def variant_files(tmp_path: Path) -> list[str]:
    files = []
    for name in ("final", "relu"):
        path = tmp_path / f"{name}.yaml"
        path.write_text("{}\n")
        files.append(str(path))
    return files


def test_several_base_configs_come_before_the_variant_in_order(tmp_path: Path, fake: FakeRuns) -> None:
    """A dataset's config, then a tuned recipe, then the variant's overrides: the variant wins over both."""
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model:\n  lr: 0.3\n")
    base = str(REPO / "configs" / "semeval.yaml")
    out = tmp_path / "out"
    assert ablate.main(["--config", base, str(recipe), "--variants", variant_files(tmp_path)[1], "--seeds", "1",
                        "--out", str(out), "--resamples", "10"]) == 0
    [fit] = fake.calls
    configs = [fit[i + 1] for i, arg in enumerate(fit) if arg == "--config"]
    assert configs == [base, str(recipe), str(tmp_path / "relu.yaml")]
    assert json.loads((out / "relu" / "seed_1" / "result.json").read_text())["recipe"] == configs
    assert ablate.main(["--config", base, str(tmp_path / "nope.yaml"), "--variants", variant_files(tmp_path)[1],
                        "--out", str(out / "x")]) == 2


def test_sweep_stores_results_skips_done_runs_and_renders_tables(tmp_path: Path, fake: FakeRuns,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out, runs = tmp_path / "out", tmp_path / "runs"
    args = ["--config", str(REPO / "configs" / "tacred.yaml"), "--variants", *variant_files(tmp_path),
            "--seeds", "1", "2", "--out", str(out), "--runs_dir", str(runs), "--max_epochs", "3",
            "--resamples", "200", "--extra", "--data.data_dir", "d"]
    assert ablate.main(args) == 0
    assert len(fake.calls) == 4
    fit = fake.calls[0]
    assert fit[3:] == ["fit", "--config", str(REPO / "configs" / "tacred.yaml"), "--config", str(tmp_path / "final.yaml"),
                       "--seed_everything", "1", "--run_dir", str(runs / "final" / "seed_1"), "--resume", "auto",
                       "--trainer.max_epochs", "3", "--data.data_dir", "d"]
    stored = json.loads((out / "relu" / "seed_2" / "result.json").read_text())
    assert {k: stored[k] for k in ("variant", "seed", "dev_f1", "parameters", "epochs", "checkpoint", "resumed")} == {
        "variant": "relu", "seed": 2, "dev_f1": 0.7, "parameters": 4321, "epochs": 3, "checkpoint": "best",
        "resumed": False}
    assert stored["f1"] == pytest.approx(expected_f1(2))
    assert stored["dev_curve"] == [0.5, 0.7, 0.6] and stored["config"] == {"model": {"lr": 0.1}}
    assert stored["recipe"] == [str(REPO / "configs" / "tacred.yaml"), str(tmp_path / "relu.yaml")]
    assert stored["test"]["gold"] == GOLD and stored["test"]["pred"] == [0, 0, *GOLD[2:]]
    assert stored["semeval_macro_f1"] is None and "commit" in stored
    assert stored["environment"] == R.environment(), "library versions and CPU kernels are recorded"
    assert stored["training_precision"] == "32-true", "the precision the fit trained in is recorded"
    assert np.load(out / "relu" / "seed_2" / R.PROBS_FILE)["probs"].shape == (10, 3)
    assert not (out / "relu" / "seed_2" / "checkpoints").exists(), "checkpoints stay in the runs folder"
    table = (out / "table.md").read_text()
    assert table.splitlines()[0] == "| Variant | P | R | F1 | Δ F1 vs final | p | Parameters | Seeds |"
    assert "| relu † |" in table and "| 1.000 | 4,321 | 2 |" in table, "identical predictions: p = 1"
    assert table.rstrip().endswith(A.UNSETTLED_NOTE), "relu's dev F1 falls from 70 to 60 in its last epoch"
    assert all((out / name).is_file() for name in A.TABLE_FILES)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["relu"]["test_f1"] == [round(100 * expected_f1(1), 2), round(100 * expected_f1(2), 2)]
    assert summary["relu"]["ensemble_vote_f1"] is not None and summary["relu"]["epochs"] == [3]
    assert summary["relu"]["dev_plateau"] == {"seeds": 2, "epochs": 3, "peak_epoch": 2, "peak_dev_f1": 70.0,
                                              "last_dev_f1": 60.0, "within_points_of_peak_from_epoch": {
                                                  "1": None, "0.5": None}}
    assert (out / R.CURVES_FILE).read_bytes().startswith(b"\x89PNG")

    assert ablate.main(args) == 0 and len(fake.calls) == 4, "finished runs are skipped"
    (out / "relu" / "seed_2" / "result.json").unlink()
    assert ablate.main(args) == 0 and len(fake.calls) == 4, "a finished fit is not repeated, only evaluated"
    assert (out / "relu" / "seed_2" / "result.json").is_file()

    (out / "table.md").unlink()
    capsys.readouterr()
    assert ablate.main(["--out", str(out), "--table_only", "--resamples", "100"]) == 0 and len(fake.calls) == 4
    assert (out / "table.md").is_file() and "| final † |" in capsys.readouterr().out


def test_earlier_seconds_read_the_timer_in_last_ckpt_and_count_nothing_they_cannot_read(tmp_path: Path) -> None:
    checkpoints = tmp_path / "run" / "checkpoints"
    checkpoints.mkdir(parents=True)
    assert A.earlier_seconds(tmp_path / "run") == 0.0  # a fresh run
    old = torch.load(REPO / "tests" / "fixtures" / "checkpoint_v1.ckpt", map_location="cpu", weights_only=False)
    assert trained_seconds(old) is None  # written before fits stored their training time
    torch.save(old, checkpoints / "last.ckpt")
    assert A.earlier_seconds(tmp_path / "run") == 0.0
    old["callbacks"] = {**old.get("callbacks", {}), "Timer": {"time_elapsed": {"train": 812.5, "validate": 0}}}
    torch.save(old, checkpoints / "last.ckpt")
    assert A.earlier_seconds(tmp_path / "run") == 812.5
    (checkpoints / "last.ckpt").write_bytes(b"cut off")  # the fit that resumes from it reports the file
    assert A.earlier_seconds(tmp_path / "run") == 0.0


def test_last_epoch_checkpoint_and_resumed_fit(tmp_path: Path, fake: FakeRuns) -> None:
    out = tmp_path / "out"
    (out / "final" / "seed_1" / "checkpoints").mkdir(parents=True)
    (out / "final" / "seed_1" / "checkpoints" / "last.ckpt").write_text("x")  # an interrupted fit
    assert ablate.main(["--config", str(REPO / "configs" / "tacred.yaml"), "--variants", variant_files(tmp_path)[0],
                        "--seeds", "1", "--out", str(out), "--checkpoint", "last"]) == 0
    stored = json.loads((out / "final" / "seed_1" / "result.json").read_text())
    assert stored["resumed"] is True and stored["dev_f1"] == 0.6 and stored["checkpoint"] == "last"


def test_a_run_records_the_commit_its_fit_started_on(tmp_path: Path, fake: FakeRuns,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    commits = iter(["aaa1111", "bbb2222"])  # the checkout moves to another commit while the fit trains
    monkeypatch.setattr(R, "git_commit", lambda cwd=None: next(commits))
    out = tmp_path / "out"
    assert ablate.main(["--config", str(REPO / "configs" / "tacred.yaml"), "--variants", variant_files(tmp_path)[0],
                        "--seeds", "1", "--out", str(out)]) == 0
    assert json.loads((out / "final" / "seed_1" / "result.json").read_text())["commit"] == "aaa1111"


@pytest.mark.slow  # Python and git in subprocesses
def test_a_copy_records_the_commit_it_was_copied_from_not_its_stale_git(tmp_path: Path) -> None:
    # a job on a machine the code was copied to names its commit in TACRED_COMMIT; without .git it is that or None
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "tacred", copy / "tacred")
    code = "from tacred.experiments.results import git_commit; print(git_commit())"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(PYTHONPATH=str(copy), GIT_CEILING_DIRECTORIES=str(tmp_path))
    bare = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=copy)
    assert bare.stdout.strip() == "None"
    named = subprocess.run([sys.executable, "-c", code], env={**env, "TACRED_COMMIT": "2b688f8"}, capture_output=True,
                           text=True, check=True, cwd=copy)
    assert named.stdout.strip() == "2b688f8"
    # a copy with a stale .git (HEAD at an older commit, files changed): the variable names the code that runs
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for step in (["init", "-q"], ["add", "tacred"], ["commit", "-qm", "older code"]):
        subprocess.run(git + step, cwd=copy, check=True, env=env)
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          cwd=copy).stdout.strip() not in ("None", "fa8cbdf")  # git's own answer
    stale = subprocess.run([sys.executable, "-c", code], env={**env, "TACRED_COMMIT": "fa8cbdf"}, capture_output=True,
                           text=True, check=True, cwd=copy)
    assert stale.stdout.strip() == "fa8cbdf"


@pytest.mark.slow  # a Python subprocess per kernel setting
def test_the_recorded_environment_names_the_cpu_kernels_that_aten_cpu_capability_chose() -> None:
    # AVX2 and AVX-512 kernels round differently: a run's record must say which trained it, read from torch, not
    # assumed from the machine
    code = "import json; from tacred.experiments.results import environment; print(json.dumps(environment()))"
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=REPO)
    recorded = json.loads(done.stdout)
    assert recorded["cpu_capability"] == "DEFAULT"
    assert recorded["torch"] == torch.__version__ and recorded["machine"] == platform.machine()


def test_cluster_jobs_list_only_and_failures(tmp_path: Path, fake: FakeRuns, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    base = ["--config", str(REPO / "configs" / "tacred.yaml"), "--variants", *variant_files(tmp_path), "--out", str(out)]
    assert ablate.main([*base, "--seeds", "1", "2", "--list"]) == 0
    assert capsys.readouterr().out.splitlines() == ["final 1 todo", "final 2 todo", "relu 1 todo", "relu 2 todo"]
    assert ablate.main([*base, "--seeds", "2", "--only", "relu"]) == 0
    assert [c[c.index("--run_dir") + 1] for c in fake.calls] == [str(out / "relu" / "seed_2")]
    assert ablate.main([*base, "--seeds", "1", "2", "--list"]) == 0
    assert "relu 2 done" in capsys.readouterr().out
    fake.fail = "final"
    assert ablate.main([*base, "--seeds", "1"]) == 1
    err = capsys.readouterr().err
    assert "final seed 1: FAILED" in err and "fit.log" in err and "out of memory" in err
    assert (out / "relu" / "seed_1" / "result.json").is_file(), "the other runs go on"


def test_summary_names_the_variant_with_the_best_mean_dev_f1_as_best(tmp_path: Path, fake: FakeRuns) -> None:
    out = tmp_path / "out"
    assert ablate.main(["--config", str(REPO / "configs" / "tacred.yaml"), "--variants", *variant_files(tmp_path),
                        "--out", str(out), "--seeds", "1", "2"]) == 0
    for seed, dev in ((1, 0.9), (2, 0.6)):  # relu: mean dev F1 0.75, final: 0.7 in both seeds
        path = out / "relu" / f"seed_{seed}" / "result.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "dev_f1": dev}))
    assert ablate.main(["--out", str(out), "--table_only"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["best"]["variant"] == "relu" and summary["best"]["dev_f1"] == [90.0, 60.0]
    assert summary["best"]["test_f1"] == summary["relu"]["test_f1"]


@pytest.mark.parametrize(("candidate_dev", "chosen"), [(0.8, "best"), (0.5, "relu")])
def test_a_variant_named_best_is_chosen_on_dev_like_any_other(tmp_path: Path, fake: FakeRuns, candidate_dev: float,
                                                              chosen: str) -> None:
    """configs/semeval/best.yaml is a candidate: `best` in the summary is whichever variant has the highest mean
    dev F1; a candidate that loses keeps its numbers under `best_candidate`."""
    out = tmp_path / "out"
    files = variant_files(tmp_path)
    (tmp_path / "best.yaml").write_text("{}\n")
    assert ablate.main(["--config", str(REPO / "configs" / "tacred.yaml"), "--variants", *files,
                        str(tmp_path / "best.yaml"), "--out", str(out), "--seeds", "1"]) == 0
    for name, dev in (("relu", 0.75), ("best", candidate_dev)):  # final: 0.7
        path = out / name / "seed_1" / "result.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "dev_f1": dev}))
    assert ablate.main(["--out", str(out), "--table_only"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["best"]["variant"] == chosen
    assert summary["best"]["dev_f1"] == [100 * max(0.75, candidate_dev)]
    assert ("best_candidate" in summary) == (chosen != "best")
    if chosen != "best":
        assert summary["best_candidate"]["dev_f1"] == [100 * candidate_dev]


@pytest.mark.slow  # other processes hold the sweep's claims
def test_processes_sharing_a_sweep_skip_runs_another_holds_and_take_over_dead_ones(
        tmp_path: Path, fake: FakeRuns, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import socket
    import subprocess
    import sys

    out = tmp_path / "out"
    base = ["--config", str(REPO / "configs" / "tacred.yaml"), "--variants", *variant_files(tmp_path), "--out", str(out),
            "--seeds", "1"]
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        host = socket.gethostname()
        for variant, pid in (("final", alive.pid), ("relu", dead.pid)):
            (out / variant / "seed_1").mkdir(parents=True)
            (out / variant / "seed_1" / A.CLAIM_FILE).write_text(json.dumps({"pid": pid, "host": host}))
        assert ablate.main(base) == 0
    finally:
        alive.kill()
        alive.wait()
    printed = capsys.readouterr().out
    assert f"final seed 1: run by another process (pid {alive.pid} on {host}), skipped" in printed
    assert [c[c.index("--run_dir") + 1] for c in fake.calls] == [str(out / "relu" / "seed_1")], "the dead one's run"
    assert not (out / "relu" / "seed_1" / A.CLAIM_FILE).exists(), "released when the run is done"
    assert A.claim_run(out / "relu" / "seed_1") is None and A.claim_run(out / "relu" / "seed_1") == f"pid {os.getpid()} on {host}"


def test_no_run_starts_after_the_timeout(tmp_path: Path, fake: FakeRuns, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--config", str(REPO / "configs" / "tacred.yaml"), "--variants", *variant_files(tmp_path),
            "--out", str(tmp_path / "out"), "--seeds", "1", "2"]
    assert ablate.main([*base, "--timeout", "0"]) == 0
    assert fake.calls == [] and "[1/4] final seed 1: not started (--timeout 0 s reached)" in capsys.readouterr().out
    assert ablate.main(base) == 0 and len(fake.calls) == 4, "the same command goes on"


@pytest.mark.parametrize(("argv", "message"), [
    (["--variants", "x.yaml"], "variant file not found: x.yaml"),
    (["--table_only"], "no result.json under"),
    ([], "give --variants"),
])
def test_user_errors_exit_2_with_one_line(argv: list[str], message: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert ablate.main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_missing_config_and_unknown_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = variant_files(tmp_path)
    assert ablate.main(["--variants", *files, "--config", str(tmp_path / "nope.yaml")]) == 2
    assert "base config not found" in capsys.readouterr().err
    assert ablate.main(["--variants", *files, "--only", "gelu"]) == 2
    assert "--only gelu: no such variant" in capsys.readouterr().err


# -- every ablation config on the real parser, plus one training step ------------------------------------------
@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tacred.datasets.synthetic import write_corpus

    folder = tmp_path_factory.mktemp("tiny")
    write_corpus(folder, seed=3, n_train=40, n_dev=10, n_test=10)
    return folder


def parsed_config(variant: Path, data_dir: Path) -> dict:
    """What ``tacred fit --config configs/tacred.yaml --config VARIANT`` resolves to (the real parser)."""
    from tacred.training.cli import TacredCLI

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit) as done:
        TacredCLI(args=["fit", "--config", str(REPO / "configs" / "tacred.yaml"), "--config", str(variant),
                        "--data.data_dir", str(data_dir), "--model.network.word_dim", "24",
                        "--print_config"])
    assert done.value.code in (0, None)
    return yaml.safe_load(buf.getvalue())


def test_every_table_row_has_a_config() -> None:
    assert {p.stem for p in ABLATIONS} >= set(A.row_order())
    for path in ABLATIONS:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# ") and "?" in first, f"{path.name}: first line should state the question"


@pytest.mark.parametrize("path", ABLATIONS, ids=[p.stem for p in ABLATIONS])
def test_ablation_config_parses_and_trains_one_step(path: Path, tiny_data: Path) -> None:
    from tacred.models.config import NetworkConfig
    from tacred.training.datamodule import TacredDataModule
    from tacred.training.module import RelationExtractor

    cfg = parsed_config(path, tiny_data)
    override = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, value in override.get("model", {}).get("network", {}).items():
        assert cfg["model"]["network"][key] == value, f"{path.name}: {key} did not reach the parsed config"
    for section in ("trainer", "data"):
        for key, value in override.get(section, {}).items():
            assert cfg[section][key] == value, f"{path.name}: {section}.{key} did not reach the parsed config"
    torch.manual_seed(0)
    data = TacredDataModule(**cfg["data"], seed=cfg["seed_everything"])
    model_args = {k: v for k, v in cfg["model"].items() if k != "network"}
    model = RelationExtractor(vocab=data.vocab, word_vectors=data.word_vectors,
                              network=NetworkConfig(**cfg["model"]["network"]), **model_args)
    assert data.vocab.use_lemmas == bool(override.get("data", {}).get("use_lemmas"))
    data.setup("fit")
    batch = next(iter(data.train_dataloader()))
    optimizer = model.configure_optimizers()["optimizer"]
    before = [p.detach().clone() for p in model.parameters()]
    loss = torch.nn.functional.cross_entropy(model(batch).logits, batch.labels)
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))


# -- a real sweep ---------------------------------------------------------------------------------------------------
def run_ablate(*args: str) -> str:
    """``tacred ablate ARGS`` in this process (its runs are still `tacred fit` subprocesses); returns its stdout."""
    return run_in_process("ablate", *args).stdout


@pytest.mark.slow
def test_real_sweep_two_variants_resume_and_table_only(tmp_path: Path, tiny_data: Path) -> None:
    out = tmp_path / "sweep"
    args = ["--config", str(REPO / "configs" / "tacred.yaml"),
            "--variants", str(REPO / "configs/ablations/final.yaml"), str(REPO / "configs/ablations/san_r.yaml"),
            "--seeds", "1", "--out", str(out), "--max_epochs", "1",  # several seeds: the fake runs above
            "--extra", "--data.data_dir", str(tiny_data), "--model.network.word_dim", "24",
            "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]
    run_ablate(*args)
    results = A.load_results(out)
    runs = [(r.variant, r.seed, r.epochs) for r in results]
    assert runs == [("final", 1, 1), ("san_r", 1, 1)]
    final, san_r = A.summarize(results)
    assert san_r.parameters < final.parameters, "SAN+R's 3 × 257 scalars replace the relative-position vectors"
    assert all(0 <= r.f1 <= 1 and r.parameters > 0 for r in results)
    table = (out / "table.md").read_text()
    assert "| final |" in table and "| san_r |" in table
    assert len(json.loads((out / "final" / "seed_1" / "result.json").read_text())["test"]["pred"]) == 10
    assert set(json.loads((out / "summary.json").read_text())) == {"final", "san_r", "best"}

    assert run_ablate(*args).count("done before, skipped") == 2

    run = out / "final" / "seed_1"  # pretend the sweep stopped after epoch 1 of a 2-epoch fit
    (run / "result.json").unlink()
    (run / "fit.done").unlink()
    last = run / "checkpoints" / "last.ckpt"
    ckpt = torch.load(last, map_location="cpu", weights_only=False)
    assert 0 < trained_seconds(ckpt) < 600
    ckpt["callbacks"]["Timer"]["time_elapsed"]["train"] = 5000.0  # say that leg trained for 5,000 s
    torch.save(ckpt, last)
    run_ablate(*args[: args.index("--max_epochs")], "--max_epochs", "2", "--only", "final", "--seeds", "1",
               *args[args.index("--extra"):])
    stored = json.loads((run / "result.json").read_text())
    assert stored["resumed"] is True and stored["epochs"] == 2
    # seconds count the earlier leg too, and the resumed checkpoint carries the sum on
    assert 5000 < stored["seconds"] < 5600
    assert 5000 < trained_seconds(torch.load(last, map_location="cpu", weights_only=False)) < 5600
    assert "resuming from" in (run / "fit.log").read_text()

    for name in A.TABLE_FILES:
        (out / name).unlink()
    run_ablate("--out", str(out), "--table_only")
    assert all((out / name).is_file() for name in A.TABLE_FILES)


# -- the committed ablation tables (tests/test_documented_commands.py re-renders them as the docs say) ---------------
@pytest.mark.parametrize("study", ["semeval_glove", "semeval"])
def test_the_ablations_page_shows_the_committed_tables(study: str) -> None:
    table = (REPO / "docs" / "results" / study / "ablation" / "table.md").read_text().split("\n\n")[0]
    assert table in (REPO / "docs" / "ablations.md").read_text(), f"docs/ablations.md shows a stale {study} table"


def test_the_test_split_is_scored_on_the_gpu_where_there_is_one(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    """A sweep on a GPU machine scores on the GPU its fits trained on, not on that machine's CPU (``device='auto'``
    resolves to CUDA there and to the CPU here)."""
    import tacred.training as training

    seen: list[tuple[Path, str, str]] = []
    monkeypatch.setattr(training, "evaluate", lambda ckpt, split, device="cpu": seen.append((ckpt, split, device)))
    ablate.evaluate_run(tmp_path / "last.ckpt")
    assert seen == [(tmp_path / "last.ckpt", "test", "auto")]

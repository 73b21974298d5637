"""benchmarks/original_code.py: its parts on tiny inputs (the side-by-side run itself trains for hours)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("original_code_bench", REPO / "benchmarks" / "original_code.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_without_the_original_code_it_says_so_and_exits_0(bench, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(bench, "PEER", tmp_path / "missing" / "tac-self-attention")
    assert bench.main(["--epochs", "2", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "the original code is not at" in out and "skipped" in out
    assert not (tmp_path / "out").exists()  # nothing converted, nothing trained


def test_fewer_than_two_epochs_are_refused(bench, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--epochs", "1"])
    assert "--epochs must be at least 2" in capsys.readouterr().err


def test_seconds_per_epoch_leave_out_the_start_up_and_the_first_epoch(bench):
    training = bench.Training(epoch_ends=[50.0, 60.0, 74.0], cpu_ends=[20.0, 28.0, 38.0])
    assert training.seconds_per_epoch() == 12.0
    assert training.cpu_seconds_per_epoch() == 9.0
    with pytest.raises(ValueError, match="at least 2 epochs"):
        bench.Training(epoch_ends=[5.0], cpu_ends=[1.0]).seconds_per_epoch()


@pytest.mark.slow  # the watched command is a subprocess
def test_a_watched_command_gives_its_epoch_times_cpu_and_peak_memory(bench, tmp_path):
    script = "import time\nfor e in (1, 2, 3):\n    time.sleep(0.05)\n    print(f'epoch {e}: train_loss = 1.0')\n"
    watched = bench.run_watched([sys.executable, "-c", script], tmp_path / "log.txt", tmp_path, bench.thread_env(),
                                bench.ORIGINAL_EPOCH_END, epochs=3)
    assert len(watched.epoch_ends) == len(watched.cpu_ends) == 3
    assert watched.epoch_ends == sorted(watched.epoch_ends) and watched.seconds >= watched.epoch_ends[-1]
    assert watched.peak_rss_mib > 1
    assert (tmp_path / "log.txt").read_text().count("train_loss") == 3


@pytest.mark.slow  # the watched command is a subprocess
def test_a_failed_command_is_an_error_quoting_its_log(bench, tmp_path):
    with pytest.raises(RuntimeError, match="failed \\(3\\)") as err:
        bench.run_watched([sys.executable, "-c", "print('broken here'); raise SystemExit(3)"], tmp_path / "log.txt",
                          tmp_path, bench.thread_env())
    assert "broken here" in str(err.value)


@pytest.mark.slow  # the watched command is a subprocess
def test_a_missing_epoch_line_is_an_error(bench, tmp_path):
    with pytest.raises(RuntimeError, match="expected 2 epoch lines, found 1"):
        bench.run_watched([sys.executable, "-c", "print('epoch 1/2 done')"], tmp_path / "log.txt", tmp_path,
                          bench.thread_env(), bench.PROJECT_EPOCH_END, epochs=2)


def _kbp37_like(folder: Path) -> Path:
    folder.mkdir()
    gold = ["per:employee_of(e1,e2)", "no_relation", "org:founded_by(e2,e1)", "per:employee_of(e1,e2)"]
    examples = [{"id": f"t{i}", "relation": label} for i, label in enumerate(gold)]
    (folder / "test.json").write_text(json.dumps(examples))
    # one sentence of the release that could not be converted: it counts as a no_relation prediction
    (folder / "conversion.json").write_text(json.dumps({"sizes": {"test": 4}, "unconverted": {
        "test": [{"id": "u0", "relation": "org:founded_by(e2,e1)"}]}}))
    return folder


def test_predictions_are_scored_over_the_whole_release_by_the_projects_scorers(bench, tmp_path):
    from tacred.evaluation.scoring import score, semeval_macro_f1

    data = _kbp37_like(tmp_path / "kbp37")
    pred = ["per:employee_of(e1,e2)", "no_relation", "org:founded_by(e1,e2)", "no_relation"]
    got = bench.test_scores(data, pred, "preds.txt")
    gold = ["per:employee_of(e1,e2)", "no_relation", "org:founded_by(e2,e1)", "per:employee_of(e1,e2)",
            "org:founded_by(e2,e1)"]
    full = [*pred, "no_relation"]
    assert got["sentences"] == 5
    assert got["micro_f1"] == pytest.approx(100 * score(gold, full).f1)
    assert got["macro_f1"] == pytest.approx(100 * semeval_macro_f1(gold, full).macro_f1)
    # per:employee_of: P 1, R 1/2 → F1 2/3; org:founded_by: guessed once in the wrong direction → F1 0
    assert got["macro_f1"] == pytest.approx(100 * (2 / 3) / 2)


def test_predictions_of_another_length_are_refused(bench, tmp_path):
    data = _kbp37_like(tmp_path / "kbp37")
    with pytest.raises(ValueError, match="3 predictions for the 4 examples"):
        bench.test_scores(data, ["no_relation"] * 3, "preds.txt")


def test_both_implementations_train_with_the_same_dimensions(bench, tmp_path):
    args = bench.project_fit_args(tmp_path / "data", tmp_path / "glove.txt", tmp_path / "run", seed=3, epochs=5)
    options = dict(zip(args[1::2], args[2::2], strict=False)) | dict(zip(args[2::2], args[3::2], strict=False))
    assert options["--config"].endswith("configs/tacred.yaml")
    assert options["--model.network.word_dim"] == str(bench.WORD_DIM) == "50"
    assert options["--model.network.pos_dim"] == options["--model.network.ner_dim"] == str(bench.TAG_DIM) == "35"
    assert bench.WORD_DIM + 2 * bench.TAG_DIM == bench.WIDTH == 120 and bench.WIDTH % 3 == 0  # 3 heads of 40
    assert options["--num_threads"] == "1" and options["--trainer.max_epochs"] == "5"
    assert options["--seed_everything"] == "3"


def test_each_result_is_written_when_done_and_a_finished_one_is_skipped(bench, monkeypatch, tmp_path):
    data = _kbp37_like(tmp_path / "kbp37")
    trained = []

    def fake(impl: str, predicted: list[str]):
        def train(out, data_dir, glove, seed, epochs):
            trained.append(impl)
            return bench.Training(seconds=9.0, peak_rss_mib=100.0, epoch_ends=[2.0, 5.0], cpu_ends=[1.0, 3.0]), predicted
        return train

    monkeypatch.setattr(bench, "train_original", fake("original", ["no_relation"] * 4))
    monkeypatch.setattr(bench, "train_project", fake("project", ["per:employee_of(e1,e2)"] * 4))
    out = tmp_path / "out"
    results = bench.run_both(out, data, tmp_path / "glove.txt", seed=1, epochs=2)
    assert sorted(trained) == ["original", "project"]
    for impl in bench.IMPLEMENTATIONS:
        saved = json.loads(bench.result_path(out, impl, 1).read_text())
        assert saved == results[impl]
        assert saved["seconds_per_epoch"] == 3.0 and saved["cpu_seconds_per_epoch"] == 2.0
        assert saved["best_dev_micro_f1"] is None  # no training log in this fake run
    assert results["project"]["test"]["macro_f1"] > results["original"]["test"]["macro_f1"] == 0.0
    assert "2 epochs" in bench.summary_table({1: results}, 2).render()

    bench.result_path(out, "project", 1).unlink()  # as if the run had stopped before the project finished
    trained.clear()
    bench.run_both(out, data, tmp_path / "glove.txt", seed=1, epochs=2)
    assert trained == ["project"]


def test_a_failure_of_one_implementation_is_reported_after_the_other_finished(bench, monkeypatch, tmp_path):
    data = _kbp37_like(tmp_path / "kbp37")

    def broken(*args):
        raise RuntimeError("runner.py failed (1)")

    def works(*args):
        return bench.Training(epoch_ends=[1.0, 2.0], cpu_ends=[1.0, 2.0]), ["no_relation"] * 4

    monkeypatch.setattr(bench, "train_original", broken)
    monkeypatch.setattr(bench, "train_project", works)
    with pytest.raises(RuntimeError, match="original, seed 1: runner.py failed"):
        bench.run_both(tmp_path / "out", data, tmp_path / "glove.txt", seed=1, epochs=2)
    assert bench.result_path(tmp_path / "out", "project", 1).is_file()

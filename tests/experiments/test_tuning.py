"""Tests of ``tacred tune``: the search-space file, overrides, the study files, and real tiny studies on the demo
corpus, one of them killed mid-trial and resumed by running the same command again."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml

from tacred.commands import tune
from tacred.experiments import tuning as T
from tacred.experiments.ablation import dev_f1_by_epoch
from tacred.experiments.results import environment, git_commit
from tests.conftest import REPO, free_port, run_in_process

SPACE = {
    "parameters": {
        "model.lr": {"type": "float", "low": 0.05, "high": 0.5, "log": True},
        "model.network.dropout": {"type": "float", "low": 0.2, "high": 0.4, "step": 0.1},
        "model.decay_patience": {"type": "int", "low": 1, "high": 3},
        "model.lr_schedule": {"type": "categorical", "choices": ["stall", "cosine"]},
    },
}


# -- the search space --------------------------------------------------------------------------------------------
def test_shipped_spaces_load_and_name_existing_configs() -> None:
    for path in sorted((REPO / "configs" / "tune").glob("*.yaml")):
        space = T.SearchSpace.load(path)
        assert space.parameters and space.metric == "val/f1"
        assert all((REPO / c).is_file() for c in space.configs), path
        assert "model.lr" in {p.name for p in space.parameters}


@pytest.mark.parametrize("path", sorted((REPO / "configs" / "tune").glob("*.yaml")), ids=lambda p: p.stem)
@pytest.mark.parametrize("end", [0, -1])
def test_shipped_spaces_give_trial_commands_that_parse(path: Path, end: int, tmp_path: Path) -> None:
    """A trial's `tacred fit` command line, at either end of every range and choice, is a valid configuration
    holding the drawn values (a typo in a space file would otherwise fail hours into a study)."""

    space = T.SearchSpace.load(path)
    kinds = {"int": int, "float": float}
    values = {p.name: p.choices[end] if p.type == "categorical" else kinds[p.type]((p.low, p.high)[end])
              for p in space.parameters}
    args = T.Objective(space, tmp_path).fit_args(values, tmp_path / "trial")
    printed = yaml.safe_load(run_in_process("fit", *args, "--print_config").stdout)
    for name, value in {**space.fixed, **values}.items():
        node = printed
        for part in name.split("."):
            node = node[part]
        assert node == value, name


def merged(*configs: dict) -> dict:
    """Config files applied in order, as `tacred fit --config A --config B` does: mappings merge, values replace."""
    out: dict = {}
    for config in configs:
        for key, value in config.items():
            out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


# the study each recipe in configs/semeval/ comes from (configs/semeval/NAME.yaml ← docs/results/semeval/tune_NAME/),
# the record of that study it copies, and what it sets on top: `paper` is the winner of the three-seed re-check
# (docs/results/semeval/recheck/), `best` is PA-LSTM's recipe with lemmas (chosen on the ablation's dev F1)
RECIPE_STUDY = {"paper": ("paper_60_epochs", "recheck_best.yaml", {}),
                "best": ("pa_lstm", "best.yaml", {"data": {"use_lemmas": True}})}


# the random-vector study's recipes (configs/semeval/glove.yaml sets the vectors and transformer.yaml is a recipe of its
# own, both written by hand, not copied from a study)
STUDY_RECIPES = [REPO / "configs" / "semeval" / f"{name}.yaml" for name in ("best", "pa_lstm", "paper")]


@pytest.mark.parametrize("recipe", STUDY_RECIPES, ids=lambda p: p.stem)
def test_a_tuned_recipe_is_its_studys_best_trial_and_a_config_fit_accepts(recipe: Path) -> None:
    """A recipe is one override file on configs/semeval.yaml: the study's other base configs (e.g. PA-LSTM's
    network) with its best (or re-checked best) trial's values on top."""
    study, record, on_top = RECIPE_STUDY.get(recipe.stem, (recipe.stem, "best.yaml", {}))
    space = T.SearchSpace.load(REPO / "configs" / "tune" / f"semeval_{study}.yaml")
    assert space.configs[0] == "configs/semeval.yaml", "recipes apply on configs/semeval.yaml"
    best = yaml.safe_load((REPO / "docs" / "results" / "semeval" / f"tune_{study}" / record).read_text())
    expected = merged(*(yaml.safe_load((REPO / c).read_text()) for c in space.configs[1:]), best, on_top)
    assert yaml.safe_load(recipe.read_text()) == expected, "copied from the study's record"
    printed = yaml.safe_load(run_in_process("fit", "--config", str(REPO / "configs" / "semeval.yaml"), "--config",
                                            str(recipe), "--print_config").stdout)
    assert printed["model"]["lr"] == pytest.approx(best["model"]["lr"])
    network = printed["model"]["network"] or {}  # null: the paper's network as the model's defaults build it
    assert network.get("encoder", "self_attention") == expected["model"].get("network", {}).get("encoder", "self_attention")


# the GloVe study's recipes (docs/results/semeval_glove/): each study's re-checked best on its base configs (the
# vectors and the input layout chosen on dev), one override file on configs/semeval.yaml; `best` is PA-LSTM's with
# lemmas, as in the random-vector study
GLOVE_RECIPES = sorted((REPO / "configs" / "semeval" / "glove").glob("*.yaml"))
GLOVE_ON_TOP = {"best": ("pa_lstm", {"data": {"use_lemmas": True}})}


@pytest.mark.parametrize("recipe", GLOVE_RECIPES, ids=lambda p: p.stem)
def test_a_glove_recipe_is_its_studys_rechecked_best_on_the_studys_base_configs(recipe: Path) -> None:
    study, on_top = GLOVE_ON_TOP.get(recipe.stem, (recipe.stem, {}))
    space = T.SearchSpace.load(REPO / "configs" / "tune" / f"semeval_glove_{study}.yaml")
    assert space.configs[0] == "configs/semeval.yaml", "recipes apply on configs/semeval.yaml"
    best = yaml.safe_load((REPO / "docs" / "results" / "semeval_glove" / f"tune_{study}" /
                           "recheck_best.yaml").read_text())
    expected = merged(*(yaml.safe_load((REPO / c).read_text()) for c in space.configs[1:]), best, on_top)
    assert yaml.safe_load(recipe.read_text()) == expected, "copied from the study's record"
    assert expected["data"]["glove_path"] == "glove-6b-50d" and expected["model"]["network"]["word_dim"] == 50


@pytest.mark.parametrize(("change", "message"), [
    ({"parameters": {}}, "'parameters' must map"),
    ({"parameters": {"model.lr": {"type": "normal", "low": 0, "high": 1}}}, "parameters.model.lr: type must be one of"),
    ({"parameters": {"model.lr": {"type": "float", "low": 1.0, "high": 0.1}}}, "low .1.0. is above high"),
    ({"parameters": {"model.lr": {"type": "float", "low": 0.0, "high": 1.0, "log": True}}}, "log-scale range needs low > 0"),
    ({"parameters": {"model.lr": {"type": "float", "low": "a", "high": 1.0}}}, "'low' must be a finite number"),
    ({"parameters": {"x": {"type": "int", "low": 1, "high": 2.5}}}, "whole numbers"),
    ({"parameters": {"x": {"type": "categorical", "choices": []}}}, "non-empty list 'choices'"),
    ({"parameters": {"x": {"type": "float", "low": 0, "high": 1, "spread": 2}}}, "unknown key.s. spread"),
    ({"fixed": {"model.lr": 0.1}}, "model.lr is both fixed and searched"),
    ({"pruner": {"name": "sometimes"}}, "'pruner' must be a mapping whose 'name' is one of"),
    ({"seed": "one"}, "'seed' must be an integer"),
    ({"extra": 1}, "unknown key.s. extra"),
])
def test_bad_search_spaces_are_named(change: dict, message: str) -> None:
    with pytest.raises(T.TuneError, match=message):
        T.SearchSpace.from_dict({**SPACE, **change}, "space.yaml")


def test_a_trials_value_is_its_last_epochs_mean_or_its_best_epoch() -> None:
    dev = {0: 0.4, 1: 0.7, 2: 0.6, 3: 0.5}
    assert T.SearchSpace.from_dict(SPACE).score(dev) == pytest.approx(0.6)
    assert T.SearchSpace.from_dict({**SPACE, "window": 1}).score(dev) == 0.5
    assert T.SearchSpace.from_dict({**SPACE, "objective": "best"}).score(dev) == 0.7
    with pytest.raises(T.TuneError, match="'objective' must be one of last, best"):
        T.SearchSpace.from_dict({**SPACE, "objective": "median"})


def test_suggestions_become_command_line_overrides_and_a_config_file() -> None:
    space = T.SearchSpace.from_dict(SPACE)
    trial = optuna.trial.FixedTrial({"model.lr": 0.3, "model.network.dropout": 0.3, "model.decay_patience": 2,
                                     "model.lr_schedule": "cosine"})
    params = {p.name: p.suggest(trial) for p in space.parameters}
    args = T.override_args({**params, "data.labels": None, "trainer.deterministic": True})
    assert args == ["--model.lr", "0.3", "--model.network.dropout", "0.3", "--model.decay_patience", "2",
                    "--model.lr_schedule", "cosine", "--data.labels", "null", "--trainer.deterministic", "true"]
    assert T.nested(params) == {"model": {"lr": 0.3, "network": {"dropout": 0.3}, "decay_patience": 2,
                                          "lr_schedule": "cosine"}}


def test_a_resumed_study_draws_new_parameters_from_a_moved_seed() -> None:
    first = T.build_sampler({"name": "random", "seed": 3})
    again = T.build_sampler({"name": "random", "seed": 3})
    moved = T.build_sampler({"name": "random", "seed": 3}, offset=5)

    def draw(sampler: object) -> float:
        study = optuna.create_study(sampler=sampler)
        return study.ask().suggest_float("x", 0, 1)

    assert draw(first) == draw(again) != draw(moved)


def test_a_seeded_study_keeps_every_trials_label_and_labels_new_trials_after_them(tmp_path: Path) -> None:
    def record(number: int, run: str, x: float) -> dict:
        return {"number": number, "state": "COMPLETE", "value": x, "params": {"x": x},
                "distributions": {"x": {"name": "FloatDistribution", "attributes": {"low": 0.0, "high": 1.0,
                                                                                     "step": None, "log": False}}},
                "intermediate_values": {"0": x}, "user_attrs": {"run_dir": f"runs/tune/s/{run}"}}

    # written by storages that each numbered from 0: run folder trial_0007 names two different trials
    path = tmp_path / "trials.json"
    path.write_text(json.dumps([record(0, "trial_0000", 0.1), record(1, "trial_0007", 0.2),
                                record(2, "trial_0003", 0.3), record(3, "trial_0007", 0.4)]))
    study = optuna.create_study(direction="maximize")
    assert T.import_trials(study, path) == 4
    assert [T.trial_label(t) for t in study.get_trials()] == [0, 7, 3, 8]
    assert T.trial_label(T.best_trial(study)) == 8
    new = study.ask()  # number 4 in this storage
    assert T.run_label(new) == 9, "a new trial never takes an earlier trial's label or run folder"
    assert [r["number"] for r in T.trial_rows(study)][:4] == [0, 7, 3, 8]


def test_a_recheck_chooses_by_the_mean_over_seeds_not_by_the_studys_seed(tmp_path: Path) -> None:
    from tacred.experiments.tuning.recheck import Rechecked, load_recheck, ranked, write_recheck_files

    space = T.SearchSpace.from_dict({**SPACE, "fixed": {"trainer.max_epochs": 40}})
    study = optuna.create_study(study_name="s", direction="maximize")
    lr = optuna.distributions.FloatDistribution(0.05, 0.5, log=True)
    for value, rate in ((0.70, 0.3), (0.69, 0.2), (0.68, 0.1)):
        study.add_trial(optuna.trial.create_trial(value=value, params={"model.lr": rate}, distributions={"model.lr": lr}))
    lucky = Rechecked(0, {"model.lr": 0.3}, {1: 0.70, 2: 0.60, 3: 0.62})
    steady = Rechecked(1, {"model.lr": 0.2}, {1: 0.69, 2: 0.68, 3: 0.67})
    unfinished = Rechecked(2, {"model.lr": 0.1}, {1: 0.68, 2: 0.75})
    assert ranked([lucky, steady, unfinished]) == [steady, lucky], "a trial without every seed is not ranked"

    write_recheck_files(study, space, "space.yaml", tmp_path, [lucky, steady, unfinished], ["trial 2 seed 3 (x)"])
    assert not (tmp_path / "recheck_best.yaml").exists(), "no choice while a run is missing"
    paths = write_recheck_files(study, space, "space.yaml", tmp_path, [lucky, steady], [])
    assert [p.name for p in paths] == ["recheck_best.yaml", "recheck.md", "recheck.json"]
    chosen = yaml.safe_load(paths[0].read_text())
    assert chosen == {"trainer": {"max_epochs": 40}, "model": {"lr": 0.2}}
    text = paths[1].read_text()
    assert "| 1 | 69.00 | 68.00 | 67.00 | 68.00 ± 1.00 |" in text
    assert "Best by the mean over seeds: trial 1 (68.00" in text and "Best by seed 1 alone: trial 0." in text
    rows, missing = load_recheck(paths[2])
    assert rows == [lucky, steady] and missing == []


def test_a_recheck_records_a_run_another_process_finished_while_this_one_trained(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes share a re-check: each records the other's runs that are done when its own last fit ends, so
    the last one to finish leaves the complete record (no fits here: a stand-in fit writes each run's dev F1)."""
    from tacred.experiments.tuning.recheck import recheck, run_dir

    space = T.SearchSpace.from_dict({**SPACE, "window": 1})
    study = optuna.create_study(study_name="s", direction="maximize")
    lr = optuna.distributions.FloatDistribution(0.05, 0.5, log=True)
    for value, rate in ((0.70, 0.3), (0.69, 0.2)):
        study.add_trial(optuna.trial.create_trial(value=value, params={"model.lr": rate}, distributions={"model.lr": lr}))
    held = run_dir(tmp_path, 0, 2)  # the best trial's seed 2: another process trains it
    held.mkdir(parents=True)
    (held / "claim.json").write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))

    def finish(run: Path, f1: float) -> None:
        run.mkdir(parents=True, exist_ok=True)
        (run / "metrics.csv").write_text(f"epoch,val/f1\n0,{f1}\n")
        (run / "fit.done").write_text("{}")

    def fake_fit(args: list[str], **_: object) -> Path:
        run = Path(args[args.index("--run_dir") + 1])
        finish(run, 0.5 + float(args[args.index("--model.lr") + 1]))
        finish(held, 0.61)  # the other process finishes meanwhile
        (held / "claim.json").unlink(missing_ok=True)
        return run

    monkeypatch.setattr("tacred.training.api.fit", fake_fit)
    rows, missing = recheck(study, space, T.Objective(space, tmp_path), tmp_path, k=2, seeds=[2])
    assert missing == []
    assert {r.trial: r.values for r in rows} == {0: {1: 0.70, 2: 0.61}, 1: {1: 0.69, 2: pytest.approx(0.7)}}


# -- real studies ---------------------------------------------------------------------------------------------
def tiny_space(tmp_path: Path, demo_data: Path, epochs: int = 2) -> Path:
    space = {
        "configs": [str(REPO / "configs" / "demo.yaml")],
        "fixed": {"trainer.max_epochs": epochs, "data.data_dir": str(demo_data), "model.network.word_dim": 24,
                  "model.network.ffn_dim": 16, "model.network.attention_dim": 16},
        "sampler": {"name": "random", "seed": 0},
        "pruner": {"name": "none"},
        "parameters": {"model.lr": {"type": "float", "low": 0.1, "high": 1.0, "log": True},
                       "model.lr_schedule": {"type": "categorical", "choices": ["stall", "cosine"]}},
    }
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(space), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_study_trains_trials_as_run_folders_and_writes_its_files(tmp_path: Path, demo_data: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    space = tiny_space(tmp_path, demo_data)
    study = tmp_path / "study"
    handlers = list(logging.getLogger("tacred").handlers)
    assert tune.main(["--space", str(space), "--n_trials", "2", "--study_dir", str(study)]) == 0
    assert logging.getLogger("tacred").handlers == handlers, "no log handler left on a stream the command was given"
    out = capsys.readouterr().out
    assert "best trial" in out and "model.lr:" in out
    records = json.loads((study / "trials.json").read_text())
    assert [r["state"] for r in records] == ["COMPLETE", "COMPLETE"]
    for r in records:
        run = Path(r["user_attrs"]["run_dir"])
        assert (run / "checkpoints" / "last.ckpt").is_file() and (run / "config.yaml").is_file()
        assert sorted(r["intermediate_values"]) == ["0", "1"], "dev F1 of every epoch is reported"
        assert r["value"] == pytest.approx(sum(r["intermediate_values"].values()) / 2), "mean of the last epochs"
        assert r["user_attrs"]["best_dev_f1"] == max(r["intermediate_values"].values())
        assert r["user_attrs"]["commit"] == git_commit(), "the code that trained the trial is recorded"
        assert r["user_attrs"]["environment"] == environment()
        assert r["params"]["model.lr"] == pytest.approx(yaml.safe_load((run / "config.yaml").read_text())["model"]["lr"])
    best = yaml.safe_load((study / "best.yaml").read_text())
    assert best["trainer"]["max_epochs"] == 2 and "lr" in best["model"]
    assert "Best: trial" in (study / "summary.md").read_text()

    # the same command again: the study already has its trials, nothing is trained
    assert tune.main(["--space", str(space), "--n_trials", "2", "--study_dir", str(study)]) == 0
    assert len(json.loads((study / "trials.json").read_text())) == 2

    # a fresh storage (another machine, a fresh clone) is seeded from trials.json and the study goes on
    (study / "trials" / "study.db").unlink()
    assert tune.main(["--space", str(space), "--n_trials", "3", "--study_dir", str(study)]) == 0
    records = json.loads((study / "trials.json").read_text())
    assert len(records) == 3
    assert records[2]["params"] not in [r["params"] for r in records[:2]], "the resumed sampler draws anew"

    # best.yaml is a config file tacred fit accepts
    printed = run_in_process("fit", "--config", str(REPO / "configs" / "demo.yaml"), "--config", str(study / "best.yaml"),
                             "--print_config").stdout
    assert yaml.safe_load(printed)["model"]["lr"] == pytest.approx(best["model"]["lr"])


@pytest.mark.slow
def test_a_recheck_trains_the_best_trials_with_more_seeds_and_ranks_them_by_the_mean(
        tmp_path: Path, demo_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    space = tiny_space(tmp_path, demo_data)
    study = tmp_path / "study"
    args = ["--space", str(space), "--n_trials", "3", "--study_dir", str(study)]
    assert tune.main(args) == 0
    records = json.loads((study / "trials.json").read_text())
    top = sorted((r for r in records if r["state"] == "COMPLETE"), key=lambda r: -r["value"])[:2]
    # another process holds the best trial's run: the other one is trained, the choice waits for it
    held = study / "trials" / "recheck" / f"trial_{top[0]['user_attrs']['trial']:04d}" / "seed_2"
    held.mkdir(parents=True)
    (held / "claim.json").write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
    assert tune.main([*args, "--recheck", "2", "--recheck_seeds", "2"]) == 0
    rechecked = json.loads((study / "recheck.json").read_text())
    assert [t["trial"] for t in rechecked["trials"]] == [r["user_attrs"]["trial"] for r in top], "the best two, in order"
    assert len(rechecked["missing"]) == 1 and "run by pid" in rechecked["missing"][0]
    assert not (study / "recheck_best.yaml").exists() and "Still to run" in (study / "recheck.md").read_text()
    for t, r in zip(rechecked["trials"], top, strict=True):
        assert t["values"]["1"] == pytest.approx(r["value"]), "seed 1's value is the study's"
        assert t["params"] == r["params"]
    assert sorted(rechecked["trials"][1]["values"]) == ["1", "2"] and sorted(rechecked["trials"][0]["values"]) == ["1"]

    (held / "claim.json").unlink()  # the other process went away without starting
    assert tune.main([*args, "--recheck", "2", "--recheck_seeds", "2"]) == 0
    rechecked = json.loads((study / "recheck.json").read_text())
    assert rechecked["missing"] == []
    for t in rechecked["trials"]:
        run = study / "trials" / "recheck" / f"trial_{t['trial']:04d}" / "seed_2"
        config = yaml.safe_load((run / "config.yaml").read_text())
        assert config["seed_everything"] == 2 and config["model"]["lr"] == pytest.approx(t["params"]["model.lr"])
        fit = json.loads((run / "fit.done").read_text())
        assert fit["commit"] == git_commit() and fit["environment"] == environment()
        dev = dev_f1_by_epoch(run / "metrics.csv")
        assert t["values"]["2"] == pytest.approx(sum(dev.values()) / 2), "the study's objective, on seed 2's run"
    means = {t["trial"]: (t["values"]["1"] + t["values"]["2"]) / 2 for t in rechecked["trials"]}
    winner = max(means, key=means.get)
    chosen = yaml.safe_load((study / "recheck_best.yaml").read_text())
    params = next(t["params"] for t in rechecked["trials"] if t["trial"] == winner)
    assert chosen["model"]["lr"] == pytest.approx(params["model.lr"]) and chosen["trainer"]["max_epochs"] == 2
    assert f"trial {winner}, mean {100 * means[winner]:.2f}" in capsys.readouterr().out
    assert f"Best by the mean over seeds: trial {winner}" in (study / "recheck.md").read_text()

    # finished runs are kept: the same command trains nothing, and --summary_only renders from recheck.json
    stamps = {p: p.stat().st_mtime_ns for p in (study / "trials" / "recheck").rglob("metrics.csv")}
    assert tune.main([*args, "--recheck", "2", "--recheck_seeds", "2"]) == 0
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    (study / "recheck.md").unlink()
    assert tune.main([*args, "--recheck", "2", "--summary_only"]) == 0
    assert f"Best by the mean over seeds: trial {winner}" in (study / "recheck.md").read_text()


@pytest.mark.slow
def test_a_killed_study_resumes_its_running_trial_from_last_ckpt(tmp_path: Path, demo_data: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    space = tiny_space(tmp_path, demo_data, epochs=4)
    study = tmp_path / "study"
    cmd = [sys.executable, "-m", "tacred", "tune", "--space", str(space), "--n_trials", "1", "--study_dir",
           str(study), "--heartbeat", "1", "--grace", "2"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    last = study / "trials" / "trial_0000" / "checkpoints" / "last.ckpt"
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not last.is_file() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert last.is_file(), "the first epoch never finished"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    time.sleep(3)  # longer than --grace: the dead trial's heartbeat has gone stale

    # the same command again (in this process: the kill above is what needed a process of its own)
    monkeypatch.chdir(tmp_path)
    assert "resuming from" in run_in_process(*cmd[3:]).stderr
    states = optuna.load_study(study_name="space", storage=f"sqlite:///{study / 'trials' / 'study.db'}").get_trials()
    assert [t.state.name for t in states] == ["FAIL", "COMPLETE"]
    assert states[1].params == states[0].params, "the dead trial is retried with its own parameters"
    assert states[1].user_attrs["run_dir"] == states[0].user_attrs["run_dir"], "and continues its run folder"
    epochs = [int(row.split(",")[0]) for row in (last.parents[1] / "metrics.csv").read_text().splitlines()[1:]
              if row.split(",")[0].isdigit()]
    assert sorted(set(epochs)) == [0, 1, 2, 3]


def test_user_errors_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tune.main(["--space", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("parameters: [1, 2\n")
    assert tune.main(["--space", str(bad)]) == 2
    assert "bad.yaml: not valid YAML" in capsys.readouterr().err
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({**SPACE, "configs": [str(tmp_path / "nope.yaml")]}))
    assert tune.main(["--space", str(good), "--study_dir", str(tmp_path / "s")]) == 2
    assert "nope.yaml: file not found" in capsys.readouterr().err
    assert tune.main(["--space", str(good), "--n_trials", "0"]) == 2
    assert "--n_trials must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(("url", "message"), [
    ("postgress://tacred:s3cret@127.0.0.1/tacred", "not a database URL SQLAlchemy reads"),
    ("no url at all", "not a database URL SQLAlchemy reads"),
    ("mysql://tacred:s3cret@127.0.0.1/tacred", "its database driver is not installed"),
    ("postgresql://tacred:s3cret@127.0.0.1:{port}/tacred", "Connection refused"),  # no server on that port
    ("sqlite:///{tmp}/no/such/folder/study.db", "unable to open database file"),
])
def test_a_storage_that_cannot_be_opened_is_a_one_line_error_without_its_password(
        url: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """(A wrong password, which needs a server, is tested in test_postgres.py.)"""
    url = url.format(port=free_port(), tmp=tmp_path)
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump(SPACE))
    assert tune.main(["--space", str(space), "--storage", url, "--study_dir", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"tacred tune: error: --storage {url.replace('s3cret', '***')}: ")
    assert message in err and "s3cret" not in err


def test_shown_urls_hide_the_password_only() -> None:
    from tacred.experiments.tuning.study import shown_url

    assert shown_url("postgresql://me:p@ss:w/rd@db:5432/tacred") == "postgresql://me:***@db:5432/tacred"
    assert shown_url("postgresql+psycopg://me@db/tacred") == "postgresql+psycopg://me@db/tacred"
    assert shown_url("sqlite:///runs/tune/study.db") == "sqlite:///runs/tune/study.db"

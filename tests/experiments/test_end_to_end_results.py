"""End-to-end results over a seed sweep (``tacred end-to-end``, ``tacred compare`` of an end-to-end spec): the spec's
checks, the table's figures computed by hand from stored records, a seed not trained yet left for later, a finished
seed not redone, the shipped CoNLL04 spec naming real recipes, and (slow) the whole path on a tiny CoNLL04 release:
convert, ablate, NER, extract, score, table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tacred.commands.compare import main as compare_main
from tacred.commands.end_to_end import main as e2e_main
from tacred.experiments.end_to_end import (
    RECORD_FILE,
    EndToEndError,
    load_spec,
    measure,
    record_path,
    render_markdown,
    run_seed,
    score_ner,
)
from tacred.experiments.tables import TableError

REPO = Path(__file__).resolve().parents[2]

SPEC = {
    "title": "Tiny end to end",
    "marker": "tiny",
    "measure": "strict micro-F1 on the tiny test sentences",
    "end_to_end": {"results": "five_seeds", "runs_dir": "RUNS", "gold": "GOLD/conll04_test.json",
                   "train_data": "GOLD", "documents": "DOCS/conll04_test.jsonl", "data_dir": "DATA", "ner_epochs": 5,
                   "out": "."},
    "models": [{"key": "paper", "name": "the paper's network", "inputs": "glove", "variant": "paper", "seeds": 3,
                "target": {"micro_f1": 50.0}}],
    "published": [{"name": "SpERT", "inputs": "BERT-base", "ner_f1": 88.94, "relation_f1": 71.47,
                   "average": "micro", "source": "Eberts & Ulges (2020)"},
                  {"name": "Multi-head", "inputs": "BiLSTM-CRF", "ner_f1": 83.9, "relation_f1": 62.04,
                   "average": "macro", "source": "Bekoulis et al. (2018)"}],
}


def write_spec(folder: Path, spec: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "end_to_end.yaml"
    path.write_text(yaml.safe_dump(spec or SPEC), encoding="utf-8")
    return path


def store(folder: Path, seed: int, micro: tuple[float, float, float], macro: float, ner: float,
          variant: str = "paper") -> None:
    """A record as run_seed writes it (only what the table reads)."""
    p, r, f = micro
    out = folder / "five_seeds" / variant / f"seed_{seed}" / RECORD_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "seed": seed, "gold_pairs_f1": 60.0 + seed,
        "dev_f1": {"relations": {"strict": {"micro": {"precision": p, "recall": r, "f1": f}, "macro": {"f1": macro}},
                                 "boundaries": {"micro": {"f1": f + 1}, "macro": {"f1": macro}}}},
        "argmax": {"relations": {"strict": {"micro": {"precision": 0, "recall": 0, "f1": 0}, "macro": {"f1": 0}},
                                 "boundaries": {"micro": {"f1": 0}, "macro": {"f1": 0}}}},
        "dev_p80": {"relations": {"strict": {"micro": {"precision": 0, "recall": 0, "f1": 0}, "macro": {"f1": 0}},
                                  "boundaries": {"micro": {"f1": 0}, "macro": {"f1": 0}}}},
        "entities": {"micro": {"f1": ner}}}), encoding="utf-8")


def test_the_table_is_the_mean_and_sample_std_over_seeds_beside_published_systems(tmp_path: Path) -> None:
    spec_path = write_spec(tmp_path)
    store(tmp_path, 1, (60.0, 40.0, 48.0), 50.0, 80.0)
    store(tmp_path, 2, (64.0, 44.0, 52.0), 54.0, 82.0)
    spec = load_spec(spec_path)
    summary = measure(spec)
    row = summary["paper"]
    assert row["seeds"] == [1, 2] and not row["complete"]
    assert row["micro_f1_mean"] == 50.0 and row["micro_f1_std"] == pytest.approx(2.83, abs=0.005)  # stdev(48, 52)
    assert row["ner_f1_mean"] == 81.0 and row["gold_pairs_f1"] == [61.0, 62.0]
    assert "targets" not in row  # a row is judged only with all its seeds
    table = render_markdown(spec, summary)
    assert "| the paper's network | glove | 2 | 81.00 ± 1.41 | 50.00 ± 2.83 | 62.00 ± 2.83 | 42.00 ± 2.83 | " \
           "52.00 ± 2.83 | under way (2 of 3 seeds) |" in table
    assert "| SpERT | BERT-base | | 88.94 | 71.47 | | | | published |" in table
    assert "| Multi-head | BiLSTM-CRF | | 83.90 | | | | 62.04 | published |" in table  # a macro figure in its column

    store(tmp_path, 3, (62.0, 42.0, 47.0), 52.0, 81.0)
    row = measure(load_spec(spec_path))["paper"]
    assert row["complete"] and row["targets"]["micro_f1"] == {"target": 50.0, "value": 49.0, "met": False,
                                                              "missed_by": 1.0}


def test_tacred_compare_writes_an_end_to_end_table_into_readme(tmp_path: Path, capsys) -> None:
    spec_path = write_spec(tmp_path)
    store(tmp_path, 1, (60.0, 40.0, 48.0), 50.0, 80.0)
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- tacred compare tiny: start -->\nold\n<!-- tacred compare tiny: end -->\nend\n")
    assert compare_main([str(spec_path), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith("end\n")
    assert "| the paper's network | glove | 1 | 80.00 | 48.00 |" in text  # one seed: no spread to show
    assert json.loads((tmp_path / "end_to_end_summary.json").read_text())["paper"]["seeds"] == [1]
    assert (tmp_path / "end_to_end.md").read_text().startswith("# Tiny end to end")
    # a row kept out of README (readme: false) is still in end_to_end.md and the summary
    spec = json.loads(json.dumps(SPEC))
    spec["models"].append({"key": "other", "name": "the paper's network, another NER", "inputs": "glove",
                           "variant": "paper", "seeds": 3, "readme": False})
    write_spec(tmp_path, spec)
    assert compare_main([str(spec_path), "--readme", str(readme)]) == 0
    assert "another NER" not in readme.read_text() and "| the paper's network | glove | 1 |" in readme.read_text()
    assert "| the paper's network, another NER | glove | 1 |" in (tmp_path / "end_to_end.md").read_text()
    assert json.loads((tmp_path / "end_to_end_summary.json").read_text())["other"]["seeds"] == [1]
    # the same through tacred end-to-end --table_only; a README without the markers is an error naming it
    (tmp_path / "other.md").write_text("no markers\n")
    assert e2e_main([str(spec_path), "--table_only", "--readme", str(tmp_path / "other.md")]) == 2
    assert "other.md" in capsys.readouterr().err


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s.pop("end_to_end"), "'end_to_end' section"),
    (lambda s: s["end_to_end"].pop("gold"), "end_to_end: needs 'gold'"),
    (lambda s: s["end_to_end"].update(extra=1), "unknown keys ['extra']"),
    (lambda s: s["end_to_end"].update(operating_point="p80"), "operating_point must be one of argmax, dev_f1, dev_p80"),
    (lambda s: s["models"][0].update(target={"macro": 1}), "models[0]: 'target' takes micro_f1, ner_f1"),
    (lambda s: s["models"][0].update(seeds="five"), "models[0]: 'seeds' must be a positive number or a list"),
    (lambda s: s["models"][0].update(seeds=[2, 2]), "distinct positive seeds, got [2, 2]"),
    (lambda s: s["models"][0].update(seeds=0), "models[0]: 'seeds' must be a positive number"),
    (lambda s: s["models"][0].update(ner_epochs=3), "models[0]: unknown keys ['ner_epochs']"),
    (lambda s: s["models"][0].update(variants=["paper"]), "models[0]: needs 'variant' (one sweep variant) or "
                                                          "'variants' (a list), not both"),
    (lambda s: s["models"][0].pop("variant"), "models[0]: needs 'variant'"),
    (lambda s: (s["models"][0].pop("variant"), s["models"][0].update(variants=["a", "a"])),
     "models[0]: 'variants' must be a list of distinct variant names"),
    (lambda s: s["published"][1].pop("average"), "published[1]: needs 'average'"),
    (lambda s: s["models"][0].update(readme="no"), "models[0]: 'readme' must be true or false, got 'no'"),
    (lambda s: s["models"][0].update(ner="mpnet"), "models[0]: 'ner' 'mpnet' is none of the spec's ners (none listed)"),
    (lambda s: s.update(ners=[{"key": "mpnet", "name": "MPNet", "args": "--bf16"}]),
     "ners[0]: 'args' must be a list of texts"),
    (lambda s: s.update(ners=[{"key": "mpnet", "name": "MPNet", "args": ["--seed", "3"]}]),
     "ners[0]: 'args' cannot set --data, --out or --seed"),
    (lambda s: s.update(ners=[{"key": "a/b", "name": "MPNet"}]), "ners[0]: 'key' 'a/b' must be letters"),
    (lambda s: s.update(ners=[{"key": "a", "name": "A"}, {"key": "a", "name": "B"}]),
     "ners[1]: the key 'a' is used twice"),
    (lambda s: s["end_to_end"].update(ner_epochs="abc"), "end_to_end: 'ner_epochs' must be a whole number of epochs, "
                                                         "at least 1, got 'abc'"),
    (lambda s: s["end_to_end"].update(ner_epochs=-5), "'ner_epochs' must be a whole number of epochs, at least 1"),
    (lambda s: s.update(models=5), "end_to_end.yaml: 'models' must be a list of mappings, got 5"),
    (lambda s: s["models"][0].update(target="high"), "models[0]: 'target' takes micro_f1, ner_f1"),
    (lambda s: s["models"][0].update(target={"micro_f1": "high"}),
     "models[0]: 'target' micro_f1 must be a number (percent), got 'high'"),
    (lambda s: s["published"][0].update(average="median"), "published[0]: 'average' must be micro or macro"),
    (lambda s: s["published"][0].update(relation_f1="high"), "published[0]: 'relation_f1' must be a number"),
    (lambda s: s["published"][0].update(year=2020), "published[0]: unknown keys ['year']"),
    (lambda s: s["models"][0].update(variant="../"), "models[0]: 'variant' '../' must be the name of one folder"),
    (lambda s: (s["models"][0].pop("variant"), s["models"][0].update(variants=["paper", "a/b"])),
     "models[0]: 'variants' 'a/b' must be the name of one folder"),
    (lambda s: s["models"].append(dict(s["models"][0], name="again")),
     "models[1]: the key 'paper' is used twice"),
])
def test_a_bad_spec_is_an_error_naming_the_file_and_the_entry(tmp_path: Path, change, message, capsys) -> None:
    spec = json.loads(json.dumps(SPEC))
    change(spec)
    path = write_spec(tmp_path, spec)
    with pytest.raises(TableError, match="end_to_end.yaml") as err:
        load_spec(path)
    assert message in str(err.value)
    assert e2e_main([str(path)]) == 2
    assert message in capsys.readouterr().err


def test_the_table_goes_where_the_spec_or_out_says_and_nowhere_when_nothing_was_measured(tmp_path: Path,
                                                                                          capsys) -> None:
    spec = json.loads(json.dumps(SPEC))
    spec["end_to_end"].pop("out")
    scratch = write_spec(tmp_path, spec)
    for run in (lambda: e2e_main([str(scratch), "--table_only"]), lambda: compare_main([str(scratch)])):
        assert run() == 2
        assert "no 'out' in its end_to_end section says where end_to_end.md" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["end_to_end.yaml"]  # nothing beside the spec
    assert e2e_main([str(scratch), "--out", str(tmp_path / "tables")]) == 2  # every path missing: nothing measured
    err = capsys.readouterr().err
    assert "nothing measured (no row has a record under" in err and "no table written" in err
    assert not (tmp_path / "tables").exists()
    store(tmp_path, 1, (60.0, 40.0, 48.0), 50.0, 80.0)
    assert e2e_main([str(scratch), "--out", str(tmp_path / "tables")]) == 0
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == ["end_to_end.md", "end_to_end_summary.json"]
    assert not (tmp_path / "end_to_end.md").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--num_threads", "0"], "--num_threads 0: must be at least 1"),
    (["--seeds", "-1"], "--seeds -1: seeds are positive numbers"),
    (["--seeds", "9"], "--seeds 9: not a seed of any model in"),
    (["--timeout", "-3"], "--timeout -3: must be 0 seconds or more"),
])
def test_bad_options_are_refused_before_any_work(tmp_path: Path, argv, message, capsys) -> None:
    path = write_spec(tmp_path)
    assert e2e_main([str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["end_to_end.yaml"]


def test_missing_inputs_are_named_before_the_first_ner_trains(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the spec's paths but `results` are relative to the working directory
    path = write_spec(tmp_path)
    result = tmp_path / "five_seeds" / "paper" / "seed_1" / "result.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps({"f1": 0.5, "checkpoint": "last"}), encoding="utf-8")
    ckpt = tmp_path / "RUNS" / "paper" / "seed_1" / "checkpoints" / "last.ckpt"
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(b"x")
    assert e2e_main([str(path), "--seeds", "1"]) == 2
    assert "end_to_end: 'gold' GOLD/conll04_test.json: no such file or folder" in capsys.readouterr().err
    assert not (tmp_path / "RUNS" / "paper" / "seed_1" / "ner").exists()


def test_a_seed_not_trained_is_left_for_later_and_a_finished_one_is_not_redone(tmp_path: Path, capsys) -> None:
    spec = load_spec(write_spec(tmp_path))
    model = spec.models[0]
    assert run_seed(spec, model, 1) is None  # no tacred ablate result yet: nothing to score
    store(tmp_path, 2, (60.0, 40.0, 48.0), 50.0, 80.0)
    assert run_seed(spec, model, 2) == record_path(spec, "paper", 2)  # kept as it is: no NER, no extraction
    # a record from before an operating point was added is taken up again once its run is trained
    record = record_path(spec, "paper", 2)
    older = json.loads(record.read_text())
    del older["dev_p80"]
    record.write_text(json.dumps(older))
    assert run_seed(spec, model, 2) is None  # no tacred ablate result there: nothing to add it from
    # a result whose checkpoint is gone is an error naming both
    result = tmp_path / "five_seeds" / "paper" / "seed_3" / "result.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps({"checkpoint": "last", "f1": 0.5}))
    with pytest.raises(EndToEndError, match="seed_3/result.json: its checkpoint .*last.ckpt is missing"):
        run_seed(spec, model, 3)
    # the command lists it and goes on to the table, as for a run not trained yet
    assert e2e_main([str(tmp_path / "end_to_end.yaml"), "--seeds", "3"]) == 0
    out = capsys.readouterr().out
    assert "trained, but the checkpoint is not here" in out
    assert "paper seed 3 (" in out and "seed_3/checkpoints/last.ckpt" in out
    assert not list(tmp_path.rglob("ner"))  # nothing trained for it
    assert e2e_main([str(tmp_path / "end_to_end.yaml"), "--only", "nope"]) == 2
    assert "--only nope: no such model" in capsys.readouterr().err


def test_a_seed_trained_again_is_not_scored_as_the_record_it_replaced(tmp_path: Path) -> None:
    """A run folder whose dev F1 per epoch is not its record's holds another model (a seed retrained on another
    machine or thread count): end to end refuses it, naming the run, both curves and the way out."""
    spec_dict = json.loads(json.dumps(SPEC))
    spec_dict["end_to_end"]["runs_dir"] = str(tmp_path / "runs")
    spec = load_spec(write_spec(tmp_path, spec_dict))
    result = tmp_path / "five_seeds" / "paper" / "seed_3" / "result.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps({"checkpoint": "last", "f1": 0.5, "dev_curve": [0.5, 0.6]}))
    run = tmp_path / "runs" / "paper" / "seed_3"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"")
    (run / "metrics.csv").write_text("epoch,step,val/f1\n0,10,0.5\n1,20,0.58\n")
    with pytest.raises(EndToEndError, match=r"seed_3: this training is not the one .*seed_3/result.json tested "
                                            r"\(dev F1 per epoch 50.00, 58.00 against the record's 50.00, 60.00\)"):
        run_seed(spec, spec.models[0], 3)
    assert not (run.parent / "ner").exists() and not (run / "ner").exists()  # nothing trained for it


def test_a_row_takes_each_seed_from_the_variant_that_trained_it(tmp_path: Path, capsys) -> None:
    """One recipe's seeds trained under two variants of the sweep (fp32 and bf16 autocast): one row over both, each
    seed's runs found under its own variant, and a seed trained under both an error naming both folders."""
    spec_dict = json.loads(json.dumps(SPEC))
    spec_dict["models"][0].pop("variant")
    spec_dict["models"][0]["variants"] = ["paper_bf16", "paper"]
    spec_path = write_spec(tmp_path, spec_dict)
    store(tmp_path, 1, (60.0, 40.0, 48.0), 50.0, 80.0, variant="paper")
    store(tmp_path, 2, (64.0, 44.0, 52.0), 54.0, 82.0, variant="paper_bf16")
    spec = load_spec(spec_path)
    row = measure(spec)["paper"]
    assert row["seeds"] == [1, 2] and row["variants"] == ["paper", "paper_bf16"] and row["micro_f1_mean"] == 50.0
    model = spec.models[0]
    for seed, variant in ((1, "paper"), (2, "paper_bf16")):  # finished: found where its ablate result is
        (tmp_path / "five_seeds" / variant / f"seed_{seed}" / "result.json").write_text("{}")
        assert run_seed(spec, model, seed) == record_path(spec, variant, seed)
    assert run_seed(spec, model, 3) is None  # trained under neither yet
    # seed 3 waits under the first variant, where the sweep that trains it will put it
    assert e2e_main([str(spec_path)]) == 0
    assert "not trained yet (no tacred ablate result): paper_bf16 seed 3" in capsys.readouterr().out
    store(tmp_path, 2, (64.0, 44.0, 52.0), 54.0, 82.0, variant="paper")
    (tmp_path / "five_seeds" / "paper" / "seed_2" / "result.json").write_text("{}")
    with pytest.raises(EndToEndError, match="seed 2 was trained under paper_bf16 and paper"):
        run_seed(spec, model, 2)
    with pytest.raises(EndToEndError, match="seed 2 has two records"):
        measure(spec)


def test_a_row_may_name_its_seeds(tmp_path: Path, capsys) -> None:
    """``seeds: [2, 3]``: the row is those seeds (a recipe whose seed 1 cannot be trained again): a record of another
    seed is not in it, the row is complete with the two, and the runner waits for those two only."""
    spec_dict = json.loads(json.dumps(SPEC))
    spec_dict["models"][0]["seeds"] = [2, 3]
    spec_path = write_spec(tmp_path, spec_dict)
    for seed, micro in ((1, 40.0), (2, 48.0), (3, 52.0)):
        store(tmp_path, seed, (60.0, 40.0, micro), 50.0, 80.0)
    spec = load_spec(spec_path)
    assert spec.models[0].seeds == (2, 3)
    row = measure(spec)["paper"]
    assert row["seeds"] == [2, 3] and row["complete"] and row["micro_f1_mean"] == 50.0
    (tmp_path / "five_seeds" / "paper" / "seed_2" / RECORD_FILE).unlink()
    assert "under way (1 of 2 seeds)" in render_markdown(spec, measure(spec))
    assert e2e_main([str(spec_path)]) == 0
    assert "not trained yet (no tacred ablate result): paper seed 2\n" in capsys.readouterr().out


def test_the_conll04_spec_names_the_recipes_and_the_published_systems_of_docs() -> None:
    spec = load_spec(REPO / "docs" / "results" / "conll04" / "end_to_end.yaml")
    for model in spec.models:
        for variant in model.variants:
            assert (REPO / "configs" / "conll04" / f"{variant}.yaml").is_file(), variant
    five, three = (1, 2, 3, 4, 5), (1, 2, 3)
    assert {m.key: m.seeds for m in spec.models} == {
        "paper": five, "paper_mpnet_ner": five, "paper_mpnet_ner_with_dev": five, "transformer": five,
        "transformer_mpnet_ner_with_dev": five, "mpnet": three, "mpnet_mpnet_ner_with_dev": (2, 3, 4),
        "joint_minilm": five, "joint_mpnet": three}
    # the joint rows train their own seeds with the configuration they name (docs/joint.md)
    assert {m.key: m.config for m in spec.models if m.config} == {
        "joint_minilm": "configs/conll04/joint_minilm.yaml", "joint_mpnet": "configs/conll04/joint_mpnet.yaml"}
    # the train-and-dev NER is the MPNet recipe itself, with --with_dev
    assert spec.ners["mpnet_with_dev"].args == (*spec.ners["mpnet"].args, "--with_dev")
    page = "".join((REPO / "docs" / name).read_text(encoding="utf-8") for name in ("conll04.md", "ner.md"))
    # the MPNet NER's options: the command the page shows and the one its seed-1 record trained with
    options = " ".join(spec.ners["mpnet"].args)
    assert options in " ".join(page.replace("\\\n", " ").split())
    record = REPO / "docs" / "results" / "conll04" / "ner_variants" / "transformer_mpnet_shape" / "training.json"
    assert options in json.loads(record.read_text())["command"]
    for p in spec.published:
        assert f"{p.figures['relation_f1']:g}" in page and p.name.split()[0] in page


CONLL04_SOURCE = REPO.parent / "shared" / "data" / "conll04"


@pytest.mark.slow
def test_the_whole_path_on_a_tiny_release(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny CoNLL04 release through the real commands: convert, one seed of `tacred ablate` (one epoch), then
    `tacred end-to-end` trains the seed's NER, extracts from the raw test sentences and scores them; run again, it
    redoes nothing."""
    from tacred.commands.ablate import main as ablate_main
    from tacred.commands.convert import main as convert_main
    from tests.ner_training.test_training import release

    gold = release(tmp_path / "gold")
    data = tmp_path / "data"
    assert convert_main(["conll04", str(gold), str(data)]) == 0
    runs = tmp_path / "runs"
    spec = json.loads(json.dumps(SPEC))
    spec["end_to_end"].update(runs_dir=str(runs), gold=str(gold / "conll04_test.json"), train_data=str(gold),
                              documents=str(data / "documents" / "conll04_test.jsonl"), data_dir=str(data),
                              ner_epochs=51)  # one step an epoch: 51 steps, so dev is evaluated at step 50 too
    # a second row: the same relation runs with a NER of the spec's own (here a shorter training), shared by seed
    spec["ners"] = [{"key": "short", "name": "two epochs", "args": ["--max_epochs", "2", "--eval_frequency", "1"]}]
    spec["models"].append({**spec["models"][0], "key": "paper_short", "name": "with the short NER", "ner": "short"})
    spec_path = write_spec(tmp_path / "results", spec)
    assert ablate_main(["--config", str(REPO / "configs" / "conll04.yaml"),
                        "--variants", str(REPO / "configs" / "conll04" / "paper.yaml"), "--seeds", "1",
                        "--checkpoint", "last", "--reference", "paper", "--max_epochs", "1",
                        "--out", str(tmp_path / "results" / "five_seeds"), "--runs_dir", str(runs),
                        "--extra", "--data.data_dir", str(data), "--data.labels", str(data / "labels.json"),
                        "--model.network.word_dim", "30", "--num_threads", "1"]) == 0
    capsys.readouterr()
    # the record's commit is the one its first step ran from, not where the checkout has moved by the end
    import tacred.experiments.end_to_end as e2e_module
    import tacred.experiments.results as results_module

    steps, real_step, real_provenance = [], e2e_module._step, results_module.provenance
    monkeypatch.setattr(e2e_module, "_step", lambda *a: steps.append(a) or real_step(*a))
    monkeypatch.setattr(results_module, "provenance", lambda: {**real_provenance(), "commit": f"after {len(steps)}"})
    assert e2e_main([str(spec_path)]) == 0
    out = capsys.readouterr().out
    assert "paper seed 2: NER" not in out and "not trained yet (no tacred ablate result): paper seed 2, paper seed 3" in out
    record = json.loads(record_path(load_spec(spec_path), "paper", 1).read_text())
    assert record["checkpoint"] == "last.ckpt" and record["ner_training"]["seed"] == 1
    assert record["num_threads"] == 1  # the threads of the NER's score and of the extractions
    assert record["commit"] == "after 0" and len(steps) > 0
    assert record["entities"]["micro"]["gold"] == 10  # every gold entity of the tiny test file
    for point in ("argmax", "dev_f1", "dev_p80"):  # every operating point extracted and scored
        assert record[point]["relations"]["strict"]["micro"]["gold"] == 4
    assert record["argmax"]["threshold"] == 0.0 and isinstance(record["dev_f1"]["threshold"], float)
    assert isinstance(record["dev_p80"]["threshold"], dict)  # one threshold per relation
    assert (runs / "paper" / "seed_1" / "threshold_dev_f1.json").is_file()

    # a record written before dev_p80 existed gets it added, the rest kept
    older = json.loads(record_path(load_spec(spec_path), "paper", 1).read_text())
    del older["dev_p80"]
    record_path(load_spec(spec_path), "paper", 1).write_text(json.dumps(older))
    shutil.rmtree(runs / "paper" / "seed_1" / "extracted_dev_p80")
    assert e2e_main([str(spec_path)]) == 0
    again = json.loads(record_path(load_spec(spec_path), "paper", 1).read_text())
    assert again["dev_f1"] == older["dev_f1"] and "dev_p80" in again and again["commit"] == older["commit"]
    assert set(again["added_later"]) == {"dev_p80"} and again["added_later"]["dev_p80"]["num_threads"] == 1
    assert (runs / "paper" / "seed_1" / "ner" / "model-best").is_dir()
    assert "| the paper's network | glove | 1 |" in (tmp_path / "results" / "end_to_end.md").read_text()

    # the row with the spec's NER: its own record and extractions, the NER trained once for the seed under RUNS/ner
    short = json.loads((tmp_path / "results" / "five_seeds" / "paper" / "seed_1" / "end_to_end_ner_short.json")
                       .read_text())
    assert short["ner"] == "short" and short["ner_training"]["max_epochs"] == 2
    assert short["gold_pairs_f1"] == record["gold_pairs_f1"]  # the same relation model
    assert (runs / "ner" / "short" / "seed_1" / "model-best").is_dir()
    assert (runs / "paper" / "seed_1" / "ner_short" / "extracted_dev_f1").is_dir()
    assert "| with the short NER | glove | 1 |" in (tmp_path / "results" / "end_to_end.md").read_text()

    # the NER's own F1 is taken with the extraction's thread count (a bf16 transformer NER finds slightly other
    # entities with another one), and the caller's thread count is given back
    import torch

    import tacred.datasets.conll04 as conll04

    seen, real = [], conll04.spacy_entities
    monkeypatch.setattr(conll04, "spacy_entities", lambda *a: seen.append(torch.get_num_threads()) or real(*a))
    before = torch.get_num_threads()
    threads = 2 if before != 2 else 1
    assert score_ner(gold / "conll04_test.json", runs / "paper" / "seed_1" / "ner", threads) == record["entities"]
    assert seen == [threads] and torch.get_num_threads() == before

    shutil.rmtree(runs / "paper" / "seed_1" / "ner" / "model-last")  # a second run must not train the NER again
    logs = {p: p.stat().st_mtime_ns for p in (runs / "paper" / "seed_1").glob("*.log")}
    assert e2e_main([str(spec_path)]) == 0
    assert {p: p.stat().st_mtime_ns for p in logs} == logs


def test_the_committed_conll04_table_is_what_the_committed_records_give(tmp_path: Path) -> None:
    """docs/results/conll04's summary and table, and README's CoNLL04 table, regenerate from the stored records."""
    from tacred.experiments.end_to_end import SUMMARY_FILE, TABLE_FILE, compare
    from tacred.experiments.tables import table_of

    folder = REPO / "docs" / "results" / "conll04"
    compare(folder / "end_to_end.yaml", tmp_path)
    for name in (SUMMARY_FILE, TABLE_FILE):
        assert (tmp_path / name).read_text() == (folder / name).read_text(), (
            f"{name} is stale: run `tacred compare docs/results/conll04/end_to_end.yaml --readme README.md`")
    spec = load_spec(folder / "end_to_end.yaml")
    readme = (REPO / "README.md").read_text()
    assert table_of(render_markdown(spec, measure(spec), readme=True)) in readme
    for model in spec.models:  # every row is in end_to_end.md, and in README unless the spec keeps it out
        assert f"| {model.name} |" in (folder / TABLE_FILE).read_text()
        assert (f"| {model.name} |" in readme) == model.readme, model.key

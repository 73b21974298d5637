"""The command starts fast: help, the scorer and the input check of predict --sentences never import torch."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # each test starts `tacred` in a fresh process: its start-up is the subject

PROBE = """
import sys
from tacred.cli import main
code = main({argv!r})
heavy = sorted(m for m in ("torch", "lightning", "spacy", "torchmetrics", "litserve") if m in sys.modules)
print("HEAVY", heavy, "CODE", code)
"""


def run(argv: list[str], stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], cwd=REPO, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_help_lists_every_command_without_importing_them():
    from tacred.commands import COMMANDS

    proc = run(["--help"])
    assert "HEAVY [] CODE 0" in proc.stdout, proc.stdout + proc.stderr
    for name in COMMANDS:
        assert f"\n  {name} " in proc.stdout
    assert "Serve a trained model over HTTP" in proc.stdout and "Export a trained model" in proc.stdout


def test_score_runs_without_torch(tmp_path):
    gold = tmp_path / "gold.txt"
    gold.write_text("per:title\nno_relation\n")
    proc = run(["score", str(gold), str(gold)])
    assert "HEAVY [] CODE 0" in proc.stdout, proc.stdout + proc.stderr
    assert "F1 (micro): 100.000%" in proc.stdout


def test_predict_sentences_reports_a_bad_line_before_loading_anything(tmp_path):
    proc = run(["predict", "--ckpt_path", str(tmp_path / "x.ckpt"), "--sentences", "-", "--num_threads", "1"],
               stdin="<subj>A</subj> b <obj>C</obj>\nA works for <obj>C</obj>\n")
    assert "HEAVY [] CODE 2" in proc.stdout, proc.stdout + proc.stderr
    assert "<stdin>, line 2: no subject marker" in proc.stderr
    missing = run(["predict", "--ckpt_path", str(tmp_path / "x.ckpt"), "--sentences", "-"],
                  stdin="<subj>A</subj> b <obj>C</obj>\n")
    assert "HEAVY [] CODE 2" in missing.stdout and "checkpoint not found" in missing.stderr


def test_a_wrong_checkpoint_path_is_answered_before_torch_loads(tmp_path):
    (tmp_path / "empty.ckpt").touch()
    for command in ("predict", "test", "fit"):
        proc = run([command, "--ckpt_path", str(tmp_path / "x.ckpt")])
        assert "HEAVY [] CODE 2" in proc.stdout, proc.stdout + proc.stderr
        assert f"tacred {command}: error: checkpoint not found: {tmp_path / 'x.ckpt'}" in proc.stderr
    proc = run(["test", "--ckpt_path", str(tmp_path / "empty.ckpt")])
    assert "HEAVY [] CODE 2" in proc.stdout and "checkpoint is empty (0 bytes)" in proc.stderr


def test_predict_help_puts_the_sentence_options_first_and_starts_fast():
    for argv in (["predict", "--help"], ["predict", "--sentences", "--help"], ["predict", "-h", "--sentences", "-"]):
        proc = run(argv)
        assert "HEAVY [] CODE 0" in proc.stdout, proc.stdout + proc.stderr
        printed = proc.stdout
        for option in ("--sentences", "--format", "--output", "--skip_bad_lines", "--device", "--overwrite"):
            assert option in printed
        assert printed.index("--sentences") < printed.index("--data.predict_file") < printed.index("--help all")
        assert len(printed.splitlines()) < 80


def test_wrong_options_and_data_files_are_answered_before_lightning_loads(tmp_path):
    """A bad Trainer, model or data option, --num_threads, --checkpoint_minutes, a missing or plainly malformed data
    file: one line before Lightning (and torch) is imported; benchmarks/time_to_error.py measures how soon."""
    from tacred.datasets.synthetic import write_corpus

    write_corpus(tmp_path / "data", n_train=20, n_dev=5, n_test=5)
    (tmp_path / "object").mkdir()
    (tmp_path / "object" / "train.json").write_text('{"data": []}')
    demo = ["fit", "--config", str(REPO / "configs/demo.yaml"), "--data.data_dir", str(tmp_path / "data"),
            "--run_dir", str(tmp_path / "run")]
    cases = [
        ([*demo, "--num_threads", "-1"], "tacred fit: error: --num_threads -1: must be a number >= 1"),
        ([*demo[:-2], "--run_dir=" + str(tmp_path / "run"), "--trainer.max_epochs=-3"],
         "tacred fit: error: --trainer.max_epochs -3: must be >= 1 (or -1 for no limit)"),
        ([*demo, "--data.data_dir", str(tmp_path / "nothere")],
         f"tacred fit: error: data file not found: {tmp_path / 'nothere' / 'train.json'}"),
        ([*demo, "--data.dev_file", "missing_dev.json"],
         f"tacred fit: error: data file not found: {tmp_path / 'data' / 'missing_dev.json'}"),
        ([*demo, "--model.lr", "0"], "tacred fit: error: --model.lr 0.0: must be a number > 0"),
        ([*demo, "--model.lr=-1e-3"], "tacred fit: error: --model.lr -0.001: must be a number > 0"),
        ([*demo, "--model.optimizer", "adam"], "tacred fit: error: --model.optimizer 'adam': must be one of sgd, adamw"),
        ([*demo, "--data.batch_size", "0"], "tacred fit: error: --data.batch_size 0: must be a number >= 1"),
        ([*demo, "--model.lr", "fast"], "tacred fit: error: --model.lr 'fast': expected a value of type float"),
        ([*demo, "--data.batch_size=2.5"], "tacred fit: error: --data.batch_size '2.5': expected a value of type int"),
        ([*demo, "--model.network.dropout", "2"],
         "tacred fit: error: --model.network.dropout 2.0: must be a probability in [0, 1)"),
        ([*demo, "--model.network.num_heads", "7"],
         "tacred fit: error: --model.network.num_heads 7: must divide the model dimension word_dim + pos_dim + ner_dim"),
        ([*demo, "--data.labels", "[a, b]"],
         "tacred fit: error: --data.labels ['a', 'b']: must contain the no-relation label 'no_relation'"),
        ([*demo, "--checkpoint_minutes", "-5"], "tacred fit: error: --checkpoint_minutes -5: must be a number > 0"),
        ([*demo, "--data.data_dir", str(tmp_path / "object")],
         f"tacred fit: error: {tmp_path / 'object' / 'train.json'}: holds a JSON object (keys 'data'), not a list"),
    ]
    for argv, message in cases:
        proc = run(argv)
        assert "HEAVY [] CODE 2" in proc.stdout, f"{argv}: {proc.stdout + proc.stderr}"
        assert message in proc.stderr, proc.stderr



def broken_data(tmp_path):
    """Folders whose train.json and test.json are bad JSON, hold an example without a field, or one with a span
    outside its sentence, and the error each gets (after the file's name)."""
    import json

    from tacred.datasets.synthetic import write_corpus

    good = tmp_path / "good"
    write_corpus(good, n_train=20, n_dev=5, n_test=5)
    records = json.loads((good / "train.json").read_text())
    broken = {"bad_json": json.dumps(records)[:-40],
              "missing": json.dumps([*records[:7], {k: v for k, v in records[7].items() if k != "relation"}]),
              "span": json.dumps([*records[:3], {**records[3], "obj_end": 99}])}
    length = len(records[3]["token"])
    expected = {"bad_json": ": invalid JSON at line 1, column",
                "missing": f": example 7 (id {records[7]['id']!r}): missing field(s) relation",
                "span": f": example 3 (id {records[3]['id']!r}): span obj_start={records[3]['obj_start']}, obj_end=99 "
                        f"does not satisfy 0 <= start <= end < {length} (sentence length)"}
    folders = {}
    for name, text in broken.items():
        folders[name] = folder = tmp_path / name
        folder.mkdir()
        for split in ("train", "dev", "test"):
            (folder / f"{split}.json").write_text(text if split in ("train", "test") else json.dumps(records))
    return folders, expected


def test_a_malformed_data_file_is_reported_before_torch_loads(tmp_path):
    """Each problem named with the file, the example's index and id, by `tacred fit` and by `tacred test` with a
    --config, before torch or Lightning is imported: the target is under 2 s (benchmarks/time_to_error.py measures
    it; Lightning's start alone took 10-30 s). The checkpoint is not read: the data file is refused first."""
    folders, expected = broken_data(tmp_path)
    ckpt = tmp_path / "model.ckpt"
    ckpt.write_bytes(b"PK\x03\x04 never read")
    for name, folder in folders.items():
        demo = ["--config", str(REPO / "configs/demo.yaml"), "--data.data_dir", str(folder), "--run_dir",
                str(tmp_path / "run")]
        cases = [["fit", *demo], ["test", "--ckpt_path", str(ckpt), *demo]]
        if name == "bad_json":  # a test file named on the command line is read as JSON before the checkpoint too
            cases.append(["test", "--ckpt_path", str(ckpt), "--data.test_file", str(folder / "test.json")])
        for argv in cases:
            proc = run(argv)
            assert "HEAVY [] CODE 2" in proc.stdout, f"{argv}: {proc.stdout + proc.stderr}"
            split = "train" if argv[0] == "fit" else "test"
            assert f"tacred {argv[0]}: error: {folder / split}.json{expected[name]}" in proc.stderr, proc.stderr


def test_an_invalid_example_of_a_checkpoints_test_file_is_reported_before_lightning_loads(checkpoint, tmp_path):
    """Without --config, `tacred test` takes --data.strict from the checkpoint's configuration. In its run folder the
    fit's config.yaml says the same, so the examples are checked before torch loads; a checkpoint copied out of its
    run folder is read first (torch has loaded then, Lightning not)."""
    import shutil

    assert (checkpoint.parent.name, (checkpoint.parent.parent / "config.yaml").is_file()) == ("checkpoints", True)
    alone = tmp_path / "alone" / "model.ckpt"
    alone.parent.mkdir()
    shutil.copy(checkpoint, alone)
    folders, expected = broken_data(tmp_path)
    for name in ("missing", "span"):
        test_file = folders[name] / "test.json"
        for ckpt, heavy in ((checkpoint, "[]"), (alone, "['torch']")):
            proc = run(["test", "--ckpt_path", str(ckpt), "--data.test_file", str(test_file)])
            assert f"HEAVY {heavy} CODE 2" in proc.stdout, proc.stdout + proc.stderr
            assert f"tacred test: error: {test_file}{expected[name]}" in proc.stderr, proc.stderr

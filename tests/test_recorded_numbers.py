"""Refactoring changes no number: a fixed-seed 2-epoch run of the paper's network on the demo corpus must give the
dev metrics and test predictions recorded in ``tests/fixtures/recorded_2_epochs.json``, and a checkpoint written by an
earlier version of tacred (``tests/fixtures/checkpoint_v1.ckpt``, a small network) must still load and predict what it
predicted when it was written.

Regenerate the records only on purpose, when a change is meant to change the numbers:
``python tests/test_recorded_numbers.py`` (the commit message must say why).
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import pytest
import torch

DATA = Path(__file__).resolve().parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]  # not from tests.conftest: this file also runs as a script
RECORDS = DATA / "recorded_2_epochs.json"
OLD_CHECKPOINT = DATA / "checkpoint_v1.ckpt"
# Kernels differ across CPUs (AVX2, AVX-512): sums round differently, so the same run agrees to ~1e-6, not bit for bit.
TOLERANCE = 1e-4
SMALL = ["--model.network.word_dim", "24", "--model.network.ffn_dim", "16",
         "--model.network.attention_dim", "16"]


def corpus(root: Path) -> Path:
    from tacred.datasets.synthetic import write_corpus

    write_corpus(root, seed=5, n_train=240, n_dev=60, n_test=60)
    return root


def run_and_record(data: Path, run: Path, *extra: str) -> dict:
    """Fit 2 epochs from configs/demo.yaml (seed 1), test the last checkpoint; the numbers a refactor must keep."""
    from tacred.cli import main

    threads = torch.get_num_threads()
    try:
        common = ["--config", str(REPO / "configs" / "demo.yaml"), "--data.data_dir", str(data)]
        assert main(["fit", *common, "--run_dir", str(run), "--trainer.max_epochs", "2", *extra]) == 0
        assert main(["test", "--ckpt_path", str(run / "checkpoints" / "last.ckpt")]) == 0
    finally:
        torch.set_num_threads(threads)
    with open(run / "metrics.csv", newline="") as f:
        dev = [{k: float(v) for k, v in row.items() if (k.startswith("val/") or k == "train/loss") and v} for row in csv.DictReader(f)]
    predictions = [json.loads(line) for line in (run / "test_predictions.jsonl").read_text().splitlines()]
    return {"dev": [row for row in dev if row],
            "test": [{"id": p["id"], "relation": p["relation"], "probability": p["probability"]} for p in predictions]}


def predictions_of(checkpoint: Path, data: Path) -> list[dict]:
    from tacred import load_model

    model = load_model(checkpoint)
    examples = json.loads((data / "test.json").read_text())
    return [{"relation": p.relation, "probability": p.probability} for p in model.predict(examples)]


def assert_close(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.keys() == w.keys(), i
        for key, value in w.items():
            if isinstance(value, float):
                assert math.isclose(g[key], value, abs_tol=TOLERANCE), (i, key, g[key], value)
            else:
                assert g[key] == value, (i, key, g[key], value)


@pytest.fixture(scope="module")
def records() -> dict:
    return json.loads(RECORDS.read_text())


def test_a_fixed_seed_run_gives_the_recorded_dev_metrics_and_test_predictions(records, tmp_path):
    got = run_and_record(corpus(tmp_path / "data"), tmp_path / "run")
    assert len(got["dev"]) == 2
    assert_close(got["dev"], records["dev"])
    assert_close(got["test"], records["test"])


def test_a_checkpoint_written_by_an_earlier_version_loads_and_predicts_the_same(records, tmp_path):
    got = predictions_of(OLD_CHECKPOINT, corpus(tmp_path / "data"))
    assert_close(got, records["old_checkpoint_predictions"])


if __name__ == "__main__":  # regenerate the records (see the module docstring)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = corpus(root / "data")
        records = run_and_record(data, root / "run")
        if "--checkpoint" in sys.argv:  # also replace the old-version checkpoint (only when its format is retired)
            run_and_record(data, root / "small", *SMALL)
            OLD_CHECKPOINT.write_bytes((root / "small" / "checkpoints" / "last.ckpt").read_bytes())
        records["old_checkpoint_predictions"] = predictions_of(OLD_CHECKPOINT, data)
    RECORDS.write_text(json.dumps(records, indent=1) + "\n")
    print(f"wrote {RECORDS}")

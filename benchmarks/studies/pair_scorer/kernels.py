"""The CPU kernels behind this step, one torch thread: the feed-forward's product (3,200 × 130 by 130 × 560, the
scorer's tail shape) into a buffer of its own against into a slice of a (3,200, 950) buffer; tanh, sigmoid and
σ = 1 / (1 + exp(−x)) over 3,200 × 200 floats (ns an element); and, for each, how many elements of a contiguous
tensor's prefix (20 lengths, 980 to 999) come out other than in the whole tensor.

    python -m benchmarks.studies.pair_scorer.kernels [--quick]

--quick: a few calls of each, one round (a smoke run).
"""

import sys
import time

import torch

torch.set_num_threads(1)
QUICK = "--quick" in sys.argv[1:]
ROUNDS = 1 if QUICK else 3


def per_call(f, n: int) -> float:
    f()
    start = time.process_time()
    for _ in range(n):
        f()
    return (time.process_time() - start) / n


def products() -> None:
    m, k, n = 3200, 130, 560
    weight, a = torch.randn(n, k), torch.randn(m, k)
    own, wide = torch.randn(m, n), torch.randn(m, 950)
    into_slice = wide[:, 390:]
    flops = 2 * m * k * n
    for _ in range(ROUNDS):
        print(f"product into its own buffer {flops / per_call(lambda: own.addmm_(a, weight.T), 2 if QUICK else 40) / 1e9:.0f} "
              f"GFLOP/s, into a slice of a wider one {flops / per_call(lambda: into_slice.addmm_(a, weight.T), 2 if QUICK else 40) / 1e9:.0f}")


def sigma(x: torch.Tensor) -> torch.Tensor:
    return x.neg().exp_().add_(1).reciprocal_()


def activations() -> None:
    x = torch.randn(3200, 200)
    y = x.clone()
    forms = {"tanh": lambda: y.copy_(x).tanh_(), "sigmoid": lambda: y.copy_(x).sigmoid_(),
             "1/(1+exp(-x))": lambda: y.copy_(x).neg_().exp_().add_(1).reciprocal_(), "copy alone": lambda: y.copy_(x)}
    for _ in range(ROUNDS):
        print("ns an element: " + ", ".join(f"{name} {per_call(f, 2 if QUICK else 200) / x.numel() * 1e9:.2f}"
                                            for name, f in forms.items()))
    torch.manual_seed(0)
    z = torch.randn(1000) * 3
    for name, f in {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "exp": torch.exp, "1/(1+exp(-x))": sigma}.items():
        whole = f(z)
        moved = sum(int((f(z[:n].clone()) != whole[:n]).sum()) for n in range(980, 1000))
        print(f"{name}: {moved} elements of 20 prefixes differ from the whole tensor's")


if __name__ == "__main__":
    products()
    activations()

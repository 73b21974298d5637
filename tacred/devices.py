"""One device rule for every way of running a model: ``auto`` (CUDA when present, else the CPU), ``cpu``, ``cuda`` or
``cuda:N``. The Python API (``device=``), ``tacred serve``/``predict --sentences``/``extract`` (``--device``) and the
ONNX Runtime predictor resolve names here; Lightning's commands keep Lightning's option (``--trainer.accelerator``,
where ``gpu`` means ``cuda``) and are checked by the same rule. A device that is asked for and absent is a
:class:`DeviceError` naming it, never a bare assertion deep inside torch."""

from __future__ import annotations

from typing import Any

from tacred.errors import TacredError

DEVICE_CHOICES = ("auto", "cpu", "cuda")
DEVICE_HELP = "auto (CUDA when present, else the CPU), cpu, cuda or cuda:N (default auto)"
PRECISIONS = ("32", "bf16")
PRECISION_HELP = ("the arithmetic of the run's transformer encoders (a typed-marker or joint model's, a trained NER's): "
                  "32 (float32) or bf16 (bfloat16 autocast: faster on CPUs with avx512_bf16 or AMX and on GPUs, "
                  "slower on other CPUs; probabilities move in the second or third decimal); default: each as saved "
                  "(the relation or joint model float32, a NER as trained). Word-vocabulary networks run float32")


class DeviceError(TacredError, ValueError):
    """A device (or a precision to run it at) that is unknown, or asked for and not present on this machine."""


def resolve_device(asked: str, cuda_devices: int, why_none: str = "no CUDA device is present") -> str:
    """``cpu`` or ``cuda[:N]`` for the name ``asked``, given how many CUDA devices the runtime sees."""
    name = str(asked).strip().lower()
    if name == "gpu":  # Lightning's name for the same thing
        name = "cuda"
    if name == "auto":
        return "cuda" if cuda_devices > 0 else "cpu"
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        index = name.partition(":")[2]
        if index and not index.isdigit():
            raise DeviceError(f"device {asked!r}: expected cuda:N with a device number N")
        if cuda_devices == 0:
            raise DeviceError(f"device {asked!r}: CUDA is not available here ({why_none}); use --device auto or cpu")
        if index and int(index) >= cuda_devices:
            raise DeviceError(f"device {asked!r}: this machine has {cuda_devices} CUDA device(s), numbered from 0")
        return name
    raise DeviceError(f"device {asked!r}: expected one of {DEVICE_HELP}")


def check_device_name(asked: str) -> None:
    """``asked`` checked without importing torch: a name of the rule, and no CUDA device asked for on a machine
    without NVIDIA's driver (torch's own view is taken later, where there is one)."""
    import os
    import shutil

    name = str(asked).strip().lower()
    if name in ("mps",):
        return
    resolve_device(asked, 1 << 16)  # the name's form (any device number passes here)
    if name in ("cuda", "gpu") or name.startswith("cuda:"):
        if not os.path.exists("/proc/driver/nvidia/version") and shutil.which("nvidia-smi") is None:
            raise DeviceError(f"device {asked!r}: CUDA is not available here (no NVIDIA driver is installed); use "
                              "--device auto or cpu")


def _torch_cuda() -> tuple[int, str]:
    """How many CUDA devices torch sees, and why none when there are none."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    why = (f"this torch {torch.__version__} is built without CUDA" if torch.version.cuda is None
           else "torch finds no CUDA device")
    return count, why


def torch_device(asked: str) -> str:
    """The torch device for ``asked`` (torch's own view of CUDA; ``mps`` too, where torch has Apple's MPS)."""
    if str(asked).strip().lower() == "mps":
        check_accelerator("mps", "device")
        return "mps"
    return resolve_device(asked, *_torch_cuda())


def check_accelerator(accelerator: object, option: str = "--trainer.accelerator") -> None:
    """Lightning's accelerator names under the same rule: ``cuda``/``gpu`` or ``mps`` that are absent are a
    :class:`DeviceError` (Lightning would fail later with a bare assertion or a long stack)."""
    if not isinstance(accelerator, str):
        return
    name = accelerator.strip().lower()
    if name in ("cuda", "gpu"):
        count, why = _torch_cuda()
        if count == 0:
            raise DeviceError(f"{option} {accelerator!r}: CUDA is not available here ({why}); use {option} auto or cpu")
    elif name == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise DeviceError(f"{option} {accelerator!r}: Apple's MPS is not available here; use {option} auto or cpu")


def onnx_providers(asked: str) -> tuple[str, list[str | tuple[str, dict[str, str]]]]:
    """The device and ONNX Runtime execution providers for ``asked``: CUDA's provider (on the asked device) before the
    CPU's where the installed onnxruntime has it, the CPU's alone otherwise."""
    import onnxruntime as ort

    has_cuda = "CUDAExecutionProvider" in ort.get_available_providers()
    device = resolve_device(asked, 1 if has_cuda else 0,
                            f"the installed onnxruntime {ort.__version__} has no CUDAExecutionProvider; "
                            "install onnxruntime-gpu")
    if device == "cpu":
        return device, ["CPUExecutionProvider"]
    index = device.partition(":")[2] or "0"
    return device, [("CUDAExecutionProvider", {"device_id": index}), "CPUExecutionProvider"]


def model_device(asked: str, onnx: bool = False) -> tuple[str, list[str | tuple[str, dict[str, str]]]]:
    """The device a loaded model runs on, resolved once: ONNX Runtime's view and its execution providers
    (:func:`onnx_providers`) for an exported folder, torch's (:func:`torch_device`; no providers) for a checkpoint."""
    if onnx:
        return onnx_providers(asked)
    return torch_device(asked), []


def check_precision(asked: str | None) -> str | None:
    """``asked`` as one of :data:`PRECISIONS` (None: each model as saved), else a :class:`DeviceError`; no torch."""
    if asked is None:
        return None
    name = str(asked).strip().lower()
    name = {"32-true": "32", "fp32": "32", "float32": "32", "bf16-mixed": "bf16", "bfloat16": "bf16"}.get(name, name)
    if name not in PRECISIONS:
        raise DeviceError(f"precision {asked!r}: expected 32 or bf16")
    return name


def model_precision(asked: str | None, device: str, onnx: bool = False, source: object = "the model",
                    warn: bool = True) -> str | None:
    """``asked`` checked (:func:`check_precision`) for a model that runs on the resolved ``device``: an exported ONNX
    model (``onnx``, named by ``source``) runs as it was written and refuses bf16; bf16 on a CPU that emulates it is
    logged as slower (``warn``)."""
    precision = check_precision(asked)
    if onnx and precision == "bf16":
        raise DeviceError(f"precision bf16: {source} is an ONNX export, which runs as it was written (float32); "
                          "bf16 is for checkpoints and run folders")
    if warn and precision == "bf16" and device == "cpu" and not cpu_has_bf16():
        import logging

        logging.getLogger("tacred").warning("precision bf16 on a CPU without avx512_bf16 or AMX: torch emulates "
                                            "bfloat16, which is slower than float32 here")
    return precision


BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})  # the CPU flags of native bfloat16 arithmetic


def cpu_flags() -> list[str]:
    """The instruction-set extensions that decide torch's speed on this CPU (AVX2, AVX-512, its bf16, AMX), from
    Linux's ``/proc/cpuinfo`` (none found elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            flags = set(next((line for line in info if line.startswith("flags")), "").partition(":")[2].split())
    except OSError:
        return []
    return sorted(flags & {"avx2", "avx512f", "amx_tile", *BF16_FLAGS})


def cpu_has_bf16() -> bool:
    """Whether this CPU computes in bfloat16 natively (:data:`BF16_FLAGS`). Without them torch emulates bfloat16,
    slower than float32."""
    return bool(BF16_FLAGS & set(cpu_flags()))


def autocast(device: str, precision: str | None) -> Any:
    """The context a model's forward step runs in on ``device`` (resolved) at ``precision``: bfloat16 autocast for
    ``bf16``, nothing otherwise."""
    import contextlib

    if precision != "bf16":
        return contextlib.nullcontext()
    import torch

    return torch.autocast(device.partition(":")[0], dtype=torch.bfloat16)


def keep_freed_memory() -> bool:
    """Have glibc's malloc keep the memory a batch frees for the next batch (True where it is glibc's). By default
    an allocation above 32 MiB gets fresh pages from the kernel and returns them when freed, so every batch of the
    relation model paid the kernel to zero its largest buffers again; the process's peak memory is unchanged, but it
    stays at its peak. Training gains too: its batches free and allocate buffers of the same sizes step after step."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(mallopt(m_mmap_threshold, 1 << 30)) and bool(mallopt(m_trim_threshold, 1 << 31))

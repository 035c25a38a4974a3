"""``--device auto|cpu|cuda[:N]``."""

from __future__ import annotations

import torch


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` picks CUDA when available, else CPU; an explicit ``cuda`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"--device {name} was asked for, but torch sees no CUDA device")
    return device


def threaded_device(name: str = "auto", num_threads: int = 0) -> torch.device:
    """``resolve_device(name)``, after limiting torch to ``num_threads`` CPU threads (0: torch's default)."""
    if num_threads > 0:
        torch.set_num_threads(num_threads)
    return resolve_device(name)


def has_native_bf16(device: torch.device) -> bool:
    """Whether ``device`` computes in bfloat16 natively (CUDA GPUs from Ampere on; CPUs with AVX-512 BF16
    or AMX).  Elsewhere torch emulates bfloat16, which is slower than float32."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


# bf16 is chosen by measurement only when it takes at most this share of float32's time: a near tie stays float32
BF16_MAX_TIME_SHARE = 0.9


def bf16_pays(float32_seconds: float, bf16_seconds: float) -> bool:
    """Whether a measured bf16 time is clearly below the float32 time of the same work (the rule of
    ``punctuate --bert-precision fastest`` and of training's ``--amp fastest``)."""
    return bf16_seconds <= BF16_MAX_TIME_SHARE * float32_seconds

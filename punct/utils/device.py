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

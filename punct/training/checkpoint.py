"""The project's one checkpoint format: written by :func:`save_checkpoint`, read by :func:`load_checkpoint`
(``torch.load(weights_only=True)``), with the RNG states a resume restores.

Every training loop (acoustic model, BERT, punctuation TDNN, cross-attention) writes ``epoch-N.pt`` and its
model-only best checkpoint as one dict: ``model`` (state dict), ``optimizer`` and ``state`` (``TrainState``;
both None in a model-only file), ``config`` (the training config), ``rng`` (:func:`rng_state`) and the
model's own extras (the AM's ``tokens``, the TDNN's ``model_config``, BERT's ``head_specs``, the
cross-attention ``kind``).  TDNN checkpoints written before this format name the config ``train_config``.

Checkpoints hold only tensors and plain containers (dict, list, tuple, str, int, float, bool, None):
configs as ``dataclasses.asdict`` dicts, and the NumPy RNG state as a list (:func:`rng_state`).  Resume
checkpoints of ``train_bert``/``train_mm`` written before that held the NumPy state as an ndarray; they
load with ``legacy_numpy_rng=True``, which allows exactly the NumPy types of a uint32 array (still the
restricted unpickler, never ``weights_only=False``).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import torch
from lhotse.utils import Pathlike

from punct.utils.atomic import atomic_path

MapLocation = str | torch.device | None


def _legacy_numpy_rng_globals() -> list[Any]:
    """The globals of a pickled 1-d uint32 ndarray (the MT19937 key of ``np.random.get_state()``)."""
    from numpy._core.multiarray import _reconstruct

    return [
        # by name: a file written by NumPy 1.x refers to numpy.core, one by NumPy 2 to numpy._core
        (_reconstruct, "numpy._core.multiarray._reconstruct"),
        (_reconstruct, "numpy.core.multiarray._reconstruct"),
        np.ndarray,
        np.dtype,
        type(np.dtype(np.uint32)),
    ]


def save_checkpoint(
    path: Pathlike,
    *,
    model: torch.nn.Module,
    config: Any,
    optimizer: torch.optim.Optimizer | None = None,
    state: Any = None,
    **extra: Any,
) -> None:
    """Writes ``path`` atomically in the format above; ``model`` may be DDP-wrapped, ``config`` and ``state``
    are dataclasses (``state`` and ``optimizer`` None for a model-only file)."""
    module = model.module if hasattr(model, "module") else model
    payload = {
        "model": module.state_dict(),
        "optimizer": None if optimizer is None else optimizer.state_dict(),
        "state": None if state is None else dataclasses.asdict(state),
        "config": dataclasses.asdict(config),
        "rng": rng_state(),
        **extra,
    }
    with atomic_path(path, suffix=".pt") as tmp:
        torch.save(payload, tmp)


def load_checkpoint(path: Pathlike, map_location: MapLocation = "cpu", *, legacy_numpy_rng: bool = False) -> Any:
    """``torch.load(path, weights_only=True)``; ``legacy_numpy_rng``: also old resume checkpoints whose
    NumPy RNG state is an ndarray."""
    if not legacy_numpy_rng:
        return torch.load(path, map_location=map_location, weights_only=True)
    with torch.serialization.safe_globals(_legacy_numpy_rng_globals()):
        return torch.load(path, map_location=map_location, weights_only=True)


def rng_state() -> dict[str, Any]:
    """Python, NumPy, torch and (where CUDA is initialised) every GPU's RNG states as checkpoint-safe values
    (NumPy's key array as a list)."""
    name, keys, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    state = {
        "python": random.getstate(),
        "numpy": (name, keys.tolist(), pos, has_gauss, cached_gaussian),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restores :func:`rng_state` (also the older form with the NumPy key as an ndarray)."""
    random.setstate(state["python"])
    name, keys, pos, has_gauss, cached_gaussian = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), int(pos), int(has_gauss), float(cached_gaussian)))
    torch.set_rng_state(state["torch"].cpu())  # resumed with map_location=cuda it would be on the GPU
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"][: torch.cuda.device_count()]])


def average_state_dicts(state_dicts: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of models' floating-point weights and buffers (icefall's ``--avg``); integer
    buffers (BatchNorm's ``num_batches_tracked``) are the last model's."""
    if not state_dicts:
        raise ValueError("average_state_dicts: no models to average")
    last = state_dicts[-1]
    averaged = {}
    for name, value in last.items():
        if not value.is_floating_point():
            averaged[name] = value.clone()
            continue
        total = torch.zeros_like(value, dtype=torch.float64)
        for state_dict in state_dicts:
            total += state_dict[name].to(torch.float64)
        averaged[name] = (total / len(state_dicts)).to(value.dtype)
    return averaged

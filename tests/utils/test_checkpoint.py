"""punct.training.checkpoint: weights-only loading, RNG states in checkpoints, old resume checkpoints."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
import torch

from punct.training.checkpoint import load_checkpoint, rng_state, set_rng_state


def draws() -> tuple:
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def test_rng_state_is_weights_only_safe_and_restores_all_three(tmp_path):
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    torch.save({"rng": rng_state()}, tmp_path / "epoch-1.pt")
    expected = draws()
    saved = torch.load(tmp_path / "epoch-1.pt", weights_only=True)
    draws()  # move every generator on
    set_rng_state(saved["rng"])
    assert draws() == expected


def test_old_checkpoint_with_numpy_state_loads_only_when_asked(tmp_path):
    np.random.seed(4)
    old = {"rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
           "model": {"w": torch.ones(2)}}
    torch.save(old, tmp_path / "epoch-1.pt")
    expected = float(np.random.rand())
    with pytest.raises(pickle.UnpicklingError):
        load_checkpoint(tmp_path / "epoch-1.pt")
    saved = load_checkpoint(tmp_path / "epoch-1.pt", legacy_numpy_rng=True)
    assert torch.equal(saved["model"]["w"], torch.ones(2))
    set_rng_state(saved["rng"])
    assert float(np.random.rand()) == expected


def test_legacy_mode_still_refuses_other_objects(tmp_path):
    torch.save({"array": np.arange(3, dtype=np.float64), "obj": np.array([object()], dtype=object)}, tmp_path / "x.pt")
    with pytest.raises(pickle.UnpicklingError):
        load_checkpoint(tmp_path / "x.pt", legacy_numpy_rng=True)

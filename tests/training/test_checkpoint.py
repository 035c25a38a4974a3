"""punct.training.checkpoint: the one checkpoint format, weights-only loading, RNG states in checkpoints,
old resume checkpoints."""

from __future__ import annotations

import dataclasses
import pickle
import random

import numpy as np
import pytest
import torch

from punct.training.checkpoint import average_state_dicts, load_checkpoint, rng_state, save_checkpoint, set_rng_state
from punct.training.loop import TrainState


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
    old = {
        "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
        "model": {"w": torch.ones(2)},
    }
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


@dataclasses.dataclass
class _Config:
    dim: int = 3
    name: str = "toy"


class _Wrapped(torch.nn.Module):
    """Stands in for DistributedDataParallel: the model under ``.module``."""

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module


@pytest.mark.parametrize("wrapped", [False, True])
def test_one_format_for_every_loop(tmp_path, wrapped):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    save_checkpoint(
        tmp_path / "epoch-1.pt",
        model=_Wrapped(model) if wrapped else model,
        config=_Config(),
        optimizer=optimizer,
        state=TrainState(epoch=1, step=5),
        tokens=["<blk>", "a"],
    )
    saved = load_checkpoint(tmp_path / "epoch-1.pt")
    assert set(saved) == {"model", "optimizer", "state", "config", "rng", "tokens"}
    assert set(saved["model"]) == {"weight", "bias"}  # no "module." prefix
    assert torch.equal(saved["model"]["weight"], model.weight)
    assert saved["state"]["epoch"] == 1 and saved["state"]["step"] == 5 and saved["config"] == {"dim": 3, "name": "toy"}
    assert saved["optimizer"]["state"][0]["step"] == 1 and saved["tokens"] == ["<blk>", "a"]
    # a model-only file: same keys, no optimizer and no state
    save_checkpoint(tmp_path / "best.pt", model=model, config=_Config())
    best = load_checkpoint(tmp_path / "best.pt")
    assert (
        best["optimizer"] is None
        and best["state"] is None
        and set(best) == {"model", "optimizer", "state", "config", "rng"}
    )
    assert not list(tmp_path.glob(".*tmp*"))  # written atomically


def test_average_state_dicts_is_the_mean_of_the_weights_and_keeps_integer_buffers():
    models = [torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2)) for _ in range(3)]
    for i, model in enumerate(models):
        model[1].num_batches_tracked.fill_(10 * (i + 1))
        model(torch.randn(4, 3))  # moves the BatchNorm running statistics
    states = [model.state_dict() for model in models]
    averaged = average_state_dicts(states)
    assert set(averaged) == set(states[0])
    for name in ("0.weight", "0.bias", "1.running_mean", "1.running_var"):
        expected = (states[0][name] + states[1][name] + states[2][name]) / 3
        assert torch.allclose(averaged[name], expected, atol=1e-6), name
        assert not torch.allclose(averaged[name], states[2][name]), name
    assert int(averaged["1.num_batches_tracked"]) == 31  # the last model's (30 + its one forward)
    models[0].load_state_dict(averaged)
    with pytest.raises(ValueError):
        average_state_dicts([])

"""punct.training.loop.seed_everything: deterministic kernels on the CPU, not by default on cuda."""

from __future__ import annotations

import pytest
import torch

from punct.training.loop import seed_everything, wants_determinism


@pytest.fixture(autouse=True)
def _restore_determinism():
    before = torch.are_deterministic_algorithms_enabled()
    yield
    torch.use_deterministic_algorithms(before)


@pytest.mark.parametrize(
    "setting, device_type, expected",
    [
        (None, "cpu", True),
        (None, "cuda", False),
        ("auto", "cuda", False),
        ("true", "cuda", True),
        ("false", "cpu", False),
        ("TRUE", "cpu", True),
    ],
)
def test_determinism_follows_the_device_unless_asked(monkeypatch, setting, device_type, expected):
    if setting is None:
        monkeypatch.delenv("PUNCT_DETERMINISTIC", raising=False)
    else:
        monkeypatch.setenv("PUNCT_DETERMINISTIC", setting)
    assert wants_determinism(device_type) is expected
    torch.use_deterministic_algorithms(not expected)
    seed_everything(3, device_type)
    assert torch.are_deterministic_algorithms_enabled() is expected


def test_same_seed_same_numbers_and_bad_setting(monkeypatch):
    seed_everything(5, "cuda")
    first = torch.rand(3)
    seed_everything(5, "cuda")
    assert torch.equal(first, torch.rand(3))
    monkeypatch.setenv("PUNCT_DETERMINISTIC", "yes")
    with pytest.raises(ValueError, match="PUNCT_DETERMINISTIC must be auto, true or false"):
        seed_everything(5)

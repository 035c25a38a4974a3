"""``--amp fastest`` with its verdict forced, so that the real probe runs and either branch is taken on any CPU."""

from __future__ import annotations

import pytest

from punct.training import precision


def force_fastest_verdict(monkeypatch: pytest.MonkeyPatch, bf16_faster: bool) -> None:
    """The probe measures as it would on a CPU with native bf16; its comparison then answers ``bf16_faster``."""
    monkeypatch.setattr(precision, "has_native_bf16", lambda device: True)
    monkeypatch.setattr(precision, "bf16_pays", lambda float32_seconds, bf16_seconds: bf16_faster)

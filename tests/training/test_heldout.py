"""Held-out parts drawn by a share of the hours (punct.training.heldout): disjoint, seeded, near their targets, never
above the cap; a part too small to score is warned about."""

from __future__ import annotations

import logging

import pytest

from punct.training.heldout import draw_by_share, small_part_warning


def test_draw_by_share_parts_are_disjoint_seeded_and_near_their_targets():
    amounts = {f"s{k:02d}": 1.0 + (k % 5) for k in range(40)}
    total = sum(amounts.values())
    test, dev = draw_by_share(amounts, [0.2, 0.1], seed=3)
    assert not set(test) & set(dev)
    assert sum(amounts[u] for u in test) / total == pytest.approx(0.2, abs=0.03)
    assert sum(amounts[u] for u in dev) / total == pytest.approx(0.1, abs=0.03)
    assert draw_by_share(dict(reversed(amounts.items())), [0.2, 0.1], seed=3) == [test, dev]
    assert draw_by_share(amounts, [0.2, 0.1], seed=4) != [test, dev]
    with pytest.raises(ValueError, match="cannot hold out 2 part"):
        draw_by_share({"a": 1.0, "b": 1.0}, [0.2, 0.2], seed=0)
    with pytest.raises(ValueError, match="max_share"):
        draw_by_share(amounts, [0.5], seed=0)


def test_tiny_split_is_warned_about(caplog):
    assert small_part_warning("dev", 600.0, 200, 120.0, 20) is None
    with caplog.at_level(logging.WARNING):
        message = small_part_warning("dev", 90.0, 200, 120.0, 20)
    assert message is not None and "1.5 min" in message and message in caplog.text
    assert "19 utterances" in small_part_warning("dev", 600.0, 19, 120.0, 20)

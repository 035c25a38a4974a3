"""Held-out parts (dev, test) drawn by a share of the hours, not by a count of speakers or recordings.

A corpus with a few dominant speakers breaks a split by count: "10 % of the speakers" can be one speaker who
says most of the corpus (issue 38: 783 of 855 utterances, 0.71 of 0.82 h, in dev).  :func:`draw_by_share`
visits the units (speakers or recordings) in one seeded random order and gives each part the units that bring
its hours closest to ``share`` of the total, skipping any unit that would take the part above ``max_share``
(a third by default: a dominant speaker stays in training).  :func:`small_part_warning` says when a part is
too small for its score to mean much.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np

logger = logging.getLogger(__name__)


def draw_by_share(
    amounts: Mapping[str, float], shares: Sequence[float], seed: int, max_share: float = 1 / 3, what: str = "unit"
) -> list[list[str]]:
    """Disjoint parts of the units of ``amounts`` (unit -> hours), the k-th holding about ``shares[k]`` of the
    total; at least one unit per part and at least one left over (training).

    The units are visited in a seeded permutation of their sorted ids; part k takes, from the units the earlier
    parts left, each one that brings its sum closer to its target without passing ``max_share`` of the total,
    until the target is reached.  When no unit does (every unit is larger than twice the target), the part
    takes the first unit in that order within ``max_share``.  ValueError when there is none, naming ``what`` (speaker,
    recording).
    """
    if not 0.0 < max_share < 1.0:
        raise ValueError(f"max_share must be in (0, 1), got {max_share}")
    for share in shares:
        if not 0.0 < share <= max_share:
            raise ValueError(f"a held-out share must be in (0, max_share={max_share:.3g}], got {share}")
    units = sorted(amounts)
    if len(units) < len(shares) + 1:
        raise ValueError(
            f"{len(units)} {what}(s): cannot hold out {len(shares)} part(s) and train on the rest; "
            f"give the held-out data separately, or split by another unit"
        )
    total = sum(amounts[u] for u in units)
    if total <= 0:
        raise ValueError(f"the {what}s hold no time: cannot draw held-out parts by their hours")
    cap = max_share * total
    order = [units[k] for k in np.random.default_rng(seed).permutation(len(units))]
    parts: list[list[str]] = []
    for share in shares:
        target, part, held = share * total, [], 0.0
        for unit in order:
            if held >= target:
                break
            amount = amounts[unit]
            if 0 < amount < 2 * (target - held) and held + amount <= cap:
                part.append(unit)
                held += amount
        if not part:
            fitting = [u for u in order if 0 < amounts[u] <= cap]
            if not fitting:
                largest = max(order, key=lambda u: amounts[u])
                raise ValueError(
                    f"no {what} holds at most {max_share:.0%} of the {total / 3600:.3f} h (the smallest left holds "
                    f"{min(amounts[u] for u in order) / total:.0%}, {largest!r} {amounts[largest] / total:.0%}): "
                    f"give the held-out data separately, or split by a smaller unit"
                )
            part = fitting[:1]
        order = [u for u in order if u not in part]
        if not order:
            raise ValueError(f"the held-out parts would take every {what}: nothing left to train on")
        parts.append(sorted(part))
    return parts


def small_part_warning(
    name: str, seconds: float, items: int, min_seconds: float, min_items: int, item_name: str = "utterances"
) -> str | None:
    """A warning (also logged) when a part holds less than ``min_seconds`` or ``min_items``; None otherwise."""
    if seconds >= min_seconds and items >= min_items:
        return None
    message = (
        f"{name} holds {seconds / 60:.1f} min in {items} {item_name} (less than {min_seconds / 60:.1f} min "
        f"or {min_items} {item_name}): too small to train on or to score reliably"
    )
    logger.warning("%s", message)
    return message

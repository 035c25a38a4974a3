"""Bootstrap intervals of statistics of confusion matrices (:mod:`punct.scoring.confusion`), and paired ones.

The resampling unit is a segment (or utterance): ``num_resamples`` resamples of the S segments with
replacement (seeded), the statistic recomputed on each, the ``(1 - level) / 2`` and ``(1 + level) / 2``
quantiles reported.  A resample sums the per-segment confusion matrices with its multiplicities, so 1000
resamples cost a matrix product.  Paired: two systems resampled with the same draws (one seed), so that the
segments' shared difficulty cancels out of their difference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class Interval:
    value: float
    low: float
    high: float

    def fmt(self, scale: float = 100.0) -> str:
        return f"{scale * self.value:.2f} ({scale * self.low:.1f}, {scale * self.high:.1f})"


def bootstrap_values(
    confusions: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], num_resamples: int = 1000, seed: int = 42
) -> np.ndarray:
    """The statistic on ``num_resamples`` resamples of the segments, drawn with replacement -> (B, ...).

    The draws depend only on ``seed`` and the number of segments, so two calls with the same seed on
    the same segments (e.g. two systems' confusions) resample the same segments: paired resamples.
    """
    confusions = np.asarray(confusions)
    if confusions.ndim != 3 or confusions.shape[0] == 0:
        raise ValueError(f"need (S, C, C) confusion matrices of at least one segment, got shape {confusions.shape}")
    s, c, _ = confusions.shape
    rng = np.random.default_rng(seed)
    flat = confusions.reshape(s, c * c).astype(np.float64)
    values = []
    for start in range(0, num_resamples, 200):  # chunks keep the (B, S) weight matrix small
        b = min(200, num_resamples - start)
        draws = rng.integers(0, s, size=(b, s))
        weights = np.zeros((b, s))
        np.add.at(weights, (np.repeat(np.arange(b), s), draws.ravel()), 1.0)
        values.append(statistic((weights @ flat).reshape(b, c, c)))
    return np.concatenate(values, axis=0)


def bootstrap(
    confusions: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    num_resamples: int = 1000,
    seed: int = 42,
    level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bootstrap interval over segments.

    Args:
      confusions: (S, C, C) per-segment confusion matrices.
      statistic: maps (..., C, C) summed confusion matrices to (..., K) (or (...)) values.
      num_resamples: resamples of S segments drawn with replacement.
      seed: the random generator's seed (same seed, same intervals).
      level: the interval's coverage (0.95: the 2.5 and 97.5 percentiles).
    Returns:
      (point estimate on all segments, lower bounds, upper bounds), each of the statistic's shape.
    """
    values = bootstrap_values(confusions, statistic, num_resamples, seed)
    point = statistic(np.asarray(confusions).sum(axis=0))
    alpha = (1.0 - level) / 2
    return point, np.quantile(values, alpha, axis=0), np.quantile(values, 1 - alpha, axis=0)


def paired_difference(
    confusions: np.ndarray,
    baseline: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    num_resamples: int = 1000,
    seed: int = 42,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """``statistic`` of a model minus that of a baseline on the same segments: (point, low, high), the bounds from
    resamples drawn the same for both (:func:`bootstrap_values` with one seed).  ``confusions`` and ``baseline``:
    (S, C, C) per-segment confusion matrices, segment i of both the same segment; a scalar statistic."""
    confusions, baseline = np.asarray(confusions), np.asarray(baseline)
    if confusions.shape != baseline.shape:
        raise ValueError(f"paired difference: confusions of shape {confusions.shape} against {baseline.shape}")
    differences = bootstrap_values(confusions, statistic, num_resamples, seed) - bootstrap_values(
        baseline, statistic, num_resamples, seed
    )
    point = float(statistic(confusions.sum(axis=0)) - statistic(baseline.sum(axis=0)))
    alpha = (1.0 - level) / 2
    return point, float(np.quantile(differences, alpha)), float(np.quantile(differences, 1 - alpha))

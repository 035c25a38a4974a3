"""Loss weights that make rare classes count more: (majority count / class count) ** power.

Power 1 is the expected effect of oversampling every class to the majority's count, power 0 plain
cross-entropy; a cap keeps a class seen a handful of times from dominating the loss.  Used by the
punctuation TDNN (utterance mode) and the ParCzech text-only and cross-attention models.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def inverse_frequency_weights(counts: Sequence[float], power: float, cap: float = 0.0) -> torch.Tensor:
    """Per-class weights (majority count / count) ** ``power``, at most ``cap`` when ``cap`` > 0;
    a class absent from ``counts`` weighs 0 (it has no examples to weigh)."""
    if power < 0:
        raise ValueError(f"class weight power must be >= 0, got {power}")
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 1 or not len(counts) or (counts < 0).any():
        raise ValueError(f"class counts must be a non-empty list of counts >= 0, got {counts.tolist()}")
    weights = np.where(counts > 0, (counts.max() / np.maximum(counts, 1)) ** power, 0.0)
    if cap > 0:
        weights = np.minimum(weights, cap)
    return torch.tensor(weights, dtype=torch.float32)

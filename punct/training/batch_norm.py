"""Which BatchNorm statistics a model keeps for evaluation.

In training mode a BatchNorm normalises with the batch's own statistics and updates running estimates
that evaluation then uses.  PyTorch's estimate is an exponential moving average (momentum 0.1), which
weighs about the last ten batches, computed with weights that changed at every step.  When a batch
holds a few whole utterances (the TDNN's utterance mode: 8 per batch), those ten batches are a few
talks, and the statistics saved at the end of an epoch depend on which talks the shuffle put last: on
the mini corpus one run's dev F1 swung between 49 and 70 from epoch to epoch.

``recompute`` (sometimes called precise BatchNorm) re-estimates the statistics after the epoch's last
step: a forward pass in training mode, without gradients, over training batches, each weighed equally.
Averaging over the epoch's own batches instead (the weights still changing) left the swings in place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import islice

import torch
from torch import nn

BATCH_NORM_STATS = ("ema", "recompute")


def batch_norms(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def recompute_batch_norm_stats(
    model: nn.Module, batches: Iterable, forward: Callable[[nn.Module, object], object], max_batches: int = 0
) -> int:
    """Replaces every BatchNorm's running statistics by their plain average over ``batches`` (at most
    ``max_batches``; 0: all), passed through ``forward(model, batch)`` in training mode without gradients.
    The model's mode and the BatchNorms' momentum are restored.  Returns the number of batches used."""
    norms = batch_norms(model)
    if not norms:
        return 0
    momenta = [norm.momentum for norm in norms]
    for norm in norms:
        if not norm.track_running_stats:
            raise ValueError(f"{type(norm).__name__} does not track running statistics")
        norm.reset_running_stats()
        norm.momentum = None  # cumulative average over the batches since the reset
    was_training = model.training
    model.train()
    used = 0
    try:
        with torch.no_grad():
            for batch in islice(batches, max_batches or None):
                forward(model, batch)
                used += 1
    finally:
        for norm, momentum in zip(norms, momenta):
            norm.momentum = momentum
        model.train(was_training)
    if used == 0:
        raise ValueError("no batches to recompute the BatchNorm statistics from")
    return used

"""Which BatchNorm statistics a model keeps for evaluation.

In training mode a BatchNorm normalises with the batch's own statistics and updates running estimates
that evaluation then uses.  PyTorch's estimate is an exponential moving average (momentum 0.1), which
weighs about the last ten batches.  When a batch holds a few whole utterances (the TDNN's utterance
mode: 8 per batch), those ten batches are a few talks, and the statistics saved at the end of an epoch
depend on which talks the shuffle put last: on the mini corpus the dev F1 of one run swung by up to 20
points between epochs, and recomputing the statistics over the whole training set after training
removed most of the swing (issue 12).

``epoch`` replaces the moving average by the plain average over the current epoch's batches (momentum
None, restarted when the epoch starts); nothing in the training step changes, and it costs nothing.
"""

from __future__ import annotations

from torch import nn

BATCH_NORM_STATS = ("ema", "epoch")


def restart_epoch_averages(model: nn.Module) -> int:
    """Resets every BatchNorm's running statistics and makes it average all following training batches
    equally; returns the number of BatchNorms."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        if not norm.track_running_stats:
            raise ValueError(f"{type(norm).__name__} does not track running statistics")
        norm.reset_running_stats()
        norm.momentum = None  # cumulative average: running = mean over the batches seen since the reset
    return len(norms)

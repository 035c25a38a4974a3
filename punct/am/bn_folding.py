"""Folding eval-mode BatchNorms into the convolutions around them (inference graphs; ``punct.am.folded``).

BN(ReLU(z)) = ReLU(a * z) + b per channel when the BatchNorm's scale a is positive: the scale goes into
the convolution before the ReLU and the shift b becomes a constant offset of the layer's output.  For a
convolution that computes valid positions only, a constant input offset c adds the constant
``constant_response(conv, c)`` to every output frame, which folds into the next bias.
"""

from __future__ import annotations

import copy

import torch
from torch import nn


def batch_norm_affine(norm: nn.BatchNorm1d) -> tuple[torch.Tensor, torch.Tensor]:
    """(a, b) with norm(v) = a * v + b per channel, in eval mode."""
    a = norm.weight / torch.sqrt(norm.running_var + norm.eps)
    return a, norm.bias - a * norm.running_mean


def scaled_conv(
    conv: nn.Conv1d, scale: torch.Tensor, shift: torch.Tensor, add: float | torch.Tensor = 0.0
) -> nn.Conv1d:
    """A copy of ``conv`` computing scale * (conv(x) + shift) + add, per output channel."""
    out = copy.deepcopy(conv)
    bias = conv.bias if conv.bias is not None else torch.zeros(conv.out_channels)
    out.weight = nn.Parameter(conv.weight * scale[:, None, None])
    out.bias = nn.Parameter((bias + shift) * scale + add)
    return out


def constant_response(conv: nn.Conv1d, offset: torch.Tensor) -> torch.Tensor:
    """What a constant input ``offset`` (per input channel) adds to ``conv``'s output, bias excluded."""
    return conv.weight.sum(dim=2) @ offset


def check_positive(scale: torch.Tensor, where: str) -> None:
    if not bool((scale > 0).all()):
        raise ValueError(
            f"cannot fold the BatchNorm of {where}: {int((scale <= 0).sum())} channels have a "
            "non-positive scale (gamma), so ReLU and BatchNorm do not commute"
        )

"""The EfficientPunct punctuation TDNN, windowed and fully convolutional.

Topology (Liu & Beigi 2023, and the layer sizes of the authors' released training script):

    frames (N, T=301, D)            D = BERT dim + acoustic dim (768 + 1024 = 1792 at paper size)
    Linear D -> 512 + ReLU          per frame: fuses the two modalities
    7 x Conv1d, each followed by ReLU then BatchNorm:
        512->256 k9 d1, 256->256 k9 d2, 256->128 k5 d1, 128->128 k5 d2,
        128->64 k7 d1, 64->64 k7 d2, 64->4 k5 d1           (no padding: 301 frames shrink to 243)
    each of the 4 output channels (one per class), separately, through shared layers:
        Linear 243 -> 70 + ReLU + BatchNorm(70), Linear 70 -> 1
    -> 4 logits (N, 4)

The shared per-channel head normalises each channel with its own batch statistics in training
(BatchNorm(70) is applied to one channel at a time, as in the authors' code), so the four
channels are looped over instead of being folded into the batch dimension.  Its running statistics,
used in eval mode, are then an average over the channels; ``head_norm_per_channel`` keeps them (and
the BatchNorm's affine parameters) per channel instead, so that eval normalises each channel as
training did.  This matters with a case head: the case channels' statistics differ from the
punctuation channels', and with the shared statistics the mini model said cap on most words.

Several heads (ParCzech: punctuation 9 + case 2, ``case_classes: 2``): the last conv layer has one
channel per class of every head (9 + 2 = 11), the shared per-channel head gives 11 logits, and
``split_heads`` cuts them into one block per head (``HEAD_NAMES`` order).  ``case_classes: 0`` (the
default) is the original single punctuation head.

Fully convolutional evaluation (``utterance_logits``): every layer before the per-channel head
is either per-frame or a convolution without padding, so running the stack once over the
utterance padded with ``context`` zero frames on each side and reading the 243-frame slice of
each word gives exactly the windowed result (in eval mode, where BatchNorm is a fixed affine map).
A 301-frame window centred on frame c of the utterance starts at c in padded coordinates, and its
243 output frames are the conv outputs c .. c+242.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

import torch
from torch import nn
from torch.nn import functional as F

from punct.fusion.frames import WINDOW_CENTRES

HEAD_NAMES: Tuple[str, ...] = ("punct", "case")  # order of the heads' logit blocks


@dataclass(frozen=True)
class TdnnConfig:
    """Shapes of the punctuation TDNN (defaults: paper size, 3.0 M parameters)."""

    input_dim: int = 1792  # BERT dim + acoustic dim; the training script derives it from the shards
    fusion_dim: int = 512  # output of the first (per-frame) linear layer
    channels: Tuple[int, ...] = (256, 256, 128, 128, 64, 64)  # conv outputs before the last (class) layer
    kernels: Tuple[int, ...] = (9, 9, 5, 5, 7, 7, 5)
    dilations: Tuple[int, ...] = (1, 2, 1, 2, 1, 2, 1)
    num_classes: int = 4  # punctuation classes (the first head)
    case_classes: int = 0  # >0: a second (case) head with this many classes; the last conv layer has one channel per class of every head
    window: int = 301  # frames per example, centred on each word's window_centre
    # transition (the paper: the frame before the next word, pause attached to the word) or word_end
    # (the word's last aligned frame); checkpoints from before this option used word_end
    window_centre: str = "transition"
    head_dim: int = 70  # shared per-channel hidden layer
    head_norm_per_channel: bool = False  # True: the head's BatchNorm has statistics and affine per channel (see above)
    dropout: float = 0.0  # dropout on the fused frames (after the fusion layer) in training; the paper has none

    def __post_init__(self) -> None:
        if not len(self.kernels) == len(self.dilations) == len(self.channels) + 1:
            raise ValueError(
                f"TdnnConfig: need len(kernels) == len(dilations) == len(channels) + 1, got "
                f"{len(self.kernels)}, {len(self.dilations)}, {len(self.channels)}"
            )
        if self.window_centre not in WINDOW_CENTRES:
            raise ValueError(f"TdnnConfig: window_centre must be one of {WINDOW_CENTRES}, got {self.window_centre!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"TdnnConfig: dropout must be in [0, 1), got {self.dropout}")
        if self.window % 2 != 1:
            raise ValueError(f"TdnnConfig: window must be odd (centred on a frame), got {self.window}")
        if self.num_classes < 2 or self.case_classes < 0 or self.case_classes == 1:
            raise ValueError(
                f"TdnnConfig: need num_classes >= 2 and case_classes 0 or >= 2, got {self.num_classes}, {self.case_classes}"
            )
        if self.output_frames < 1:
            raise ValueError(f"TdnnConfig: window {self.window} is shorter than the receptive field {self.shrink + 1}")

    @property
    def head_sizes(self) -> Dict[str, int]:
        """Classes of each head, in logit-block order."""
        sizes = {HEAD_NAMES[0]: self.num_classes}
        if self.case_classes:
            sizes[HEAD_NAMES[1]] = self.case_classes
        return sizes

    @property
    def num_outputs(self) -> int:
        """Channels of the last conv layer = logits per word (all heads)."""
        return sum(self.head_sizes.values())

    @property
    def shrink(self) -> int:
        """Frames lost by the unpadded convolutions: sum of dilation * (kernel - 1)."""
        return sum(d * (k - 1) for k, d in zip(self.kernels, self.dilations))

    @property
    def output_frames(self) -> int:
        """Frames after the conv stack (243 for 301 at paper size)."""
        return self.window - self.shrink

    @property
    def context(self) -> int:
        """Frames on each side of the centre frame (150 for 301)."""
        return self.window // 2


class PunctTdnn(nn.Module):
    """Punctuation TDNN over fused [BERT ; acoustic] frames; see the module docstring."""

    def __init__(self, config: TdnnConfig) -> None:
        super().__init__()
        self.config = config
        self.fusion = nn.Linear(config.input_dim, config.fusion_dim)
        sizes = (config.fusion_dim,) + tuple(config.channels) + (config.num_outputs,)
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for i, (kernel, dilation) in enumerate(zip(config.kernels, config.dilations)):
            self.convs.append(nn.Conv1d(sizes[i], sizes[i + 1], kernel_size=kernel, dilation=dilation))
            self.norms.append(nn.BatchNorm1d(sizes[i + 1]))
        self.head_hidden = nn.Linear(config.output_frames, config.head_dim)
        norm_size = config.head_dim * (config.num_outputs if config.head_norm_per_channel else 1)
        self.head_norm = nn.BatchNorm1d(norm_size)
        self.head_out = nn.Linear(config.head_dim, 1)

    def conv_stack(self, frames: torch.Tensor) -> torch.Tensor:
        """(N, T, D) fused frames -> (N, num_outputs, T - shrink)."""
        x = F.dropout(F.relu(self.fusion(frames)), self.config.dropout, self.training).transpose(1, 2)  # (N, fusion_dim, T)
        for conv, norm in zip(self.convs, self.norms):
            x = norm(F.relu(conv(x)))
        return x

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """(N, num_outputs, output_frames) -> (N, num_outputs) logits; shared layers, one channel at a time."""
        if self.config.head_norm_per_channel:
            h = F.relu(self.head_hidden(x))  # (N, C, head_dim)
            h = self.head_norm(h.reshape(h.shape[0], -1)).reshape(h.shape)
            return self.head_out(h).squeeze(-1)
        logits = []
        for c in range(x.shape[1]):
            h = self.head_norm(F.relu(self.head_hidden(x[:, c, :])))
            logits.append(self.head_out(h))
        return torch.cat(logits, dim=1)

    def forward(
        self, windows: torch.Tensor, utterance: Optional[torch.Tensor] = None, centres: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """(N, window, D) windows -> (N, num_outputs) logits (all heads; see ``split_heads``).

        With ``utterance`` and ``centres``, ``windows`` is instead a padded batch of whole utterances
        and the call is ``batch_logits`` (so that DistributedDataParallel sees it as the forward pass).
        """
        if utterance is not None:
            return self.batch_logits(windows, utterance, centres)
        if windows.shape[1] != self.config.window or windows.shape[2] != self.config.input_dim:
            raise ValueError(
                f"PunctTdnn expects windows (N, {self.config.window}, {self.config.input_dim}), got {tuple(windows.shape)}"
            )
        return self.head(self.conv_stack(windows))

    def utterance_logits(self, frames: torch.Tensor, centres: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Fully convolutional evaluation of one utterance.

        Args:
          frames: (T, D) fused frames of the whole utterance (unpadded).
          centres: the centre frame of each word's window (its last frame), 0 <= c < T.
        Returns:
          (len(centres), num_outputs) logits, equal to ``forward`` on the 301-frame windows in eval mode.
        """
        cfg = self.config
        centres = torch.as_tensor(centres, dtype=torch.long, device=frames.device)
        padded = F.pad(frames, (0, 0, cfg.context, cfg.context)).unsqueeze(0)  # (1, T + 2*context, D)
        return self.batch_logits(padded, torch.zeros_like(centres), centres)

    def batch_logits(self, padded: torch.Tensor, utterance: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
        """Fully convolutional pass over a batch of utterances.

        Args:
          padded: (B, L, D) utterances, each starting after ``context`` zero frames and followed by at
            least ``context`` zero frames (shorter utterances simply have more zeros at the end).
          utterance: (N,) the batch row of each word.
          centres: (N,) each word's centre frame within its utterance (unpadded coordinates).
        Returns:
          (N, num_outputs) logits.
        """
        cfg = self.config
        if centres.numel() == 0:
            return padded.new_zeros((0, cfg.num_outputs))
        conv = self.conv_stack(padded).transpose(1, 2)  # (B, L - shrink, C)
        # Output frame j of the conv stack sees padded input frames j .. j + shrink; the window of
        # centre c starts at padded frame c, so its slice is conv[c : c + output_frames].
        offsets = torch.arange(cfg.output_frames, device=padded.device)
        slices = conv[utterance.unsqueeze(1), centres.unsqueeze(1) + offsets]  # (N, output_frames, C)
        return self.head(slices.transpose(1, 2))


def split_heads(logits: torch.Tensor, config: TdnnConfig) -> Dict[str, torch.Tensor]:
    """(..., num_outputs) logits -> head name -> (..., classes of the head)."""
    if logits.shape[-1] != config.num_outputs:
        raise ValueError(f"expected {config.num_outputs} logits per word, got {logits.shape[-1]}")
    blocks = torch.split(logits, list(config.head_sizes.values()), dim=-1)
    return dict(zip(config.head_sizes, blocks))


def head_softmax(logits: torch.Tensor, config: TdnnConfig) -> torch.Tensor:
    """Softmax within each head's block, concatenated back: (..., num_outputs) posteriors."""
    return torch.cat([torch.softmax(block, dim=-1) for block in split_heads(logits, config).values()], dim=-1)


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())

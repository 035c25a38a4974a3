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

Several heads (``itn``: punctuation 9 + case 2, ``case_classes: 2``): the last conv layer has one
channel per class of every head (9 + 2 = 11), the shared per-channel head gives 11 logits, and
``split_heads`` cuts them into one block per head (``HEAD_NAMES`` order).  ``case_classes: 0`` (the
default) is the original single punctuation head.

Fully convolutional evaluation (``utterance_logits``): every layer before the per-channel head
is either per-frame or a convolution without padding, so running the stack once over the
utterance padded with ``context`` zero frames on each side and reading the 243-frame slice of
each word gives exactly the windowed result (in eval mode, where BatchNorm is a fixed affine map).
A 301-frame window centred on frame c of the utterance starts at c in padded coordinates, and its
243 output frames are the conv outputs c .. c+242.  An output frame that sees only padding is the same in
every utterance, so ``WordFactoredTdnn.utterance_logits`` pads by the stack's shrink (58) instead of
``context`` (150) and fills the outermost 92 output frames on each side from one kept column: 184 fewer
frames through the stack per utterance (benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from punct.models.punct_tdnn.frames import WINDOW_CENTRES

HEAD_NAMES: tuple[str, ...] = ("punct", "case")  # order of the heads' logit blocks


@dataclass(frozen=True)
class TdnnConfig:
    """Shapes of the punctuation TDNN (defaults: paper size, 3.0 M parameters)."""

    input_dim: int = 1792  # BERT dim + acoustic dim; the training script derives it from the shards
    fusion_dim: int = 512  # output of the first (per-frame) linear layer
    channels: tuple[int, ...] = (256, 256, 128, 128, 64, 64)  # conv outputs before the last (class) layer
    kernels: tuple[int, ...] = (9, 9, 5, 5, 7, 7, 5)
    dilations: tuple[int, ...] = (1, 2, 1, 2, 1, 2, 1)
    num_classes: int = 4  # punctuation classes (the first head)
    # >0: a second (case) head with this many classes; the last conv layer has one channel per class of every head
    case_classes: int = 0
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
                "TdnnConfig: need num_classes >= 2 and case_classes 0 or >= 2, "
                f"got {self.num_classes}, {self.case_classes}"
            )
        if self.output_frames < 1:
            raise ValueError(f"TdnnConfig: window {self.window} is shorter than the receptive field {self.shrink + 1}")

    @property
    def head_sizes(self) -> dict[str, int]:
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
        return self.convs_after_fusion(self.fusion(frames))

    def convs_after_fusion(self, fused: torch.Tensor) -> torch.Tensor:
        """(N, T, fusion_dim) fusion-layer outputs before the ReLU -> (N, num_outputs, T - shrink)."""
        x = F.dropout(F.relu(fused), self.config.dropout, self.training).transpose(1, 2)  # (N, fusion_dim, T)
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
        self, windows: torch.Tensor, utterance: torch.Tensor | None = None, centres: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(N, window, D) windows -> (N, num_outputs) logits (all heads; see ``split_heads``).

        With ``utterance`` and ``centres``, ``windows`` is instead a padded batch of whole utterances
        and the call is ``batch_logits`` (so that DistributedDataParallel sees it as the forward pass).
        """
        if utterance is not None:
            return self.batch_logits(windows, utterance, centres)
        if windows.shape[1] != self.config.window or windows.shape[2] != self.config.input_dim:
            raise ValueError(
                f"PunctTdnn expects windows (N, {self.config.window}, {self.config.input_dim}), "
                f"got {tuple(windows.shape)}"
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


class WordFactoredTdnn(nn.Module):
    """A trained ``PunctTdnn`` evaluated with the text part of its fusion layer computed once per word.

    A fused frame is [v_w(t) ; a_t] (the vector of the frame's word, the frame's acoustic vector), so
    the fusion layer's output W [v ; a] + b = W_text v_w(t) + (W_acoustic a_t + b): the first term is
    constant over a word and is computed per word, then gathered per frame.  At paper size that removes
    768 of the 1792 multiply-adds per input of the fusion layer on every frame (exact up to float
    rounding; ``tests/models/punct_tdnn/test_tdnn.py`` checks it).  Word index -1 (frames before the first word
    and padding) selects a zero text part, as zero-padded fused frames do.  Inference only: the two
    Linear layers are copies of the TDNN's fusion weights, made at construction.
    """

    def __init__(self, tdnn: PunctTdnn, text_dim: int) -> None:
        super().__init__()
        fusion_dim, input_dim = tdnn.fusion.weight.shape
        if not 0 < text_dim < input_dim:
            raise ValueError(
                f"text_dim must be in 1..{input_dim - 1} (the TDNN's input is {input_dim}), got {text_dim}"
            )
        self.tdnn = tdnn
        self.config = tdnn.config
        self.text_dim = text_dim
        self.text = nn.Linear(text_dim, fusion_dim, bias=False)
        self.acoustic = nn.Linear(input_dim - text_dim, fusion_dim)
        with torch.no_grad():
            self.text.weight.copy_(tdnn.fusion.weight[:, :text_dim])
            self.acoustic.weight.copy_(tdnn.fusion.weight[:, text_dim:])
            self.acoustic.bias.copy_(tdnn.fusion.bias)

    def forward(self, acoustic: torch.Tensor, word_vectors: torch.Tensor, word_index: torch.Tensor) -> torch.Tensor:
        """The conv stack's output from factored inputs.

        Args:
          acoustic: (B, L, Da) acoustic frames, zero where padded.
          word_vectors: (W, Dt) vectors of all the words of the batch.
          word_index: (B, L) row of ``word_vectors`` for each frame; -1 (or W): no word (a zero text part).
        Returns:
          (B, num_outputs, L - shrink), equal to ``tdnn.conv_stack`` on the fused frames.
        """
        per_word = self.text(word_vectors)
        per_word = torch.cat([per_word, per_word.new_zeros((1, per_word.shape[1]))])  # row W (= -1): no word
        fused = self.acoustic(acoustic) + per_word[word_index]
        return self.tdnn.convs_after_fusion(fused)

    def utterance_logits(
        self,
        acoustic: torch.Tensor,
        word_vectors: torch.Tensor,
        word_index: torch.Tensor,
        centres: torch.Tensor,
        conv_stack=None,
    ) -> torch.Tensor:
        """(len(centres), num_outputs) logits of one utterance, equal to ``PunctTdnn.utterance_logits`` on
        ``fuse_frames(word_vectors, acoustic, word_index)``.

        acoustic (T, Da), word_vectors (W, Dt), word_index (T,) with -1 before the first word.  ``conv_stack``
        replaces ``self`` for the padded conv pass (e.g. an ONNX Runtime session with the same signature)."""
        stack = conv_stack or self
        context = self.config.context
        # An output frame whose receptive field lies in the zero padding is the same for every utterance: the
        # stack runs over at most shrink padding frames on each side, and the first and the last context - shrink
        # outputs of the full padded pass (92 each at paper size) are one column, computed once.
        pad = min(context, self.config.shrink)
        padded_acoustic, padded_index = pad_utterance(acoustic, word_index, pad)
        conv = stack(padded_acoustic.unsqueeze(0), word_vectors, padded_index.unsqueeze(0))[0]  # (C, T + 2pad - shrink)
        if context > pad:
            edge = self._padding_column(stack, acoustic, word_vectors, padded_index.dtype).expand(-1, context - pad)
            conv = torch.cat([edge, conv, edge], dim=1)
        return self.tdnn.head(word_slices(conv, centres, self.config.output_frames))

    def _padding_column(
        self, stack, acoustic: torch.Tensor, word_vectors: torch.Tensor, index_dtype: torch.dtype
    ) -> torch.Tensor:
        """(C, 1): the conv stack's output over zero padding alone, kept per stack (the TDNN's weights are
        fixed once this model is made)."""
        cached = getattr(self, "_padding_output", None)
        if cached is None or cached[0] is not stack or cached[1].device != acoustic.device:
            frames = self.config.shrink + 1
            zeros = acoustic.new_zeros((1, frames, acoustic.shape[1]))
            no_word = torch.full((1, frames), -1, dtype=index_dtype, device=acoustic.device)
            cached = (stack, stack(zeros, word_vectors[:1], no_word)[0])
            self._padding_output = cached
        return cached[1]


class FoldedWordFactoredTdnn(nn.Module):
    """``WordFactoredTdnn.forward`` with the conv stack's BatchNorms folded into the convolutions
    (``punct.am.bn_folding``): each BatchNorm's scale goes into its convolution, its shift into the next
    convolution's bias, the last shift is added to the output.  For inference graphs, where a float
    BatchNorm between int8 convolutions costs a dequantise/quantise pair; raises ValueError when a
    BatchNorm has a non-positive scale."""

    def __init__(self, factored: WordFactoredTdnn) -> None:
        super().__init__()
        import copy

        from punct.am.bn_folding import batch_norm_affine, check_positive, constant_response, scaled_conv

        tdnn = factored.tdnn.eval()
        self.text, self.acoustic = copy.deepcopy(factored.text), copy.deepcopy(factored.acoustic)
        self.text_dim = factored.text_dim
        self.convs = nn.ModuleList()
        with torch.no_grad():
            offset = torch.zeros(tdnn.config.fusion_dim)
            for k, (conv, norm) in enumerate(zip(tdnn.convs, tdnn.norms)):
                a, b = batch_norm_affine(norm)
                check_positive(a, f"conv layer {k + 1}")
                self.convs.append(scaled_conv(conv, a, constant_response(conv, offset)))
                offset = b
        self.register_buffer("offset", offset.clone())

    def forward(self, acoustic: torch.Tensor, word_vectors: torch.Tensor, word_index: torch.Tensor) -> torch.Tensor:
        per_word = self.text(word_vectors)
        per_word = torch.cat([per_word, per_word.new_zeros((1, per_word.shape[1]))])
        x = F.relu(self.acoustic(acoustic) + per_word[word_index]).transpose(1, 2)
        for conv in self.convs:
            x = F.relu(conv(x))
        return x + self.offset[:, None]


def pad_utterance(acoustic: torch.Tensor, word_index: torch.Tensor, context: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``context`` padding frames on each side: zero acoustic frames with word index -1."""
    padded_acoustic = F.pad(acoustic, (0, 0, context, context))
    padded_index = F.pad(word_index, (context, context), value=-1)
    return padded_acoustic, padded_index


def word_slices(conv: torch.Tensor, centres: torch.Tensor, output_frames: int) -> torch.Tensor:
    """(C, L') conv output of a padded utterance -> (N, C, output_frames): the frames each word's window
    covers (the window of centre c starts at padded frame c, see ``PunctTdnn.batch_logits``)."""
    offsets = torch.arange(output_frames, device=conv.device)
    return conv[:, centres.unsqueeze(1) + offsets].transpose(0, 1)


def split_heads(logits: torch.Tensor, config: TdnnConfig) -> dict[str, torch.Tensor]:
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

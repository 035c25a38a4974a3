"""TDNN acoustic model after Kaldi's TED-LIUM 3 ``tdnn1d``, trained with CTC over characters.

Layers, numbered as the embedding tap counts them (``forward(..., layer=k)``):

  0   ``input``   frames spliced at offsets (-1, 0, 1) -> Linear (Kaldi's fixed LDA, learnt here; one convolution)
  1   ``tdnn1``   Linear -> ReLU -> BatchNorm -> Dropout
  2.. ``tdnnf2`` .. ``tdnnf13``: factorised TDNN layers: Linear over (t - s, t) into the
      bottleneck, Linear over (t, t + s) back to ``dim``, ReLU, BatchNorm, Dropout, plus
      ``bypass_scale`` x input.  ``s`` is the layer's time stride: 1,1,1,0 then 3 (s = 0: no
      context).  With ``frame_subsample`` 1 the strided layers are dilations and every layer runs at
      the input's 100 frames/s; with ``frame_subsample`` k (3 in egs/mustc's configs), as in
      Kaldi's chain models, every layer from the first whose context and those of all later layers are
      multiples of k (tdnnf5 at the default strides) runs on every k-th frame only: about half
      the operations of the default strides.  The outputs of such a layer and the logits are computed
      for frames 0, k, 2k, ... and linearly interpolated back to every feature frame
      (:func:`interpolate_frames`: exact at the computed frames, the frames after the last computed
      one repeat it), so every output still has one row per feature frame (layer 12 at 100 frames/s,
      as the EfficientPunct TDNN consumes it).  The factorised layer just before them (tdnnf4) computes
      its output (affine, ReLU, BatchNorm, bypass) only at the frames they read, its bottleneck at every
      frame; in training its BatchNorm statistics are those of these frames.
  14  ``prefinal``  Linear dim->small, Linear small->big, ReLU, BatchNorm, Linear big->small, BatchNorm
  15  ``output``    Linear -> token logits (blank = 0)

Edges: the input is padded once by repeating its first/last frame over the whole context (28 frames
each side at the default strides, as Kaldi pads an utterance), every layer then computes valid
positions only, and a tapped layer is cropped back to the input frames: every output has exactly
as many frames as the features, output frame t being the model's view of feature frame t.
Shapes are ``(N, T, C)`` (channels last) throughout.  The layers keep their weights as ``nn.Conv1d``
(``(O, I, k)``) but compute a convolution over time as one matrix product of the frames with the k taps
side by side, whose k outputs are then shifted and summed (:func:`time_conv`), and each BatchNorm over
the ``(N * T, C)`` rows: a training step of the mini AM took a third less CPU time than with
``F.conv1d`` over ``(N, C, T)`` (whose backward is slow at these narrow shapes; benchmarks/README.md).
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn
import torch.nn.functional as F

from punct.am.config import AmConfig, AmModelConfig

EMBEDDING_LAYER = 12


def interpolate_frames(x: torch.Tensor, k: int, num_frames: int) -> torch.Tensor:
    """(N, ceil(num_frames / k), C) outputs of frames 0, k, 2k, ... -> (N, num_frames, C) for every frame.

    Frame ``q * k + r`` (0 <= r < k) is ``(1 - r / k) * x[q] + (r / k) * x[q + 1]``: exactly ``x[q]`` at the
    computed frames; the frames after the last computed one repeat it.  Written with tensor ops only
    (arange, gather), so that an ONNX graph of it keeps the number of frames symbolic."""
    if k == 1:
        return x
    frames = torch.arange(num_frames, device=x.device)
    lower = torch.div(frames, k, rounding_mode="floor")
    upper = torch.minimum(lower + 1, lower[-1:])
    weight = ((frames - lower * k).to(x.dtype) / k).unsqueeze(-1)
    return x[:, lower] * (1 - weight) + x[:, upper] * weight


def pad_frames(x: torch.Tensor, left: int, right: int) -> torch.Tensor:
    """(N, T, C) padded on the time axis by repeating the first/last frame ``left``/``right`` times."""
    if left == 0 and right == 0:
        return x
    return F.pad(x.transpose(1, 2), (left, right), mode="replicate").transpose(1, 2)


class _TapSum(torch.autograd.Function):
    """``sum_j z[:, j * d : j * d + t, j * o : (j + 1) * o]`` for the k taps of :func:`time_conv`.

    Autograd of the slices would give each tap's gradient as a zero-filled copy of ``z`` and add them up;
    this backward writes the k gradient blocks into one buffer (the time convolution's backward was ~15 %
    of a training step through the slices)."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, out_dim: int, dilation: int) -> torch.Tensor:
        ctx.shape, ctx.out_dim, ctx.dilation = z.shape, out_dim, dilation
        return _sum_taps(z, out_dim, dilation)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        o, d = ctx.out_dim, ctx.dilation
        grad_z = grad.new_empty(ctx.shape)
        # block j: the gradient at frames j * d .. j * d + t' - 1, zero at the frames no output reads
        for j in range(ctx.shape[2] // o):
            block = grad_z[:, :, j * o : (j + 1) * o]
            block[:, : j * d].zero_()
            block[:, j * d : j * d + grad.shape[1]] = grad
            block[:, j * d + grad.shape[1] :].zero_()
        return grad_z, None, None


def _sum_taps(z: torch.Tensor, out_dim: int, dilation: int) -> torch.Tensor:
    k = z.shape[2] // out_dim
    # each tap's frames written from both ends of z, so that an ONNX graph keeps the number of frames symbolic
    taps = [z[:, j * dilation : z.shape[1] - (k - 1 - j) * dilation, j * out_dim : (j + 1) * out_dim] for j in range(k)]
    y = taps[0]
    for tap in taps[1:]:
        y = y + tap
    return y


def time_conv(x: torch.Tensor, conv: nn.Conv1d, dilation: int = 1) -> torch.Tensor:
    """``conv`` (weight (O, I, k), optional bias) over the time axis of a channels-last (N, T, I) input ->
    (N, T - (k - 1) * dilation, O), valid positions only: ``F.conv1d(x.transpose(1, 2), conv.weight,
    conv.bias, dilation=dilation).transpose(1, 2)`` up to float rounding, as one matrix product
    ``x @ [W_0 ... W_k-1]`` whose k column blocks are shifted by ``j * dilation`` frames and summed."""
    weight = conv.weight
    out_dim, in_dim, k = weight.shape
    if k == 1:
        return F.linear(x, weight[:, :, 0], conv.bias)
    z = x @ weight.permute(1, 2, 0).reshape(in_dim, k * out_dim)  # column block j: tap j
    tracing = torch.jit.is_tracing() or torch.onnx.is_in_onnx_export()
    if torch.is_grad_enabled() and z.requires_grad and not tracing:
        y = _TapSum.apply(z, out_dim, dilation)
    else:
        y = _sum_taps(z, out_dim, dilation)
    return y if conv.bias is None else y + conv.bias


def time_conv_every(x: torch.Tensor, conv: nn.Conv1d, dilation: int, step: int) -> torch.Tensor:
    """The outputs of :func:`time_conv` at its valid positions 0, step, 2 * step, ... only:
    ``time_conv(x, conv, dilation)[:, ::step]`` at about 1 / step of its cost, as one matrix product of
    each output's k input frames side by side."""
    if step == 1:
        return time_conv(x, conv, dilation)
    weight = conv.weight
    k = weight.shape[2]
    # tap j of output position p is x[p + j * dilation]; each slice written from both ends (symbolic frames in ONNX)
    taps = [x[:, j * dilation : x.shape[1] - (k - 1 - j) * dilation : step] for j in range(k)]
    frames = taps[0] if k == 1 else torch.cat(taps, dim=2)
    return F.linear(frames, weight.permute(0, 2, 1).reshape(weight.shape[0], -1), conv.bias)


def batch_norm_frames(x: torch.Tensor, norm: nn.BatchNorm1d) -> torch.Tensor:
    """``norm`` over the channels of a (N, T, C) input: statistics over all N * T frames, as over (N, C, T)."""
    n, t, c = x.shape
    return norm(x.reshape(n * t, c)).view(n, t, c)


class TdnnSplice(nn.Module):
    """Input layer: frames at ``offsets`` concatenated, then a linear map (one convolution).

    (N, T, F) -> (N, T - left - right, F * len(offsets)) (valid positions only).
    """

    def __init__(self, feat_dim: int, offsets: tuple[int, ...]) -> None:
        super().__init__()
        self.offsets = tuple(offsets)
        if list(self.offsets) != list(range(self.offsets[0], self.offsets[-1] + 1)):
            raise ValueError(f"splice offsets must be consecutive, got {self.offsets}")
        self.left = max(0, -min(self.offsets))
        self.right = max(0, max(self.offsets))
        self.out_dim = feat_dim * len(self.offsets)
        self.conv = nn.Conv1d(feat_dim, self.out_dim, len(self.offsets))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return time_conv(x, self.conv)


class TdnnLayer(nn.Module):
    """Affine -> ReLU -> BatchNorm -> Dropout on each frame. (N, T, I) -> (N, T, O)."""

    def __init__(self, in_dim: int, out_dim: int, dropout: float) -> None:
        super().__init__()
        self.linear = nn.Conv1d(in_dim, out_dim, 1)
        self.norm = nn.BatchNorm1d(out_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(batch_norm_frames(F.relu(time_conv(x, self.linear), inplace=True), self.norm))


class TdnnfLayer(nn.Module):
    """Factorised TDNN layer with time stride ``s``: (N, T, D) -> (N, T - 2s, D) (valid positions)."""

    def __init__(self, dim: int, bottleneck_dim: int, stride: int, bypass_scale: float, dropout: float) -> None:
        super().__init__()
        self.stride = stride
        kernel = 2 if stride > 0 else 1
        dilation = max(stride, 1)
        # (t - s, t) into the bottleneck (no bias, Kaldi's linear component), then (t, t + s) out.
        self.linear = nn.Conv1d(dim, bottleneck_dim, kernel, dilation=dilation, bias=False)
        self.affine = nn.Conv1d(bottleneck_dim, dim, kernel, dilation=dilation)
        self.norm = nn.BatchNorm1d(dim)
        self.dropout = nn.Dropout(dropout)
        self.bypass_scale = bypass_scale

    def forward(self, x: torch.Tensor, rate: int = 1, every: int = 1) -> torch.Tensor:
        """``rate``: x holds every ``rate``-th frame (the stride must be a multiple of it), so the time
        offsets are ``stride / rate`` frames of x.  ``every`` k: only the valid outputs 0, k, 2k, ...
        (``forward(x)[:, ::k]``; the bottleneck is still computed at every frame, the outputs read it)."""
        s = self.stride // rate
        b = time_conv(x, self.linear, max(s, 1))
        h = time_conv_every(b, self.affine, max(s, 1), every)
        y = self.dropout(batch_norm_frames(F.relu(h, inplace=True), self.norm))
        bypass = x[:, s : x.shape[1] - s : every] if s or every > 1 else x
        return torch.add(y, bypass, alpha=self.bypass_scale)


class TdnnPrefinal(nn.Module):
    """Kaldi's prefinal-l + prefinal-chain. (N, T, D) -> (N, T, small)."""

    def __init__(self, dim: int, small_dim: int, big_dim: int) -> None:
        super().__init__()
        self.down = nn.Conv1d(dim, small_dim, 1, bias=False)
        self.up = nn.Conv1d(small_dim, big_dim, 1)
        self.norm1 = nn.BatchNorm1d(big_dim)
        self.proj = nn.Conv1d(big_dim, small_dim, 1, bias=False)
        self.norm2 = nn.BatchNorm1d(small_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(time_conv(time_conv(x, self.down), self.up), inplace=True)
        return batch_norm_frames(time_conv(batch_norm_frames(h, self.norm1), self.proj), self.norm2)


class TdnnAcousticModel(nn.Module):
    """The acoustic model; ``forward(feats)`` gives CTC logits, ``forward(feats, layer=k)`` layer k's output."""

    def __init__(self, config: AmModelConfig) -> None:
        super().__init__()
        if config.num_tokens < 2:
            raise ValueError("AmModelConfig.num_tokens must be set from the token table (>= 2)")
        if config.frame_subsample < 1:
            raise ValueError(f"AmModelConfig.frame_subsample must be >= 1, got {config.frame_subsample}")
        if len(config.time_strides) != 12:
            raise ValueError(f"time_strides needs 12 values (tdnnf2..tdnnf13), got {len(config.time_strides)}")
        self.config = config
        self.splice = TdnnSplice(config.feat_dim, config.splice)
        self.tdnn1 = TdnnLayer(self.splice.out_dim, config.dim, config.dropout)
        self.tdnnf = nn.ModuleList(
            TdnnfLayer(config.dim, config.bottleneck_dim, s, config.bypass_scale, config.dropout)
            for s in config.time_strides
        )
        self.prefinal = TdnnPrefinal(config.dim, config.prefinal_small_dim, config.prefinal_big_dim)
        self.output = nn.Linear(config.prefinal_small_dim, config.num_tokens)

    @property
    def num_layers(self) -> int:
        """Index of the output layer (15)."""
        return 3 + len(self.tdnnf)

    def layer_names(self):
        return ["input", "tdnn1"] + [f"tdnnf{i}" for i in range(2, 2 + len(self.tdnnf))] + ["prefinal", "output"]

    def context(self) -> tuple[int, int]:
        """Frames of left/right context the whole network sees."""
        return self.splice.left + sum(self.config.time_strides), self.splice.right + sum(self.config.time_strides)

    @property
    def frame_subsample(self) -> int:
        return self.config.frame_subsample

    def first_strided(self, k: int) -> int:
        """Index in (splice, tdnn1, tdnnf2, ...) of the first module that runs on every k-th frame at rate k: every
        module from it on has a context that is a multiple of k (the splice only when it has none; tdnn1 has none)."""
        at_rate = [self.splice.left == self.splice.right == 0, True] + [s % k == 0 for s in self.config.time_strides]
        return max((i + 1 for i, ok in enumerate(at_rate) if not ok), default=0)

    def with_frame_subsample(self, k: int) -> TdnnAcousticModel:
        """The same weights computing every k-th frame of the strided part (1: every frame), in eval mode."""
        twin = TdnnAcousticModel(dataclasses.replace(self.config, frame_subsample=k))
        twin.load_state_dict(self.state_dict())
        return twin.to(next(self.parameters()).device).eval()

    def forward(self, feats: torch.Tensor, layer: int | None = None, subsample: int = 1) -> torch.Tensor:
        """feats (N, T, F) -> (N, T, num_tokens) logits, or layer ``layer``'s (N, T, C) output.

        The input is padded once by repeating its first/last frame over the network's context, then
        every layer runs on valid positions only; layer k's output is cropped to the T input frames.
        With ``frame_subsample`` > 1 the strided part runs on every k-th frame and its outputs are
        interpolated back to the T frames (the module docstring).

        ``subsample=k`` (training: the CTC loss) gives the logits of frames 0, k, 2k, ... only, as computed,
        ``(N, ceil(T / k), V)``: equal to ``forward(feats)[:, ::k]`` of the model at ``frame_subsample``
        1 or k; the layers whose time strides are multiples of k run on every k-th frame, which roughly
        halves the training cost of the default strides at k = 3.
        """
        if layer is not None and not 0 <= layer <= self.num_layers:
            raise ValueError(f"layer must be in 0..{self.num_layers} ({self.layer_names()}), got {layer}")
        if subsample > 1:
            if layer is not None:
                raise ValueError("subsample gives logits only; tap a layer at the full frame rate")
            return self._run(feats, tap=None, stop_at_tap=False, rate=subsample)[1]
        k = self.frame_subsample
        tapped, logits = self._run(feats, tap=layer, stop_at_tap=True, rate=k)
        if tapped is not None:
            return tapped
        return interpolate_frames(logits, k, feats.shape[1])

    def forward_with_tap(self, feats: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One pass giving both layer ``layer``'s (N, T, C) output and the (N, T, num_tokens) logits.

        Equal to ``(forward(feats, layer), forward(feats))`` at the cost of the second call alone
        (inference taps layer 12 for the TDNN while the CTC output feeds the forced alignment)."""
        if not 0 <= layer < self.num_layers:
            raise ValueError(f"layer must be in 0..{self.num_layers - 1} ({self.layer_names()}), got {layer}")
        k = self.frame_subsample
        tapped, logits = self._run(feats, tap=layer, stop_at_tap=False, rate=k)
        return tapped, interpolate_frames(logits, k, feats.shape[1])

    def _run(
        self, feats: torch.Tensor, tap: int | None, stop_at_tap: bool, rate: int = 1
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(layer ``tap``'s output at every input frame or None, the logits of input frames 0, rate,
        2 * rate, ... or None when stopped at the tap).

        At ``rate`` k the modules from :meth:`first_strided` on see only every k-th frame: those the
        outputs of frames 0, k, 2k, ... depend on; a tap among them is interpolated back to every frame."""
        t = feats.shape[1]
        left, right = self.context()
        x = pad_frames(feats, left, right)
        modules = [self.splice, self.tdnn1, *self.tdnnf]
        contexts = [self.splice.left, 0, *(m.stride for m in self.tdnnf)]
        first = self.first_strided(rate) if rate > 1 else len(modules)
        consumed = 0  # left context used so far; x's position p is then input frame p - (left - consumed)
        tapped = None
        # a factorised layer just before the strided part computes only the outputs that part reads (unless tapped)
        pick_early = 0 < first < len(modules) and isinstance(modules[first - 1], TdnnfLayer) and tap != first - 1
        for index, (module, context) in enumerate(zip(modules, contexts)):
            if index == first and not pick_early:
                # input frames 0, k, 2k, ...: left - consumed, the contexts still to come, is a multiple of k
                x = x[:, ::rate]
            strided = index >= first
            if pick_early and index == first - 1:
                x = module(x, every=rate)
            else:
                x = module(x, rate=rate) if strided and isinstance(module, TdnnfLayer) else module(x)
            consumed += context
            if index == tap:
                tapped = self._crop(x, left - consumed, t, rate if strided else 1)
                if stop_at_tap:
                    return tapped, None
        if first == len(modules):
            x = x[:, ::rate]  # no module's context is a multiple of the rate: only the last ones per frame
        x = self.prefinal(x)
        if tap == len(modules):
            tapped = self._crop(x, 0, t, rate)
        return tapped, self.output(x)

    def parameters_to_layer(self, layer: int = 12) -> int:
        """Parameters of layers 0..``layer`` (input splice, tdnn1, tdnnf2..tdnnf<layer>): the embedding
        network when layer ``layer`` is tapped (EfficientPunct Table 5).  Buffers are not parameters."""
        modules = [self.splice, self.tdnn1, *self.tdnnf[: max(layer - 1, 0)]]
        return sum(p.numel() for m in modules for p in m.parameters())

    @staticmethod
    def _crop(x: torch.Tensor, start: int, t: int, rate: int = 1) -> torch.Tensor:
        """(N, T', C) -> (N, t, C): the frames aligned with the input frames.

        ``start`` is the context the later layers still need on each side (every layer after the splice
        has as much on the right as on the left), at the full rate; at ``rate`` k x holds frames 0, k, 2k,
        ..., interpolated to all t.  The crop is written from both ends of x, so that an ONNX graph keeps
        the number of frames symbolic."""
        margin = start // rate
        return interpolate_frames(x[:, margin : x.shape[1] - margin], rate, t)


def build_model(config: AmConfig, num_tokens: int) -> TdnnAcousticModel:
    """An untrained model of ``config.model`` with ``num_tokens`` outputs (the token table's size)."""
    return TdnnAcousticModel(dataclasses.replace(config.model, num_tokens=num_tokens))

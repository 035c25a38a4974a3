"""The acoustic model with its BatchNorms folded into the convolutions, for inference graphs.

Every BatchNorm of the model (eval mode: y = a * v + b per channel) follows a ReLU, except the last
one of the prefinal block.  With a > 0, BN(ReLU(z)) = ReLU(a * z) + b: the scale goes into the
convolution before the ReLU, and the shift b is carried as a per-channel offset of the layer's output
(x = x~ + c).  Because every convolution computes valid positions only (the input is padded once, at
the start), a constant offset of a convolution's input adds a constant to its output, sum over taps
W[:, :, k] @ c, which is folded into the next bias; through a factorised layer's bypass the offset
becomes b + bypass_scale * c.  The bypass scales are carried the same way, as a scalar factor of the
representation (x = s * x~ + c), so a factorised layer adds its bypass without a multiplication.  The
tapped layer applies its factor and offset, so the outputs equal the model's up to float rounding
(tests/am/test_model.py).

In an int8 graph the BatchNorms would run in float between a dequantise and a quantise step, and
break the chains of int8 convolutions in ONNX Runtime's channels-last layout (benchmarks/README.md).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn import functional as F

from punct.am.bn_folding import batch_norm_affine, check_positive, constant_response, scaled_conv
from punct.am.model import TdnnAcousticModel, interpolate_frames, pad_frames


class FoldedAcousticModel(nn.Module):
    """``TdnnAcousticModel.forward_with_tap`` with the BatchNorms folded away (see the module docstring)."""

    def __init__(self, model: TdnnAcousticModel) -> None:
        super().__init__()
        model = model.eval()
        self.context = model.context()
        self.splice_left = model.splice.left
        self.rate = model.frame_subsample
        # index among (splice, tdnn1, tdnnf2, ...) of the first module on every rate-th frame
        self.first_strided = model.first_strided(self.rate) if self.rate > 1 else 2 + len(model.tdnnf)
        self.splice = copy.deepcopy(model.splice.conv)
        with torch.no_grad():
            a, b = batch_norm_affine(model.tdnn1.norm)
            check_positive(a, "tdnn1")
            self.tdnn1 = scaled_conv(model.tdnn1.linear, a, torch.zeros_like(a))
            # a layer's output is x = scale * x~ + offset: the bypass scales go into the scale, so that a
            # factorised layer adds its bypass without a multiplication
            scale, offset = 1.0, b
            scales: list[float] = [1.0, 1.0]
            offsets: list[torch.Tensor] = [torch.zeros(model.splice.out_dim), offset]  # per layer index
            self.linear, self.affine = nn.ModuleList(), nn.ModuleList()
            self.strides = []
            for i, block in enumerate(model.tdnnf, start=2):
                a, b = batch_norm_affine(block.norm)
                check_positive(a, f"tdnnf{i}")
                if block.bypass_scale <= 0:
                    raise ValueError(f"cannot fold tdnnf{i}: bypass_scale {block.bypass_scale} is not positive")
                new_scale = scale * block.bypass_scale
                linear = copy.deepcopy(block.linear)
                linear.weight.mul_(scale)
                self.linear.append(linear)
                shift = constant_response(block.affine, constant_response(block.linear, offset))
                self.affine.append(scaled_conv(block.affine, a / new_scale, shift))
                self.strides.append(block.stride)
                scale, offset = new_scale, b + block.bypass_scale * offset
                scales.append(scale)
                offsets.append(offset)
            pre = model.prefinal
            a1, b1 = batch_norm_affine(pre.norm1)
            check_positive(a1, "prefinal")
            a2, b2 = batch_norm_affine(pre.norm2)
            self.down = copy.deepcopy(pre.down)
            self.down.weight.mul_(scale)
            self.up = scaled_conv(pre.up, a1, constant_response(pre.up, constant_response(pre.down, offset)))
            self.proj = scaled_conv(pre.proj, a2, constant_response(pre.proj, b1), add=b2)
            self.output = copy.deepcopy(model.output)
        self.register_buffer("offsets", torch.zeros(len(offsets), max(o.numel() for o in offsets)))
        for k, o in enumerate(offsets):
            self.offsets[k, : o.numel()] = o
        self.register_buffer("scales", torch.tensor(scales))

    def forward_with_tap(self, feats: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, T, F) -> (layer ``layer``'s output (N, T, C), logits (N, T, V)) for a tdnnf layer (2..13); with
        the model's ``frame_subsample`` k the strided part on every k-th frame, interpolated as the model's."""
        if not 2 <= layer <= 1 + len(self.linear):
            raise ValueError(f"the folded model taps tdnnf layers 2..{1 + len(self.linear)}, got {layer}")
        t, k = feats.shape[1], self.rate
        left, right = self.context
        x = pad_frames(feats, left, right).transpose(1, 2)
        x = self.splice(x[:, :, ::k] if self.first_strided == 0 else x)
        x = F.relu(self.tdnn1(x[:, :, ::k] if self.first_strided == 1 else x))
        consumed = self.splice_left
        tapped: torch.Tensor | None = None
        # as the model's _run: the layer before the strided part computes only the outputs it reads (unless tapped)
        pick_early = 2 < self.first_strided < 2 + len(self.linear) and layer != self.first_strided - 1
        for i, (linear, affine, s) in enumerate(zip(self.linear, self.affine, self.strides), 2):
            rate = k if i >= self.first_strided else 1
            if i == self.first_strided and not pick_early:
                x = x[:, :, ::k]  # the positions of input frames 0, k, 2k, ... (the model's _run)
            d = s // rate
            every = k if pick_early and i == self.first_strided - 1 else 1
            bypass = x[:, :, d:-d] if d else x  # constant ends: no Shape node in the graph (benchmarks/README.md)
            if every > 1:
                # a 1-frame max pool with the convolution's stride: in the ONNX graph its length has the same
                # symbolic form as the strided convolution's (a stepped slice's would not merge with it)
                bypass = F.max_pool1d(bypass, kernel_size=1, stride=every)
            h = F.conv1d(x, linear.weight, None, dilation=max(d, 1))
            x = F.relu(F.conv1d(h, affine.weight, affine.bias, stride=every, dilation=max(d, 1))) + bypass
            consumed += s
            if i == layer:
                margin = (left - consumed) // rate  # as TdnnAcousticModel._crop
                scaled = x[:, :, margin : x.shape[2] - margin] * self.scales[i] + self.offsets[i, : x.shape[1], None]
                tapped = interpolate_frames(scaled.transpose(1, 2), rate, t)
        if self.first_strided == 2 + len(self.linear) and k > 1:
            x = x[:, :, ::k]
        x = self.proj(F.relu(self.up(self.down(x))))
        return tapped, interpolate_frames(self.output(x.transpose(1, 2)), k, t)

"""The TDNN acoustic model: layer tap, frame alignment with the features, edge convention, context."""

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from punct.am.model import EMBEDDING_LAYER, AmModelConfig, TdnnAcousticModel, TdnnfLayer, time_conv, time_conv_every

TINY = AmModelConfig(feat_dim=8, dim=16, bottleneck_dim=4, prefinal_small_dim=8, prefinal_big_dim=16, num_tokens=6)


def _model(config=TINY, seed=0):
    torch.manual_seed(seed)
    model = TdnnAcousticModel(config)
    # non-trivial BatchNorm statistics, so that eval mode is not an identity
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm1d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    return model.eval()


def test_thirteen_layers_and_names():
    model = _model()
    names = model.layer_names()
    assert names[1] == "tdnn1" and names[2] == "tdnnf2" and names[13] == "tdnnf13"
    assert names[EMBEDDING_LAYER] == "tdnnf12" and model.num_layers == 15 and len(names) == 16
    assert model.context() == (28, 28)  # 1 (splice) + 1+1+1+0 + 8*3


@pytest.mark.parametrize("num_frames", [1, 2, 7, 60, 157])
def test_every_layer_keeps_the_feature_frame_count(num_frames):
    model = _model()
    x = torch.randn(2, num_frames, 8)
    with torch.no_grad():
        for layer in range(model.num_layers + 1):
            y = model(x, layer=layer)
            assert y.shape[:2] == (2, num_frames), layer
        assert model(x, layer=EMBEDDING_LAYER).shape[2] == 16
        assert model(x).shape == (2, num_frames, 6)
        assert torch.equal(model(x), model(x, layer=model.num_layers))
    with pytest.raises(ValueError, match="layer must be in 0..15"):
        model(x, layer=16)


def test_layer_tap_is_the_intermediate_output():
    """The tapped output of tdnnf12 is what tdnnf13 consumes: run the rest of the network from it."""
    model = _model()
    x = torch.randn(1, 90, 8)
    with torch.no_grad():
        # model on a long input: frames far from the edges do not see the padding
        y11 = model(x, layer=11)  # (1, 90, 16)
        y12 = model(x, layer=12)
        s = model.tdnnf[10].stride  # tdnnf12 is tdnnf[10]
        manual = model.tdnnf[10].forward(y11)  # valid frames s .. 90-s-1
        assert torch.allclose(manual, y12[:, s : 90 - s], atol=1e-5)


def test_forward_with_tap_gives_layer_and_logits_of_one_pass():
    model = _model()
    x = torch.randn(2, 57, 8)
    with torch.no_grad():
        for layer in (0, 1, 5, EMBEDDING_LAYER, model.num_layers - 1):
            tapped, logits = model.forward_with_tap(x, layer)
            assert torch.equal(tapped, model(x, layer=layer)), layer
            assert torch.equal(logits, model(x))
        assert not torch.equal(model.forward_with_tap(x, 11)[0], model(x, layer=12))
    with pytest.raises(ValueError, match="layer must be in 0..14"):
        model.forward_with_tap(x, model.num_layers)


def test_output_frame_depends_only_on_its_context():
    model = _model()
    left, right = model.context()
    x = torch.randn(1, 200, 8)
    t = 100
    with torch.no_grad():
        base = model(x, layer=EMBEDDING_LAYER)[0, t]
        far = x.clone()
        far[0, : t - left - 1] += 5.0  # beyond the left context (layer 12 needs <= the full context)
        far[0, t + right + 1 :] -= 5.0
        assert torch.allclose(model(far, layer=EMBEDDING_LAYER)[0, t], base, atol=1e-5)
        near = x.clone()
        near[0, t - 1] += 5.0
        assert not torch.allclose(model(near, layer=EMBEDDING_LAYER)[0, t], base, atol=1e-3)


def test_edges_are_padded_by_repeating_the_first_and_last_frame():
    """Convention: the output of a T-frame utterance equals the centre T frames of the output for the
    same utterance explicitly extended by copies of its first and last frame."""
    model = _model()
    left, right = model.context()
    x = torch.randn(1, 40, 8)
    extended = torch.cat([x[:, :1].expand(1, left, 8), x, x[:, -1:].expand(1, right, 8)], dim=1)
    with torch.no_grad():
        for layer in (0, 1, 5, EMBEDDING_LAYER, None):
            a = model(x, layer=layer)
            b = model(extended, layer=layer)[:, left : left + 40]
            assert torch.allclose(a, b, atol=1e-5), layer


def test_paper_size_dimensions():
    model = TdnnAcousticModel(dataclasses.replace(AmModelConfig(), num_tokens=30)).eval()
    with torch.no_grad():
        assert model(torch.randn(1, 5, 40), layer=EMBEDDING_LAYER).shape == (1, 5, 1024)
    params = sum(p.numel() for p in model.parameters())
    assert 6e6 < params < 8e6, params  # 12 factorised layers of 1024 x 128 x 2 x 2 dominate


@pytest.mark.parametrize("frame_subsample", [1, 3])
def test_folded_batch_norms_give_the_same_outputs(frame_subsample):
    from punct.am.folded import FoldedAcousticModel

    model = _model(dataclasses.replace(TINY, frame_subsample=frame_subsample), seed=3)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm1d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    folded = FoldedAcousticModel(model).eval()
    assert not any(isinstance(m, torch.nn.BatchNorm1d) for m in folded.modules())
    x = torch.randn(2, 83, 8)
    with torch.no_grad():
        for layer in (2, 4, 7, EMBEDDING_LAYER, 13):
            tapped, logits = folded.forward_with_tap(x, layer)
            want_tapped, want_logits = model.forward_with_tap(x, layer)
            assert (tapped - want_tapped).abs().max().item() < 1e-4, layer
            assert (logits - want_logits).abs().max().item() < 1e-4
            assert want_tapped.abs().mean().item() > 0.1  # the offsets being compared are not all near zero
        model.tdnnf[3].norm.weight[0] = -0.7
        with pytest.raises(ValueError, match="tdnnf5"):
            FoldedAcousticModel(model)


@pytest.mark.parametrize(
    "strides, splice, k",
    [
        ((1, 1, 1, 0, 3, 3, 3, 3, 3, 3, 3, 3), (-1, 0, 1), 3),  # the recipes' strides, ctc_subsample 3
        ((1, 1, 1, 0, 3, 3, 3, 3, 3, 3, 3, 3), (0,), 3),
        ((0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2), (0,), 2),  # every layer strided: all on every 2nd frame
        ((3, 1, 3, 0, 3, 3, 3, 3, 3, 3, 3, 3), (-2, -1, 0, 1, 2), 3),  # a stride-1 layer between strided ones
        ((1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), (-1, 0, 1), 4),  # nothing at the subsampled rate
    ],
)
@pytest.mark.parametrize("num_frames", [1, 5, 64, 101])
def test_subsampled_forward_equals_every_kth_frame_of_the_full_one(strides, splice, k, num_frames):
    """Training's CTC on every k-th frame runs the strided layers at 1/k of the frames; the logits must be
    exactly those of the full forward (in train mode too: BatchNorm sees other frames, so use eval)."""
    model = _model(dataclasses.replace(TINY, time_strides=strides, splice=splice), seed=num_frames)
    x = torch.randn(3, num_frames, 8)
    with torch.no_grad():
        full = model(x)[:, ::k]
        sub = model(x, subsample=k)
    assert sub.shape == full.shape
    torch.testing.assert_close(sub, full, atol=1e-5, rtol=1e-5)


def test_subsampled_forward_gives_logits_only():
    with pytest.raises(ValueError, match="logits only"):
        _model()(torch.randn(1, 10, 8), layer=3, subsample=3)


@pytest.mark.parametrize("num_frames", [1, 2, 3, 4, 59, 60, 61])
def test_strided_model_computes_every_kth_frame_and_interpolates(num_frames):
    """frame_subsample 3: every output keeps one row per feature frame; at frames 0, 3, 6, ... the
    strided layers' outputs and the logits are the full-rate model's, in between interpolated; the layers
    before the strided part (tdnnf4 and below at the default strides) are the full-rate model's."""
    full = _model(seed=num_frames)
    strided = full.with_frame_subsample(3)
    assert strided.first_strided(3) == 5  # tdnnf5: stride 0, then only strides of 3
    x = torch.randn(2, num_frames, 8)
    with torch.no_grad():
        for layer in (1, 4, 5, EMBEDDING_LAYER, 14, None):
            want, got = full(x, layer=layer), strided(x, layer=layer)
            assert got.shape == want.shape, layer
            if layer is not None and layer < 5:
                assert torch.equal(got, want), layer
                continue
            torch.testing.assert_close(got[:, ::3], want[:, ::3], atol=1e-5, rtol=1e-5)
            computed = want[:, ::3]
            for t in range(num_frames):
                q, r = divmod(t, 3)
                upper = computed[:, min(q + 1, computed.shape[1] - 1)]
                expected = computed[:, q] * (1 - r / 3) + upper * (r / 3)
                torch.testing.assert_close(got[:, t], expected, atol=1e-5, rtol=1e-5)
        tapped, logits = strided.forward_with_tap(x, EMBEDDING_LAYER)
        assert torch.equal(tapped, strided(x, layer=EMBEDDING_LAYER)) and torch.equal(logits, strided(x))
        assert torch.equal(strided(x, subsample=3), full(x, subsample=3))  # training's loss: the same frames


def test_strided_model_differs_between_computed_frames():
    """Not a copy of the full-rate model: frames 1 and 2 of every 3 are interpolations, not computed."""
    full = _model(seed=5)
    strided = full.with_frame_subsample(3)
    x = torch.randn(1, 90, 8)
    with torch.no_grad():
        diff = (strided(x, layer=EMBEDDING_LAYER) - full(x, layer=EMBEDDING_LAYER)).abs()
    assert diff[:, ::3].max().item() < 1e-5
    assert diff[:, 1::3].mean().item() > 1e-3  # 100x the computed frames' bound


def test_interpolate_frames_edges():
    from punct.am.model import interpolate_frames

    x = torch.tensor([[[0.0], [3.0], [6.0]]])  # frames 0, 3, 6 of a 9-frame input
    y = interpolate_frames(x, 3, 9)[0, :, 0].tolist()
    assert y == pytest.approx([0, 1, 2, 3, 4, 5, 6, 6, 6])
    assert interpolate_frames(x[:, :1], 3, 1)[0, :, 0].tolist() == [0.0]
    assert interpolate_frames(x, 1, 3) is x


@pytest.mark.parametrize(
    "strides, splice",
    [((0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2), (0,)), ((2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2), (-1, 0, 1))],
)
def test_folded_strided_model_from_the_splice_or_tdnn1_on(strides, splice):
    """Strided from the first module (no splice context) or from tdnn1: folded equals the model."""
    from punct.am.folded import FoldedAcousticModel

    model = _model(dataclasses.replace(TINY, time_strides=strides, splice=splice, frame_subsample=2), seed=4)
    assert model.first_strided(2) == (0 if splice == (0,) else 1)
    folded = FoldedAcousticModel(model).eval()
    x = torch.randn(1, 41, 8)
    with torch.no_grad():
        for layer in (2, EMBEDDING_LAYER):
            for got, want in zip(folded.forward_with_tap(x, layer), model.forward_with_tap(x, layer)):
                torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kernel,dilation,bias", [(1, 1, True), (2, 1, False), (2, 3, True), (3, 1, True)])
def test_time_conv_is_conv1d_over_channels_last_frames_with_its_gradients(kernel, dilation, bias):
    """time_conv (one matrix product, taps shifted and summed; _TapSum's own backward) gives F.conv1d's outputs
    and the same gradients for the input, weight and bias."""
    torch.manual_seed(0)
    conv = nn.Conv1d(5, 7, kernel, dilation=dilation, bias=bias)
    x = torch.randn(3, 20, 5, requires_grad=True)
    expected = F.conv1d(x.transpose(1, 2), conv.weight, conv.bias, dilation=dilation).transpose(1, 2)
    got = time_conv(x, conv, dilation)
    assert got.shape == (3, 20 - (kernel - 1) * dilation, 7)
    assert torch.allclose(got, expected, atol=1e-5)
    upstream = torch.randn_like(got)
    params = [x, conv.weight] + ([conv.bias] if bias else [])
    grads = torch.autograd.grad((got * upstream).sum(), params)
    expected_grads = torch.autograd.grad((expected * upstream).sum(), params)
    for g, e in zip(grads, expected_grads):
        assert torch.allclose(g, e, atol=1e-5)
    with torch.no_grad():
        assert torch.allclose(time_conv(x, conv, dilation), expected, atol=1e-5)


@pytest.mark.parametrize("kernel,dilation", [(1, 1), (2, 1), (2, 3), (3, 2)])
@pytest.mark.parametrize("frames", [20, 21, 22])
def test_time_conv_every_is_every_kth_output_with_its_gradients(kernel, dilation, frames):
    """time_conv_every(x, conv, d, k) computes time_conv(x, conv, d)[:, ::k] only, with the same gradients."""
    torch.manual_seed(0)
    conv = nn.Conv1d(5, 7, kernel, dilation=dilation)
    x = torch.randn(3, frames, 5, requires_grad=True)
    for step in (2, 3):
        expected = time_conv(x, conv, dilation)[:, ::step]
        got = time_conv_every(x, conv, dilation, step)
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
        upstream = torch.randn_like(got)
        params = [x, conv.weight, conv.bias]
        grads = torch.autograd.grad((got * upstream).sum(), params)
        for g, e in zip(grads, torch.autograd.grad((expected * upstream).sum(), params)):
            torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
def test_factorised_layer_every_kth_output(stride):
    """TdnnfLayer(x, every=k) is TdnnfLayer(x)[:, ::k] (eval mode: the BatchNorm per frame), the frames the
    strided part of the model reads from the layer before it."""
    torch.manual_seed(0)
    layer = TdnnfLayer(16, 4, stride, bypass_scale=0.66, dropout=0.0)
    layer.train()
    layer(torch.randn(4, 50, 16))  # running statistics that are not the identity
    layer.eval()
    x = torch.randn(2, 31, 16)
    with torch.no_grad():
        full = layer(x)
        for k in (2, 3):
            torch.testing.assert_close(layer(x, every=k), full[:, ::k], atol=1e-5, rtol=1e-5)

"""The punctuation TDNN with a case head (ParCzech): shapes, heads, loss, fully convolutional evaluation,
and the unchanged single-head default."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.nn import functional as F

from punct.labels import LABEL_SCHEMES
from punct.models.punct_tdnn.checkpoint import checkpoint_train_config, load_model, save_checkpoint
from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.tdnn import PunctTdnn, TdnnConfig, head_softmax, split_heads
from punct.models.punct_tdnn.train import tdnn_loss
from punct.training.loop import TrainState
from tests.helpers.synthetic_splits import randomise_batch_norms

SMALL = dict(input_dim=7, fusion_dim=12, channels=(10, 10, 8, 8, 6, 6), head_dim=9)


def two_head_model(seed: int = 0, per_channel: bool = False) -> PunctTdnn:
    torch.manual_seed(seed)
    model = PunctTdnn(TdnnConfig(num_classes=9, case_classes=2, head_norm_per_channel=per_channel, **SMALL))
    randomise_batch_norms(model)
    with torch.no_grad():  # spread the logits so that words differ clearly (not so far that softmax saturates)
        model.head_out.weight.mul_(4.0)
    return model.eval()


def test_default_is_the_single_head_model():
    cfg = TdnnConfig()
    assert cfg.case_classes == 0 and cfg.head_sizes == {"punct": 4} and cfg.num_outputs == 4
    model = PunctTdnn(TdnnConfig(**SMALL))
    assert model.convs[-1].out_channels == 4
    with torch.no_grad():
        logits = model.eval()(torch.randn(3, 301, 7))
    assert logits.shape == (3, 4)
    # one head: the head-wise softmax is the plain softmax of the four logits
    assert torch.allclose(head_softmax(logits, model.config), torch.softmax(logits, dim=-1))


def test_two_heads_shapes_and_blocks():
    model = two_head_model()
    cfg = model.config
    assert cfg.head_sizes == {"punct": 9, "case": 2} and cfg.num_outputs == 11
    assert model.convs[-1].out_channels == 11
    with torch.no_grad():
        logits = model(torch.randn(5, 301, 7))
    assert logits.shape == (5, 11)
    heads = split_heads(logits, cfg)
    assert heads["punct"].shape == (5, 9) and heads["case"].shape == (5, 2)
    assert torch.equal(torch.cat([heads["punct"], heads["case"]], dim=-1), logits)
    post = head_softmax(logits, cfg)
    assert torch.allclose(post[:, :9].sum(-1), torch.ones(5)) and torch.allclose(post[:, 9:].sum(-1), torch.ones(5))
    with pytest.raises(ValueError, match="11 logits"):
        split_heads(logits[:, :4], cfg)


def test_bad_head_sizes_are_rejected():
    with pytest.raises(ValueError, match="case_classes"):
        TdnnConfig(case_classes=1)
    with pytest.raises(ValueError, match="label_set itn has 9 classes"):
        TrainTdnnConfig(label_set="itn")  # the default model has 4 classes
    with pytest.raises(ValueError, match="case labels"):
        TrainTdnnConfig(model=TdnnConfig(case_classes=2))  # MuST-C has no case labels
    TrainTdnnConfig(label_set="itn", model=TdnnConfig(num_classes=9, case_classes=2))


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("num_frames", [40, 420])
def test_fully_convolutional_equals_windowed_for_both_heads(num_frames, per_channel):
    model = two_head_model(per_channel=per_channel)
    gen = torch.Generator().manual_seed(num_frames)
    frames = torch.randn(num_frames, 7, generator=gen)
    centres = torch.tensor(sorted({0, num_frames - 1, *torch.randint(0, num_frames, (8,), generator=gen).tolist()}))
    padded = F.pad(frames, (0, 0, 150, 150))
    windows = torch.stack([padded[c : c + 301] for c in centres.tolist()])
    with torch.no_grad():
        windowed = head_softmax(model(windows), model.config)
        full = head_softmax(model.utterance_logits(frames, centres), model.config)
    assert full.shape == (len(centres), 11)
    for block in (slice(0, 9), slice(9, 11)):  # each head's posteriors vary between words, and agree
        assert (windowed[:, block] - windowed[:, block].mean(dim=0)).abs().max().item() > 0.05
        assert (full[:, block] - windowed[:, block]).abs().max().item() < 1e-5
    with torch.no_grad():  # a wrong slice offset would be caught
        shifted = head_softmax(model.utterance_logits(frames, (centres + 1).clamp(max=num_frames - 1)), model.config)
    assert (shifted - windowed).abs().max().item() > 1e-2


def test_two_head_loss_is_the_weighted_sum():
    cfg = TrainTdnnConfig(
        label_set="itn", model=TdnnConfig(num_classes=9, case_classes=2), case_weight=0.5, loss_reduction="mean"
    )
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 11, generator=gen)
    labels = torch.stack([torch.randint(0, 9, (6,), generator=gen), torch.randint(0, 2, (6,), generator=gen)], dim=1)
    criteria = {"punct": torch.nn.CrossEntropyLoss(), "case": torch.nn.CrossEntropyLoss()}
    expected = 0.5 * F.cross_entropy(logits[:, :9], labels[:, 0]) + 0.5 * F.cross_entropy(logits[:, 9:], labels[:, 1])
    assert torch.allclose(tdnn_loss(logits, labels, criteria, cfg), expected)
    heavy = dataclasses.replace(cfg, case_weight=0.9)
    assert not torch.allclose(tdnn_loss(logits, labels, criteria, heavy), expected)
    # the single-head loss is plain cross-entropy on (N,) labels
    single = TrainTdnnConfig()
    assert torch.allclose(
        tdnn_loss(logits[:, :4], labels[:, 0] % 4, criteria, single), F.cross_entropy(logits[:, :4], labels[:, 0] % 4)
    )


def test_checkpoints_round_trip_and_old_ones_still_load(tmp_path):
    cfg = TrainTdnnConfig(label_set="itn", model=dataclasses.replace(two_head_model().config))
    model = two_head_model()
    save_checkpoint(tmp_path / "two.pt", model, None, TrainState(), cfg)
    loaded = load_model(tmp_path / "two.pt")
    assert loaded.config.case_classes == 2
    x = torch.randn(2, 301, 7)
    with torch.no_grad():
        assert torch.allclose(loaded(x), model(x))
    # a single-head checkpoint written before case_classes existed (no such key) loads as one head
    old = PunctTdnn(TdnnConfig(**SMALL)).eval()
    save_checkpoint(tmp_path / "old.pt", old, None, TrainState(), TrainTdnnConfig())
    ckpt = torch.load(tmp_path / "old.pt", weights_only=True)
    del ckpt["model_config"]["case_classes"]
    ckpt["train_config"] = ckpt.pop("config")  # and before the shared checkpoint format
    torch.save(ckpt, tmp_path / "old.pt")
    again = load_model(tmp_path / "old.pt")
    assert again.config.num_outputs == 4
    assert checkpoint_train_config(tmp_path / "old.pt").label_set == TrainTdnnConfig().label_set
    with torch.no_grad():
        assert torch.allclose(again(x), old(x))
    assert set(LABEL_SCHEMES) == {"punct4", "itn"}


def test_per_channel_head_norm_trains_like_the_shared_one_and_keeps_statistics_per_channel():
    """In training mode both head norms normalise each channel by its own batch statistics (same output
    with unit affine); in eval mode only the per-channel one uses each channel's own running statistics."""
    shared, per_channel = two_head_model(0), two_head_model(0, per_channel=True)
    state = {k: v for k, v in shared.state_dict().items() if not k.startswith("head_norm.")}
    per_channel.load_state_dict(state, strict=False)
    for m in (shared, per_channel):
        torch.nn.init.ones_(m.head_norm.weight)
        torch.nn.init.zeros_(m.head_norm.bias)
        m.head_norm.reset_running_stats()
    assert per_channel.head_norm.num_features == 11 * 9 and shared.head_norm.num_features == 9
    x = torch.randn(16, 301, 7, generator=torch.Generator().manual_seed(1))
    shared.train(), per_channel.train()
    assert torch.allclose(shared(x), per_channel(x), atol=1e-5)
    running = per_channel.head_norm.running_mean.reshape(11, 9)
    assert (running - running.mean(dim=0)).abs().max() > 1e-3  # channels keep different statistics

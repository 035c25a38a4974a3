"""Fused Adam where PyTorch has it, and the trainings that use it; the learning-rate schedules."""

from __future__ import annotations

import pytest
import torch

from punct.models.punct_tdnn.train import make_optimizer
from punct.models.text.config import BertTrainConfig
from punct.models.text.train import learning_rate
from punct.training.optim import fused_adam_flag, lr_factor


def test_fused_flag_for_float_parameters_on_cpu_only():
    assert fused_adam_flag([torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2, 2))]) is True
    assert fused_adam_flag([torch.zeros(3, dtype=torch.int64)]) is None
    assert fused_adam_flag([]) is None
    assert fused_adam_flag([torch.zeros(3, device="meta")]) is None


def test_fused_adam_step_is_the_per_tensor_step_up_to_rounding():
    """What the flag switches on changes no update beyond float rounding (100 steps of random gradients)."""
    start = torch.randn(50, 20, generator=torch.Generator().manual_seed(0))
    finals = []
    for fused in (None, fused_adam_flag([start])):
        p = torch.nn.Parameter(start.clone())
        optimizer = torch.optim.AdamW([p], lr=1e-3, weight_decay=0.01, fused=fused)
        gen = torch.Generator().manual_seed(1)
        for _ in range(100):
            p.grad = torch.randn(p.shape, generator=gen)
            optimizer.step()
        finals.append(p.detach())
    assert (finals[0] - start).abs().max() > 0.01  # it moved
    torch.testing.assert_close(finals[1], finals[0], atol=1e-6, rtol=1e-5)


def test_tdnn_trains_with_the_fused_adam():
    from punct.models.punct_tdnn.config import TrainTdnnConfig

    optimizer = make_optimizer(TrainTdnnConfig(optimizer="adam"), torch.nn.Linear(4, 3))
    assert optimizer.defaults["fused"] is True


def test_bert_fine_tunes_with_the_fused_adamw():
    from punct.models.text.config import BertTrainConfig
    from punct.models.text.train import build_optimizer

    optimizer = build_optimizer(torch.nn.Linear(4, 3), BertTrainConfig())
    assert isinstance(optimizer, torch.optim.AdamW) and optimizer.defaults["fused"] is True
    assert [g["weight_decay"] for g in optimizer.param_groups] == [BertTrainConfig().weight_decay, 0.0]


def test_am_trains_and_initialises_with_the_same_fused_adam():
    from punct.am.config import AmConfig
    from punct.am.model import build_model
    from punct.am.train import build_optimizer

    config = AmConfig()
    optimizer = build_optimizer(build_model(config, 5), config)
    assert isinstance(optimizer, torch.optim.Adam) and optimizer.defaults["fused"] is True
    assert optimizer.defaults["lr"] == config.lr and optimizer.defaults["weight_decay"] == config.weight_decay


def test_lr_factor_warms_up_then_stays_or_falls_linearly_to_zero():
    constant = [lr_factor(s, 4) for s in range(10)]
    assert constant[:4] == [0.25, 0.5, 0.75, 1.0] and constant[4:] == [1.0] * 6
    linear = [lr_factor(s, 4, total_steps=12) for s in range(12)]
    assert linear[:4] == [0.25, 0.5, 0.75, 1.0]
    # 1.0 at the warm-up's end, 1/8 at the last update
    assert linear[4:] == pytest.approx([(12 - s) / 8 for s in range(4, 12)])
    assert lr_factor(0, 0, total_steps=5) == 1.0 and lr_factor(5, 0, total_steps=5) == 0.0


def test_text_branch_schedule_follows_the_config():
    constant = BertTrainConfig(lr=1e-4, warmup_steps=2)
    linear = BertTrainConfig(lr=1e-4, warmup_steps=2, lr_schedule="linear")
    assert learning_rate(constant, 50, 100) == learning_rate(constant, 2, 100) == pytest.approx(1e-4)
    assert learning_rate(linear, 2, 100) == pytest.approx(1e-4)
    assert learning_rate(linear, 51, 100) == pytest.approx(0.5e-4)
    assert learning_rate(linear, 0, 100) == learning_rate(constant, 0, 100) == pytest.approx(0.5e-4)
    with pytest.raises(ValueError, match="lr_schedule must be one of constant, linear, got 'cosine'"):
        BertTrainConfig(lr_schedule="cosine")

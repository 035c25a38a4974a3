"""Losses: SCL against a loop over eq. 5 of Huang et al. 2021, focal against its formula, registry."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from punct.text.losses import LOSSES, LossConfig, build_loss, supervised_contrastive_loss


def scl_by_loops(features, labels, tau):
    """Eq. 5 written out: sum over anchors with >= 1 positive; returns (sum, number of anchors)."""
    z = [[x / math.sqrt(sum(y * y for y in f)) for x in f] for f in features.tolist()]
    labels = labels.tolist()
    m = len(z)
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    total, anchors = 0.0, 0
    for i in range(m):
        positives = [p for p in range(m) if p != i and labels[p] == labels[i]]
        if not positives:
            continue
        denominator = sum(math.exp(dot(z[i], z[k]) / tau) for k in range(m) if k != i)
        term = sum(math.log(math.exp(dot(z[i], z[p]) / tau) / denominator) for p in positives)
        total += -term / len(positives)
        anchors += 1
    return total, anchors


@pytest.mark.parametrize("labels", [
    [0, 0, 1, 1, 2, 0, 3, 3],  # every class has two or more members
    [0, 0, 0, 1, 2, 2, 3],  # classes 1 and 3 have a single member
    [0, 1, 1, 1, 1, 1],  # one singleton anchor among many positives
])
@pytest.mark.parametrize("tau", [0.6 / 0.07, 0.5])
def test_scl_matches_equation(labels, tau):
    torch.manual_seed(len(labels))
    features = torch.randn(len(labels), 5, dtype=torch.float64) * 3
    labels = torch.tensor(labels)
    expected_sum, anchors = scl_by_loops(features, labels, tau)
    got_sum = supervised_contrastive_loss(features, labels, tau, reduction="sum")
    got_mean = supervised_contrastive_loss(features, labels, tau, reduction="mean")
    assert float(got_sum) == pytest.approx(expected_sum, rel=1e-6)
    assert float(got_mean) == pytest.approx(expected_sum / anchors, rel=1e-6)


def test_scl_no_positive_is_zero_with_gradient():
    features = torch.randn(4, 3, requires_grad=True)
    loss = supervised_contrastive_loss(features, torch.tensor([0, 1, 2, 3]), tau=1.0)
    assert loss.item() == 0.0
    loss.backward()
    assert features.grad is not None and torch.isfinite(features.grad).all()


def test_scl_gradient_finite_and_pulls_same_class_together():
    torch.manual_seed(0)
    features = torch.randn(6, 4, requires_grad=True)
    labels = torch.tensor([0, 0, 0, 1, 1, 2])
    loss = supervised_contrastive_loss(features, labels, tau=0.1)
    loss.backward()
    assert torch.isfinite(features.grad).all()
    # a gradient step lowers the loss
    with torch.no_grad():
        moved = features - 0.05 * features.grad
    assert supervised_contrastive_loss(moved, labels, tau=0.1).item() < loss.item()


def test_scl_combined_loss_and_temperature():
    torch.manual_seed(1)
    logits, features = torch.randn(8, 4), torch.randn(8, 6)
    labels = torch.tensor([0, 1, 0, 2, 3, 0, 1, 1])
    cfg = LossConfig(name="scl", scl_lambda=0.3, scl_temperature=0.6, scl_base_temperature=0.07)
    loss = build_loss(cfg)(logits, labels, features)
    expected_sum, anchors = scl_by_loops(features.double(), labels, 0.6 / 0.07)
    expected = 0.7 * float(F.cross_entropy(logits, labels)) + 0.3 * expected_sum / anchors
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_focal_loss():
    torch.manual_seed(2)
    logits = torch.randn(5, 4)
    labels = torch.tensor([0, 1, 2, 3, 0])
    focal0 = build_loss(LossConfig(name="focal", focal_gamma=0.0))(logits, labels, None)
    assert float(focal0) == pytest.approx(float(F.cross_entropy(logits, labels)), rel=1e-6)
    probs = torch.softmax(logits, dim=-1).tolist()
    expected = sum(-(1 - probs[i][c]) ** 2 * math.log(probs[i][c]) for i, c in enumerate(labels.tolist())) / 5
    focal2 = build_loss(LossConfig(name="focal", focal_gamma=2.0))(logits, labels, None)
    assert float(focal2) == pytest.approx(expected, rel=1e-5)
    assert float(focal2) < float(focal0)


def test_registry():
    assert set(LOSSES) == {"ce", "scl", "focal"}
    logits, labels = torch.randn(3, 4), torch.tensor([1, 2, 3])
    assert float(build_loss(LossConfig(name="ce"))(logits, labels)) == pytest.approx(float(F.cross_entropy(logits, labels)))
    with pytest.raises(ValueError, match="unknown loss"):
        build_loss(LossConfig(name="hinge"))
    with pytest.raises(ValueError):
        build_loss(LossConfig(name="scl"))(logits, labels, None)

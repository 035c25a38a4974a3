"""Losses: SCL against a loop over eq. 5 of Huang et al. 2021, focal against its formula, registry."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from punct.models.text.losses import LOSSES, LossConfig, build_loss, supervised_contrastive_loss


def scl_by_loops(features, labels, tau):
    """Eq. 5 written out, an anchor without a positive adding -1 (the authors' code); returns (sum, number of
    anchors)."""
    z = [[x / math.sqrt(sum(y * y for y in f)) for x in f] for f in features.tolist()]
    labels = labels.tolist()
    m = len(z)
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    total, anchors = 0.0, 0
    for i in range(m):
        positives = [p for p in range(m) if p != i and labels[p] == labels[i]]
        anchors += 1
        if not positives:
            total += -1.0
            continue
        denominator = sum(math.exp(dot(z[i], z[k]) / tau) for k in range(m) if k != i)
        term = sum(math.log(math.exp(dot(z[i], z[p]) / tau) / denominator) for p in positives)
        total += -term / len(positives)
    return total, anchors


@pytest.mark.parametrize(
    "labels",
    [
        [0, 0, 1, 1, 2, 0, 3, 3],  # every class has two or more members
        [0, 0, 0, 1, 2, 2, 3],  # classes 1 and 3 have a single member
        [0, 1, 1, 1, 1, 1],  # one singleton anchor among many positives
    ],
)
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


def test_scl_no_positive_is_the_constant_with_zero_gradient():
    features = torch.randn(4, 3, requires_grad=True)
    loss = supervised_contrastive_loss(features, torch.tensor([0, 1, 2, 3]), tau=1.0)
    assert loss.item() == -1.0
    loss.backward()
    assert features.grad is not None and torch.equal(features.grad, torch.zeros(4, 3))
    assert supervised_contrastive_loss(torch.randn(4, 3), torch.tensor([0, 1, 2, 3]), 1.0, "sum").item() == -4.0
    empty = torch.zeros(0, 3, requires_grad=True)
    assert supervised_contrastive_loss(empty, torch.zeros(0, dtype=torch.long), tau=1.0).item() == 0.0


def test_scl_singleton_class_by_hand():
    """Words 0 and 1 share class 0, word 2 is alone in class 1.  The unit vectors (1, 0), (0, 1), (-1, 0)
    have similarities s01 = 0, s02 = -1, s12 = 0, so with tau:
    anchor 0: -log(e^(0/tau) / (e^(0/tau) + e^(-1/tau))) = log(1 + e^(-1/tau));
    anchor 1: -log(e^0 / (e^0 + e^0)) = log 2;
    anchor 2 (no positive): the authors' constant -1.
    mean = (log(1 + e^(-1/tau)) + log 2 - 1) / 3; sum = the same times 3."""
    features = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    labels = torch.tensor([0, 0, 1])
    for tau in (1.0, 0.6):
        by_hand = math.log(1 + math.exp(-1 / tau)) + math.log(2) - 1
        assert float(supervised_contrastive_loss(features, labels, tau, "sum")) == pytest.approx(by_hand, abs=1e-6)
        assert float(supervised_contrastive_loss(features, labels, tau, "mean")) == pytest.approx(by_hand / 3, abs=1e-6)
    # the loss of the default form (supcon: tau 0.6, scaled by 0.6 / 0.07) with lambda 1
    scl = build_loss(LossConfig(name="scl", scl_lambda=1.0))(torch.zeros(3, 4), labels, features)
    by_hand = (0.6 / 0.07) * (math.log(1 + math.exp(-1 / 0.6)) + math.log(2) - 1) / 3
    assert float(scl) == pytest.approx(by_hand, abs=1e-6)


def test_scl_singleton_adds_no_gradient_but_counts_in_the_mean():
    """The gradient of the mean is that of (l0 + l1) / 3: the two anchors with a positive, each written
    out, over all three words (the lone word's constant has none, but it is one of the three)."""
    torch.manual_seed(3)
    start = torch.randn(3, 4, dtype=torch.float64)
    labels = torch.tensor([0, 0, 1])
    tau = 0.6
    features = start.clone().requires_grad_(True)
    supervised_contrastive_loss(features, labels, tau).backward()
    x = start.clone().requires_grad_(True)
    z = x / x.norm(dim=1, keepdim=True)
    s01, s02, s12 = (z[0] @ z[1]) / tau, (z[0] @ z[2]) / tau, (z[1] @ z[2]) / tau
    l0 = -s01 + torch.log(torch.exp(s01) + torch.exp(s02))
    l1 = -s01 + torch.log(torch.exp(s01) + torch.exp(s12))
    ((l0 + l1) / 3).backward()
    assert torch.allclose(features.grad, x.grad, rtol=1e-5, atol=1e-6)  # float32 inside
    assert float(features.grad[2].norm()) > 0  # the lone word still moves as a negative


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


def supcon_khosla(features: np.ndarray, labels: np.ndarray, temperature: float, base_temperature: float) -> float:
    """Khosla et al.'s SupCon (one view, anchors = all words), in numpy, as their matrix recipe goes:
    logits = z z^T / temperature minus each row's maximum, self-contrast masked out of the denominator,
    mean log-probability over the positives (1 for an anchor without one, as the authors' guard
    gives), times -(temperature / base_temperature), averaged over all anchors."""
    z = features / np.linalg.norm(features, axis=1, keepdims=True)
    logits = z @ z.T / temperature
    logits = logits - logits.max(axis=1, keepdims=True)
    not_self = 1.0 - np.eye(len(labels))
    positive = (labels[:, None] == labels[None, :]).astype(float) * not_self
    log_prob = logits - np.log((np.exp(logits) * not_self).sum(axis=1, keepdims=True))
    count = positive.sum(axis=1)
    mean_log_prob_pos = np.where(count > 0, (positive * log_prob).sum(axis=1) / np.maximum(count, 1), 1.0)
    return float((-(temperature / base_temperature) * mean_log_prob_pos).mean())


def test_scl_supcon_form_is_khoslas_supcon():
    torch.manual_seed(1)
    logits, features = torch.randn(12, 4), torch.randn(12, 6, dtype=torch.float64)
    labels = torch.tensor([0, 1, 0, 2, 3, 0, 1, 1, 0, 0, 2, 0])
    cfg = LossConfig(name="scl", scl_lambda=0.3, scl_temperature=0.6, scl_base_temperature=0.07)
    assert cfg.scl_form == "supcon"  # the default
    loss = build_loss(cfg)(logits, labels, features)
    expected = 0.7 * float(F.cross_entropy(logits, labels)) + 0.3 * supcon_khosla(
        features.numpy(), labels.numpy(), 0.6, 0.07
    )
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_scl_literal_form_puts_the_ratio_in_the_exponent():
    torch.manual_seed(1)
    logits, features = torch.randn(8, 4), torch.randn(8, 6)
    labels = torch.tensor([0, 1, 0, 2, 3, 0, 1, 1])
    cfg = LossConfig(name="scl", scl_lambda=0.3, scl_temperature=0.6, scl_base_temperature=0.07, scl_form="literal")
    loss = build_loss(cfg)(logits, labels, features)
    expected_sum, anchors = scl_by_loops(features.double(), labels, 0.6 / 0.07)
    expected = 0.7 * float(F.cross_entropy(logits, labels)) + 0.3 * expected_sum / anchors
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="scl form"):
        build_loss(LossConfig(name="scl", scl_form="khosla"))


def test_scl_supcon_gradient_is_much_stronger_than_the_literal_one():
    torch.manual_seed(2)
    labels = torch.tensor([0] * 20 + [1] * 4 + [2] * 4 + [3] * 2)
    start = torch.randn(len(labels), 16)
    norms = {}
    for form in ("supcon", "literal"):
        features = start.clone().requires_grad_(True)
        loss = build_loss(LossConfig(name="scl", scl_lambda=1.0, scl_form=form))
        loss(torch.zeros(len(labels), 4), labels, features).backward()
        norms[form] = float(features.grad.norm())
    # same seed, same features: tau 0.6 and the 8.57 scale against tau 8.57 in the exponent
    assert norms["supcon"] > 50 * norms["literal"]


def test_focal_loss():
    torch.manual_seed(2)
    logits = torch.randn(5, 4)
    labels = torch.tensor([0, 1, 2, 3, 0])
    focal0 = build_loss(LossConfig(name="focal", focal_gamma=0.0))(logits, labels, None)
    assert float(focal0) == pytest.approx(float(F.cross_entropy(logits, labels)), rel=1e-6)
    probs = torch.softmax(logits, dim=-1).tolist()
    expected = sum(-((1 - probs[i][c]) ** 2) * math.log(probs[i][c]) for i, c in enumerate(labels.tolist())) / 5
    focal2 = build_loss(LossConfig(name="focal", focal_gamma=2.0))(logits, labels, None)
    assert float(focal2) == pytest.approx(expected, rel=1e-5)
    assert float(focal2) < float(focal0)


def test_registry():
    assert set(LOSSES) == {"ce", "scl", "focal"}
    logits, labels = torch.randn(3, 4), torch.tensor([1, 2, 3])
    assert float(build_loss(LossConfig(name="ce"))(logits, labels)) == pytest.approx(
        float(F.cross_entropy(logits, labels))
    )
    with pytest.raises(ValueError, match="unknown loss"):
        build_loss(LossConfig(name="hinge"))
    with pytest.raises(ValueError):
        build_loss(LossConfig(name="scl"))(logits, labels, None)

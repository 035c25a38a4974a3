"""Class-weighted punctuation loss: punct.training.class_weights and its use by the cross-attention models."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from punct.labels import PUNCT9
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.train import punct_class_weights, two_head_loss
from punct.training.class_weights import inverse_frequency_weights


def test_inverse_frequency_weights_power_cap_and_absent_classes():
    weights = inverse_frequency_weights([1000, 100, 10, 0], power=0.5, cap=20.0)
    np.testing.assert_allclose(weights.numpy(), [1.0, 10**0.5, 10.0, 0.0], rtol=1e-6)
    capped = inverse_frequency_weights([1000, 100, 1], power=1.0, cap=50.0)
    np.testing.assert_allclose(capped.numpy(), [1.0, 10.0, 50.0])
    np.testing.assert_allclose(inverse_frequency_weights([7, 3], power=0.0).numpy(), [1.0, 1.0])
    with pytest.raises(ValueError, match="power must be >= 0"):
        inverse_frequency_weights([1, 2], power=-1.0)
    with pytest.raises(ValueError, match="counts"):
        inverse_frequency_weights([], power=1.0)


def test_weighted_punct_loss_is_the_weighted_mean_over_labelled_words():
    torch.manual_seed(0)
    logits = {"punct": torch.randn(2, 3, 9), "case": torch.randn(2, 3, 2)}
    batch = {
        "labels_punct": torch.tensor([[0, 4, -100], [1, 0, 2]]),
        "labels_case": torch.tensor([[1, 0, -100], [0, 0, 1]]),
    }
    weights = torch.tensor([1.0, 3.0, 0.5, 1.0, 7.0, 1.0, 1.0, 1.0, 1.0])
    _, parts = two_head_loss(logits, batch, 0.5, 0.5, weights)
    # independent: -sum w[y] log p(y) / sum w[y] over the five labelled words
    rows = [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]
    num = den = 0.0
    for n, t in rows:
        y = int(batch["labels_punct"][n, t])
        log_p = logits["punct"][n, t] - torch.logsumexp(logits["punct"][n, t], dim=0)
        num += -float(weights[y]) * float(log_p[y])
        den += float(weights[y])
    assert parts["punct"] == pytest.approx(num / den, rel=1e-5)
    _, unweighted = two_head_loss(logits, batch, 0.5, 0.5)
    assert parts["case"] == pytest.approx(unweighted["case"])  # the case head is never weighted
    assert parts["punct"] != pytest.approx(unweighted["punct"])
    _, ones = two_head_loss(logits, batch, 0.5, 0.5, torch.ones(9))
    assert ones["punct"] == pytest.approx(unweighted["punct"])


def test_punct_class_weights_count_the_trained_words_only():
    comma, period = PUNCT9.classes.index(","), PUNCT9.classes.index(".")
    segments = [SimpleNamespace(punct=[comma, 0, 0, period]), SimpleNamespace(punct=[comma, 0, comma, period])]
    train = SimpleNamespace(segments=segments)
    assert punct_class_weights(train, MmConfig(first_word="exclude")) is None  # power 0: plain cross-entropy
    weights = punct_class_weights(train, MmConfig(first_word="exclude", punct_class_weight_power=1.0))
    # first words excluded: 3 x none, 1 x ',', 2 x '.'
    expected = np.zeros(len(PUNCT9.classes))
    expected[0], expected[comma], expected[period] = 1.0, 3.0, 1.5
    np.testing.assert_allclose(weights.numpy(), expected)
    every = punct_class_weights(
        train, MmConfig(first_word="include", punct_class_weight_power=1.0, max_class_weight=2.0)
    )
    assert every[comma] == pytest.approx(1.0) and every[period] == pytest.approx(1.5)  # 3 none, 3 ',', 2 '.'


def test_config_rejects_negative_weights():
    with pytest.raises(ValueError, match="punct_class_weight_power"):
        MmConfig(punct_class_weight_power=-0.5)

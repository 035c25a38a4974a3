"""Class balance: oversampling to the majority count, weighted draws, rank sharding."""

from __future__ import annotations

import numpy as np
import pytest

from punct.models.punct_tdnn.sampling import EpochSampler, epoch_order, oversample_indices, shard


def labels_10_3_2_0():
    return np.array([0] * 10 + [1] * 3 + [2] * 2)  # class 3 absent


def test_oversampling_brings_every_present_class_to_the_majority_count():
    labels = labels_10_3_2_0()
    idx = oversample_indices(labels, np.random.default_rng(0))
    assert np.bincount(labels[idx], minlength=4).tolist() == [10, 10, 10, 0]
    # the majority class is kept as is, each once
    assert sorted(idx[labels[idx] == 0].tolist()) == list(range(10))
    # class 1 (3 examples -> 10): every example 3 times, plus 1 more drawn without replacement
    counts = np.bincount(idx[labels[idx] == 1], minlength=13)[10:13]
    assert sorted(counts.tolist()) == [3, 3, 4]
    # class 2 (2 -> 10): exactly 5 times each
    assert np.bincount(idx[labels[idx] == 2], minlength=15)[13:15].tolist() == [5, 5]


def test_epoch_order_is_seeded_and_changes_with_epoch():
    labels = labels_10_3_2_0()
    a = epoch_order(labels, "oversample", seed=1, epoch=1)
    assert np.array_equal(a, epoch_order(labels, "oversample", seed=1, epoch=1))
    assert not np.array_equal(a, epoch_order(labels, "oversample", seed=1, epoch=2))
    assert len(a) == 30 and len(epoch_order(labels, "none", 1, 1)) == 15
    assert sorted(epoch_order(labels, "none", 1, 1).tolist()) == list(range(15))
    with pytest.raises(ValueError, match="balance"):
        epoch_order(labels, "smote", 1, 1)


def test_weighted_draws_balance_classes_in_expectation():
    labels = np.array([0] * 900 + [1] * 90 + [2] * 10)
    order = epoch_order(labels, "weighted", seed=3, epoch=0)
    assert len(order) == 1000
    fractions = np.bincount(labels[order], minlength=3) / 1000
    assert np.all(np.abs(fractions - 1 / 3) < 0.06), fractions


def test_grouped_order_keeps_utterance_blocks_together():
    labels = np.zeros(40, dtype=int)
    groups = np.repeat(np.arange(8), 5)  # 8 utterances of 5 words
    order = epoch_order(labels, "none", seed=0, epoch=0, groups=groups, group_size=2)
    blocks = [set(groups[order[i : i + 10]].tolist()) for i in range(0, 40, 10)]
    assert all(len(b) == 2 for b in blocks)  # each run of 10 examples comes from 2 utterances
    assert set().union(*blocks) == set(range(8))


def test_shards_partition_the_order_with_equal_sizes():
    order = np.arange(11)
    parts = [shard(order, r, 3) for r in range(3)]
    assert [len(p) for p in parts] == [4, 4, 4]
    assert sorted(np.concatenate(parts).tolist()) == sorted(list(range(11)) + [0])  # padded by wrapping


def test_sampler_ranks_disjoint_and_length():
    labels = labels_10_3_2_0()
    samplers = [EpochSampler(labels, "oversample", seed=5, rank=r, world_size=2) for r in range(2)]
    for s in samplers:
        s.set_epoch(4)
    a, b = (list(s) for s in samplers)
    assert len(a) == len(b) == len(samplers[0]) == 15
    full = epoch_order(labels, "oversample", seed=5, epoch=4)
    assert a == full[0::2].tolist() and b == full[1::2].tolist()

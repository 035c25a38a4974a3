"""The epoch plan of the sharded reader: quotas, utterances to (rank, worker) slots, pad/drop, the shuffle buffer,
and the resume position (``skip``) through a DataLoader with workers."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.dataset import open_split
from punct.models.punct_tdnn.reader import (
    EpochPlanner,
    buffer_order,
    fit_to_quota,
    rank_batch_sizes,
    worker_batch_sizes,
)
from punct.models.punct_tdnn.sampling import epoch_order
from punct.models.punct_tdnn.train import make_loader
from punct.training.loop import DistInfo
from tests.helpers.synthetic_splits import make_split


def corpus_like(num_utts: int = 30, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(labels, utterance) of the words of ``num_utts`` utterances of 3..12 words, labels skewed to class 0."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 13, num_utts)
    utterance = np.repeat(np.arange(num_utts), lengths)
    labels = rng.choice(4, size=len(utterance), p=(0.7, 0.15, 0.1, 0.05))
    return labels, utterance


def test_batch_sizes_per_rank_and_worker():
    assert rank_batch_sizes(21, 4, 2) == [4, 4, 3]  # 11 examples per rank
    assert worker_batch_sizes([4, 4, 3], 2) == [[4, 3], [4]]
    assert worker_batch_sizes([4], 3) == [[4], [], []]


def test_one_slot_yields_the_epoch_order():
    labels, utterance = corpus_like()
    planner = EpochPlanner(labels, utterance, batch_size=8, seed=3, groups=utterance, group_size=4)
    plan = planner.plan(epoch=2)
    assert plan.items.tolist() == epoch_order(labels, "oversample", 3, 2, utterance, 4).tolist()
    assert plan.batch_sizes == rank_batch_sizes(len(plan.items), 8, 1)


@pytest.mark.parametrize("buffer", [0, 3])
def test_slots_own_their_utterances_and_ranks_run_equal_steps(buffer):
    labels, utterance = corpus_like(num_utts=40)
    world, workers = 2, 3
    planners = [
        EpochPlanner(labels, utterance, 16, seed=1, rank=r, world_size=world, shuffle_buffer=buffer) for r in (0, 1)
    ]
    epoch_items = planners[0].epoch_items(5)
    plans = {(r, k): planners[r].plan(5, k, workers) for r in range(world) for k in range(workers)}
    owner: dict[int, tuple[int, int]] = {}
    for slot, plan in plans.items():
        assert len(plan.items) == sum(plan.batch_sizes)  # a worker's batches are full (but the rank's last)
        assert np.array_equal(utterance[plan.items], plan.utterances)
        for utt in set(plan.utterances.tolist()):
            assert owner.setdefault(utt, slot) == slot, f"utterance {utt} in two slots"
    assert set(owner) == set(utterance.tolist())  # every utterance is read, by one worker
    for r in range(world):  # the DataLoader's order: batch j from worker j % workers
        steps = [plans[(r, j % workers)].batch_sizes[j // workers] for j in range(len(planners[r].batch_sizes()))]
        assert steps == planners[0].batch_sizes()
    # pad and drop change the multiset of the epoch by a little only
    got = collections.Counter(np.concatenate([p.items for p in plans.values()]).tolist())
    want = collections.Counter(epoch_items.tolist())
    changed = sum(((got - want) + (want - got)).values())
    assert changed <= world * workers * 12 + world  # about one utterance's words per slot, and the rank padding
    assert planners[0].plan(5, 1, workers).items.tolist() == plans[(0, 1)].items.tolist()  # deterministic
    assert planners[0].plan(6, 1, workers).items.tolist() != plans[(0, 1)].items.tolist()


def test_fit_to_quota_drops_repeats_not_whole_utterances():
    utterance = np.array([0, 0, 0, 1, 2, 2])
    rng = np.random.default_rng(0)
    kept = fit_to_quota(np.arange(6), utterance, 3, rng)
    assert len(kept) == 3 and sorted(set(utterance[kept].tolist())) == [0, 1, 2]
    padded = fit_to_quota(np.array([3, 4]), utterance, 5, rng)
    assert padded[:2].tolist() == [3, 4] and set(padded.tolist()) <= {3, 4} and len(padded) == 5
    with pytest.raises(ValueError, match="fewer utterances"):
        fit_to_quota(np.array([], dtype=np.int64), utterance, 2, rng)


def test_shuffle_buffer_holds_at_most_its_size():
    _, utterance = corpus_like(num_utts=20)
    positions = np.arange(len(utterance))
    order = buffer_order(positions, utterance, 3, np.random.default_rng(1))
    assert sorted(order.tolist()) == positions.tolist()
    left = collections.Counter(utterance.tolist())
    opened, most = set(), 0
    for position in order.tolist():
        utt = int(utterance[position])
        opened.add(utt)
        left[utt] -= 1
        most = max(most, len(opened))
        if left[utt] == 0:
            opened.discard(utt)
    assert most <= 3
    assert not np.array_equal(order, positions)  # shuffled within the buffer


@pytest.mark.parametrize("unit", ["window", "utterance"])
def test_skip_resumes_the_epoch_at_the_same_batch_with_workers(tmp_path, unit):
    """``skip(n)`` then iterating: the batches n.. of the uninterrupted epoch, in the same order, with 2 workers."""
    paths = make_split(tmp_path, "train", num_utts=10, text_dim=3, am_dim=2, seed=4)
    corpus = open_split(paths["cuts"], paths["acoustic_scp"], paths["text_scp"], cache_utterances=0)
    cfg = TrainTdnnConfig(
        example_unit=unit, batch_size=6, utterances_per_batch=2, num_workers=2, shuffle_buffer=2, right_truncation=0.5
    )
    loader, epochs = make_loader(cfg, corpus, torch.device("cpu"), 9, DistInfo())
    epochs.set_epoch(3)
    whole = list(loader)
    assert len(whole) == len(epochs.planner.batch_sizes()) >= 4
    epochs.skip(3)
    assert len(loader) == len(whole) - 3
    rest = list(loader)
    assert len(rest) == len(whole) - 3
    for a, b in zip(rest, whole[3:]):
        assert all(torch.equal(x, y) for x, y in zip(a, b))
    epochs.set_epoch(3)  # set_epoch starts the epoch from its first batch again
    assert len(list(DataLoader(epochs, batch_size=None))) == len(whole)
    with pytest.raises(ValueError, match="skip"):
        epochs.skip(len(whole) + 1)

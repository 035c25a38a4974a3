"""Class balance and the order of examples in an epoch, sharded across ranks.

Balance modes (``balance`` in conf/tdnn*.yaml):
  * ``oversample`` (EfficientPunct): every class is brought up to the majority class's count by
    repeating its examples whole as often as fits, then drawing the remainder without replacement;
    the majority class is kept as is.  An epoch is num_classes_present x majority examples.
  * ``weighted``: examples drawn with replacement with probability proportional to 1 / count of
    their class, as many as the split has (every class equally likely in expectation).
  * ``none``: a plain permutation.

``EpochSampler`` makes the epoch's order from (seed, epoch), optionally keeps examples of the same
utterances together (``group_utterances`` > 0: utterances are shuffled into blocks of that many, and
examples are shuffled within a block, so an utterance cache of that size is read once per epoch),
then gives rank r of W the examples r, r+W, r+2W, ... of the order, padded by wrapping so that every
rank gets the same number (like torch's DistributedSampler).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
from torch.utils.data import Sampler

BALANCE_MODES = ("oversample", "weighted", "none")


def oversample_indices(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices with every present class raised to the majority count (unshuffled, grouped by class)."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    by_class = [np.flatnonzero(labels == c) for c in classes]
    target = max(len(idx) for idx in by_class)
    parts = []
    for idx in by_class:
        whole, rest = divmod(target, len(idx))
        parts.append(np.tile(idx, whole))
        if rest:
            parts.append(rng.choice(idx, size=rest, replace=False))
    return np.concatenate(parts)


def epoch_order(
    labels: np.ndarray,
    balance: str,
    seed: int,
    epoch: int,
    groups: np.ndarray | None = None,
    group_size: int = 0,
    limit: int = 0,
) -> np.ndarray:
    """The order of example indices for one epoch (same on every rank for the same seed and epoch)."""
    if balance not in BALANCE_MODES:
        raise ValueError(f"unknown balance mode {balance!r}; choose one of {BALANCE_MODES}")
    labels = np.asarray(labels)
    rng = np.random.default_rng([seed, epoch])
    if balance == "oversample":
        order = rng.permutation(oversample_indices(labels, rng))
    elif balance == "weighted":
        counts = np.bincount(labels)
        weights = 1.0 / counts[labels]
        order = rng.choice(len(labels), size=len(labels), replace=True, p=weights / weights.sum())
    else:
        order = rng.permutation(len(labels))
    if limit > 0:
        order = order[:limit]
    if groups is not None and group_size > 0:
        groups = np.asarray(groups)
        block = np.empty(groups.max() + 1, dtype=np.int64)
        block[rng.permutation(groups.max() + 1)] = np.arange(groups.max() + 1) // group_size
        order = order[np.argsort(block[groups[order]], kind="stable")]
    return order


def shard(order: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    """Rank ``rank``'s share of ``order``, padded by wrapping so all ranks get the same count."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} out of range for world size {world_size}")
    per_rank = -(-len(order) // world_size)
    padded = np.resize(order, per_rank * world_size) if len(order) else order
    return padded[rank::world_size]


class EpochSampler(Sampler):
    """Balanced, seeded, rank-sharded order of examples; call ``set_epoch`` before each epoch."""

    def __init__(
        self,
        labels: np.ndarray,
        balance: str = "oversample",
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        groups: np.ndarray | None = None,
        group_size: int = 0,
        limit: int = 0,
    ) -> None:
        if balance not in BALANCE_MODES:
            raise ValueError(f"unknown balance mode {balance!r}; choose one of {BALANCE_MODES}")
        self.labels = np.asarray(labels)
        self.balance, self.seed, self.rank, self.world_size = balance, seed, rank, world_size
        self.groups, self.group_size, self.limit = groups, group_size, limit
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def indices(self) -> np.ndarray:
        order = epoch_order(self.labels, self.balance, self.seed, self.epoch, self.groups, self.group_size, self.limit)
        return shard(order, self.rank, self.world_size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices().tolist())

    def epoch_length(self) -> int:
        """Examples in one epoch over all ranks (before padding)."""
        counts = np.bincount(self.labels)
        n = int((counts > 0).sum() * counts.max()) if self.balance == "oversample" else len(self.labels)
        return min(n, self.limit) if self.limit > 0 else n

    def __len__(self) -> int:
        return -(-self.epoch_length() // self.world_size)


class WithEpoch(Sampler):
    """``sampler``'s indices as (index, epoch) pairs, for a dataset that draws per example and epoch (right
    truncation: :mod:`punct.models.punct_tdnn.truncation`): the draw then differs between epochs and repeats
    on a rerun, in whichever data-loader worker reads the example.

    ``start``: the next iteration begins at that position of the epoch's order (a resumed epoch skips the
    examples of the batches done: :mod:`punct.training.resume`); later ones at 0."""

    def __init__(self, sampler: EpochSampler) -> None:
        self.sampler = sampler
        self.start = 0

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        epoch, start, self.start = self.sampler.epoch, self.start, 0
        return ((index, epoch) for index in itertools.islice(self.sampler, start, None))

    def __len__(self) -> int:
        return len(self.sampler)

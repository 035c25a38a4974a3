"""Stage 7's training reader: each data-loader worker of each rank reads only its own utterances.

The epoch's examples are :func:`punct.models.punct_tdnn.sampling.epoch_order`'s (the same balance, oversampling,
``epoch_limit`` and seed), so one process with no worker yields the same multiset of examples as a plain
shuffled sampler.  What changes is who reads which utterance.  For an epoch, the same on every rank and worker:

1. **Quotas.**  Rank r of W gets ``ceil(N / W)`` of the N examples (DistributedSampler's count); its batches of
   ``batch_size`` (the last one short) are dealt to its K loader workers round robin, as the DataLoader asks
   workers for batches: worker k's quota is the sum of its batches' sizes.  Every rank therefore runs the same
   number of steps with the same batch sizes, whatever it reads.
2. **Utterances to slots.**  The utterances, in the order of their first example in the epoch order, go each
   to the (rank, worker) slot with the most quota left, with all of their examples (balanced by examples,
   i.e. windows, or by utterances in utterance mode).
3. **Pad or drop.**  A slot over its quota drops examples chosen at random (an utterance's last one only when
   nothing else is left to drop); a slot under it repeats its own examples.  Both are at most about one
   utterance's examples per slot; one slot (W = K = 1) never pads or drops.
4. **Order within a slot.**  ``shuffle_buffer`` 0: the slot's examples in the epoch order, read through the
   corpus' LRU cache (``cache_utterances``), so an utterance may be read again when the cache is smaller than
   the slot's share.  ``shuffle_buffer`` B > 0 (window mode): the utterances are opened in order, at most B at
   once, and each next example is drawn at random among the open utterances' pending examples (the shuffle
   buffer of webdataset and lhotse, of utterances); an utterance is read once when opened and released after
   its last example, so each utterance is read once per epoch and at most B are held.  In utterance mode an
   utterance is one example and the epoch order already shuffles utterances: the order stays the epoch's, and
   B > 0 only holds a padded utterance until its repeat.

:class:`ShardedEpochs` is the IterableDataset that yields a worker's batches (collated in the worker); its epoch
and resume position (``set_epoch``, ``skip``) live in shared memory, so persistent workers see them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from punct.models.punct_tdnn.dataset import FusionCorpus
from punct.models.punct_tdnn.sampling import BALANCE_MODES, epoch_order


def rank_batch_sizes(num_examples: int, batch_size: int, world_size: int) -> list[int]:
    """The sizes of each rank's batches: ``ceil(num_examples / world_size)`` examples, the last batch short."""
    per_rank = -(-num_examples // world_size)
    steps = -(-per_rank // batch_size)
    return [min(batch_size, per_rank - step * batch_size) for step in range(steps)]


def worker_batch_sizes(sizes: Sequence[int], num_workers: int) -> list[list[int]]:
    """The rank's batches dealt round robin to its workers (batch j to worker j % num_workers)."""
    return [list(sizes[k::num_workers]) for k in range(num_workers)]


def assign_utterances(first_seen: np.ndarray, counts: np.ndarray, quotas: np.ndarray) -> np.ndarray:
    """The slot of each utterance: utterances ``first_seen`` (in that order) go each to the slot with the most
    quota left (ties: the lower slot), slots of quota 0 only when every slot has quota 0.  Returns (U,) slots,
    -1 for utterances not in ``first_seen``."""
    slot_of = np.full(len(counts), -1, dtype=np.int64)
    open_slots = [s for s in range(len(quotas)) if quotas[s] > 0] or list(range(len(quotas)))
    heap = [(-int(quotas[s]), s) for s in open_slots]
    heapq.heapify(heap)
    for utt in first_seen.tolist():
        left, slot = heapq.heappop(heap)
        slot_of[utt] = slot
        heapq.heappush(heap, (left + int(counts[utt]), slot))
    return slot_of


def fit_to_quota(positions: np.ndarray, utterance: np.ndarray, quota: int, rng: np.random.Generator) -> np.ndarray:
    """``positions`` (ascending, into the epoch order) cut or padded to ``quota``: drops random positions (not
    an utterance's only one while others remain), or appends random repeats of the slot's own positions."""
    excess = len(positions) - quota
    if excess > 0:
        first = np.zeros(len(positions), dtype=bool)
        first[np.unique(utterance[positions], return_index=True)[1]] = True  # one per utterance: dropped last
        priority = first.astype(np.float64) + rng.random(len(positions))
        keep = np.sort(np.argsort(priority, kind="stable")[excess:])
        return positions[keep]
    if excess < 0:
        if not len(positions):
            raise ValueError("a loader worker got no utterance: fewer utterances than ranks x workers")
        extra = rng.choice(positions, size=-excess, replace=-excess > len(positions))
        return np.concatenate([positions, extra])
    return positions


def buffer_order(positions: np.ndarray, utterance: np.ndarray, buffer: int, rng: np.random.Generator) -> np.ndarray:
    """``positions`` reordered by a shuffle buffer of ``buffer`` utterances: utterances are opened in the order of
    their first position, at most ``buffer`` open at once, and each next position is drawn at random among the
    open utterances' pending ones."""
    utts = utterance[positions]
    order_of_utts, first = np.unique(utts, return_index=True)
    order_of_utts = order_of_utts[np.argsort(first)]
    by_utt = {u: [] for u in order_of_utts.tolist()}
    for position, utt in zip(positions.tolist(), utts.tolist()):
        by_utt[utt].append(position)
    queue = iter(order_of_utts.tolist())
    pending: list[int] = []
    left: dict[int, int] = {}
    out = np.empty(len(positions), dtype=np.int64)
    draws = rng.random(len(positions))

    def open_next() -> None:
        utt = next(queue, None)
        if utt is not None:
            pending.extend(by_utt[utt])
            left[utt] = len(by_utt[utt])

    for _ in range(buffer):
        open_next()
    for i in range(len(positions)):
        pick = int(draws[i] * len(pending))
        pending[pick], pending[-1] = pending[-1], pending[pick]
        position = pending.pop()
        out[i] = position
        utt = int(utterance[position])
        left[utt] -= 1
        if left[utt] == 0:
            del left[utt]
            open_next()
    return out


@dataclass(frozen=True)
class SlotPlan:
    """One (rank, worker)'s share of an epoch: dataset items in the order they are yielded, their utterances,
    and its batch sizes."""

    items: np.ndarray
    utterances: np.ndarray
    batch_sizes: list[int]

    def batches(self) -> list[np.ndarray]:
        """Positions into ``items`` of each batch."""
        ends = np.cumsum(self.batch_sizes)
        return [np.arange(end - size, end) for size, end in zip(self.batch_sizes, ends)]


@dataclass(frozen=True)
class EpochPlanner:
    """Who reads what in each epoch (the module's steps 1-4), the same computation on every rank and worker.

    ``item_labels``: the class of each dataset item (for ``balance``); ``item_utterance``: its utterance;
    ``groups``/``group_size``: :func:`punct.models.punct_tdnn.sampling.epoch_order`'s utterance blocks;
    ``buffer_shuffle``: whether ``shuffle_buffer`` reorders examples (window mode) or only holds (utterance mode).
    """

    item_labels: np.ndarray
    item_utterance: np.ndarray
    batch_size: int
    balance: str = "oversample"
    seed: int = 0
    rank: int = 0
    world_size: int = 1
    shuffle_buffer: int = 0
    buffer_shuffle: bool = True
    limit: int = 0
    groups: np.ndarray | None = None
    group_size: int = 0

    def __post_init__(self) -> None:
        if self.balance not in BALANCE_MODES:
            raise ValueError(f"unknown balance mode {self.balance!r}; choose one of {BALANCE_MODES}")
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank {self.rank} out of range for world size {self.world_size}")
        if self.batch_size < 1 or self.shuffle_buffer < 0:
            raise ValueError(
                f"batch_size must be >= 1 and shuffle_buffer >= 0, got {self.batch_size}, {self.shuffle_buffer}"
            )

    def epoch_length(self) -> int:
        """Examples in one epoch over all ranks (before padding)."""
        counts = np.bincount(self.item_labels)
        n = int((counts > 0).sum() * counts.max()) if self.balance == "oversample" else len(self.item_labels)
        return min(n, self.limit) if self.limit > 0 else n

    def batch_sizes(self) -> list[int]:
        """This rank's batch sizes in an epoch (the same on every rank)."""
        return rank_batch_sizes(self.epoch_length(), self.batch_size, self.world_size)

    def epoch_items(self, epoch: int) -> np.ndarray:
        """The epoch's dataset items over all ranks, in the epoch order (epoch_order's)."""
        return epoch_order(self.item_labels, self.balance, self.seed, epoch, self.groups, self.group_size, self.limit)

    def plan(self, epoch: int, worker: int = 0, num_workers: int = 1) -> SlotPlan:
        """Worker ``worker`` of ``num_workers``'s share of this rank's epoch."""
        order = self.epoch_items(epoch)
        utterance = self.item_utterance[order]  # of each position of the epoch order
        num_slots = self.world_size * num_workers
        sizes = worker_batch_sizes(self.batch_sizes(), num_workers)
        quotas = np.array([sum(sizes[k]) for _ in range(self.world_size) for k in range(num_workers)])
        seen, first = np.unique(utterance, return_index=True)
        first_seen = seen[np.argsort(first)]
        counts = np.bincount(utterance, minlength=int(self.item_utterance.max()) + 1)
        slot_of = assign_utterances(first_seen, counts, quotas)
        slot = self.rank * num_workers + worker
        rng = np.random.default_rng([self.seed, epoch, slot, num_slots])
        positions = fit_to_quota(np.flatnonzero(slot_of[utterance] == slot), utterance, int(quotas[slot]), rng)
        if self.shuffle_buffer > 0 and self.buffer_shuffle:
            positions = buffer_order(positions, utterance, self.shuffle_buffer, rng)
        return SlotPlan(order[positions], utterance[positions], sizes[worker])


class ShardedEpochs(IterableDataset):
    """A rank's training batches; in each loader worker only that worker's utterances (see the module).

    Args:
      items: the map-style dataset asked for ``(item, epoch)`` (FusedWindowDataset or UtteranceDataset).
      corpus: the corpus ``items`` reads (its utterances are held while open: ``shuffle_buffer`` > 0).
      planner: the epoch plans.
      collate: makes a batch of ``items``' examples.
    """

    def __init__(
        self, items: Dataset, corpus: FusionCorpus, planner: EpochPlanner, collate: Callable[[list], object]
    ) -> None:
        self.items, self.corpus, self.planner, self.collate = items, corpus, planner, collate
        self.batch_size = planner.batch_size
        self._position = torch.zeros(2, dtype=torch.int64).share_memory_()  # (epoch, batches to skip)

    @property
    def epoch(self) -> int:
        return int(self._position[0])

    def set_epoch(self, epoch: int) -> None:
        """The next iteration is of ``epoch``, from its first batch."""
        self._position[0], self._position[1] = epoch, 0

    def skip(self, batches: int) -> None:
        """The next iteration starts after this rank's first ``batches`` batches of the epoch (resume mid-epoch)."""
        if not 0 <= batches <= len(self.planner.batch_sizes()):
            raise ValueError(f"cannot skip {batches} of {len(self.planner.batch_sizes())} batches")
        self._position[1] = batches

    def __len__(self) -> int:
        return len(self.planner.batch_sizes()) - int(self._position[1])

    def rank_items(self, num_workers: int = 1) -> np.ndarray:
        """Every item this rank yields in the current epoch (all workers' shares, in worker order)."""
        plans = [self.planner.plan(self.epoch, k, num_workers) for k in range(num_workers)]
        return np.concatenate([p.items for p in plans])

    def __iter__(self) -> Iterator:
        info = get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        epoch, skipped = int(self._position[0]), int(self._position[1])
        slot = (worker + skipped) % num_workers  # the DataLoader's first batch is the rank's batch `skipped`
        plan = self.planner.plan(epoch, slot, num_workers)
        own_skipped = len(range(slot, skipped, num_workers))  # this worker's batches among the skipped ones
        return self._batches(plan, own_skipped, epoch)

    def _batches(self, plan: SlotPlan, skipped: int, epoch: int) -> Iterator:
        batches = plan.batches()[skipped:]
        start = int(batches[0][0]) if batches else len(plan.items)
        hold = self.planner.shuffle_buffer > 0
        left = dict(zip(*(a.tolist() for a in np.unique(plan.utterances[start:], return_counts=True))))
        try:
            for batch in batches:
                examples = []
                for position in batch.tolist():
                    utt = int(plan.utterances[position])
                    if hold and utt not in self.corpus.held:
                        self.corpus.hold(utt)
                    examples.append(self.items[(int(plan.items[position]), epoch)])
                    if hold:
                        left[utt] -= 1
                        if left[utt] == 0:
                            self.corpus.release(utt)
                yield self.collate(examples)
        finally:
            for utt in list(self.corpus.held):
                self.corpus.release(utt)

"""Checkpoints within an epoch and the resume that reproduces an uninterrupted training.

A training killed by a cluster (time limit, preemption) restarts with ``--resume`` from the newest checkpoint:
an epoch's ``epoch-N.pt``, or the mid-epoch ``epoch-E-batch-B.pt`` written every ``save_every_n_steps``
optimizer steps (B batches of epoch E trained; only the newest is kept, and it is removed once epoch E's own
``epoch-E.pt`` is written).  Both hold what the next step depends on, so that the resumed run trains the
same weights as an uninterrupted one (bit for bit on the CPU):

* model, optimizer, the GradScaler of ``--amp fp16`` (:func:`scaler_state`) and the training state, whose
  ``batches_done`` is the position within the epoch and ``epoch_sums`` the epoch's running loss sums (the
  epoch's mean train loss in the history is then also the uninterrupted run's).  The learning rate of every
  loop is a function of the state (step, epoch), so there is no scheduler state;
* every RNG state at that point (:func:`punct.training.checkpoint.rng_state`: Python, NumPy, torch, CUDA),
  each rank's under torchrun (:func:`all_ranks_rng_states`).  The resumed loop restores them just before its
  first step (:func:`restore_rng`): building the model, probing ``--amp fastest`` and the like draw from them
  in between.

What the loops keep out of the global RNG streams, so that a restored state is all it takes: an epoch's batch
order is a function of (seed, epoch) in every loop; the random choices of the data (SpecAugment, right
truncation) are functions of (seed, epoch, batch position or example), whichever DataLoader worker makes them;
and the DataLoaders draw their worker seed from a generator of their own (:func:`loader_generator`), not from
torch's global one, whose stream is then the model's (dropout) alone.  The resumed epoch skips the batches done
by position in the sampler (:class:`SkipBatches`), without reading their data.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from punct.training.checkpoint import rng_state, set_rng_state
from punct.training.loop import Amp, DistInfo, epoch_checkpoints

MID_EPOCH_CHECKPOINT = re.compile(r"epoch-(\d+)-batch-(\d+)\.pt")


def mid_epoch_name(epoch: int, batches_done: int) -> str:
    """``epoch-E-batch-B.pt``: ``batches_done`` batches of epoch ``epoch`` trained."""
    return f"epoch-{epoch}-batch-{batches_done}.pt"


def mid_epoch_checkpoints(exp_dir: Path) -> list[tuple[int, int, Path]]:
    """``(epoch, batches done, path)`` of every mid-epoch checkpoint in ``exp_dir``, oldest first."""
    found = []
    for path in Path(exp_dir).glob("epoch-*-batch-*.pt"):
        match = MID_EPOCH_CHECKPOINT.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), int(match.group(2)), path))
    return sorted(found)


def newest_checkpoint(exp_dir: Path) -> Path | None:
    """The checkpoint a resume continues from: the newest mid-epoch one when its epoch is after the last finished
    epoch's ``epoch-N.pt``, else that ``epoch-N.pt`` (None: no checkpoint)."""
    epochs = epoch_checkpoints(exp_dir)
    mids = mid_epoch_checkpoints(exp_dir)
    last_epoch = epochs[-1][0] if epochs else -1
    if mids and mids[-1][0] > last_epoch:
        return mids[-1][2]
    return epochs[-1][1] if epochs else None


def remove_mid_epoch_checkpoints(exp_dir: Path, keep: Path | None = None) -> None:
    """Removes the mid-epoch checkpoints of ``exp_dir`` but ``keep``."""
    for _, _, path in mid_epoch_checkpoints(exp_dir):
        if keep is None or path != keep:
            path.unlink(missing_ok=True)


def save_every(every_n_steps: int, step: int) -> bool:
    """Whether a mid-epoch checkpoint is due after optimizer step ``step`` (``every_n_steps`` 0: never)."""
    return every_n_steps > 0 and step % every_n_steps == 0


def save_mid_epoch(exp_dir: Path, epoch: int, batches_done: int, write: Callable[[Path], None]) -> Path:
    """Writes the mid-epoch checkpoint by ``write(path)`` (atomic: the shared ``save_checkpoint``) and removes the
    older ones; returns its path.  Rank 0 only."""
    path = Path(exp_dir) / mid_epoch_name(epoch, batches_done)
    start = time.perf_counter()
    write(path)
    remove_mid_epoch_checkpoints(exp_dir, keep=path)
    logging.info("saved %s (%.2f s)", path, time.perf_counter() - start)
    return path


def all_ranks_rng_states(dist: DistInfo) -> list[dict[str, Any]] | None:
    """Every rank's :func:`rng_state`, gathered (a collective: every rank calls it); None with one process, whose
    own state the checkpoint holds anyway."""
    if dist.world_size == 1:
        return None
    states: list[Any] = [None] * dist.world_size
    torch.distributed.all_gather_object(states, rng_state())
    return states


def restore_rng(checkpoint: dict[str, Any], dist: DistInfo) -> None:
    """This rank's RNG states of ``checkpoint``: its own entry of ``rng_ranks`` when the checkpoint was written
    by as many ranks, else ``rng`` (rank 0's; another world size cannot reproduce the run anyway)."""
    ranks = checkpoint.get("rng_ranks")
    if ranks is not None and len(ranks) == dist.world_size:
        set_rng_state(ranks[dist.rank])
    elif checkpoint.get("rng") is not None:
        set_rng_state(checkpoint["rng"])


def scaler_state(scaler: torch.amp.GradScaler) -> dict[str, Any]:
    """The GradScaler's state for a checkpoint (empty when disabled, as it is for all but fp16)."""
    return scaler.state_dict()


def load_scaler_state(scaler: torch.amp.GradScaler, state: dict[str, Any] | None) -> None:
    """Restores :func:`scaler_state` (nothing when the checkpoint has none or the scaler is disabled)."""
    if state and scaler.is_enabled():
        scaler.load_state_dict(state)


def loader_generator() -> torch.Generator:
    """A DataLoader's own generator.  Each ``iter(loader)`` draws the workers' base seed from its generator,
    else from torch's global RNG, which would put one draw per epoch into the dropout stream; the loops' data
    draw nothing from the worker seeds (their random choices are functions of seed, epoch and position), so the
    generator's own state need not be restored on a resume."""
    return torch.Generator()


class SkipBatches(torch.utils.data.Sampler):
    """A batch-yielding sampler (lhotse's, with ``set_epoch``) whose batches come as ``(batch, epoch, position)``
    for a dataset that draws its random choices per (epoch, position), from position ``start`` on: a resumed
    epoch skips the batches already trained by iterating the sampler's metadata only (the data of a batch is read
    by the dataset, which never sees the skipped ones).  ``start`` applies to the next iteration only."""

    def __init__(self, sampler) -> None:
        self.sampler = sampler
        self.epoch = 0
        self.start = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[tuple[Any, int, int]]:
        start, self.start = self.start, 0
        for position, batch in enumerate(self.sampler):
            if position >= start:
                yield batch, self.epoch, position


def resume_extra(precision: Amp, dist: DistInfo) -> dict[str, Any]:
    """What a resumable checkpoint holds beside the shared format: the GradScaler's state and every rank's RNG
    states (a collective under torchrun: every rank calls it)."""
    return {"scaler": scaler_state(precision.scaler), "rng_ranks": all_ranks_rng_states(dist)}


def start_resumed(resumed: dict[str, Any] | None, precision: Amp, dist: DistInfo) -> None:
    """Restores the GradScaler and this rank's RNG states of the checkpoint a loop resumed from (None: a new
    training), just before the loop's first step."""
    if resumed is not None:
        load_scaler_state(precision.scaler, resumed.get("scaler"))
        restore_rng(resumed, dist)


def mid_epoch_saver(
    exp_dir: Path, state: Any, precision: Amp, dist: DistInfo, write: Callable[[Path, dict[str, Any]], None]
) -> Callable[[], None]:
    """The ``save_mid_epoch()`` a loop calls on every rank when a mid-epoch checkpoint is due: rank 0 writes
    ``epoch-E-batch-B.pt`` of ``state`` by ``write(path, extra)`` (:func:`resume_extra`), :func:`save_mid_epoch`."""

    def save() -> None:
        extra = resume_extra(precision, dist)
        if dist.is_main:
            save_mid_epoch(exp_dir, state.epoch + 1, state.batches_done, lambda path: write(path, extra))

    return save

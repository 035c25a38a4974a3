"""Splitting work between ``JOB=1:nj`` jobs, the way every ``--job/--nj`` entry point does."""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", type=int, default=1, help="this job's index, 1..nj (the runner's JOB)")
    parser.add_argument("--nj", type=int, default=1, help="number of parallel jobs")


def check_job(job: int, nj: int) -> None:
    if nj < 1 or not 1 <= job <= nj:
        raise ValueError(f"--job must be in 1..--nj, got --job {job} --nj {nj}")


def share_bounds(n: int, job: int, nj: int) -> tuple[int, int]:
    """[start, end) of job ``job`` of ``nj``'s (1-based) contiguous share of ``n`` items."""
    check_job(job, nj)
    return (job - 1) * n // nj, job * n // nj


def job_share(items: Sequence[T], job: int, nj: int) -> list[T]:
    """The contiguous share of ``items`` for job ``job`` of ``nj`` (1-based); shares differ by at most one."""
    start, end = share_bounds(len(items), job, nj)
    return list(items[start:end])


def job_share_lazy(items: Iterable[T], job: int, nj: int, count: int | None = None) -> list[T]:
    """:func:`job_share` of ``items`` read in order, keeping only the share (Kaldi's ``split_data`` without the
    files): ``items`` is iterated once, up to the share's end.  ``count``: how many items there are (default
    ``len(items)``: a lazy lhotse manifest counts its lines without parsing them)."""
    start, end = share_bounds(len(items) if count is None else count, job, nj)
    return list(itertools.islice(items, start, end))


def in_order(items: Iterable[T], order: Iterable[str], where: str, key=lambda item: item.id) -> Iterator[T]:
    """``items`` (the jobs' outputs, read one after the other) as they come, checked to follow ``order`` (the
    split's ids, read lazily): each item's id must come later in ``order`` than the previous one's, ids of
    ``order`` without an item (skipped or failed) are passed over.  What a merge of contiguous job shares
    writes is then the split's order, as a merge that held the split would have sorted it; nothing but the
    current item is held.  ``where`` names the outputs in the error."""
    remaining = iter(order)
    for item in items:
        item_id = key(item)
        if not any(split_id == item_id for split_id in remaining):
            raise ValueError(
                f"{where}: {item_id!r} is not in the split, or not in the split's order after the items before it "
                "(job outputs of another split, --nj or manifest: run the jobs again)"
            )
        yield item

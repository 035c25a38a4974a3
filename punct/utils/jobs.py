"""Splitting work between ``JOB=1:nj`` jobs, the way every ``--job/--nj`` entry point does."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", type=int, default=1, help="this job's index, 1..nj (the runner's JOB)")
    parser.add_argument("--nj", type=int, default=1, help="number of parallel jobs")


def check_job(job: int, nj: int) -> None:
    if nj < 1 or not 1 <= job <= nj:
        raise ValueError(f"--job must be in 1..--nj, got --job {job} --nj {nj}")


def job_share(items: Sequence[T], job: int, nj: int) -> list[T]:
    """The contiguous share of ``items`` for job ``job`` of ``nj`` (1-based); shares differ by at most one."""
    check_job(job, nj)
    n = len(items)
    start = (job - 1) * n // nj
    end = job * n // nj
    return list(items[start:end])

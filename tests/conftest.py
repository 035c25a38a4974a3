"""Fixtures shared by the test suite: the repository root and a real single-node SLURM cluster."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from slurm_cluster import SlurmCluster, why_slurm_cannot_run  # noqa: E402


@pytest.fixture(autouse=True)
def _private_gpu_locks(tmp_path_factory, monkeypatch):
    """utils/run.pl locks the GPUs it hands out in a directory shared by every run.pl of the machine:
    each test gets its own, so that tests running beside each other (or beside real runs) never wait."""
    monkeypatch.setenv("PUNCT_GPU_LOCK_DIR", str(tmp_path_factory.mktemp("gpu_locks")))
    monkeypatch.delenv("PUNCT_GPUS_HELD", raising=False)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def slurm_cluster():
    """Starts munged, slurmctld and slurmd on this machine, and stops them (by PID) afterwards.

    Outside CI a machine that cannot run SLURM (not root, packages missing) skips the test with
    the reason; under CI=true the tests must run, so that is a failure.
    """
    reason = why_slurm_cannot_run()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but SLURM cannot run here: {reason}")
        pytest.skip(reason)
    cluster = SlurmCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()

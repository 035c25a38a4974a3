"""Fixtures shared by the test suite: the repository root, a real single-node SLURM cluster, the tiny recipe runs
and the cross-attention models' tokenizer (helpers live in tests/helpers/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.cross_attention import tokenizer  # noqa: F401  (a fixture: models/cross_attention, test_labels)
from tests.helpers.slurm_cluster import SlurmCluster, why_slurm_cannot_run

REPO = Path(__file__).resolve().parents[1]


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
def mustc_tiny_recipe(tmp_path_factory) -> Path:
    """egs/mustc's default run on the tiny corpus, once per session, in a private copy of the recipe.  Tests read
    it; a test that needs other options copies the outputs it keeps into a copy of its own, never trains them again."""
    from tests.helpers.recipe_copy import trained_tiny_recipe

    return trained_tiny_recipe(REPO, "mustc", tmp_path_factory.mktemp("e2e") / "mustc")


@pytest.fixture(scope="session")
def parczech_tiny_recipe(tmp_path_factory) -> Path:
    """egs/parczech's default run on the tiny corpus (stages 0-6), once per session, as ``mustc_tiny_recipe``."""
    from tests.helpers.recipe_copy import trained_tiny_recipe

    return trained_tiny_recipe(REPO, "parczech", tmp_path_factory.mktemp("e2e") / "parczech")


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

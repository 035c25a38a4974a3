"""A training stopped in this process right after a mid-epoch checkpoint, as a cluster's kill would stop it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from punct.training import resume


class Killed(Exception):
    """Raised in place of a kill after a mid-epoch checkpoint."""


@contextlib.contextmanager
def killed_after_mid_epoch_checkpoint(monkeypatch: pytest.MonkeyPatch, epoch: int | None = None) -> Iterator[None]:
    """The training run inside stops right after the first mid-epoch checkpoint it writes (of ``epoch``, or of any
    epoch); the block must be stopped so."""
    original = resume.save_mid_epoch

    def save_then_stop(exp_dir, epoch_of_checkpoint, batches_done, write):
        path = original(exp_dir, epoch_of_checkpoint, batches_done, write)
        if epoch is None or epoch_of_checkpoint == epoch:
            raise Killed
        return path

    monkeypatch.setattr(resume, "save_mid_epoch", save_then_stop)
    try:
        with pytest.raises(Killed):
            yield
    finally:
        monkeypatch.setattr(resume, "save_mid_epoch", original)

"""A TDNN training interrupted within an epoch, or between two, resumes to the uninterrupted run's weights: both
example units, with dropout, right truncation, BatchNorm statistics recomputed from the epoch's last batches and
a loader worker."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from punct.models.punct_tdnn.train import first_batch_read, train_tdnn
from punct.training import resume
from punct.training.checkpoint import load_checkpoint
from tests.helpers.synthetic_splits import SMALL_TDNN, small_training, train_dev_splits

CASES = {
    # 6 batches an epoch; BatchNorm statistics from the last 4, so a resume after batch 3 reads batches 2-3 again
    "window": dict(epoch_limit=96, batch_norm_stats="recompute", batch_norm_batches=4),
    "utterance": dict(utterances_per_batch=2, num_workers=1),  # 4 batches an epoch
}


class Killed(Exception):
    """Raised in place of a kill after a mid-epoch checkpoint."""


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return train_dev_splits(tmp_path_factory.mktemp("train"), seed=31)


def _config(unit: str, **changes):
    return small_training(
        unit,
        model=dataclasses.replace(SMALL_TDNN, dropout=0.2),
        right_truncation=0.5,
        save_every_n_steps=3,
        **{**CASES[unit], **changes},
    )


def _train(corpora, exp_dir, cfg, resume_from=None) -> dict:
    torch.set_num_threads(1)
    train_tdnn(cfg, corpora["train"], corpora["dev"], exp_dir, torch.device("cpu"), seed=2, resume=resume_from)
    return load_checkpoint(exp_dir / f"epoch-{cfg.epochs}.pt")


def _assert_same(a: dict, b: dict) -> None:
    for name, x in a["model"].items():
        assert torch.equal(x, b["model"][name]), name
    assert a["state"]["step"] == b["state"]["step"]
    drop_seconds = [{k: v for k, v in h.items() if "seconds" not in k} for h in a["state"]["history"]]
    assert drop_seconds == [{k: v for k, v in h.items() if "seconds" not in k} for h in b["state"]["history"]]


@pytest.mark.parametrize("unit", ["window", "utterance"])
def test_interrupted_mid_epoch_or_between_epochs_resumes_to_the_same_weights(corpora, tmp_path, monkeypatch, unit):
    cfg = _config(unit)
    straight = _train(corpora, tmp_path / "straight", cfg)
    assert not resume.mid_epoch_checkpoints(tmp_path / "straight")

    _train(corpora, tmp_path / "epochs", _config(unit, epochs=1))
    resumed = _train(corpora, tmp_path / "epochs", cfg, resume.newest_checkpoint(tmp_path / "epochs"))
    _assert_same(straight, resumed)

    original = resume.save_mid_epoch

    def save_then_stop(exp_dir, epoch, batches_done, write):
        path = original(exp_dir, epoch, batches_done, write)
        if epoch == 2:
            raise Killed
        return path

    monkeypatch.setattr(resume, "save_mid_epoch", save_then_stop)
    with pytest.raises(Killed):
        _train(corpora, tmp_path / "killed", cfg)
    monkeypatch.setattr(resume, "save_mid_epoch", original)
    newest = resume.newest_checkpoint(tmp_path / "killed")
    assert load_checkpoint(newest)["state"]["batches_done"] > 0 and newest.name.startswith("epoch-2-batch-")
    _assert_same(straight, _train(corpora, tmp_path / "killed", cfg, newest))


def test_first_batch_read_for_the_kept_batches():
    from collections import deque

    assert first_batch_read(3, 6, None) == 3  # nothing kept: only the batches not trained yet are read
    assert first_batch_read(3, 6, deque(maxlen=4)) == 2  # batch 2 is one of the last 4
    assert first_batch_read(1, 6, deque(maxlen=4)) == 1
    assert first_batch_read(5, 6, deque()) == 0  # all kept

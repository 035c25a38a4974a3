"""A TDNN training interrupted within an epoch, or between two, resumes to the uninterrupted run's weights: both
example units, with dropout, right truncation, BatchNorm statistics recomputed from the epoch's last batches and
a loader worker."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from punct.models.punct_tdnn.train import first_batch_read, train_tdnn
from punct.training import resume
from punct.training.checkpoint import load_checkpoint
from tests.helpers.interrupt import Killed, killed_after_mid_epoch_checkpoint
from tests.helpers.synthetic_splits import SMALL_TDNN, small_training, train_dev_splits

CASES = {
    # 6 batches an epoch; BatchNorm statistics from the last 4, so a resume after batch 3 reads batches 2-3 again
    "window": dict(epoch_limit=96, batch_norm_stats="recompute", batch_norm_batches=4),
    "utterance": dict(utterances_per_batch=2, num_workers=1),  # 4 batches an epoch
}


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return train_dev_splits(tmp_path_factory.mktemp("train"), seed=31)


def _config(unit: str, **changes):
    return small_training(
        unit,
        model=dataclasses.replace(SMALL_TDNN, dropout=0.2),
        right_truncation=0.5,
        **{"save_every_n_steps": 3, **CASES[unit], **changes},
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

    with killed_after_mid_epoch_checkpoint(monkeypatch, epoch=2):
        _train(corpora, tmp_path / "killed", cfg)
    newest = resume.newest_checkpoint(tmp_path / "killed")
    assert load_checkpoint(newest)["state"]["batches_done"] > 0 and newest.name.startswith("epoch-2-batch-")
    _assert_same(straight, _train(corpora, tmp_path / "killed", cfg, newest))


def test_first_batch_read_for_the_kept_batches():
    from collections import deque

    assert first_batch_read(3, 6, None) == 3  # nothing kept: only the batches not trained yet are read
    assert first_batch_read(3, 6, deque(maxlen=4)) == 2  # batch 2 is one of the last 4
    assert first_batch_read(1, 6, deque(maxlen=4)) == 1
    assert first_batch_read(5, 6, deque()) == 0  # all kept


def _ddp_rank(rank: int, port: int, root: str) -> None:
    """Rank ``rank`` of 2 (gloo): an uninterrupted run, one stopped after epoch 2's first mid-epoch checkpoint
    (on both ranks, as a kill of the job), and its resume; the final weights of each into ``root``."""
    import os

    from punct.models.punct_tdnn.dataset import open_split
    from punct.training.loop import DistInfo, init_distributed

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    exp = Path(root) / "exp"
    corpus = open_split(
        Path(root) / "data/fbank/mustc_cuts_train_ali.jsonl.gz",
        exp / "emb_am/train/emb.scp",
        exp / "emb_bert/train/vec.scp",
    )
    # whole utterances of unlike lengths: the ranks' dropout draws differ, so each rank's RNG state must be its own
    cfg = _config("utterance", num_workers=0, save_every_n_steps=1)
    dist = DistInfo(rank, 2, rank)
    init_distributed(dist, torch.device("cpu"))

    def train(name: str, resume_from=None):
        return train_tdnn(
            cfg, corpus, None, exp / name, torch.device("cpu"), seed=3, resume=resume_from, dist=dist, progress=False
        )

    straight = train("straight")
    original = resume.mid_epoch_saver

    def saver_then_stop(exp_dir, state, *args):
        save = original(exp_dir, state, *args)

        def save_and_stop() -> None:
            save()
            if state.epoch == 1:
                raise Killed

        return save_and_stop

    resume.mid_epoch_saver = saver_then_stop
    with pytest.raises(Killed):
        train("killed")
    resume.mid_epoch_saver = original
    torch.distributed.barrier()  # rank 0 has written the checkpoint
    newest = resume.newest_checkpoint(exp / "killed")
    resumed = train("killed", newest)
    torch.save(
        {"newest": newest.name, "straight": straight.state_dict(), "resumed": resumed.state_dict()},
        Path(root) / f"rank{rank}.pt",
    )
    torch.distributed.destroy_process_group()


def test_two_ranks_resume_mid_epoch_to_the_same_weights(tmp_path):
    import socket

    import torch.multiprocessing as mp

    from tests.helpers.synthetic_splits import make_split

    make_split(tmp_path, "train", num_utts=10, text_dim=3, am_dim=2, seed=12)
    torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))])  # torch's lazy optimizer imports, once, before forking
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.start_processes(_ddp_rank, args=(port, str(tmp_path)), nprocs=2, join=True, start_method="fork")
    for rank in (0, 1):
        out = torch.load(tmp_path / f"rank{rank}.pt")
        assert out["newest"].startswith("epoch-2-batch-")
        for name, x in out["straight"].items():
            assert torch.equal(x, out["resumed"][name]), (rank, name)

"""punct.training.resume: which checkpoint a resume continues from, the newest mid-epoch one kept, batches skipped
by position, RNG states and the GradScaler's."""

from __future__ import annotations

import random

import numpy as np
import torch

from punct.training import resume
from punct.training.checkpoint import rng_state, set_rng_state
from punct.training.loop import DistInfo


def _touch(folder, *names):
    for name in names:
        (folder / name).write_bytes(b"")


def test_newest_checkpoint_prefers_a_later_epoch_in_progress(tmp_path):
    assert resume.newest_checkpoint(tmp_path) is None
    _touch(tmp_path, "epoch-0.pt", "epoch-1.pt", "best-valid-loss.pt", "epoch-x-batch-3.pt")
    assert resume.newest_checkpoint(tmp_path).name == "epoch-1.pt"
    _touch(tmp_path, "epoch-1-batch-40.pt")  # left by a kill between epoch-1.pt and its removal: older
    assert resume.newest_checkpoint(tmp_path).name == "epoch-1.pt"
    _touch(tmp_path, "epoch-2-batch-5.pt", "epoch-2-batch-10.pt")
    assert resume.newest_checkpoint(tmp_path).name == "epoch-2-batch-10.pt"
    assert [(e, b) for e, b, _ in resume.mid_epoch_checkpoints(tmp_path)] == [(1, 40), (2, 5), (2, 10)]


def test_save_mid_epoch_keeps_only_the_newest(tmp_path):
    _touch(tmp_path, "epoch-1.pt", "epoch-2-batch-5.pt")
    path = resume.save_mid_epoch(tmp_path, 2, 10, lambda p: p.write_text("x"))
    assert path == tmp_path / "epoch-2-batch-10.pt" and path.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-1.pt", "epoch-2-batch-10.pt"]
    resume.remove_mid_epoch_checkpoints(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-1.pt"]


def test_save_every():
    assert [s for s in range(1, 10) if resume.save_every(3, s)] == [3, 6, 9]
    assert not any(resume.save_every(0, s) for s in range(1, 10))


class Batches:
    """A lhotse-like batch sampler: the batches of an epoch, reordered by epoch; counts the batches it made."""

    def __init__(self) -> None:
        self.epoch, self.made = 0, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        for i in range(5):
            self.made += 1
            yield f"batch-{(i * (self.epoch + 2)) % 5}"


def test_skip_batches_yields_positions_and_skips_once():
    sampler = resume.SkipBatches(Batches())
    sampler.set_epoch(1)
    whole = list(sampler)
    assert [(e, p) for _, e, p in whole] == [(1, p) for p in range(5)]
    sampler.start = 3
    assert list(sampler) == whole[3:]
    assert list(sampler) == whole  # the next epoch starts at its first batch again


def test_rng_state_round_trip_and_the_rank_of_a_checkpoint():
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    saved = rng_state()
    expected = (random.random(), np.random.rand(), torch.rand(2))
    set_rng_state(saved)
    assert (random.random(), np.random.rand()) == expected[:2] and torch.equal(torch.rand(2), expected[2])

    torch.manual_seed(2)
    other = rng_state()
    one_process = {"rng": saved, "rng_ranks": None}
    resume.restore_rng(one_process, DistInfo())
    assert torch.equal(torch.rand(2), expected[2])
    ranks = {"rng": saved, "rng_ranks": [saved, other]}
    resume.restore_rng(ranks, DistInfo(rank=1, world_size=2))
    torch.manual_seed(2)
    after_seed_2 = torch.rand(2)
    resume.restore_rng(ranks, DistInfo(rank=1, world_size=2))
    assert torch.equal(torch.rand(2), after_seed_2)
    assert resume.all_ranks_rng_states(DistInfo()) is None


def test_scaler_state_round_trip():
    disabled = torch.amp.GradScaler("cuda", enabled=False)
    assert resume.scaler_state(disabled) == {}
    resume.load_scaler_state(disabled, {})  # nothing to restore: no error
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)  # as fp16's on cuda
    restored = torch.amp.GradScaler("cpu")
    resume.load_scaler_state(restored, resume.scaler_state(scaler))
    assert restored.get_scale() == 1024.0


def test_loader_generator_keeps_the_global_stream():
    torch.manual_seed(0)
    expected = torch.rand(1)
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(range(4), batch_size=2, generator=resume.loader_generator())
    assert len(list(loader)) == 2
    assert torch.equal(torch.rand(1), expected)

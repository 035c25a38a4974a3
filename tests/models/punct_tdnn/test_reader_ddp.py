"""The sharded reader under DDP: 2 gloo ranks x 2 loader workers read every utterance exactly once per epoch
(a reader wrapper logs each read to a file per rank and worker), and both ranks run the same steps."""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from torch.utils.data import get_worker_info

from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.dataset import open_split
from punct.models.punct_tdnn.train import make_loader
from punct.training.loop import DistInfo, init_distributed
from tests.helpers.synthetic_splits import make_split
from tests.models.punct_tdnn.test_train_ddp import free_port

WORLD, WORKERS, EPOCHS = 2, 2, 2


class LoggedReader:
    """A MatrixReader that appends ``<epoch> <key>`` to ``reads.<rank>.<worker>`` for every matrix it reads."""

    def __init__(self, reader, log_dir: Path, rank: int, epoch: Callable[[], int]) -> None:
        self.reader, self.log_dir, self.rank, self.epoch = reader, log_dir, rank, epoch

    def __contains__(self, key: str) -> bool:
        return key in self.reader

    def __getitem__(self, key: str):
        info = get_worker_info()
        worker = info.id if info is not None else "main"
        with open(self.log_dir / f"reads.{self.rank}.{worker}", "a", encoding="utf-8") as log:
            log.write(f"{self.epoch()} {key}\n")
        return self.reader[key]


def _rank(rank: int, port: int, root: str, unit: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    root_path = Path(root)
    paths = {"cuts": root_path / "data/fbank/mustc_cuts_train_ali.jsonl.gz"}
    paths.update(acoustic_scp=root_path / "exp/emb_am/train/emb.scp", text_scp=root_path / "exp/emb_bert/train/vec.scp")
    corpus = open_split(paths["cuts"], paths["acoustic_scp"], paths["text_scp"], cache_utterances=0)
    cfg = TrainTdnnConfig(
        example_unit=unit, batch_size=5, utterances_per_batch=2, num_workers=WORKERS, shuffle_buffer=2
    )
    dist = DistInfo(rank, WORLD, rank)
    init_distributed(dist, torch.device("cpu"))
    loader, epochs = make_loader(cfg, corpus, torch.device("cpu"), 3, dist)
    corpus.acoustic = LoggedReader(corpus.acoustic, root_path, rank, lambda: epochs.epoch)
    steps = {}
    for epoch in range(1, EPOCHS + 1):
        epochs.set_epoch(epoch)
        steps[epoch] = [int(batch[0].shape[0]) for batch in loader]  # windows, or utterances, per step
        torch.distributed.barrier()
    (root_path / f"steps.{rank}.json").write_text(json.dumps(steps))
    torch.distributed.destroy_process_group()


@pytest.mark.parametrize("unit", ["window", "utterance"])
def test_every_utterance_read_once_per_epoch_by_2_ranks_x_2_workers(tmp_path, unit):
    make_split(tmp_path, "train", num_utts=14, text_dim=3, am_dim=2, seed=5)
    keys = [line.split()[0] for line in (tmp_path / "exp/emb_am/train/emb.scp").read_text().splitlines()]
    # fork: the ranks inherit the imported modules (spawn would re-import torch and lhotse in each)
    mp.start_processes(_rank, args=(free_port(), str(tmp_path), unit), nprocs=WORLD, join=True, start_method="fork")
    reads: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    readers: dict[tuple[int, str], set[str]] = collections.defaultdict(set)
    for log in tmp_path.glob("reads.*"):
        _, rank, worker = log.name.split(".")
        assert worker != "main", "the training process itself read matrices"
        for line in log.read_text().splitlines():
            epoch, key = line.split()
            reads[int(epoch)][key] += 1
            readers[(int(epoch), key)].add(f"{rank}.{worker}")
    assert sorted(reads) == list(range(1, EPOCHS + 1))
    for epoch, counts in reads.items():
        assert counts == collections.Counter(keys), f"epoch {epoch}: reads per utterance {dict(counts)}"
    assert len({worker for owners in readers.values() for worker in owners}) == WORLD * WORKERS  # all 4 read
    assert any(readers[(1, key)] != readers[(2, key)] for key in keys)  # the shares change with the epoch
    steps = [json.loads((tmp_path / f"steps.{rank}.json").read_text()) for rank in range(WORLD)]
    assert steps[0] == steps[1]  # the same number of steps, of the same batch sizes, on both ranks
    assert all(len(per_epoch) >= 2 for per_epoch in steps[0].values())

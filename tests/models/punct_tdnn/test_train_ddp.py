"""torchrun-style DDP training: two CPU ranks (gloo) hold the same parameters after a few steps."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import torch
import torch.multiprocessing as mp

from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.dataset import open_split
from punct.models.punct_tdnn.tdnn import TdnnConfig
from punct.models.punct_tdnn.train import train_tdnn
from punct.training.loop import DistInfo, init_distributed
from tests.helpers.synthetic_splits import make_split


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, world: int, port: int, root: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    root_path = Path(root)
    paths = {
        k: root_path / "exp" / v
        for k, v in (("acoustic_scp", "emb_am/train/emb.scp"), ("text_scp", "emb_bert/train/vec.scp"))
    }
    corpus = open_split(
        root_path / "data/fbank/mustc_cuts_train_ali.jsonl.gz", paths["acoustic_scp"], paths["text_scp"]
    )
    cfg = TrainTdnnConfig(
        model=TdnnConfig(fusion_dim=8, channels=(6, 6, 5, 5, 4, 4), head_dim=5),
        optimizer="sgd",
        lr=0.05,
        batch_size=8,
        epochs=2,
        epoch_limit=32,
        loss_reduction="mean",
        num_workers=0,
        log_interval=0,
    )
    dist = DistInfo(rank, world, rank)
    init_distributed(dist, torch.device("cpu"))
    torch.manual_seed(1000 + rank)  # different local RNG state: agreement must come from DDP, not luck
    model = train_tdnn(
        cfg, corpus, None, root_path / "exp/tdnn", torch.device("cpu"), seed=3, dist=dist, progress=False
    )
    torch.save({k: v.detach().clone() for k, v in model.named_parameters()}, root_path / f"rank{rank}.pt")
    torch.distributed.destroy_process_group()


def test_two_cpu_ranks_agree(tmp_path):
    make_split(tmp_path, "train", num_utts=10, text_dim=3, am_dim=2, seed=11)
    torch.optim.SGD(
        [torch.nn.Parameter(torch.zeros(1))], lr=0.1
    )  # torch's lazy optimizer imports, once, before forking
    # fork: the ranks inherit the imported modules (spawn would re-import torch and lhotse in each)
    mp.start_processes(_rank, args=(2, free_port(), str(tmp_path)), nprocs=2, join=True, start_method="fork")
    a = torch.load(tmp_path / "rank0.pt")
    b = torch.load(tmp_path / "rank1.pt")
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], atol=1e-6), name
    # rank 0 wrote the checkpoints of both epochs; training moved the parameters away from the init
    ckpt = torch.load(tmp_path / "exp/tdnn/epoch-2.pt", weights_only=True)
    assert ckpt["state"]["step"] == 2 * 2  # 32 examples per epoch / 2 ranks / batch 8
    torch.manual_seed(3)
    from punct.models.punct_tdnn.train import build_model

    init = dict(
        build_model(
            TrainTdnnConfig(model=TdnnConfig(fusion_dim=8, channels=(6, 6, 5, 5, 4, 4), head_dim=5)), 5
        ).named_parameters()
    )
    assert any(not torch.allclose(init[n], a[n]) for n in a)

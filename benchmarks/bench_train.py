#!/usr/bin/env python3
"""Punctuation-TDNN training throughput: model steps vs the DataLoader that cuts the windows.

Synthetic stage 3/4/6 outputs at each size are written to a temporary folder in the data contract's
formats (aligned cuts, layer-12 ``emb.scp`` with stage 4's two-byte compression, BERT ``vec.scp``),
read through the fusion engineer's ``FusionCorpus`` / ``FusedWindowDataset`` / ``UtteranceDataset``:

Rates are per CPU second of this process for the model and for the in-process loader (0 workers), so
that other jobs on the machine distort them less; with 1 worker process they are per wall second.

* DataLoader windows/s (batches of the config's size, random order; the LRU utterance cache cold
  = every window re-reads its utterance, warm = all utterances cached), with 0 and 1 worker processes;
* model windows/s: forward + backward + optimiser step of ``PunctTdnn`` on one CPU thread, windowed
  (EfficientPunct; paper config: SGD, batch 128) and, for the mini config, fully convolutional
  utterance batches (conf/tdnn_mini.yaml's example_unit: utterance), counted in words (= windows) per second.
The loader must be at least 5x faster than the model step (compared per CPU second, 0 workers: one
worker process gives the same per-CPU-second rate when the machine has a free core).

  python benchmarks/bench_train.py [--sizes paper mini] [--utterances 40]
Writes benchmarks/results/train.json.

``--reads``: instead, the matrices that one epoch of window-mode training reads (conf/tdnn.yaml's balance and
batch), 2 ranks x 2 loader workers (the ranks' loaders run one after the other, in this process), before (the
rank-interleaved sampler, every worker's LRU cache) and after (:mod:`punct.models.punct_tdnn.reader`): utterance
reads and ark bytes read per epoch against the split's.  The split must be much larger than a worker's cache
for the count to show a large corpus, so the cache, the utterance blocks and the shuffle buffer are the conf's
divided by ``--reads-scale``; the dims are small (reads do not depend on them, bytes grow with them).

  python benchmarks/bench_train.py --reads [--utterances 300 --reads-scale 4 --reads-dims 16 16]
Writes benchmarks/results/train_reads.json.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import tempfile
import time
from pathlib import Path

import common  # noqa: E402
import numpy as np
import torch
from torch.utils.data import DataLoader, RandomSampler

from punct.io.shards import write_shard
from punct.labels import PUNCT4
from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.dataset import FusedWindowDataset, FusionCorpus, UtteranceDataset, collate_utterances
from punct.models.punct_tdnn.train import build_model, make_optimizer
from punct.utils.config import load_config

DIMS = {"paper": (768, 1024), "mini": (384, 256)}  # (BERT dim, AM layer-12 dim)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["paper", "mini"], choices=["paper", "mini"])
    parser.add_argument("--utterances", type=int, default=40, help="synthetic utterances (~10 s, ~25 words each)")
    parser.add_argument("--model-seconds", type=float, default=20.0, help="time budget of each model measurement")
    parser.add_argument("--loader-windows", type=int, default=3000, help="windows read per loader measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reads", action="store_true", help="count the matrices an epoch reads, before and after")
    parser.add_argument("--reads-scale", type=int, default=4, help="--reads: divide the conf's cache and blocks by")
    parser.add_argument("--reads-dims", type=int, nargs=2, default=(16, 16), help="--reads: BERT and AM dims")
    return parser


def write_synthetic(root: Path, num_utts: int, text_dim: int, am_dim: int, seed: int) -> list:
    """Aligned cuts (in memory) + emb.scp (two-byte) + vec.scp under ``root``; returns the cuts."""
    from lhotse import MonoCut, Recording, SupervisionSegment
    from lhotse.audio import AudioSource
    from lhotse.supervision import AlignmentItem

    rng = np.random.default_rng(seed)
    cuts, am, vec = [], [], []
    for u in range(num_utts):
        key = f"ted_9{u:03d}_0"
        frame, items, labels = int(rng.integers(5, 30)), [], []
        while frame < 950:
            length = int(rng.integers(15, 35))
            items.append(AlignmentItem(f"w{len(items)}", frame / 100, length / 100))
            labels.append(str(rng.choice(PUNCT4.classes, p=(0.8, 0.1, 0.08, 0.02))))
            frame += length + int(rng.integers(0, 15))
        num_frames = frame + 10
        duration = num_frames / 100 + 0.015
        rec = Recording(key, [AudioSource("file", [0], "/nonexistent.wav")], 16000, int(duration * 16000), duration)
        sup = SupervisionSegment(
            key,
            key,
            0.0,
            duration,
            speaker="spk",
            text=" ".join(i.symbol for i in items),
            custom={"words": [i.symbol for i in items], "punct": labels},
            alignment={"word": items},
        )
        cuts.append(MonoCut(key, 0.0, duration, 0, recording=rec, supervisions=[sup]))
        am.append((key, rng.normal(0, 1, (num_frames, am_dim)).astype(np.float32)))
        vec.append((key, rng.normal(0, 1, (len(items), text_dim)).astype(np.float32)))
    write_shard(root / "emb.1", am, compression="two_byte")
    write_shard(root / "vec.1", vec, compression="none")
    return cuts


def loader_rate(dataset, batch_size: int, windows: int, workers: int, seed: int, collate=None) -> float:
    """Windows (or words, for utterance batches) per second delivered by a DataLoader."""
    gen = torch.Generator().manual_seed(seed)
    kwargs = dict(num_workers=workers)
    if workers:
        kwargs["prefetch_factor"] = 4
    loader = DataLoader(
        dataset, batch_size=batch_size, sampler=RandomSampler(dataset, generator=gen), collate_fn=collate, **kwargs
    )
    it = iter(loader)
    next(it)  # worker start-up is not throughput
    clock = time.perf_counter if workers else time.process_time  # 0 workers: CPU time of this process
    start, seen = clock(), 0
    for batch in it:
        seen += len(batch[-1])
        if seen >= windows:
            break
    return seen / (clock() - start)


def model_rate(cfg: TrainTdnnConfig, input_dim: int, batches: list, budget: float, utterance_mode: bool) -> float:
    model = build_model(cfg, input_dim)
    model.train()
    optimizer = make_optimizer(cfg, model)
    criterion = torch.nn.CrossEntropyLoss(reduction=cfg.loss_reduction)

    def step(batch):
        optimizer.zero_grad(set_to_none=True)
        logits = model(batch[0], utterance=batch[1], centres=batch[2]) if utterance_mode else model(batch[0])
        criterion(logits, batch[-1]).backward()
        optimizer.step()
        return len(batch[-1])

    step(batches[0])  # warm-up
    cpu, seen, i = time.process_time(), 0, 0
    while time.process_time() - cpu < budget or i < 2:
        seen += step(batches[i % len(batches)])
        i += 1
    return seen / (time.process_time() - cpu)  # CPU time: one thread, robust to other jobs' load


def bench_size(size: str, args) -> dict:
    text_dim, am_dim = DIMS[size]
    cfg = load_config(TrainTdnnConfig, common.CONF / ("tdnn.yaml" if size == "paper" else "tdnn_mini.yaml"))
    res: dict = {"size": size, "text_dim": text_dim, "am_dim": am_dim, "batch_size": cfg.batch_size}
    with tempfile.TemporaryDirectory(prefix=f"bench_train_{size}_") as tmp:
        root = Path(tmp)
        cuts = write_synthetic(root, args.utterances, text_dim, am_dim, args.seed)
        res["shard_bytes"] = (root / "emb.1.ark").stat().st_size + (root / "vec.1.ark").stat().st_size
        rows = {}
        for cache, name in ((0, "cold"), (100000, "warm")):
            corpus = FusionCorpus(cuts, root / "emb.1.scp", root / "vec.1.scp", cache_utterances=cache)
            dataset = FusedWindowDataset(corpus, context=cfg.model.context)
            if cache:
                for u in range(len(corpus.utterances)):
                    corpus.matrices(u)  # fill the cache (also inherited by forked workers)
            for workers in (0, 1):
                rows[f"loader_{name}_{workers}w"] = loader_rate(
                    dataset, cfg.batch_size, args.loader_windows, workers, args.seed
                )
        res["words"] = len(corpus)
        res["loader_windows_per_s"] = rows
        # model step on batches taken from the loader once (so only the model is timed)
        batches = []
        loader = DataLoader(dataset, batch_size=cfg.batch_size, shuffle=True)
        for batch in loader:
            batches.append(batch)
            if len(batches) == 4:
                break
        res["model_windows_per_s"] = {"window": model_rate(cfg, corpus.input_dim, batches, args.model_seconds, False)}
        if size == "mini":
            udata = UtteranceDataset(corpus)
            collate = functools.partial(collate_utterances, context=cfg.model.context)
            ubatches = [
                collate([udata[i] for i in range(b, b + cfg.utterances_per_batch)])
                for b in range(0, min(len(udata), 4 * cfg.utterances_per_batch), cfg.utterances_per_batch)
            ]
            res["model_windows_per_s"]["utterance"] = model_rate(
                cfg, corpus.input_dim, ubatches, args.model_seconds, True
            )
            res["loader_windows_per_s"]["utterance_warm_0w"] = loader_rate(
                udata, cfg.utterances_per_batch, args.loader_windows, 0, args.seed, collate
            )
    # CPU-time rates on both sides (1-worker rates are wall-clock and mostly show how much CPU the machine had left)
    worst_loader = min(res["loader_windows_per_s"]["loader_cold_0w"], res["loader_windows_per_s"]["loader_warm_0w"])
    res["loader_over_model"] = worst_loader / res["model_windows_per_s"]["window"]
    return res


class CountingReader:
    """A MatrixReader that counts, per key, the matrices read (in shared memory, one row per loader worker)."""

    def __init__(self, reader, keys: list[str], max_workers: int = 8) -> None:
        self.reader, self.column = reader, {key: i for i, key in enumerate(keys)}
        self.per_worker = torch.zeros((max_workers + 1, len(keys)), dtype=torch.int64).share_memory_()

    @property
    def counts(self) -> torch.Tensor:
        return self.per_worker.sum(0)

    def __contains__(self, key: str) -> bool:
        return key in self.reader

    def __getitem__(self, key: str):
        info = torch.utils.data.get_worker_info()
        self.per_worker[0 if info is None else info.id + 1, self.column[key]] += 1
        return self.reader[key]


def ark_record_bytes(scp: Path) -> dict[str, int]:
    """The bytes each key's matrix takes in its ark (from one offset to the next)."""
    entries = [(line.split()[0], line.split()[1].rsplit(":", 1)) for line in scp.read_text().splitlines()]
    by_ark: dict[str, list[tuple[int, str]]] = {}
    for key, (ark, offset) in entries:
        by_ark.setdefault(ark, []).append((int(offset), key))
    sizes = {}
    for ark, offsets in by_ark.items():
        offsets.sort()
        ends = [offset - len(key) - 1 for offset, key in offsets[1:]] + [Path(ark).stat().st_size]
        sizes.update({key: end - offset for (offset, key), end in zip(offsets, ends)})
    return sizes


def old_window_loader(cfg: TrainTdnnConfig, corpus: FusionCorpus, seed: int, dist) -> tuple[DataLoader, object]:
    """The window-mode loader before the sharded reader: rank-interleaved examples, batches dealt to workers."""
    from punct.models.punct_tdnn.sampling import EpochSampler, WithEpoch

    trained = corpus.trained_examples()
    sampler = EpochSampler(
        corpus.labels[trained], cfg.balance, seed, dist.rank, dist.world_size, corpus.example_utt[trained],
        cfg.group_utterances,
    )  # fmt: skip
    dataset = FusedWindowDataset(corpus, cfg.model.context, trained, None, seed)
    loader = DataLoader(
        dataset, batch_size=cfg.batch_size, sampler=WithEpoch(sampler), num_workers=cfg.num_workers,
        persistent_workers=True, prefetch_factor=cfg.prefetch_factor,
    )  # fmt: skip
    return loader, sampler


def bench_reads(args) -> dict:
    """Utterance reads and ark bytes of one epoch, 2 ranks x 2 workers, before and after the sharded reader."""
    from punct.models.punct_tdnn.train import make_loader
    from punct.training.loop import DistInfo

    paper = load_config(TrainTdnnConfig, common.CONF / "tdnn.yaml")
    scale = args.reads_scale
    cfg = dataclasses.replace(
        paper,
        num_workers=2,
        prefetch_factor=2,
        group_utterances=max(1, 64 // scale),
        cache_utterances=max(1, 128 // scale),
        shuffle_buffer=max(1, paper.shuffle_buffer // scale),
    )
    text_dim, am_dim = args.reads_dims
    res: dict = {"utterances": args.utterances, "text_dim": text_dim, "am_dim": am_dim, "ranks": 2, "workers": 2}
    res.update({k: getattr(cfg, k) for k in ("batch_size", "group_utterances", "cache_utterances", "shuffle_buffer")})
    with tempfile.TemporaryDirectory(prefix="bench_train_reads_") as tmp:
        root = Path(tmp)
        cuts = write_synthetic(root, args.utterances, text_dim, am_dim, args.seed)
        sizes = [ark_record_bytes(root / "emb.1.scp"), ark_record_bytes(root / "vec.1.scp")]
        keys = list(sizes[0])
        split_bytes = sum(sum(s.values()) for s in sizes)
        res["split_bytes"] = split_bytes
        for name in ("before", "after"):
            reads = np.zeros(len(keys), dtype=np.int64)
            got: collections.Counter = collections.Counter()
            want: collections.Counter = collections.Counter()
            read_bytes, windows, start = 0, 0, time.perf_counter()
            for rank in range(2):
                corpus = FusionCorpus(
                    cuts, root / "emb.1.scp", root / "vec.1.scp", cache_utterances=cfg.cache_utterances
                )
                corpus.acoustic = CountingReader(corpus.acoustic, keys)
                corpus.text = CountingReader(corpus.text, keys)
                dist = DistInfo(rank, 2, rank)
                make = old_window_loader if name == "before" else make_loader
                loader, sampler = (
                    make(cfg, corpus, args.seed, dist)
                    if name == "before"
                    else make(cfg, corpus, torch.device("cpu"), args.seed, dist)
                )
                sampler.set_epoch(1)
                windows += sum(len(batch[-1]) for batch in loader)
                for reader, size in zip((corpus.acoustic, corpus.text), sizes):
                    counts = reader.counts.numpy()
                    read_bytes += int(sum(int(c) * size[k] for k, c in zip(keys, counts)))
                reads += corpus.acoustic.counts.numpy()
                if name == "after":  # what padding and dropping changed in the epoch's multiset of windows
                    got.update(sampler.rank_items(cfg.num_workers).tolist())
                    want = collections.Counter(sampler.planner.epoch_items(1).tolist())
                del loader
            res[name] = {
                "windows": windows,
                "utterance_reads": int(reads.sum()),
                "reads_per_utterance": float(reads.mean()),
                "max_reads_of_an_utterance": int(reads.max()),
                "bytes_read": read_bytes,
                "bytes_read_over_split": read_bytes / split_bytes,
                "seconds": round(time.perf_counter() - start, 1),
            }
        res["after"]["windows_repeated_by_padding"] = sum((got - want).values())
        res["after"]["windows_dropped"] = sum((want - got).values())
    return res


def main_reads(args) -> None:
    results = {"machine_before": common.machine(), "reads": bench_reads(args), "machine_after": common.machine()}
    r = results["reads"]
    rows = [
        [name, r[name]["windows"], r[name]["utterance_reads"], r[name]["reads_per_utterance"],
         r[name]["max_reads_of_an_utterance"], r[name]["bytes_read"], r[name]["bytes_read_over_split"]]
        for name in ("before", "after")
    ]  # fmt: skip
    common.print_table(
        f"one window-mode epoch, 2 ranks x 2 workers, {r['utterances']} utterances, split {r['split_bytes']} bytes "
        f"(cache {r['cache_utterances']}, blocks {r['group_utterances']}, buffer {r['shuffle_buffer']})",
        ["reader", "windows", "utterance reads", "reads/utt", "max reads/utt", "bytes read", "bytes read / split"],
        rows,
    )
    common.write_json("train_reads", results)


def main() -> None:
    args = get_parser().parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    if args.reads:
        main_reads(args)
        return
    results: dict = {"machine_before": common.machine(), "sizes": {}}
    for size in args.sizes:
        results["sizes"][size] = bench_size(size, args)
    results["machine_after"] = common.machine()
    rows = []
    for size, r in results["sizes"].items():
        L = r["loader_windows_per_s"]
        rows.append(
            [
                size,
                "windowed",
                r["batch_size"],
                r["model_windows_per_s"]["window"],
                L["loader_cold_0w"],
                L["loader_warm_0w"],
                L["loader_cold_1w"],
                L["loader_warm_1w"],
                r["loader_over_model"],
            ]
        )
        if "utterance" in r["model_windows_per_s"]:
            rows.append(
                [
                    size,
                    "fully conv (utterances)",
                    "8 utts",
                    r["model_windows_per_s"]["utterance"],
                    "-",
                    L["utterance_warm_0w"],
                    "-",
                    "-",
                    L["utterance_warm_0w"] / r["model_windows_per_s"]["utterance"],
                ]
            )
    common.print_table(
        f"TDNN training, 1 thread (windows = words per s; load {results['machine_before']['load_1_5_15']})",
        [
            "size",
            "mode",
            "batch",
            "model step",
            "loader cold 0w",
            "loader warm 0w",
            "loader cold 1w",
            "loader warm 1w",
            "loader / model (0w, CPU)",
        ],
        rows,
    )
    print(f"load before/after: {results['machine_before']['uptime']} / {results['machine_after']['uptime']}")
    common.write_json("train", results)


if __name__ == "__main__":
    main()

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

``--epoch-cost``: the cost of ONE stage-7 epoch per hour of speech at paper dims (768 + 1024 = 1792 fused, the
model of ``--window-conf``), window mode (``--window-conf``: its balance, batch, optimizer and shuffle buffer)
against utterance mode (``--utterance-conf``: whole utterances, fully convolutional), both through stage 7's
loader (:func:`punct.models.punct_tdnn.train.make_loader`, one rank, in this process) over synthetic shards of
``--utterance-seconds`` utterances (~3.2 words/s, MuST-C ~3.1; 100 layer-12 frames/s in stage 4's two-byte
arks) with the mini corpus' class shares: examples, loader CPU s, model forward+backward+step CPU s (one thread,
timed on the epoch's first batches and scaled by the frames through the fusion layer), ark bytes read, bytes of
the batches (what goes host -> device) and FLOPs (torch's FlopCounterMode on the first batch), per hour, and the
ratio window / utterance; then those x 400 h (MuST-C), labelled an estimate.

  python benchmarks/bench_train.py --epoch-cost [--epoch-utterances 300 --utterance-seconds 2 10]
Writes benchmarks/results/train_epoch_cost.json (with ``--commit-copy`` also egs/mustc/RESULTS/scale/, read by
``bench_scale.py --plan``).
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

EPOCH_COST_COPY = common.REPO / "egs" / "mustc" / "RESULTS" / "scale" / "train_epoch_cost.json"
DIMS = {"paper": (768, 1024), "mini": (384, 256)}  # (BERT dim, AM layer-12 dim)
MUSTC_HOURS = 400.0  # MuST-C (issue 77): ~400 h of TED audio, ~4.5 M words, ~250k segments
MUSTC_WORDS_PER_HOUR = 4.5e6 / MUSTC_HOURS
MUSTC_SEGMENT_SECONDS = MUSTC_HOURS * 3600 / 250e3
# the mini corpus' training words per class (NP , . ?), stage 7's log of the default runs (English prose)
MINI_TRAIN_CLASS_COUNTS = (8925, 830, 686, 86)
# what conf/tdnn_mini.yaml's utterance mode sets beside the unit (taken when no paper utterance conf is given)
UTTERANCE_SETTINGS = (
    "utterances_per_batch", "optimizer", "lr", "lr_decay", "weight_decay", "loss_reduction", "class_weight_power",
)  # fmt: skip


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
    parser.add_argument("--epoch-cost", action="store_true", help="one epoch per hour of speech, window vs utterance")
    parser.add_argument("--commit-copy", action="store_true", help="--epoch-cost: also write egs/mustc/RESULTS/scale/")
    parser.add_argument("--epoch-utterances", type=int, default=300, help="--epoch-cost: synthetic utterances")
    parser.add_argument(
        "--utterance-seconds", type=float, nargs=2, default=(2.0, 10.0), help="--epoch-cost: utterance length range"
    )
    parser.add_argument(
        "--class-counts", type=int, nargs=4, default=MINI_TRAIN_CLASS_COUNTS, help="--epoch-cost: label shares"
    )
    parser.add_argument("--window-conf", type=Path, default=common.CONF / "tdnn_window.yaml", help="--epoch-cost")
    parser.add_argument(
        "--utterance-conf", type=Path, default=None, help="--epoch-cost (default: the window conf, mini's settings)"
    )
    return parser


def write_synthetic(
    root: Path,
    num_utts: int,
    text_dim: int,
    am_dim: int,
    seed: int,
    seconds: tuple[float, float] = (9.5, 9.5),
    shares: tuple[float, ...] = (0.8, 0.1, 0.08, 0.02),
) -> list:
    """Aligned cuts (in memory) + emb.scp (two-byte) + vec.scp under ``root``; returns the cuts.  Words of 15-34
    frames with 0-14 frame gaps (~3.2 words/s) until ``seconds`` (uniform in the range), labels drawn with
    ``shares`` (no punctuation, comma, period, question)."""
    from lhotse import MonoCut, Recording, SupervisionSegment
    from lhotse.audio import AudioSource
    from lhotse.supervision import AlignmentItem

    rng = np.random.default_rng(seed)
    cuts, am, vec = [], [], []
    for u in range(num_utts):
        key = f"ted_9{u:03d}_0"
        frame, items, labels = int(rng.integers(5, 30)), [], []
        end = seconds[0] * 100 if seconds[0] == seconds[1] else rng.uniform(*seconds) * 100
        while frame < end:
            length = int(rng.integers(15, 35))
            items.append(AlignmentItem(f"w{len(items)}", frame / 100, length / 100))
            labels.append(str(rng.choice(PUNCT4.classes, p=shares)))
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


# --epoch-cost: one stage-7 epoch per hour of speech, window mode against utterance mode, at paper dims


@dataclasses.dataclass
class EpochCost:
    """One stage-7 epoch over the synthetic split, as measured; ``per_hour`` divides by its hours of speech.

    The model is timed on the epoch's first batches (``model_batches_timed``, after one untimed batch whose
    FLOPs are counted) and its CPU time and FLOPs scaled to the epoch by the frames through the fusion layer."""

    mode: str
    speech_hours: float
    utterances: int
    words: int
    examples: int  # windows (window mode) or words (utterance mode) trained on
    batches: int
    loader_cpu_s: float  # in-process DataLoader (0 workers): reading, fusing, cutting and collating
    ark_bytes: int  # the stage-4 and stage-6 ark records read
    h2d_bytes: int  # the batches' tensors, all of which go to the device
    input_frames: int  # rows of the batches' frame tensors (windows x 301, or padded utterance frames)
    model_cpu_s_per_frame: float  # forward + backward + optimiser step, one thread
    flops_per_frame: float  # forward + backward (torch's FlopCounterMode, from the shapes)
    model_batches_timed: int

    def per_hour(self) -> dict[str, float]:
        model_cpu = self.model_cpu_s_per_frame * self.input_frames
        totals = {
            "examples": self.examples,
            "words": self.words,
            "batches": self.batches,
            "loader_cpu_s": self.loader_cpu_s,
            "model_cpu_s": model_cpu,
            "cpu_s": self.loader_cpu_s + model_cpu,
            "ark_bytes": self.ark_bytes,
            "h2d_bytes": self.h2d_bytes,
            "flops": self.flops_per_frame * self.input_frames,
        }
        return {name: value / self.speech_hours for name, value in totals.items()}


def epoch_cost_configs(args) -> dict[str, TrainTdnnConfig]:
    """The window and utterance configs at one model, their loaders in this process (0 workers).  Without
    ``--utterance-conf``: the window conf with conf/tdnn_mini.yaml's utterance settings."""
    window = load_config(TrainTdnnConfig, args.window_conf)
    if args.utterance_conf is not None:
        utterance = load_config(TrainTdnnConfig, args.utterance_conf)
    else:
        mini = load_config(TrainTdnnConfig, common.CONF / "tdnn_mini.yaml")
        settings = {name: getattr(mini, name) for name in UTTERANCE_SETTINGS}
        utterance = dataclasses.replace(window, example_unit="utterance", **settings)
    if (window.example_unit, utterance.example_unit) != ("window", "utterance"):
        raise ValueError(f"want a window and an utterance conf, got {window.example_unit}, {utterance.example_unit}")
    shapes = ("fusion_dim", "channels", "kernels", "dilations", "num_classes", "window", "head_dim")
    if any(getattr(window.model, k) != getattr(utterance.model, k) for k in shapes):
        raise ValueError(f"the window and utterance confs must train a model of the same {', '.join(shapes)}")
    return {cfg.example_unit: dataclasses.replace(cfg, num_workers=0) for cfg in (window, utterance)}


def train_step(model, optimizer, criteria, cfg: TrainTdnnConfig, batch) -> None:
    from punct.models.punct_tdnn.train import forward_batch, tdnn_loss

    optimizer.zero_grad(set_to_none=True)
    tdnn_loss(forward_batch(model, batch, cfg), batch[-1], criteria, cfg).backward()
    optimizer.step()


def measure_epoch(cfg: TrainTdnnConfig, cuts: list, root: Path, args) -> EpochCost:
    """One epoch of ``cfg`` through stage 7's loader (:func:`punct.models.punct_tdnn.train.make_loader`), one rank."""
    from torch.utils.flop_counter import FlopCounterMode

    from punct.models.punct_tdnn.train import build_criteria, make_loader
    from punct.training.loop import DistInfo

    sizes = [ark_record_bytes(root / "emb.1.scp"), ark_record_bytes(root / "vec.1.scp")]
    keys = list(sizes[0])
    corpus = FusionCorpus(cuts, root / "emb.1.scp", root / "vec.1.scp", cache_utterances=cfg.cache_utterances)
    corpus.acoustic = CountingReader(corpus.acoustic, keys)
    corpus.text = CountingReader(corpus.text, keys)
    loader, epochs = make_loader(cfg, corpus, torch.device("cpu"), args.seed, DistInfo(0, 1, 0))
    epochs.set_epoch(1)
    model = build_model(cfg, corpus.input_dim)
    model.train()
    optimizer = make_optimizer(cfg, model)
    criteria = build_criteria(cfg, corpus, torch.device("cpu"))
    loader_cpu = model_cpu = flops_per_frame = 0.0
    examples = batches = h2d = frames = timed_frames = timed = 0
    batch_iter = iter(loader)
    while True:
        start = time.process_time()
        batch = next(batch_iter, None)
        loader_cpu += time.process_time() - start
        if batch is None:
            break
        batch_frames = batch[0].shape[0] * batch[0].shape[1]
        batches, examples, frames = batches + 1, examples + len(batch[-1]), frames + batch_frames
        h2d += sum(t.nbytes for t in batch)
        if batches == 1:  # FLOPs counted on the first batch, which also warms up
            with FlopCounterMode(display=False) as counter:
                train_step(model, optimizer, criteria, cfg, batch)
            flops_per_frame = counter.get_total_flops() / batch_frames
        elif model_cpu < args.model_seconds or timed < 2:
            start = time.process_time()
            train_step(model, optimizer, criteria, cfg, batch)
            model_cpu += time.process_time() - start
            timed, timed_frames = timed + 1, timed_frames + batch_frames
    ark = 0
    for reader, size in zip((corpus.acoustic, corpus.text), sizes):
        ark += int(sum(int(c) * size[k] for k, c in zip(keys, reader.counts.numpy())))
    return EpochCost(
        mode=cfg.example_unit,
        speech_hours=sum(cut.duration for cut in cuts) / 3600,
        utterances=len(corpus.utterances),
        words=len(corpus),
        examples=examples,
        batches=batches,
        loader_cpu_s=loader_cpu,
        ark_bytes=ark,
        h2d_bytes=h2d,
        input_frames=frames,
        model_cpu_s_per_frame=model_cpu / max(timed_frames, 1),
        flops_per_frame=flops_per_frame,
        model_batches_timed=timed,
    )


def conf_name(path: Path | None) -> str:
    """A conf as the JSON records it: relative to the repository, or how the utterance conf was made."""
    if path is None:
        return "--window-conf with conf/tdnn_mini.yaml's utterance settings"
    path = path.resolve()
    return str(path.relative_to(common.REPO)) if path.is_relative_to(common.REPO) else str(path)


def bench_epoch_cost(args) -> dict:
    text_dim, am_dim = DIMS["paper"]
    configs = epoch_cost_configs(args)
    shares = tuple(np.array(args.class_counts, dtype=np.float64) / sum(args.class_counts))
    res: dict = {"text_dim": text_dim, "am_dim": am_dim, "utterances": args.epoch_utterances}
    res["utterance_seconds"] = list(args.utterance_seconds)
    res["class_shares"] = list(shares)
    res["configs"] = {
        mode: {
            "conf": conf_name(getattr(args, f"{mode}_conf")),
            **{k: getattr(cfg, k) for k in ("balance", "batch_size", "utterances_per_batch", "optimizer", "lr")},
            "shuffle_buffer": cfg.shuffle_buffer,
            "cache_utterances": cfg.cache_utterances,
        }
        for mode, cfg in configs.items()
    }
    with tempfile.TemporaryDirectory(prefix="bench_train_epoch_") as tmp:
        root = Path(tmp)
        cuts = write_synthetic(
            root, args.epoch_utterances, text_dim, am_dim, args.seed, tuple(args.utterance_seconds), shares
        )
        res["modes"] = {}
        for mode, cfg in configs.items():
            cost = measure_epoch(cfg, cuts, root, args)
            res["modes"][mode] = {**dataclasses.asdict(cost), "per_hour": cost.per_hour()}
    window, utterance = (res["modes"][m]["per_hour"] for m in ("window", "utterance"))
    res["window_over_utterance"] = {k: window[k] / utterance[k] if utterance[k] else None for k in window}
    speech = res["modes"]["window"]
    res["words_per_hour"] = speech["words"] / speech["speech_hours"]
    res["seconds_per_utterance"] = speech["speech_hours"] * 3600 / speech["utterances"]
    res["mustc"] = {
        "hours": MUSTC_HOURS,
        "words_per_hour": MUSTC_WORDS_PER_HOUR,
        "seconds_per_segment": MUSTC_SEGMENT_SECONDS,
    }
    res["estimate_400h"] = {
        mode: {
            "note": "estimate: the synthetic split's per-hour figures x 400 h",
            "h2d_bytes_per_epoch": res["modes"][mode]["per_hour"]["h2d_bytes"] * MUSTC_HOURS,
            "flops_per_epoch": res["modes"][mode]["per_hour"]["flops"] * MUSTC_HOURS,
            "loader_cpu_hours_per_epoch": res["modes"][mode]["per_hour"]["loader_cpu_s"] * MUSTC_HOURS / 3600,
            "ark_bytes_per_epoch": res["modes"][mode]["per_hour"]["ark_bytes"] * MUSTC_HOURS,
        }
        for mode in ("window", "utterance")
    }
    return res


EPOCH_COST_ROWS = (  # (row, per-hour key, unit divisor)
    ("examples (windows or words)", "examples", 1),
    ("loader CPU s (0 workers)", "loader_cpu_s", 1),
    ("model fwd+bwd+step CPU s (1 thread)", "model_cpu_s", 1),
    ("loader + model CPU s", "cpu_s", 1),
    ("GB read from ark", "ark_bytes", 1e9),
    ("GB host -> device", "h2d_bytes", 1e9),
    ("TFLOP fwd+bwd", "flops", 1e12),
)


def main_epoch_cost(args) -> None:
    results = {
        "machine_before": common.machine(),
        "epoch_cost": bench_epoch_cost(args),
        "machine_after": common.machine(),
    }
    r = results["epoch_cost"]
    window, utterance = (r["modes"][m]["per_hour"] for m in ("window", "utterance"))
    common.print_table(
        f"one stage-7 epoch per hour of speech, paper dims ({r['text_dim']} + {r['am_dim']}), synthetic "
        f"{r['modes']['window']['speech_hours']:.3f} h: {r['words_per_hour']:.0f} words/h, "
        f"{r['seconds_per_utterance']:.1f} s/utterance "
        f"(MuST-C: {MUSTC_WORDS_PER_HOUR:.0f}, {MUSTC_SEGMENT_SECONDS:.1f})",
        ["per hour of speech", "window", "utterance", "window / utterance"],
        [
            [name, window[key] / unit, utterance[key] / unit, r["window_over_utterance"][key] or "-"]
            for name, key, unit in EPOCH_COST_ROWS
        ],
    )
    est = r["estimate_400h"]
    common.print_table(
        f"estimate: one epoch of {MUSTC_HOURS:.0f} h (per-hour figures x {MUSTC_HOURS:.0f})",
        ["mode", "host -> device TB", "FLOPs fwd+bwd (PFLOP)", "loader CPU core-hours", "ark TB read"],
        [
            [m, est[m]["h2d_bytes_per_epoch"] / 1e12, est[m]["flops_per_epoch"] / 1e15,
             est[m]["loader_cpu_hours_per_epoch"], est[m]["ark_bytes_per_epoch"] / 1e12]
            for m in ("window", "utterance")
        ],
    )  # fmt: skip
    path = common.write_json("train_epoch_cost", results)
    if args.commit_copy:  # the figures bench_scale.py --plan reads
        EPOCH_COST_COPY.parent.mkdir(parents=True, exist_ok=True)
        EPOCH_COST_COPY.write_text(path.read_text())
        print(f"wrote {EPOCH_COST_COPY}")


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
    if args.epoch_cost:
        main_epoch_cost(args)
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

#!/usr/bin/env python3
"""The frozen acoustic model's pooled frames of every segment (egs/parczech stage 4, ``sound_encoder: am``), computed
once for the cross-attention models that read them (``train_mm --am-frames``) exactly as each would compute them
itself (:func:`punct.models.cross_attention.data.model_am_frames`: float16, stored as float32).  With
``--random-audio-seed N`` also the frames of the random-audio control (thesis 5.8) trained with ``--seed N``, in
``<out-dir>/random_audio``.

  python -m punct.bin.dump_am_frames --config conf/mm_small.yaml --am-dir exp/am --data-dir data/segments \\
      --prefix parczech --splits train,dev,test --out-dir exp/am_frames --random-audio-seed 42 --job 1 --nj 2
  python -m punct.bin.dump_am_frames ... --merge     # -> <out-dir>[/random_audio]/<split>/frames.scp, frames.json

Job J writes ``<out-dir>/<split>/frames.J.{ark,scp}`` (key = segment id) for its share of each split's segments;
a finished shard is skipped unless ``--overwrite``.  The merge writes ``frames.json``, which audio the frames are of
(:func:`punct.models.cross_attention.data.am_frames_info`): a model reads only its own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
from pathlib import Path

import numpy as np
import torch
from lhotse import load_manifest

from punct.io.shards import is_shard_done, merge_scps, shard_paths, write_shard
from punct.models.cross_attention.am_frames import am_frames_of
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import (
    AM_FRAMES_INFO,
    am_frames_info,
    model_am_frames,
    read_segments,
    segment_samples,
    split_manifests,
)
from punct.utils.atomic import atomic_write_text
from punct.utils.cli import HelpFormatter, parse_and_log
from punct.utils.config import load_config
from punct.utils.jobs import add_job_arguments, check_job, job_share


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--config", type=Path, required=True, help="MmConfig YAML with sound_encoder: am")
    parser.add_argument("--am-dir", type=Path, required=True, help="the acoustic model (the recipe's exp/am)")
    parser.add_argument("--data-dir", type=Path, required=True, help="stage-3 segments")
    parser.add_argument("--prefix", required=True, help="manifest name prefix (e.g. parczech)")
    parser.add_argument("--splits", default="train,dev,test", help="comma-separated splits")
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder, e.g. exp/am_frames")
    parser.add_argument(
        "--random-audio-seed",
        type=int,
        default=None,
        help="also the random-audio control's frames (its samples permuted as train_mm --random-audio true --seed N "
        "permutes them) in <out-dir>/random_audio",
    )
    parser.add_argument("--num-threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--overwrite", action="store_true", help="rewrite shards that are already done")
    parser.add_argument("--merge", action="store_true", help="merge every split's frames.*.scp into frames.scp")
    add_job_arguments(parser)
    return parser


def frames_config(path: Path, am_dir: Path) -> MmConfig:
    cfg = load_config(MmConfig, path)
    if cfg.sound_encoder != "am":
        raise ValueError(f"{path}: sound_encoder is {cfg.sound_encoder}; the AM frames are for sound_encoder am")
    return dataclasses.replace(cfg, am_dir=str(am_dir.resolve()), random_audio=False)


def dumps(args: argparse.Namespace) -> list[tuple[Path, MmConfig]]:
    """(folder, the config of the models that read it) of each dump: the real audio's in ``--out-dir``, and with
    ``--random-audio-seed`` the random-audio control's in ``<out-dir>/random_audio``."""
    cfg = frames_config(args.config, args.am_dir)
    found = [(args.out_dir, cfg)]
    if args.random_audio_seed is not None:
        random_audio = dataclasses.replace(cfg, random_audio=True, seed=args.random_audio_seed)
        found.append((args.out_dir / "random_audio", random_audio))
    return found


def dump_split(args: argparse.Namespace, out_dir: Path, cfg: MmConfig, split: str) -> None:
    """This job's share of ``split``: one shard of (segment id, frames)."""
    prefix = out_dir / split / f"frames.{args.job}"
    if is_shard_done(prefix) and not args.overwrite:
        logging.info("%s is done; skipping (use --overwrite to redo)", prefix)
        return
    torch.set_num_threads(args.num_threads)
    supervisions, recordings_path = split_manifests(args.data_dir, args.prefix, split)
    segments = job_share(read_segments(supervisions), args.job, args.nj)
    recordings, am = load_manifest(recordings_path), am_frames_of(cfg)
    items = (
        (seg.id, model_am_frames(am, segment_samples(recordings, seg, cfg.sample_rate), cfg, seg.id).astype(np.float32))
        for seg in segments
    )
    logging.info("%s: %d segments -> %s", supervisions, write_shard(prefix, items), shard_paths(prefix)[1])


def merge_split(args: argparse.Namespace, out_dir: Path, split: str) -> None:
    prefixes = [out_dir / split / f"frames.{job}" for job in range(1, args.nj + 1)]
    unfinished = [str(p) for p in prefixes if not is_shard_done(p)]
    if unfinished:
        raise FileNotFoundError(f"unfinished shards (run the --job 1..{args.nj} dumps first): {unfinished}")
    count = merge_scps([shard_paths(p)[1] for p in prefixes], out_dir / split / "frames.scp")
    logging.info("%s: %d segments", out_dir / split / "frames.scp", count)


def main(argv: list[str] | None = None) -> None:
    args = parse_and_log(get_parser(), argv)
    check_job(args.job, args.nj)
    splits = [s for s in args.splits.split(",") if s]
    for out_dir, cfg in dumps(args):
        for split in splits:
            if args.merge:
                merge_split(args, out_dir, split)
            else:
                dump_split(args, out_dir, cfg, split)
        if args.merge:
            atomic_write_text(out_dir / AM_FRAMES_INFO, json.dumps(am_frames_info(cfg)) + "\n")


if __name__ == "__main__":
    main()

"""Stage 4: dump layer-12 acoustic embeddings of one job's share of a split to a kaldiio shard, or merge.

  python -m punct.bin.dump_am_embeddings --fbank-dir data/fbank --am-dir exp/am --out-dir exp/emb_am \\
      --splits dev test --job 1 --nj 2
  python -m punct.bin.dump_am_embeddings ... --nj 2 --merge     # -> exp/emb_am/<split>/emb.scp
A finished shard (``emb.JOB.scp.done`` newer than the model) is skipped unless --overwrite; a shard
of an older model, of an interrupted job (no ``.done``), or of other options (the split's
``source.json``, written by the merge, names another model, layer, compression or CMVN mode) is redone.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import torch

from punct.am.checkpoint import add_am_input_arguments, load_model, training_config
from punct.am.dataset import load_split
from punct.am.dump import benchmark_throughput, dump_shard
from punct.am.model import EMBEDDING_LAYER
from punct.features.cmvn import SpeakerCmvn
from punct.io.shards import COMPRESSION, MatrixReader, is_shard_done, merge_scps, shard_paths
from punct.io.sources import AcousticSource, file_sha256, read_source, write_source
from punct.utils.cli import add_device_arguments, parse_and_log
from punct.utils.device import resolve_device
from punct.utils.jobs import add_job_arguments, check_job, job_share_lazy


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_am_input_arguments(parser, "dump")
    parser.add_argument("--out-dir", type=Path, required=True, help="shard folder; shards go to <out-dir>/<split>/")
    parser.add_argument("--layer", type=int, default=EMBEDDING_LAYER, help="layer to tap (12 = tdnnf12)")
    parser.add_argument("--compression", default="two_byte", choices=sorted(COMPRESSION), help="kaldiio compression")
    parser.add_argument("--merge", action="store_true", help="merge emb.*.scp into emb.scp and check ids")
    parser.add_argument("--overwrite", action="store_true", help="redo a finished shard")
    add_device_arguments(parser)
    parser.add_argument(
        "--benchmark-config",
        type=Path,
        default=None,
        help="with --merge: also measure the dump throughput of a model of this config's size",
    )
    parser.add_argument("--throttle", type=float, default=0.0, help=argparse.SUPPRESS)  # tests: sleep per cut
    add_job_arguments(parser)
    return parser


def acoustic_source(args, split: str, am_sha256: str) -> AcousticSource:
    """What this dump of ``split`` is made from (the CMVN mode: the split's stage-1 stats, read without its cuts)."""
    norm_vars = SpeakerCmvn.load(args.fbank_dir / f"cmvn_{split}.json").norm_vars
    return AcousticSource(
        am_checkpoint=str(args.am_dir / args.checkpoint),
        am_sha256=am_sha256,
        layer=args.layer,
        compression=args.compression,
        norm_vars=norm_vars,
        frame_subsample=training_config(args.am_dir / args.checkpoint).model.frame_subsample,
    )


def made_otherwise(folder: Path, source: AcousticSource) -> bool:
    """True when ``folder``'s recorded source differs from ``source`` (logged); False when none is recorded."""
    recorded = read_source(folder, AcousticSource)
    if recorded is None or recorded.identity() == source.identity():
        return False
    logging.info("%s was dumped with other options (%s); dumping again with %s", folder, recorded, source)
    return True


def merge_split(args, split: str) -> bool:
    cuts, _ = load_split(args.fbank_dir, split, args.prefix, lazy=True)  # only the ids are kept
    out_dir = args.out_dir / split
    prefixes = [out_dir / f"emb.{j}" for j in range(1, args.nj + 1)]
    unfinished = [str(p) for p in prefixes if not is_shard_done(p)]
    if unfinished:
        logging.error("unfinished shards: %s", unfinished)
        return False
    n = merge_scps([shard_paths(p)[1] for p in prefixes], out_dir / "emb.scp")
    keys = set(MatrixReader(out_dir / "emb.scp").keys())
    ids = {c.id for c in cuts}
    if keys != ids:
        logging.error(
            "%s keys differ from the cut ids: %d missing, %d extra",
            out_dir / "emb.scp",
            len(ids - keys),
            len(keys - ids),
        )
        return False
    write_source(out_dir, acoustic_source(args, split, file_sha256(args.am_dir / args.checkpoint)))
    logging.info("%s: %d matrices", out_dir / "emb.scp", n)
    return True


def main(argv=None) -> int:
    args = parse_and_log(get_parser(), argv, "args")
    torch.set_num_threads(args.num_threads)
    check_job(args.job, args.nj)
    if args.merge:
        ok = [merge_split(args, split) for split in args.splits]
        if args.benchmark_config is not None:
            cuts, cmvn = load_split(args.fbank_dir, args.splits[0], args.prefix, lazy=True)  # read up to 60 s
            _, tokens = load_model(args.am_dir / args.checkpoint)
            benchmark_throughput(args.benchmark_config, cuts, cmvn, len(tokens), args.layer)
        return 0 if all(ok) else 1
    device = resolve_device(args.device)
    model, _ = load_model(args.am_dir / args.checkpoint, device)
    total = {"audio_seconds": 0.0, "cpu_seconds": 0.0}
    am_sha256 = file_sha256(args.am_dir / args.checkpoint)
    for split in args.splits:
        prefix = args.out_dir / split / f"emb.{args.job}"
        redo = args.overwrite or made_otherwise(prefix.parent, acoustic_source(args, split, am_sha256))
        if is_shard_done(prefix, newer_than=args.am_dir / args.checkpoint) and not redo:
            logging.info("%s is done; skipping (use --overwrite to redo)", prefix)
            continue
        cuts, cmvn = load_split(args.fbank_dir, split, args.prefix, lazy=True)
        stats = dump_shard(
            model,
            job_share_lazy(cuts, args.job, args.nj),  # only this job's cuts are held
            cmvn,
            prefix,
            args.layer,
            args.compression,
            device=device,
            throttle=args.throttle,
        )
        for k in total:
            total[k] += stats[k]
    if total["cpu_seconds"] > 0:
        logging.info(
            "throughput: %.1f audio s per CPU s (%.1f audio s in %.1f CPU s, layer %d, %.2f M params)",
            total["audio_seconds"] / total["cpu_seconds"],
            total["audio_seconds"],
            total["cpu_seconds"],
            args.layer,
            sum(p.numel() for p in model.parameters()) / 1e6,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

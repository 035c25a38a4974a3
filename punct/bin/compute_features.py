"""Stage 1: MFCC (kaldi-native-fbank) for one job's share of a split's cuts, or merge + CMVN.

  python -m punct.bin.compute_features --config conf/mfcc.yaml --manifest-dir data/manifests \\
      --fbank-dir data/fbank --splits train dev test --job 1 --nj 4
  python -m punct.bin.compute_features --config conf/mfcc.yaml --manifest-dir data/manifests \\
      --fbank-dir data/fbank --splits train dev test --nj 4 --merge
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from lhotse import load_manifest_lazy

from punct.features import FeatureConfig
from punct.features.compute import (
    accumulate_cmvn,
    compute_job,
    cuts_path,
    load_job_cuts,
    manifest_paths,
    merge_jobs,
    split_cut_ids,
)
from punct.io.jsonl import count_records
from punct.utils.atomic import is_done, mark_done
from punct.utils.config import load_config
from punct.utils.jobs import add_job_arguments, check_job
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--config", type=Path, default=None, help="feature config YAML (conf/mfcc.yaml)")
    parser.add_argument("--manifest-dir", type=Path, required=True, help="lhotse manifests of stage 0")
    parser.add_argument("--fbank-dir", type=Path, required=True, help="output folder for features and cuts")
    parser.add_argument("--splits", nargs="+", required=True, help="splits to process (train dev test)")
    parser.add_argument("--prefix", required=True, help="manifest name prefix (e.g. mustc)")
    parser.add_argument("--merge", action="store_true", help="merge the job manifests and compute CMVN stats")
    parser.add_argument("--overwrite", action="store_true", help="recompute a finished job")
    add_job_arguments(parser)
    return parser


def merge_split(args, config: FeatureConfig, split: str) -> None:
    """The jobs' cuts streamed into the split's manifest (its order), then its CMVN stats from the merged manifest
    read lazily: one cut, and the stats of each speaker, held at a time."""
    parts = [part_path(args, split, j) for j in range(1, args.nj + 1)]
    out = cuts_path(args.fbank_dir, split, args.prefix)
    _, sup_path = manifest_paths(args.manifest_dir, split, args.prefix)
    total = count_records(sup_path, "manifest (run stage 0)")
    merged = merge_jobs(parts, split_cut_ids(args.manifest_dir, split, args.prefix), out)
    logging.info("%s: %d cuts with features, %d skipped", out, merged, total - merged)
    cmvn = accumulate_cmvn(load_manifest_lazy(out), norm_vars=config.norm_vars)
    cmvn_file = args.fbank_dir / f"cmvn_{split}.json"
    cmvn.save(cmvn_file)
    logging.info("%s: CMVN stats of %d speakers", cmvn_file, len(cmvn.stats))
    mark_done(out)


def part_path(args, split: str, job: int) -> Path:
    return args.fbank_dir / "split" / f"{args.prefix}_cuts_{split}.{job}.jsonl.gz"


def compute_split(args, config: FeatureConfig, split: str) -> None:
    output = part_path(args, split, args.job)
    if is_done(output) and not args.overwrite:
        logging.info("%s is done; skipping (use --overwrite to recompute)", output)
        return
    share = load_job_cuts(args.manifest_dir, split, args.prefix, args.job, args.nj)  # only this job's cuts
    storage = args.fbank_dir / f"feats_{split}" / f"feats.{args.job}.lca"
    counts = compute_job(share, config.extractor(), storage, output)
    logging.info(
        "%s job %d/%d: %d cuts -> %s (%d skipped)", split, args.job, args.nj, counts["done"], output, counts["skipped"]
    )


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    config = load_config(FeatureConfig, args.config)
    log_config(config)
    check_job(args.job, args.nj)
    for split in args.splits:
        if args.merge:
            merge_split(args, config, split)
        else:
            compute_split(args, config, split)
    return 0


if __name__ == "__main__":
    sys.exit(main())

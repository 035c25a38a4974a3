"""Stage 3 of egs/parczech: align recognised and official words, build the segment dataset.

  # per job (JOB=1..nj): alignment tables and segments of a share of the recordings
  python -m punct.bin.build_itn_segments --config conf/segments.yaml \\
      --manifest-dir data/manifests --recognised-dir exp/asr/words --out-dir data/segments --job 1 --nj 2
  # then once: lhotse manifests per split and the statistics tables
  python -m punct.bin.build_itn_segments --merge --manifest-dir data/manifests --out-dir data/segments --nj 2

Inputs: ``<prefix>_{recordings,supervisions}_all.jsonl.gz`` of stage 0 and
``<recognised-dir>/<recording id>.words.tsv`` (word, start, end).  Outputs in ``--out-dir``:
``align/<recording id>.tsv`` (the thesis' per-word alignment table), ``parts/segments.JOB.jsonl``,
``{dev,test}_speakers.txt`` (``{dev,test}_recordings.txt`` with ``split_by: recording``), and after ``--merge``:
``<prefix>_{recordings,supervisions}_{train,dev,test}.jsonl.gz``, ``stats.md`` and ``stats.json``.

Held-out parts: the given speaker lists, else ``num_dev_speakers``/``num_test_speakers`` drawn with the seed, or with
``dev_share``/``test_share`` speakers (``--split-by recording``: recordings) holding those shares of the hours.  The
merge exits 1, after writing ``stats.md``, when a split has fewer segments than ``min_{train,dev,test}_segments``.
The jobs and the merge: ``punct.align.build``.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path

from punct.align.build import SegmentBuild, TooFewSegments, build_job, merge_jobs
from punct.align.dataset import ItnDatasetConfig
from punct.utils.config import add_config_arguments, config_from_args, options_as
from punct.utils.jobs import add_job_arguments
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--manifest-dir", type=Path, required=True, help="stage 0 output (<prefix>_*_all.jsonl.gz)")
    parser.add_argument("--prefix", required=True, help="manifest name prefix, input and output (e.g. parczech)")
    parser.add_argument(
        "--recognised-dir", type=Path, default=None, help="folder of <recording id>.words.tsv (needed unless --merge)"
    )
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder (data/segments)")
    parser.add_argument("--config", type=Path, default=None, help="YAML with ItnDatasetConfig values")
    parser.add_argument(
        "--dev-speakers",
        type=Path,
        default=None,
        help="file with one dev speaker id per line (default: draw num_dev_speakers with the seed)",
    )
    parser.add_argument(
        "--test-speakers",
        type=Path,
        default=None,
        help="file with one test speaker id per line (default: draw num_test_speakers with the seed)",
    )
    parser.add_argument("--merge", action="store_true", help="merge the --nj job parts into manifests and statistics")
    parser.add_argument("--overwrite", action="store_true", help="redo finished job parts")
    parser.add_argument("--log-file", type=Path, default=None, help="also log to this file")
    add_job_arguments(parser)
    add_config_arguments(parser, ItnDatasetConfig)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging(args.log_file)
    cfg = config_from_args(ItnDatasetConfig, args, args.config)
    log_config({"args": vars(args), "config": dataclasses.asdict(cfg)})
    args.out_dir.mkdir(parents=True, exist_ok=True)
    build = options_as(SegmentBuild, args)
    if not args.merge:
        build_job(build, cfg)
        return 0
    try:
        merge_jobs(build, cfg)
    except TooFewSegments as e:
        logging.error("%s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

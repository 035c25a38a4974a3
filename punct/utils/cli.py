"""Pieces shared by the command-line entry points in punct/bin."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Tuple

import numpy as np
import torch

from punct.synthesis.debian import default_cache_dir
from punct.normalize import NormalizeConfig
from punct.utils.config import add_config_arguments
from punct.io.shards import shards_to_skip, word_shard_prefixes, write_word_shards
from punct.utils.device import threaded_device
from punct.utils.jobs import add_job_arguments
from punct.utils.logging import log_config, setup_logging

WordItems = Iterable[Tuple[str, np.ndarray, np.ndarray]]  # (key, word vectors, word posteriors)

DEVICE_HELP = "auto, cpu or cuda"
TORCHRUN_DEVICE_HELP = "auto, cpu or cuda (under torchrun: cuda:<local rank>)"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows defaults and keeps the layout of the module docstring."""


def add_device_arguments(parser: argparse.ArgumentParser, num_threads: int = 1,
                         threads_help: str = "torch CPU threads", device_help: str = DEVICE_HELP) -> None:
    """``--device`` and ``--num-threads``, taken by every entry point that runs a model."""
    parser.add_argument("--device", default="auto", help=device_help)
    parser.add_argument("--num-threads", type=int, default=num_threads, help=threads_help)


def add_mini_corpus_arguments(parser: argparse.ArgumentParser, sizes: Iterable[str], size_help: str,
                              text_package: str, layout: str) -> None:
    """The options of an embedded mini-corpus builder: output folder, size, seed, text cache, overwrite, log file."""
    parser.add_argument("out_dir", type=Path, help=f"corpus folder to create ({layout})")
    parser.add_argument("--size", choices=sorted(sizes), default="mini", help=size_help)
    parser.add_argument("--seed", type=int, default=42, help="seed of every random choice")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir(),
                        help=f"where the {text_package} .deb is downloaded and unpacked ($PUNCT_CACHE)")
    add_rerun_arguments(parser, "rebuild an existing corpus")


def add_rerun_arguments(parser: argparse.ArgumentParser, overwrite_help: str) -> None:
    """``--overwrite`` and ``--log-file`` of an entry point that writes its outputs once."""
    parser.add_argument("--overwrite", action="store_true", help=overwrite_help)
    parser.add_argument("--log-file", type=Path, default=None, help="also log to this file")


def add_normalize_arguments(parser: argparse.ArgumentParser) -> None:
    """The punctuation mark -> label mapping of an English corpus preparation (a YAML file and ``--norm-*`` flags)."""
    parser.add_argument("--normalize-config", type=Path, default=None,
                        help="YAML with NormalizeConfig values (punctuation mark -> label mapping)")
    add_config_arguments(parser, NormalizeConfig, prefix="norm-")


def add_am_input_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """The stage-1 features, the trained AM and the splits of an entry point that runs the AM over cuts."""
    parser.add_argument("--fbank-dir", type=Path, required=True, help="stage-1 output (cuts, features, CMVN)")
    parser.add_argument("--am-dir", type=Path, required=True, help="trained AM folder")
    parser.add_argument("--checkpoint", default="best-valid-loss.pt", help="checkpoint name inside --am-dir")
    parser.add_argument("--splits", nargs="+", required=True, help=f"splits to {what}")
    parser.add_argument("--prefix", required=True, help="cut manifest name prefix: <prefix>_cuts_<split>.jsonl.gz")


def add_word_dump_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a per-job dump of word vectors and posteriors (``vec.JOB`` and ``post.JOB`` shards)."""
    parser.add_argument("--compression", default="none", help="kaldiio compression of the vectors: none, two_byte, ...")
    add_device_arguments(parser, threads_help="torch CPU threads per job")
    parser.add_argument("--overwrite", action="store_true", help="rewrite shards that are already done")
    add_job_arguments(parser)


def run_word_dump(args: argparse.Namespace, word_items: Callable[[torch.device], WordItems]) -> None:
    """Writes ``word_items(device)`` to this job's ``vec``/``post`` shards, unless both are done already.

    ``word_items`` loads its model before it returns, so a model that fails to load leaves finished shards as they are.
    """
    vec_prefix, post_prefix = word_shard_prefixes(args.out_dir, args.job)
    if shards_to_skip([vec_prefix, post_prefix], args.overwrite):
        return
    items = word_items(threaded_device(args.device, args.num_threads))
    write_word_shards(vec_prefix, post_prefix, items, args.compression)


def parse_and_log(parser: argparse.ArgumentParser, argv: Optional[List[str]] = None,
                  title: str = "arguments") -> argparse.Namespace:
    """Parses ``argv`` (None: the command line), starts logging to stderr and logs the arguments first."""
    args = parser.parse_args(argv)
    setup_logging()
    log_config(vars(args), title)
    return args

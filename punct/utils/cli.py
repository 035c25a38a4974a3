"""Pieces shared by the command-line entry points in punct/bin."""

from __future__ import annotations

import argparse
from typing import Callable, Iterable, List, Optional, Tuple

import numpy as np
import torch

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

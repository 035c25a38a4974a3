"""Pieces shared by the command-line entry points in punct/bin (the options of one concept live beside it:
:func:`punct.text.normalize.add_normalize_arguments`, :func:`punct.synthesis.build_record.add_mini_corpus_arguments`,
:func:`punct.io.shards.add_word_dump_arguments`, :func:`punct.am.checkpoint.add_am_input_arguments`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from punct.utils.logging import log_config, setup_logging

DEVICE_HELP = "auto, cpu or cuda"
TORCHRUN_DEVICE_HELP = "auto, cpu or cuda (under torchrun: cuda:<local rank>)"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows defaults and keeps the layout of the module docstring."""


def add_device_arguments(
    parser: argparse.ArgumentParser,
    num_threads: int = 1,
    threads_help: str = "torch CPU threads",
    device_help: str = DEVICE_HELP,
) -> None:
    """``--device`` and ``--num-threads``, taken by every entry point that runs a model."""
    parser.add_argument("--device", default="auto", help=device_help)
    parser.add_argument("--num-threads", type=int, default=num_threads, help=threads_help)


def add_rerun_arguments(parser: argparse.ArgumentParser, overwrite_help: str) -> None:
    """``--overwrite`` and ``--log-file`` of an entry point that writes its outputs once."""
    parser.add_argument("--overwrite", action="store_true", help=overwrite_help)
    parser.add_argument("--log-file", type=Path, default=None, help="also log to this file")


def parse_and_log(
    parser: argparse.ArgumentParser, argv: list[str] | None = None, title: str = "arguments"
) -> argparse.Namespace:
    """Parses ``argv`` (None: the command line), starts logging to stderr and logs the arguments first."""
    args = parser.parse_args(argv)
    setup_logging()
    log_config(vars(args), title)
    return args
